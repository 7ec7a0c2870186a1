//! Reaping a child with its resource usage (`wait4`), by hand: rustix and
//! nix wait for children but neither returns the `rusage` that comes with
//! the status (the CPU time and context switches of that child alone).
#![allow(unsafe_code)]

use std::io;

/// `wait4(pid, flags)`: `None` if `flags` has WNOHANG and the child is still
/// running; else its raw status and usage. Retries when interrupted.
pub(crate) fn wait4(
    pid: libc::pid_t,
    flags: libc::c_int,
) -> io::Result<Option<(libc::c_int, libc::rusage)>> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are valid, writable and live across
        // the call.
        let rc = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
        if rc == pid {
            return Ok(Some((status, usage)));
        }
        if rc == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
