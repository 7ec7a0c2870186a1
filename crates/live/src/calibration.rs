//! Calibration (filled in by the suite work).
