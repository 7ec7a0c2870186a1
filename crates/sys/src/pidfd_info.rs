//! The `PIDFD_GET_INFO` ioctl (Linux 6.13), by hand: rustix's ioctl layer
//! needs an unsafe opcode description all the same, and neither rustix nor
//! nix wraps this one.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// What `PIDFD_GET_INFO` says of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    /// Its parent's pid, in the caller's pid namespace.
    pub ppid: libc::pid_t,
    /// Real, effective, saved and filesystem uid, in the caller's user
    /// namespace.
    pub uids: [u32; 4],
}

// The first published `struct pidfd_info` (PIDFD_INFO_SIZE_VER0, Linux
// 6.13): the ioctl's number carries the size, and a kernel copies out only
// what a caller's size holds, so the smallest one works on every kernel
// that has the call.
const _: () = assert!(size_of::<libc::pidfd_info>() == 64);

/// See [`crate::pidfd::info`].
pub(crate) fn info(pidfd: BorrowedFd<'_>) -> io::Result<Info> {
    // SAFETY: an all-zero pidfd_info is a valid value of the plain C struct.
    let mut info: libc::pidfd_info = unsafe { std::mem::zeroed() };
    let wanted = u64::from(libc::PIDFD_INFO_PID | libc::PIDFD_INFO_CREDS);
    info.mask = wanted;
    // SAFETY: `info` is writable, lives across the call and is as large as
    // the ioctl's number says, which is all the kernel writes.
    let rc = unsafe { libc::ioctl(pidfd.as_raw_fd(), libc::PIDFD_GET_INFO, &mut info) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if info.mask & wanted != wanted {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "PIDFD_GET_INFO returned no credentials",
        ));
    }
    Ok(Info {
        ppid: info.ppid as libc::pid_t,
        uids: [info.ruid, info.euid, info.suid, info.fsuid],
    })
}
