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
