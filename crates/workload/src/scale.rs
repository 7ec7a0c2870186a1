//! Load scaling (placeholder).
