//! Which process a request names. A pid number names a process only until
//! that process is reaped; after that it may name any process the kernel
//! starts. So the agent acts on a pid only while it can show that the pid
//! still names the process the client chose: a `register` pins it (by the
//! pidfs inode the client read, or by the client's own pidfd, see
//! [`protocol`](super::protocol), "Pinning"), and calls that reach a
//! process by its pid count only if the process was not reaped meanwhile
//! (a zombie keeps its pid).

use crate::sys::peercred::{self, PeerCred};
use crate::sys::pidfd;
use crate::sys::process;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

/// What a `register` offers to pin the process it names.
#[derive(Clone, Copy)]
pub(super) enum Claim<'a> {
    /// The pidfs inode the client read.
    Inode(u64),
    /// Nothing in the request, which came on this connection to the stream
    /// socket from a client with these credentials: it may hand over itself.
    Peer(&'a UnixStream, PeerCred),
    /// Nothing, in a datagram.
    Bare,
}

/// How to pin a process, said in every refusal of an unpinned request.
const HOW: &str = "name its process by its pidfs inode too (\"inode\": the st_ino of fstat on a pidfd of it, as `faasched exec` and `faasched agent register` send), since a bare pid may have been reused by another process since the request was written";

/// The pidfs inode of the process `claim` pins `pid` to, or why there is
/// none. Cheap for an inode; for a stream client naming itself, one
/// `getsockopt` (`SO_PEERPIDFD`: the pidfd of the process that connected).
pub(super) fn pinned(pid: libc::pid_t, claim: Claim<'_>) -> Result<u64, String> {
    match claim {
        Claim::Inode(inode) => Ok(inode),
        Claim::Peer(stream, cred) if cred.pid == pid => {
            let peer = peercred::peer_pidfd(stream).map_err(|e| match e.raw_os_error() {
                Some(libc::ESRCH) => format!("no process {pid} (it exited)"),
                _ => format!("SO_PEERPIDFD (the pidfd of the client, pid {pid}): {e}"),
            })?;
            inode_of(peer.as_fd())
        }
        Claim::Peer(_, cred) => Err(format!(
            "pid {pid} is not pinned: {HOW}; without it a client on the stream socket may hand over only itself (pid {})",
            cred.pid
        )),
        Claim::Bare => Err(format!("pid {pid} is not pinned: {HOW}")),
    }
}

/// The pidfs inode of `pidfd`'s process, if `pidfd` (the agent's own,
/// opened on `pid` after the request was read) is of the process the
/// request pinned (`pinned`); else the pid was reused.
pub(super) fn check(pid: libc::pid_t, pidfd: &OwnedFd, pinned: u64) -> Result<u64, String> {
    let inode = inode_of(pidfd.as_fd())?;
    if inode != pinned {
        return Err(format!(
            "pid {pid} names another process than the one the request pinned (pidfs inode {pinned}; now {inode}): that one has exited and its pid was reused"
        ));
    }
    Ok(inode)
}

fn inode_of(pidfd: BorrowedFd<'_>) -> Result<u64, String> {
    pidfd::inode(pidfd).map_err(|e| format!("fstat of a pidfd: {e}"))
}

/// Whether `pid` may have named another process than `pidfd`'s (pidfs inode
/// `inode`) at some point since `pidfd` was opened on it: only if that
/// process has exited and, now, `pid` names another process or none (it
/// was reaped; a zombie keeps its pid, and a live process too). Read after
/// calls that reached the process by its pid: if not, they reached it.
pub(super) fn maybe_reused(pid: libc::pid_t, pidfd: &OwnedFd, inode: u64) -> bool {
    if !process::exited(pidfd).unwrap_or(true) {
        return false;
    }
    match process::pidfd_open(pid) {
        Ok(now) => pidfd::inode(now.as_fd()).map_or(true, |i| i != inode),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inode(pid: libc::pid_t) -> u64 {
        pidfd::inode(process::pidfd_open(pid).unwrap().as_fd()).unwrap()
    }

    #[test]
    fn a_pid_is_pinned_by_the_inode_the_client_read_only_while_it_names_that_process() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let mine = std::process::id() as libc::pid_t;
        let result = std::panic::catch_unwind(|| {
            let pidfd = process::pidfd_open(pid).unwrap();
            let read = inode(pid);
            assert_eq!(pinned(pid, Claim::Inode(read)), Ok(read));
            assert_eq!(check(pid, &pidfd, read), Ok(read));
            assert!(!maybe_reused(pid, &pidfd, read));
            // The inode of another process: as if the chosen one had
            // exited and `pid` had been reused since.
            let err = check(pid, &pidfd, inode(mine)).unwrap_err();
            assert!(err.contains("its pid was reused"), "{err}");
            let err = pinned(pid, Claim::Bare).unwrap_err();
            assert!(
                err.contains("not pinned") && err.contains("\"inode\""),
                "{err}"
            );
        });
        let _ = child.kill();
        let _ = child.wait();
        result.unwrap();
    }

    #[test]
    fn a_stream_client_pins_itself_by_its_peer_pidfd_and_nothing_else() {
        let (a, _b) = UnixStream::pair().unwrap();
        let me = std::process::id() as libc::pid_t;
        let cred = crate::sys::peercred::peer_cred(&a).unwrap();
        assert_eq!(pinned(me, Claim::Peer(&a, cred)), Ok(inode(me)));
        let err = pinned(1, Claim::Peer(&a, cred)).unwrap_err();
        assert!(
            err.contains(&format!("may hand over only itself (pid {me})")),
            "{err}"
        );
    }

    #[test]
    fn a_reaped_process_may_have_lost_its_pid_and_a_zombie_has_not() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as libc::pid_t;
        let pidfd = process::pidfd_open(pid).unwrap();
        let ino = pidfd::inode(pidfd.as_fd()).unwrap();
        // A zombie once its pidfd is readable: it keeps its pid.
        let mut poll = crate::sys::poll::Poll::new().unwrap();
        poll.add(pidfd.as_fd(), 0).unwrap();
        while !process::exited(&pidfd).unwrap() {
            let _ = poll.wait(None);
        }
        assert!(!maybe_reused(pid, &pidfd, ino));
        child.wait().unwrap();
        assert!(maybe_reused(pid, &pidfd, ino));
    }
}
