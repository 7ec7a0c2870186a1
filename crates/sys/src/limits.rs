//! RLIMIT_RTTIME: how long a real-time task may run without blocking.

use crate::{io as errno, prlimit};
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use std::io;

/// rustix's limit (`None`: unlimited) as the kernel's.
fn to_libc(l: Rlimit) -> libc::rlimit {
    libc::rlimit {
        rlim_cur: l.current.unwrap_or(libc::RLIM_INFINITY),
        rlim_max: l.maximum.unwrap_or(libc::RLIM_INFINITY),
    }
}

/// The kernel's limit (RLIM_INFINITY: unlimited) as rustix's.
fn of_libc(soft: u64, hard: u64) -> Rlimit {
    let finite = |v: u64| (v != libc::RLIM_INFINITY).then_some(v);
    Rlimit {
        current: finite(soft),
        maximum: finite(hard),
    }
}

/// The calling process's RLIMIT_RTTIME.
pub fn rt_time() -> io::Result<libc::rlimit> {
    Ok(to_libc(getrlimit(Resource::Rttime)))
}

/// Sets the calling process's RLIMIT_RTTIME (µs; soft, hard).
pub fn set_rt_time(soft: u64, hard: u64) -> io::Result<()> {
    setrlimit(Resource::Rttime, of_libc(soft, hard)).map_err(errno)
}

/// Raises the calling process's soft RLIMIT_NOFILE towards its hard limit,
/// to at most `cap`; returns the soft limit it has then.
pub fn raise_open_files(cap: u64) -> io::Result<u64> {
    let mut l = to_libc(getrlimit(Resource::Nofile));
    let want = l.rlim_max.min(cap);
    if want > l.rlim_cur {
        l.rlim_cur = want;
        setrlimit(Resource::Nofile, of_libc(l.rlim_cur, l.rlim_max)).map_err(errno)?;
    }
    Ok(l.rlim_cur)
}

/// RLIMIT_RTTIME of process `pid`.
pub fn rt_time_of(pid: libc::pid_t) -> io::Result<libc::rlimit> {
    prlimit::rt_time_of(pid)
}

/// Sets RLIMIT_RTTIME of process `pid` (µs; soft, hard) and returns the
/// limit it had. Setting another process's limit needs CAP_SYS_RESOURCE or
/// the same user; a hard limit above the old one needs CAP_SYS_RESOURCE.
pub fn swap_rt_time_of(pid: libc::pid_t, soft: u64, hard: u64) -> io::Result<libc::rlimit> {
    let old = rustix::process::prlimit(crate::pid(pid)?, Resource::Rttime, of_libc(soft, hard))
        .map_err(errno)?;
    Ok(to_libc(old))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_a_childs_limit_and_gives_back_the_old_one() {
        // Only lowering: raising a hard limit needs CAP_SYS_RESOURCE.
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let swapped = swap_rt_time_of(pid, 2_000_000, 3_000_000)
            .and_then(|_| swap_rt_time_of(pid, 1_000_000, 3_000_000));
        let _ = child.kill();
        let _ = child.wait();
        let old = swapped.unwrap();
        assert_eq!((old.rlim_cur, old.rlim_max), (2_000_000, 3_000_000));
    }
}
