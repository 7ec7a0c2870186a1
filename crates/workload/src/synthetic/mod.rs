//! Synthetic generators (placeholder).
