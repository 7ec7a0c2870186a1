//! What a pidfd tells of its process without `/proc`: its credentials and
//! parent (`PIDFD_GET_INFO`, Linux 6.13), and its pidfs inode, which names
//! the process for the whole boot (Linux 6.9, 64-bit).
//!
//! Formatting `/proc/PID/status` for the uids and `/proc/PID/stat` for the
//! start time cost the agent an open, a read and a close each per hand-over;
//! these are one call each on the descriptor it holds anyway, and they
//! cannot read another process that reused the pid.

use std::io;
use std::os::fd::BorrowedFd;

pub use crate::pidfd_info::Info;

/// The credentials and parent of the process behind `pidfd`. Fails with
/// ESRCH once it is reaped (a zombie still answers), and also when its
/// parent is outside the caller's pid namespace; with ENOTTY or EINVAL on a
/// kernel older than 6.13.
pub fn info(pidfd: BorrowedFd<'_>) -> io::Result<Info> {
    crate::pidfd_info::info(pidfd)
}

/// The pidfs inode number of the process behind `pidfd`: no two processes
/// of one boot share it (on a 64-bit kernel since 6.9; before pidfs, every
/// pidfd had one anonymous inode).
pub fn inode(pidfd: BorrowedFd<'_>) -> io::Result<u64> {
    Ok(rustix::fs::fstat(pidfd).map_err(crate::io)?.st_ino)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::pidfd_open;
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
            let (uid, euid) = (
                rustix::process::getuid().as_raw(),
                rustix::process::geteuid().as_raw(),
            );
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
