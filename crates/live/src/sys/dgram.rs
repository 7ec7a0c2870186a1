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
//! std's ancillary-data API is still unstable, hence this.

use super::peercred::PeerCred;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixDatagram;
use std::path::Path;

/// Sets `SO_PASSCRED` on `socket`: every datagram it receives carries its
/// sender's credentials, and, if unbound, the kernel gives it an abstract
/// address of its own when it connects or sends (autobind), so that it can
/// be answered.
pub fn pass_credentials(socket: impl AsFd) -> io::Result<()> {
    super::sockopt::set(socket, libc::SO_PASSCRED, 1)
}

/// A datagram socket bound to `path`, non-blocking and close-on-exec, with
/// `SO_PASSCRED` set before it is bound: no datagram reaches it without its
/// sender's credentials. (std binds in the call that creates the socket.)
pub fn bind(path: &Path) -> io::Result<UnixDatagram> {
    let address = Address::of_path(path)?;
    let socket = UnixDatagram::unbound()?;
    socket.set_nonblocking(true)?;
    pass_credentials(&socket)?;
    // SAFETY: `address.raw` is a sockaddr_un whose first `address.len`
    // bytes hold the address.
    let rc = unsafe {
        libc::bind(
            socket.as_raw_fd(),
            (&raw const address.raw).cast(),
            address.len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(socket)
}

/// A Unix socket's address, as the kernel gave it (a path, or an abstract
/// name such as autobind's).
pub struct Address {
    raw: libc::sockaddr_un,
    len: libc::socklen_t,
}

impl Address {
    fn of_path(path: &Path) -> io::Result<Address> {
        let bytes = path.as_os_str().as_bytes();
        let mut raw = empty_sockaddr();
        if bytes.is_empty() || bytes.len() >= raw.sun_path.len() || bytes.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a Unix socket's path is 1 to {} bytes, without NUL",
                    raw.sun_path.len() - 1
                ),
            ));
        }
        for (to, &from) in raw.sun_path.iter_mut().zip(bytes) {
            *to = from as libc::c_char;
        }
        // The path and its NUL.
        let len = std::mem::offset_of!(libc::sockaddr_un, sun_path) + bytes.len() + 1;
        Ok(Address {
            raw,
            len: len as libc::socklen_t,
        })
    }
}

fn empty_sockaddr() -> libc::sockaddr_un {
    libc::sockaddr_un {
        sun_family: libc::AF_UNIX as libc::sa_family_t,
        sun_path: [0; 108],
    }
}

/// A datagram read with [`recv_with_cred`].
pub struct Datagram {
    /// Its bytes at the start of the buffer.
    pub len: usize,
    /// Whether it was longer than the buffer: the rest is lost, and it is
    /// to be refused as too long.
    pub too_long: bool,
    /// Its sender's credentials, as the kernel attached them.
    pub cred: PeerCred,
    /// Where to answer: the sender's address, `None` if it has none (an
    /// unbound socket without `SO_PASSCRED`).
    pub from: Option<Address>,
}

/// One `SCM_CREDENTIALS` control message as the kernel lays it out: the
/// header, then the credentials at `CMSG_DATA` (the header's size, a
/// multiple of its alignment, on 32- and 64-bit alike).
#[repr(C)]
struct CredMessage {
    header: libc::cmsghdr,
    cred: libc::ucred,
}

/// Reads the next datagram waiting on `socket` (a `WouldBlock` error if
/// none does) into `buf`, with its sender's credentials and address.
/// `Ok(None)`: it came without credentials (`socket` lacks `SO_PASSCRED`)
/// and is dropped.
///
/// The control buffer holds the credentials and nothing more: descriptors
/// a sender passes (`SCM_RIGHTS`) do not fit, and the kernel closes them
/// (`MSG_CMSG_CLOEXEC` besides, should one ever fit).
pub fn recv_with_cred(socket: impl AsFd, buf: &mut [u8]) -> io::Result<Option<Datagram>> {
    let mut from = empty_sockaddr();
    let mut control = CredMessage {
        header: libc::cmsghdr {
            cmsg_len: 0,
            cmsg_level: 0,
            cmsg_type: 0,
        },
        cred: libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        },
    };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut msg = libc::msghdr {
        msg_name: (&raw mut from).cast(),
        msg_namelen: size_of::<libc::sockaddr_un>() as libc::socklen_t,
        msg_iov: &raw mut iov,
        msg_iovlen: 1,
        msg_control: (&raw mut control).cast(),
        msg_controllen: size_of::<CredMessage>(),
        msg_flags: 0,
    };
    // SAFETY: `msg` points at a writable address, one iovec over `buf` and
    // a control buffer, each with its true length, all alive for the call.
    let n = unsafe {
        libc::recvmsg(
            socket.as_fd().as_raw_fd(),
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let h = &control.header;
    let cred_len = std::mem::offset_of!(CredMessage, cred) + size_of::<libc::ucred>();
    if msg.msg_controllen < cred_len
        || h.cmsg_level != libc::SOL_SOCKET
        || h.cmsg_type != libc::SCM_CREDENTIALS
        || h.cmsg_len < cred_len
    {
        return Ok(None);
    }
    let c = control.cred;
    // An unbound sender's address is the family alone.
    let named = msg.msg_namelen as usize > std::mem::offset_of!(libc::sockaddr_un, sun_path);
    Ok(Some(Datagram {
        len: n as usize,
        too_long: msg.msg_flags & libc::MSG_TRUNC != 0,
        cred: PeerCred {
            pid: c.pid,
            uid: c.uid,
            gid: c.gid,
        },
        from: named.then_some(Address {
            raw: from,
            len: msg.msg_namelen,
        }),
    }))
}

/// Sends `bytes` in one datagram to `to` without waiting: an error
/// (`WouldBlock`) if the receiver's queue or `socket`'s send buffer is full.
pub fn send_to(socket: impl AsFd, bytes: &[u8], to: &Address) -> io::Result<()> {
    // SAFETY: `bytes` is readable for its length and `to.raw` holds an
    // address of `to.len` bytes.
    let n = unsafe {
        libc::sendto(
            socket.as_fd().as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT,
            (&raw const to.raw).cast(),
            to.len,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
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
        // SAFETY: getuid and getgid have no arguments.
        assert_eq!(d.cred.uid, unsafe { libc::getuid() });
        // SAFETY: as above.
        assert_eq!(d.cred.gid, unsafe { libc::getgid() });
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
