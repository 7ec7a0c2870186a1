//! A datagram received with its sender's credentials and address, and an
//! answer sent back to that address (`recvmsg` with `SCM_CREDENTIALS`,
//! `sendto`), by hand because neither crate does it soundly for a hostile
//! sender: rustix's `UCred` holds the pid as a non-zero integer, and the
//! kernel reports 0 for a sender outside this process's pid namespace (an
//! invalid value, so undefined behaviour); nix's `UnixAddr` copies the
//! address length the kernel reports, one byte more than a `sockaddr_un`
//! when a sender's path fills `sun_path` without a NUL, into one.
#![allow(unsafe_code)]

use crate::peercred::PeerCred;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// A Unix socket's address, as the kernel gave it (a path, or an abstract
/// name such as autobind's).
pub struct Address {
    raw: libc::sockaddr_un,
    /// At most the size of `raw`.
    len: libc::socklen_t,
}

fn empty_sockaddr() -> libc::sockaddr_un {
    libc::sockaddr_un {
        sun_family: libc::AF_UNIX as libc::sa_family_t,
        sun_path: [0; 108],
    }
}

/// One `SCM_CREDENTIALS` control message as the kernel lays it out: the
/// header, then the credentials at `CMSG_DATA` (the header's size, a
/// multiple of its alignment, on 32- and 64-bit alike).
#[repr(C)]
struct CredMessage {
    header: libc::cmsghdr,
    cred: libc::ucred,
}

/// A datagram read with [`crate::dgram::recv_with_cred`].
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

/// See [`crate::dgram::recv_with_cred`].
pub(crate) fn recv(socket: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Option<Datagram>> {
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
    // a control buffer, each with its true length, all alive for the call;
    // the kernel writes no more than those lengths.
    let n = unsafe {
        libc::recvmsg(
            socket.as_raw_fd(),
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
    // An unbound sender's address is the family alone. The kernel reports
    // the whole length even where it copied less (a path that fills
    // `sun_path`, with no room for its NUL): only what it copied is kept.
    let named = msg.msg_namelen as usize > std::mem::offset_of!(libc::sockaddr_un, sun_path);
    let len = msg
        .msg_namelen
        .min(size_of::<libc::sockaddr_un>() as libc::socklen_t);
    Ok(Some(Datagram {
        len: n as usize,
        too_long: msg.msg_flags & libc::MSG_TRUNC != 0,
        cred: PeerCred {
            pid: c.pid,
            uid: c.uid,
            gid: c.gid,
        },
        from: named.then_some(Address { raw: from, len }),
    }))
}

/// See [`crate::dgram::send_to`].
pub(crate) fn send(socket: BorrowedFd<'_>, bytes: &[u8], to: &Address) -> io::Result<()> {
    // SAFETY: `bytes` is readable for its length and `to.raw` holds an
    // address of `to.len` bytes, no more than its size.
    let n = unsafe {
        libc::sendto(
            socket.as_raw_fd(),
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
    use std::os::fd::AsFd;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::net::UnixDatagram;

    /// A sender bound to a path that fills `sun_path`, with no room for a
    /// NUL (std and rustix refuse to bind one; the kernel does not), is
    /// reported one byte longer than a `sockaddr_un`: the answer goes to
    /// what the kernel copied, and reaches it.
    #[test]
    fn a_sender_whose_path_fills_sun_path_is_answered() {
        let dir = tempfile::tempdir().unwrap();
        let server_path = dir.path().join("s");
        let server = crate::dgram::bind(&server_path).unwrap();
        let mut addr = empty_sockaddr();
        let prefix = dir.path().as_os_str().as_bytes().len() + 1;
        let long = dir.path().join("x".repeat(addr.sun_path.len() - prefix));
        let bytes = long.as_os_str().as_bytes();
        assert_eq!(bytes.len(), addr.sun_path.len());
        for (to, &from) in addr.sun_path.iter_mut().zip(bytes) {
            *to = from as libc::c_char;
        }
        let client = UnixDatagram::unbound().unwrap();
        // SAFETY: `addr` is a sockaddr_un of the size passed, alive for the
        // call.
        let rc = unsafe {
            libc::bind(
                client.as_raw_fd(),
                (&raw const addr).cast(),
                size_of::<libc::sockaddr_un>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
        client.send_to(b"x", &server_path).unwrap();
        let mut buf = [0u8; 8];
        let d = recv(server.as_fd(), &mut buf).unwrap().unwrap();
        let from = d.from.unwrap();
        assert_eq!(from.len as usize, size_of::<libc::sockaddr_un>());
        send(server.as_fd(), b"answer", &from).unwrap();
        let n = client.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"answer");
    }
}
