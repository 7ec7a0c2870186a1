//! Clocks: the monotonic clock every live timestamp is read from, and the CPU
//! clocks that calibration measures work with.

use faasched_model::Nanos;

/// Reads a clock; the clock ids used here always exist on Linux, so a failure
/// is a broken system, reported as 0 rather than a panic.
fn read(clock: libc::clockid_t) -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as Nanos * 1_000_000_000 + ts.tv_nsec as Nanos
}

/// CLOCK_MONOTONIC, in ns: shared by every process on the machine, so a
/// timestamp taken in a child compares with one taken in the launcher.
pub fn monotonic() -> Nanos {
    read(libc::CLOCK_MONOTONIC)
}

/// CPU time the calling thread has used, in ns.
pub fn thread_cpu() -> Nanos {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time (user + system) of every waited-for child of this process, in ns.
pub fn children_cpu() -> Nanos {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    if rc != 0 {
        return 0;
    }
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

/// A `timeval` in ns.
pub fn timeval(t: libc::timeval) -> Nanos {
    t.tv_sec as Nanos * 1_000_000_000 + t.tv_usec as Nanos * 1_000
}

/// Length of the clock tick that /proc/stat counts in (USER_HZ), in ns.
pub fn user_tick() -> Nanos {
    // SAFETY: sysconf has no memory arguments.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1_000_000_000 / hz.max(1) as Nanos
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
