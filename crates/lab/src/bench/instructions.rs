//! Instructions a run retires, counted by the CPU where the kernel exposes
//! a hardware counter. Unlike wall time they do not swing with the
//! machine's load, clock or neighbours, so a change to an engine is judged
//! by its instructions per event beside its speed. A VM without a virtual
//! PMU (or a kernel whose `perf_event_paranoid` forbids it) has no such
//! counter: the benches then say why and print wall time alone.

use perf_event::events::{Event, Hardware};
use perf_event::{Builder, Counter};
use std::io;

/// A counter of the calling thread's user-space instructions.
pub struct Instructions(Counter);

impl Instructions {
    /// A counter for this thread, or why there is none.
    pub fn open() -> Result<Instructions, String> {
        Self::of(Hardware::INSTRUCTIONS)
            .map_err(|e| format!("no hardware instruction counter here (perf_event_open: {e})"))
    }

    /// A counter of `event` for this thread, user space only.
    fn of(event: impl Event) -> io::Result<Instructions> {
        Builder::new(event).build().map(Instructions)
    }

    /// Runs `f`; its result and the instructions this thread retired in
    /// user space while it ran (scaled up if the kernel shared the counter
    /// with others part of the time, as `perf stat` does).
    pub fn count<T>(&mut self, f: impl FnOnce() -> T) -> io::Result<(T, u64)> {
        self.0.reset()?;
        self.0.enable()?;
        let r = f();
        self.0.disable()?;
        let c = self.0.read_count_and_time()?;
        if c.time_running == 0 {
            return Err(io::Error::other("the instruction counter never ran"));
        }
        let scaled = c.count as u128 * c.time_enabled as u128 / c.time_running as u128;
        Ok((r, u64::try_from(scaled).unwrap_or(u64::MAX)))
    }
}

/// The benches' line on instructions: whether they are counted here.
pub fn note() -> String {
    match Instructions::open() {
        Ok(_) => "instructions: counted by the CPU, user space, median of the runs".into(),
        Err(why) => format!("instructions: not counted, {why}"),
    }
}

/// `instructions` per `event`, as a bench line's column; empty where they
/// were not counted.
pub fn per_event(instructions: Option<u64>, events: u64) -> String {
    match instructions {
        Some(i) if events > 0 => format!("  {:>6.0} instructions/event", i as f64 / events as f64),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a counter opens, a loop of a million additions retires at
    /// least a million instructions, and ten times the loop about ten times
    /// as many; where none opens, the reason names the call that failed.
    #[test]
    fn counts_grow_with_the_work_or_the_reason_names_the_call() {
        let sum = |n: u64| (0..n).fold(0u64, |a, i| std::hint::black_box(a.wrapping_add(i)));
        match Instructions::open() {
            Ok(mut c) => {
                let (_, small) = c.count(|| sum(1_000_000)).unwrap();
                let (_, large) = c.count(|| sum(10_000_000)).unwrap();
                assert!(small >= 1_000_000, "{small}");
                let ratio = large as f64 / small as f64;
                assert!((5.0..20.0).contains(&ratio), "{small} then {large}");
                assert!(note().starts_with("instructions: counted"));
            }
            Err(why) => {
                assert!(why.contains("perf_event_open"), "{why}");
                assert!(note().contains("not counted"));
            }
        }
        assert_eq!(per_event(Some(5_000), 10), "     500 instructions/event");
        assert_eq!(per_event(None, 10), "");
    }

    /// The counting itself (reset, enable, disable, read), on a software
    /// event every Linux has: the thread's CPU time, which ten times the
    /// work cannot leave smaller.
    #[test]
    fn a_count_covers_the_work_and_starts_again_at_zero() {
        let sum = |n: u64| (0..n).fold(0u64, |a, i| std::hint::black_box(a.wrapping_add(i)));
        let mut c = Instructions::of(perf_event::events::Software::TASK_CLOCK).unwrap();
        let (r, small) = c.count(|| sum(1_000_000)).unwrap();
        assert_eq!(r, sum(1_000_000));
        let (_, large) = c.count(|| sum(10_000_000)).unwrap();
        assert!(small > 0 && large > small, "{small} then {large}");
    }
}
