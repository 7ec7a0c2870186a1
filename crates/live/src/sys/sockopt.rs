//! Socket options the agent sets.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// Sets the integer option `option` of level `SOL_SOCKET` on `socket`.
pub fn set(socket: impl AsFd, option: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` is a readable c_int and the length is its size.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&raw const value).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes a non-blocking stream socket's send buffer hold `bytes` more, so
/// that one answer that large is queued whole instead of failing part-way
/// (the agent never waits on a client). Past `net.core.wmem_max` this needs
/// CAP_NET_ADMIN (`SO_SNDBUFFORCE`); without it the buffer grows to that
/// maximum, and a longer answer still fails.
pub fn make_room(socket: impl AsFd, bytes: usize) -> io::Result<()> {
    // The kernel doubles the value for its bookkeeping and counts the bytes
    // queued already; twice the answer is room enough.
    let size = libc::c_int::try_from(bytes.saturating_mul(2)).unwrap_or(libc::c_int::MAX);
    set(&socket, libc::SO_SNDBUFFORCE, size).or_else(|_| set(&socket, libc::SO_SNDBUF, size))
}
