//! Production trace readers (placeholder).
