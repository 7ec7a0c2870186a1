//! Clocks: the monotonic clock every live timestamp is read from, and the CPU
//! clocks that calibration measures work with.

use faasched_model::Nanos;
use nix::sys::resource::{UsageWho, getrusage};
use rustix::time::{ClockId, Timespec, clock_gettime};

fn nanos(ts: Timespec) -> Nanos {
    ts.tv_sec as Nanos * 1_000_000_000 + ts.tv_nsec as Nanos
}

/// CLOCK_MONOTONIC, in ns: shared by every process on the machine, so a
/// timestamp taken in a child compares with one taken in the launcher.
/// (Read through the vDSO, without touching `errno`: a child that shares
/// the launcher's memory may call it.)
pub fn monotonic() -> Nanos {
    nanos(clock_gettime(ClockId::Monotonic))
}

/// CPU time the calling thread has used, in ns.
pub fn thread_cpu() -> Nanos {
    nanos(clock_gettime(ClockId::ThreadCPUTime))
}

/// CPU time every thread of this process has used, in ns.
pub fn process_cpu() -> Nanos {
    nanos(clock_gettime(ClockId::ProcessCPUTime))
}

/// CPU time (user + system) of every waited-for child of this process, in
/// ns. `getrusage` of the caller's children cannot fail on Linux; a broken
/// system is reported as 0 rather than a panic.
pub fn children_cpu() -> Nanos {
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0, |u| {
        let (user, system) = (u.user_time(), u.system_time());
        let ns = |t: nix::sys::time::TimeVal| {
            t.tv_sec() as Nanos * 1_000_000_000 + t.tv_usec() as Nanos * 1_000
        };
        ns(user) + ns(system)
    })
}

/// A `timeval` in ns.
pub fn timeval(t: libc::timeval) -> Nanos {
    t.tv_sec as Nanos * 1_000_000_000 + t.tv_usec as Nanos * 1_000
}

/// Length of the clock tick that /proc/stat counts in (USER_HZ), in ns.
pub fn user_tick() -> Nanos {
    1_000_000_000 / rustix::param::clock_ticks_per_second().max(1)
}

/// The calling thread's timer slack set to 1 ns while it lives, the old
/// slack back when it drops: a thread that paces work by sleeping wakes
/// when asked, not up to the default 50 µs later.
pub struct FineTimerSlack {
    old: Option<std::num::NonZeroU64>,
}

impl FineTimerSlack {
    /// Sets it; `None` where the kernel refuses (the thread sleeps with
    /// the slack it had).
    pub fn set() -> Option<FineTimerSlack> {
        let old = rustix::thread::current_timer_slack().ok()?;
        rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1)).ok()?;
        Some(FineTimerSlack {
            old: std::num::NonZeroU64::new(old),
        })
    }
}

impl Drop for FineTimerSlack {
    fn drop(&mut self) {
        // `None` asks for the thread's default slack, which is what a 0
        // read back means.
        let _ = rustix::thread::set_current_timer_slack(self.old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_advance() {
        let (m, c) = (monotonic(), thread_cpu());
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i * i));
        }
        assert!(monotonic() > m && thread_cpu() > c, "{x}");
    }

    #[test]
    fn fine_timer_slack_lasts_while_it_lives() {
        let before = rustix::thread::current_timer_slack().unwrap();
        {
            let _fine = FineTimerSlack::set().expect("a thread may set its own slack");
            assert_eq!(rustix::thread::current_timer_slack().unwrap(), 1);
        }
        assert_eq!(rustix::thread::current_timer_slack().unwrap(), before);
    }
}
