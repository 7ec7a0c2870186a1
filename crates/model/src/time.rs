//! Time is an integer number of nanoseconds (no float clocks: same inputs, same bytes).
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
/// all its phases. 2^54 ns, about 208 days: beyond any trace window (the
/// public traces span two weeks). The kernel model packs an instant beside a
/// core into 64 bits (`faasched_kernel`'s event queue), which leaves 56 bits
/// of time; a run may go on past this limit while a backlog drains, up to
/// `faasched_kernel::RUN_LIMIT`.
pub const TIME_LIMIT: Time = 1 << 54;

/// Nanoseconds as fractional milliseconds, for reports (never for clocks).
pub fn fmt_ms(ns: Nanos) -> f64 {
    ns as f64 / MS as f64
}
