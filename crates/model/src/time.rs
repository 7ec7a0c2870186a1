//! Time is an integer number of nanoseconds (DESIGN.md principle 3).
//!
//! `Time` is an instant measured from the start of a run, `Nanos` a duration. Both
//! are plain `u64` aliases rather than newtypes: the simulator's hot loop does
//! arithmetic on them constantly, and the two never mix with anything but each
//! other. Files use microseconds or milliseconds as their formats say; conversion
//! happens at the edges only.

/// A duration in nanoseconds.
pub type Nanos = u64;
/// An instant in nanoseconds since the start of a run.
pub type Time = u64;

/// One microsecond in nanoseconds.
pub const US: Nanos = 1_000;
/// One millisecond in nanoseconds.
pub const MS: Nanos = 1_000_000;
/// One second in nanoseconds.
pub const SEC: Nanos = 1_000_000_000;

/// The latest instant a workload may reach: an invocation's arrival plus
/// all its phases. 2^62 ns, about 146 years: beyond any trace, and far
/// enough below `u64::MAX` that the simulator's sums of an instant and a
/// few durations cannot wrap around (release builds do not check).
pub const TIME_LIMIT: Time = 1 << 62;

/// Nanoseconds as fractional milliseconds, for reports (never for clocks).
pub fn fmt_ms(ns: Nanos) -> f64 {
    ns as f64 / MS as f64
}
