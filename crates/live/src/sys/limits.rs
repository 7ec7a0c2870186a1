//! RLIMIT_RTTIME: how long a real-time task may run without blocking.

use std::io;

/// The calling process's RLIMIT_RTTIME.
pub fn rt_time() -> io::Result<libc::rlimit> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `l` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_RTTIME, &mut l) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(l)
}

/// Sets the calling process's RLIMIT_RTTIME (µs; soft, hard).
pub fn set_rt_time(soft: u64, hard: u64) -> io::Result<()> {
    let l = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: `l` is a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_RTTIME, &l) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Raises the calling process's soft RLIMIT_NOFILE towards its hard limit,
/// to at most `cap`; returns the soft limit it has then.
pub fn raise_open_files(cap: u64) -> io::Result<u64> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `l` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let want = l.rlim_max.min(cap);
    if want > l.rlim_cur {
        l.rlim_cur = want;
        // SAFETY: `l` is a valid rlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(l.rlim_cur)
}

/// RLIMIT_RTTIME of process `pid`.
pub fn rt_time_of(pid: libc::pid_t) -> io::Result<libc::rlimit> {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a null new limit only reads; `old` is a writable rlimit.
    if unsafe { libc::prlimit(pid, libc::RLIMIT_RTTIME, std::ptr::null(), &mut old) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(old)
}

/// Sets RLIMIT_RTTIME of process `pid` (µs; soft, hard) and returns the
/// limit it had. Setting another process's limit needs CAP_SYS_RESOURCE or
/// the same user; a hard limit above the old one needs CAP_SYS_RESOURCE.
pub fn swap_rt_time_of(pid: libc::pid_t, soft: u64, hard: u64) -> io::Result<libc::rlimit> {
    let new = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `new` is a valid rlimit and `old` a writable one.
    if unsafe { libc::prlimit(pid, libc::RLIMIT_RTTIME, &new, &mut old) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(old)
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
