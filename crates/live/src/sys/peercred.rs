//! Who is at the other end of a Unix socket: `SO_PEERCRED`, the credentials
//! the kernel recorded when the peer called `connect` (they cannot be forged
//! by what the peer later writes); and accepting such a peer non-blocking in
//! one call.
//!
//! std's `UnixStream::peer_cred` is still unstable, hence this.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};

/// Accepts a connection on `listener`, non-blocking and close-on-exec from
/// the start: std's `accept` then `set_nonblocking` is a second system call
/// per connection.
pub fn accept(listener: &UnixListener) -> io::Result<UnixStream> {
    // SAFETY: a listening socket, and null address arguments (not wanted).
    let fd = unsafe {
        libc::accept4(
            listener.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a fresh descriptor that we now own.
    Ok(UnixStream::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// A client's process, user and group, as the kernel recorded them: its
/// effective ids at `connect` (here), or the ids attached to a datagram
/// (`super::dgram`: its real ones unless it claims others it holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCred {
    /// Its pid (as seen in this process's pid namespace).
    pub pid: libc::pid_t,
    /// Its effective uid.
    pub uid: libc::uid_t,
    /// Its effective gid.
    pub gid: libc::gid_t,
}

/// The credentials of the peer of connected Unix socket `socket`.
pub fn peer_cred(socket: impl AsFd) -> io::Result<PeerCred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` is a writable ucred and `len` holds its size.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(PeerCred {
        pid: cred.pid,
        uid: cred.uid,
        gid: cred.gid,
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
        // SAFETY: geteuid has no arguments.
        assert_eq!(cred.uid, unsafe { libc::geteuid() });
    }
}
