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
}
