//! Instructions a run retires, counted by the CPU where the kernel exposes
//! a hardware counter. Unlike wall time they do not swing with the
//! machine's load, clock or neighbours, so a change to an engine is judged
//! by its instructions per event beside its speed. A VM without a virtual
//! PMU (or a kernel whose `perf_event_paranoid` forbids it) has no such
//! counter: the benches then say why and print wall time alone.

use std::io;

/// A counter of the calling thread's user-space instructions.
pub struct Instructions(imp::Counter);

impl Instructions {
    /// A counter for this thread, or why there is none.
    pub fn open() -> Result<Instructions, String> {
        imp::instructions()
            .map(Instructions)
            .map_err(|e| format!("no instruction counter opened here (perf_event_open: {e})"))
    }

    /// Runs `f`; its result, and the instructions this thread retired in
    /// user space while it ran (scaled up if the kernel shared the counter
    /// with others part of the time, as `perf stat` does), or why they
    /// could not be read.
    pub fn count<T>(&mut self, f: impl FnOnce() -> T) -> (T, io::Result<u64>) {
        let before = self.0.enable();
        let r = f();
        let after = self.0.disable();
        (r, before.and_then(|b| after?.since(&b)))
    }
}

/// The counter's totals at one instant.
struct Totals {
    count: u64,
    /// Nanoseconds it was enabled, and of those, counting.
    enabled: u64,
    running: u64,
}

impl Totals {
    /// What was counted from `before` to here, scaled to the time enabled.
    fn since(&self, before: &Totals) -> io::Result<u64> {
        let count = self.count.saturating_sub(before.count);
        let enabled = self.enabled.saturating_sub(before.enabled);
        let running = self.running.saturating_sub(before.running);
        if running == 0 {
            return Err(io::Error::other("the instruction counter never ran"));
        }
        let scaled = u128::from(count) * u128::from(enabled) / u128::from(running);
        Ok(u64::try_from(scaled).unwrap_or(u64::MAX))
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use super::Totals;
    use perf_event::Builder;
    use perf_event::events::{Event, Hardware};
    use std::io;

    /// A perf counter of one event on the calling thread, user space only.
    pub struct Counter(perf_event::Counter);

    pub fn instructions() -> io::Result<Counter> {
        of(Hardware::INSTRUCTIONS)
    }

    pub fn of(event: impl Event) -> io::Result<Counter> {
        Builder::new(event).build().map(Counter)
    }

    impl Counter {
        fn totals(&mut self) -> io::Result<Totals> {
            let c = self.0.read_count_and_time()?;
            Ok(Totals {
                count: c.count,
                enabled: c.time_enabled,
                running: c.time_running,
            })
        }

        /// The totals, then counting.
        pub fn enable(&mut self) -> io::Result<Totals> {
            let t = self.totals()?;
            self.0.enable()?;
            Ok(t)
        }

        /// Counting stopped, then the totals.
        pub fn disable(&mut self) -> io::Result<Totals> {
            self.0.disable()?;
            self.totals()
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Totals;
    use std::io;

    /// No counter: `perf_event_open` is Linux's.
    pub enum Counter {}

    pub fn instructions() -> io::Result<Counter> {
        Err(io::Error::other("not on Linux"))
    }

    impl Counter {
        pub fn enable(&mut self) -> io::Result<Totals> {
            match *self {}
        }
        pub fn disable(&mut self) -> io::Result<Totals> {
            match *self {}
        }
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn sum(n: u64) -> u64 {
        (0..n).fold(0u64, |a, i| std::hint::black_box(a.wrapping_add(i)))
    }

    /// Where a counter opens, a loop of a million additions retires at
    /// least a million instructions, and ten times the loop about ten times
    /// as many; where none opens, the reason names the call that failed.
    #[test]
    fn counts_grow_with_the_work_or_the_reason_names_the_call() {
        match Instructions::open() {
            Ok(mut c) => {
                let (_, small) = c.count(|| sum(1_000_000));
                let (_, large) = c.count(|| sum(10_000_000));
                let (small, large) = (small.unwrap(), large.unwrap());
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

    /// The counting itself, on a software event (the thread's CPU time):
    /// a count covers its own run only, so the small job counted after the
    /// large one counts less. Skipped where no perf event opens at all.
    #[test]
    fn a_count_covers_its_own_run_only() {
        let Ok(counter) = imp::of(perf_event::events::Software::TASK_CLOCK) else {
            eprintln!("skipped: perf_event_open refused even a software event");
            return;
        };
        let mut c = Instructions(counter);
        let (r, large) = c.count(|| sum(10_000_000));
        assert_eq!(r, sum(10_000_000));
        let (_, small) = c.count(|| sum(1_000_000));
        let (large, small) = (large.unwrap(), small.unwrap());
        assert!(small > 0 && small < large, "{large} then {small}");
    }

    #[test]
    fn totals_scale_to_the_time_enabled_and_refuse_a_counter_that_never_ran() {
        let at = |count, enabled, running| Totals {
            count,
            enabled,
            running,
        };
        // 100 counted in the half of the time it ran: 200.
        assert_eq!(
            at(1_100, 3_000, 1_500)
                .since(&at(1_000, 1_000, 500))
                .unwrap(),
            200
        );
        assert!(at(5, 10, 0).since(&at(5, 0, 0)).is_err());
    }
}
