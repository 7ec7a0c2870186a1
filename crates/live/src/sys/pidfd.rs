//! What a pidfd tells of its process without `/proc`: its credentials and
//! parent (`PIDFD_GET_INFO`, Linux 6.13), and its pidfs inode, which names
//! the process for the whole boot (Linux 6.9, 64-bit).
//!
//! Formatting `/proc/PID/status` for the uids and `/proc/PID/stat` for the
//! start time cost the agent an open, a read and a close each per hand-over;
//! these are one call each on the descriptor it holds anyway, and they
//! cannot read another process that reused the pid.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

// The first published `struct pidfd_info` (PIDFD_INFO_SIZE_VER0, Linux
// 6.13): the ioctl's number carries the size, and a kernel copies out only
// what a caller's size holds, so the smallest one works on every kernel
// that has the call.
const _: () = assert!(size_of::<libc::pidfd_info>() == 64);

/// What `PIDFD_GET_INFO` says of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    /// Its parent's pid, in the caller's pid namespace.
    pub ppid: libc::pid_t,
    /// Real, effective, saved and filesystem uid, in the caller's user
    /// namespace.
    pub uids: [u32; 4],
}

/// The credentials and parent of the process behind `pidfd`. Fails with
/// ESRCH once it is reaped (a zombie still answers), and also when its
/// parent is outside the caller's pid namespace; with ENOTTY or EINVAL on a
/// kernel older than 6.13.
pub fn info(pidfd: BorrowedFd<'_>) -> io::Result<Info> {
    // SAFETY: an all-zero pidfd_info is a valid value of the plain C struct.
    let mut info: libc::pidfd_info = unsafe { std::mem::zeroed() };
    info.mask = u64::from(libc::PIDFD_INFO_PID | libc::PIDFD_INFO_CREDS);
    // SAFETY: `info` is writable and as large as the ioctl's number says.
    let rc = unsafe { libc::ioctl(pidfd.as_raw_fd(), libc::PIDFD_GET_INFO, &mut info) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let wanted = u64::from(libc::PIDFD_INFO_PID | libc::PIDFD_INFO_CREDS);
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

/// The pidfs inode number of the process behind `pidfd`: no two processes
/// of one boot share it (on a 64-bit kernel since 6.9; before pidfs, every
/// pidfd had one anonymous inode).
pub fn inode(pidfd: BorrowedFd<'_>) -> io::Result<u64> {
    // SAFETY: an all-zero stat is a valid value of the plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: an open descriptor and a writable stat.
    if unsafe { libc::fstat(pidfd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.st_ino)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::process::pidfd_open;
    use std::os::fd::AsFd;

    #[test]
    fn reads_a_childs_credentials_parent_and_inode() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let result = (|| -> io::Result<()> {
            let pidfd = pidfd_open(child.id() as libc::pid_t)?;
            let me = pidfd_open(std::process::id() as libc::pid_t)?;
            let got = info(pidfd.as_fd())?;
            assert_eq!(got.ppid as u32, std::process::id());
            // SAFETY: getuid and geteuid have no arguments.
            let (uid, euid) = unsafe { (libc::getuid(), libc::geteuid()) };
            assert_eq!(got.uids[..2], [uid, euid]);
            // One inode per process, the same through every pidfd of it.
            let ino = inode(pidfd.as_fd())?;
            assert_ne!(ino, inode(me.as_fd())?);
            assert_eq!(ino, inode(pidfd_open(child.id() as libc::pid_t)?.as_fd())?);
            child.kill()?;
            child.wait()?;
            // Reaped: no credentials, the same inode.
            let e = info(pidfd.as_fd()).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
            assert_eq!(inode(pidfd.as_fd())?, ino);
            Ok(())
        })();
        let _ = child.kill();
        let _ = child.wait();
        result.unwrap();
    }
}
