//! Unix datagrams that carry their sender's credentials: a request in one
//! datagram, read with the pid, uid and gid the kernel attached to it
//! (`SCM_CREDENTIALS`), and answered with one datagram to its sender.
//!
//! A socket with `SO_PASSCRED` gets credentials with every datagram it
//! receives. The kernel attaches them at send: the sender's pid and real
//! uid and gid, unless it claims others in its own `SCM_CREDENTIALS`, which
//! the kernel lets it do only for its own pid and its real, effective or
//! saved uid and gid (any, with CAP_SYS_ADMIN for the pid and CAP_SETUID or
//! CAP_SETGID for the ids). Nothing in the datagram's bytes can change them.
//!
//! std's ancillary-data API is still unstable; the receiving and answering
//! are by hand (`credmsg`, which says why no crate serves).

use crate::credmsg;
use crate::io as errno;
use rustix::net::SocketAddrUnix;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixDatagram;
use std::path::Path;

/// Sets `SO_PASSCRED` on `socket`: every datagram it receives carries its
/// sender's credentials, and, if unbound, the kernel gives it an abstract
/// address of its own when it connects or sends (autobind), so that it can
/// be answered.
pub fn pass_credentials(socket: impl AsFd) -> io::Result<()> {
    rustix::net::sockopt::set_socket_passcred(socket, true).map_err(errno)
}

/// The longest path a Unix socket's address holds (`sun_path` less its NUL).
const MAX_PATH: usize = 107;

/// A datagram socket bound to `path`, non-blocking and close-on-exec, with
/// `SO_PASSCRED` set before it is bound: no datagram reaches it without its
/// sender's credentials. (std binds in the call that creates the socket.)
pub fn bind(path: &Path) -> io::Result<UnixDatagram> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_PATH || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a Unix socket's path is 1 to {MAX_PATH} bytes, without NUL"),
        ));
    }
    let address = SocketAddrUnix::new(bytes).map_err(errno)?;
    let socket = UnixDatagram::unbound()?;
    socket.set_nonblocking(true)?;
    pass_credentials(&socket)?;
    rustix::net::bind(&socket, &address).map_err(errno)?;
    Ok(socket)
}

pub use credmsg::{Address, Datagram};

/// Reads the next datagram waiting on `socket` (a `WouldBlock` error if
/// none does) into `buf`, with its sender's credentials and address.
/// `Ok(None)`: it came without credentials (`socket` lacks `SO_PASSCRED`)
/// and is dropped.
///
/// The control buffer holds the credentials and nothing more: descriptors
/// a sender passes (`SCM_RIGHTS`) do not fit, and the kernel closes them
/// (`MSG_CMSG_CLOEXEC` besides, should one ever fit).
pub fn recv_with_cred(socket: impl AsFd, buf: &mut [u8]) -> io::Result<Option<Datagram>> {
    credmsg::recv(socket.as_fd(), buf)
}

/// Sends `bytes` in one datagram to `to` without waiting: an error
/// (`WouldBlock`) if the receiver's queue or `socket`'s send buffer is full.
pub fn send_to(socket: impl AsFd, bytes: &[u8], to: &Address) -> io::Result<()> {
    credmsg::send(socket.as_fd(), bytes, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket bound in a fresh directory, and a client socket connected
    /// to it with `SO_PASSCRED` (so it has an address to be answered at).
    fn pair() -> (tempfile::TempDir, UnixDatagram, UnixDatagram) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d");
        let server = bind(&path).unwrap();
        let client = UnixDatagram::unbound().unwrap();
        pass_credentials(&client).unwrap();
        client.connect(&path).unwrap();
        (dir, server, client)
    }

    #[test]
    fn a_datagram_arrives_with_this_process_and_is_answered() {
        let (_dir, server, client) = pair();
        let mut buf = [0u8; 64];
        let e = recv_with_cred(&server, &mut buf).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        client.send(b"hello").unwrap();
        let d = recv_with_cred(&server, &mut buf).unwrap().unwrap();
        assert_eq!((&buf[..d.len], d.too_long), (&b"hello"[..], false));
        assert_eq!(d.cred.pid as u32, std::process::id());
        assert_eq!(d.cred.uid, rustix::process::getuid().as_raw());
        assert_eq!(d.cred.gid, rustix::process::getgid().as_raw());
        send_to(&server, b"answer", &d.from.unwrap()).unwrap();
        let n = client.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"answer");
    }

    #[test]
    fn a_datagram_longer_than_the_buffer_is_too_long() {
        let (_dir, server, client) = pair();
        client.send(&[b'x'; 100]).unwrap();
        let mut buf = [0u8; 64];
        let d = recv_with_cred(&server, &mut buf).unwrap().unwrap();
        assert!(d.too_long);
        assert_eq!(d.cred.pid as u32, std::process::id());
    }

    #[test]
    fn an_unbound_sender_has_no_address() {
        let (dir, server, _) = pair();
        let anonymous = UnixDatagram::unbound().unwrap();
        anonymous.send_to(b"x", dir.path().join("d")).unwrap();
        let d = recv_with_cred(&server, &mut [0u8; 8]).unwrap().unwrap();
        assert!(d.from.is_none());
        // The credentials are there all the same: the receiver asked.
        assert_eq!(d.cred.pid as u32, std::process::id());
    }

    #[test]
    fn a_path_too_long_for_a_socket_is_refused() {
        let long = Path::new("/tmp").join("x".repeat(200));
        let e = bind(&long).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
