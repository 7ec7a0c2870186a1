//! Who is at the other end of a Unix socket: `SO_PEERCRED`, the credentials
//! the kernel recorded when the peer called `connect` (they cannot be forged
//! by what the peer later writes); and accepting such a peer non-blocking in
//! one call.
//!
//! std's `UnixStream::peer_cred` is still unstable, hence this.

use crate::io as errno;
use rustix::net::SocketFlags;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};

/// Accepts a connection on `listener`, non-blocking and close-on-exec from
/// the start: std's `accept` then `set_nonblocking` is a second system call
/// per connection.
pub fn accept(listener: &UnixListener) -> io::Result<UnixStream> {
    let fd = rustix::net::accept_with(listener, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC)
        .map_err(errno)?;
    Ok(UnixStream::from(fd))
}

/// A client's process, user and group, as the kernel recorded them: its
/// effective ids at `connect` (here), or the ids attached to a datagram
/// (`crate::dgram`: its real ones unless it claims others it holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCred {
    /// Its pid (as seen in this process's pid namespace).
    pub pid: libc::pid_t,
    /// Its effective uid.
    pub uid: libc::uid_t,
    /// Its effective gid.
    pub gid: libc::gid_t,
}

/// A pidfd of the process that connected to Unix socket `socket`
/// (`SO_PEERPIDFD`, Linux 6.5): it names that process for good, where its
/// pid may be reused once it is reaped. ESRCH if it has exited.
pub fn peer_pidfd(socket: impl AsFd) -> io::Result<std::os::fd::OwnedFd> {
    nix::sys::socket::getsockopt(&socket, nix::sys::socket::sockopt::PeerPidfd)
        .map_err(io::Error::from)
}

/// The credentials of the peer of connected Unix socket `socket`. (nix's
/// call, not rustix's: rustix's holds the pid as a non-zero integer, and the
/// kernel reports 0 for a peer outside this process's pid namespace.)
pub fn peer_cred(socket: impl AsFd) -> io::Result<PeerCred> {
    let c = nix::sys::socket::getsockopt(&socket, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(crate::nix_io)?;
    Ok(PeerCred {
        pid: c.pid(),
        uid: c.uid(),
        gid: c.gid(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_non_blocking_and_sees_this_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let e = accept(&listener).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        let _client = UnixStream::connect(&path).unwrap();
        let mut server = accept(&listener).unwrap();
        // Nothing written yet: a blocking socket would wait here.
        let e = std::io::Read::read(&mut server, &mut [0u8; 8]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(peer_cred(&server).unwrap().pid as u32, std::process::id());
    }

    #[test]
    fn a_socket_pair_sees_this_process() {
        let (a, _b) = UnixStream::pair().unwrap();
        let cred = peer_cred(&a).unwrap();
        assert_eq!(cred.pid as u32, std::process::id());
        assert_eq!(cred.uid, rustix::process::geteuid().as_raw());
    }
}
