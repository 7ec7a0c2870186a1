//! Socket options the agent sets.

use rustix::net::sockopt::{set_socket_send_buffer_size, set_socket_send_buffer_size_force};
use std::io;
use std::os::fd::AsFd;

/// Makes a non-blocking stream socket's send buffer hold `bytes` more, so
/// that one answer that large is queued whole instead of failing part-way
/// (the agent never waits on a client). Past `net.core.wmem_max` this needs
/// CAP_NET_ADMIN (`SO_SNDBUFFORCE`); without it the buffer grows to that
/// maximum, and a longer answer still fails.
pub fn make_room(socket: impl AsFd, bytes: usize) -> io::Result<()> {
    // The kernel doubles the value for its bookkeeping and counts the bytes
    // queued already; twice the answer is room enough. (The option is a C
    // int.)
    let size = bytes.saturating_mul(2).min(libc::c_int::MAX as usize);
    set_socket_send_buffer_size_force(&socket, size)
        .or_else(|_| set_socket_send_buffer_size(&socket, size))
        .map_err(crate::io)
}
