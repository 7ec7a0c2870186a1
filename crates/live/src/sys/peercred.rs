//! Who is at the other end of a Unix socket: `SO_PEERCRED`, the credentials
//! the kernel recorded when the peer called `connect` (they cannot be forged
//! by what the peer later writes).
//!
//! std's `UnixStream::peer_cred` is still unstable, hence this.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// The peer's process and its effective user and group at `connect`.
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
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_socket_pair_sees_this_process() {
        let (a, _b) = UnixStream::pair().unwrap();
        let cred = peer_cred(&a).unwrap();
        assert_eq!(cred.pid as u32, std::process::id());
        // SAFETY: geteuid has no arguments.
        assert_eq!(cred.uid, unsafe { libc::geteuid() });
    }
}
