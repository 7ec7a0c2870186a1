//! Errors (placeholder).
