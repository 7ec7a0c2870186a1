//! Reading another process's resource limit without changing it:
//! `prlimit` with no new limit. rustix's `prlimit` always sets one and nix
//! has none, so this one call is made by hand.
#![allow(unsafe_code)]

use std::io;

/// RLIMIT_RTTIME of process `pid` (0: the caller).
pub(crate) fn rt_time_of(pid: libc::pid_t) -> io::Result<libc::rlimit> {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a null new limit only reads; `old` is a writable rlimit that
    // lives across the call.
    if unsafe { libc::prlimit(pid, libc::RLIMIT_RTTIME, std::ptr::null(), &mut old) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(old)
}
