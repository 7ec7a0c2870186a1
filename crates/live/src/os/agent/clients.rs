//! The agent's clients: connections to the stream socket, datagrams on
//! the datagram socket, and the refusals they earn.

use super::core::{Agent, Conn, MAX_CLIENTS, Via};
use super::event::{Event, REFUSALS_LOGGED_PER_SECOND};
use super::protocol::{self, MAX_REQUEST, Response};
use super::tokens::CLIENT;
use crate::sys::clock;
use crate::sys::dgram;
use crate::sys::peercred::{self, PeerCred, peer_cred};
use crate::sys::sockopt;
use faasched_model::{Nanos, SEC, Steer};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};

/// How long a connection must have been idle to make room for a new one.
const IDLE_EVICTABLE: Nanos = SEC;
/// Most datagrams answered in one wake-up: if more wait, the socket stays
/// ready and the next wait returns at once, with whatever else is ready
/// then, so no sender holds up the rest of the loop.
const DATAGRAMS_PER_WAKEUP: usize = 64;

impl<P: Steer + ?Sized, L: FnMut(Event<'_>)> Agent<'_, '_, P, L> {
    /// Accepts one client: if more wait, the listener stays ready and the
    /// next wait returns at once, without the failed `accept` that would
    /// otherwise end each wake-up.
    pub(super) fn accept(&mut self, listener: &UnixListener) {
        let stream = match peercred::accept(listener) {
            Ok(stream) => stream,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return,
            Err(e) => return self.warn(format!("accepting a client: {e}")),
        };
        if self.clients.len() >= MAX_CLIENTS && !self.evict_idlest() {
            return; // closed: the client sees its connection end
        }
        let Ok(cred) = peer_cred(&stream) else {
            return;
        };
        let id = self.next_client;
        self.next_client += 1;
        if self.poll.add(stream.as_fd(), CLIENT | id).is_ok() {
            let (buf, active) = (Vec::new(), clock::monotonic());
            self.clients.insert(
                id,
                Conn {
                    stream,
                    cred,
                    buf,
                    active,
                },
            );
            // A client writes as soon as it connects, and a one-shot one
            // (`faasched exec`) shuts its side right after: read now, and
            // the request and its end are often served in this one wake-up.
            self.converse(id);
        }
    }

    /// Closes the connection idle the longest if it has been idle
    /// [`IDLE_EVICTABLE`] or more; whether it did.
    fn evict_idlest(&mut self) -> bool {
        let now = clock::monotonic();
        let idlest = self
            .clients
            .iter()
            .min_by_key(|(_, c)| c.active)
            .filter(|(_, c)| now.saturating_sub(c.active) >= IDLE_EVICTABLE)
            .map(|(&id, _)| id);
        // Closed with its descriptor, which leaves the epoll set with it.
        idlest.is_some_and(|id| self.clients.remove(&id).is_some())
    }

    /// Reads what client `id` sent, answers each whole line, and closes the
    /// connection at its end, on an error, or on a request too long.
    pub(super) fn converse(&mut self, id: u64) {
        let Some(mut conn) = self.clients.remove(&id) else {
            return;
        };
        // A connection closed is out of the epoll set with its descriptor.
        if self.converse_with(&mut conn) {
            self.clients.insert(id, conn);
        }
    }

    /// Whether the connection stays open. Each whole request line is
    /// answered in order; one found longer than [`MAX_REQUEST`] is refused
    /// unread and ends the connection (after the lines before it).
    fn converse_with(&mut self, conn: &mut Conn) -> bool {
        let mut open = true;
        let mut chunk = [0u8; 1024];
        // Until a request's worth is buffered: the first line's newline, if
        // it is within the limit, is then in the buffer.
        while conn.buf.len() <= MAX_REQUEST {
            match conn.stream.read(&mut chunk) {
                Ok(0) => {
                    open = false;
                    break;
                }
                Ok(n) => {
                    conn.buf.extend_from_slice(&chunk[..n]);
                    conn.active = clock::monotonic();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => return false,
            }
        }
        let mut start = 0;
        loop {
            match next_request(&conn.buf[start..]) {
                Next::Request(len) => {
                    let line = &conn.buf[start..start + len];
                    let response = self.answer(conn.cred, line, Via::Stream(&conn.stream));
                    start += len + 1;
                    if !reply(&mut conn.stream, &response) {
                        return false;
                    }
                }
                Next::TooLong => {
                    let response = self.too_long(conn.cred);
                    reply(&mut conn.stream, &response);
                    return false;
                }
                // The rest comes with a later wake-up (the socket is
                // watched while it has anything to read).
                Next::Partial => break,
            }
        }
        conn.buf.drain(..start);
        open
    }

    /// Answers the requests waiting on the datagram socket, each with one
    /// datagram to its sender: none if the sender has no address, or if its
    /// queue or the agent's send buffer is full (the agent never waits on a
    /// client). At most [`DATAGRAMS_PER_WAKEUP`]. A user past its rate
    /// ([`super::throttle`]) has its datagrams dropped unanswered.
    pub(super) fn datagrams(&mut self, socket: &UnixDatagram) {
        // A request and its newline, and a byte more to tell a longer one.
        let mut buf = [0u8; MAX_REQUEST + 1];
        for _ in 0..DATAGRAMS_PER_WAKEUP {
            let datagram = match dgram::recv_with_cred(socket, &mut buf) {
                Ok(Some(d)) => d,
                // No credentials: dropped (it does not happen: SO_PASSCRED
                // is set before the socket is bound).
                Ok(None) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.warn(format!("reading a request datagram: {e}")),
            };
            if !self.throttle.admit(datagram.cred.uid, clock::monotonic()) {
                self.refuse(
                    datagram.cred,
                    "datagrams past the user's rate, dropped unanswered",
                );
                continue;
            }
            let response = match datagram_request(&buf[..datagram.len], datagram.too_long) {
                None => self.too_long(datagram.cred),
                Some(request) => self.answer(datagram.cred, request, Via::Datagram),
            };
            if let Some(to) = &datagram.from
                && let Ok(line) = protocol::line(&response)
            {
                let _ = dgram::send_to(socket, &line, to);
            }
        }
    }

    /// Counts a refusal and logs it, unless
    /// [`REFUSALS_LOGGED_PER_SECOND`] were logged this second already.
    pub(super) fn refuse(&mut self, client: PeerCred, why: &str) {
        self.summary.refused += 1;
        let now = clock::monotonic();
        let (since, logged, unlogged) = &mut self.refusals;
        if now >= *since + SEC {
            if *unlogged > 0 {
                (self.log)(Event::Unlogged {
                    refusals: *unlogged,
                });
            }
            (*since, *logged, *unlogged) = (now, 0, 0);
        }
        if *logged < REFUSALS_LOGGED_PER_SECOND {
            *logged += 1;
            (self.log)(Event::Refused { client, why });
        } else {
            *unlogged += 1;
        }
    }

    /// Refuses a request longer than [`MAX_REQUEST`].
    fn too_long(&mut self, cred: PeerCred) -> Response {
        let why = format!("request longer than {MAX_REQUEST} bytes");
        self.refuse(cred, &why);
        Response::error(why)
    }
}

/// What a connection's buffer starts with.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// A request of this many bytes, its newline after them.
    Request(usize),
    /// More than [`MAX_REQUEST`] bytes before any newline.
    TooLong,
    /// The start of a request, up to [`MAX_REQUEST`] bytes so far.
    Partial,
}

/// What `buf` starts with. A request is a line of at most [`MAX_REQUEST`]
/// bytes before its newline: its newline is among the first
/// `MAX_REQUEST + 1` bytes, or it is too long.
fn next_request(buf: &[u8]) -> Next {
    match buf.iter().take(MAX_REQUEST + 1).position(|&b| b == b'\n') {
        Some(len) => Next::Request(len),
        None if buf.len() > MAX_REQUEST => Next::TooLong,
        None => Next::Partial,
    }
}

/// The request a datagram holds (its line, the newline optional), or `None`
/// if it is longer than [`MAX_REQUEST`] (`truncated`: it did not fit the
/// buffer, which holds a request, its newline and a byte more).
fn datagram_request(datagram: &[u8], truncated: bool) -> Option<&[u8]> {
    let line = datagram.strip_suffix(b"\n").unwrap_or(datagram);
    (!truncated && line.len() <= MAX_REQUEST).then_some(line)
}

/// Writes one response line; `false` if the client is gone or does not read
/// (the socket is non-blocking: the agent never waits on a client). A long
/// line (a status of thousands of processes) first gets room in the
/// socket's send buffer, which it would not fit by default.
fn reply(stream: &mut UnixStream, response: &Response) -> bool {
    let Ok(line) = protocol::line(response) else {
        return false;
    };
    if line.len() > ROOMY_REPLY {
        let _ = sockopt::make_room(&*stream, line.len());
    }
    stream.write_all(&line).is_ok()
}

/// Replies up to this long fit any socket's default send buffer.
pub(super) const ROOMY_REPLY: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_request_line_is_at_most_the_limit_before_its_newline() {
        let line = |len: usize, end: &[u8]| [vec![b' '; len], end.to_vec()].concat();
        assert_eq!(
            next_request(&line(MAX_REQUEST, b"\n")),
            Next::Request(MAX_REQUEST)
        );
        assert_eq!(
            next_request(&line(MAX_REQUEST, b"\nxx")),
            Next::Request(MAX_REQUEST)
        );
        assert_eq!(next_request(&line(MAX_REQUEST, b"")), Next::Partial);
        assert_eq!(next_request(&line(MAX_REQUEST + 1, b"")), Next::TooLong);
        assert_eq!(next_request(&line(MAX_REQUEST + 1, b"\n")), Next::TooLong);
        assert_eq!(next_request(b""), Next::Partial);
        assert_eq!(next_request(b"\n"), Next::Request(0));
        let exact = line(MAX_REQUEST, b"");
        assert_eq!(datagram_request(&exact, false), Some(&exact[..]));
        assert_eq!(
            datagram_request(&line(MAX_REQUEST, b"\n"), false),
            Some(&exact[..])
        );
        assert_eq!(datagram_request(&line(MAX_REQUEST + 1, b""), false), None);
        assert_eq!(datagram_request(&line(MAX_REQUEST, b"\n"), true), None);
    }

    #[test]
    fn a_reply_longer_than_the_send_buffer_is_queued_whole() {
        let (mut agent_end, mut client) = UnixStream::pair().unwrap();
        agent_end.set_nonblocking(true).unwrap();
        // A status of thousands of processes: far past the default buffer.
        let long = Response::error("x".repeat(600_000));
        assert!(reply(&mut agent_end, &long));
        drop(agent_end);
        let mut got = Vec::new();
        client.read_to_end(&mut got).unwrap();
        assert_eq!(got, protocol::line(&long).unwrap());
    }
}
