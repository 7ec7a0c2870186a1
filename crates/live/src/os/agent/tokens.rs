//! The epoll tokens of the agent's loop: a task's is its id, a client's
//! its number with [`CLIENT`] set, and the signalfds' and sockets' the top
//! values.

/// The epoll token of the signalfd.
pub(super) const SIGNALS: u64 = u64::MAX;
/// The epoll token of the stream socket's listener.
pub(super) const LISTENER: u64 = u64::MAX - 1;
/// The epoll token of the datagram socket.
pub(super) const DATAGRAMS: u64 = u64::MAX - 2;
/// The epoll token of the steering's CPU timers.
pub(super) const TIMERS: u64 = u64::MAX - 3;
/// Tokens with this bit are clients; the others below it are tasks.
pub(super) const CLIENT: u64 = 1 << 62;
