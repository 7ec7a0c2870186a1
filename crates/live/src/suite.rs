//! The function suite (filled in by the suite work).
