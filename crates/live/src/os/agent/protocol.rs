//! The agent's wire format, and a client for it.
//!
//! Requests and answers are JSON objects, one a line. The agent has two
//! Unix sockets for them. On its stream socket a client connects and writes
//! any number of requests; the agent answers each with a line, in order. On
//! its datagram socket beside it ([`datagram_path`]) a client sends one
//! `register` or `unregister` in one datagram and gets one datagram back,
//! at its own address: for the agent, one read and one send, with no
//! connection to accept, watch and close; [`Client::register`] and
//! [`Client::unregister`] use it. docs/LIVE.md ("Protocol") is the
//! reference; in short:
//!
//! ```text
//! {"op":"register","pid":4242,"inode":9120,"function":"resize"} -> {"ok":true,"task":7}
//! {"op":"unregister","pid":4242}                     -> {"ok":true,"task":7}
//! {"op":"status"}   (stream socket only)             -> {"ok":true,"status":{...}}
//! anything refused or malformed                      -> {"ok":false,"error":"..."}
//! ```
//!
//! Unknown operations and unknown fields are malformed, in every request.
//!
//! # Pinning the process a `register` names
//!
//! A pid number alone does not name a process for long: the process may
//! exit, be reaped and have its pid handed to another between the client
//! writing the request and the agent reading it, and the agent would then
//! steer that other process (any process at all, for a root client). So a
//! `register` pins its process by one of:
//!
//! 1. `inode`: the pidfs inode of the process (`st_ino` of `fstat` on a
//!    pidfd of it, Linux 6.9+), which the client reads when it chooses the
//!    process. No two processes of one boot share one (64-bit kernels). The
//!    agent opens its own pidfd on `pid` and steers the process only if that
//!    pidfd has this inode; otherwise the process the client chose has
//!    exited and its pid names another, and the request is refused.
//!    [`Client::register`] sends it, as `faasched exec` (for itself) and
//!    `faasched agent register` do.
//! 2. On the stream socket only, without `inode`, and only when `pid` is
//!    the client's own (the process that connected): the agent takes the
//!    client's pidfd from the kernel (`SO_PEERPIDFD`, recorded at
//!    `connect`, Linux 6.5+) and steers the process only if its pidfd on
//!    `pid` is of that process.
//!
//! A `register` with neither (a bare pid, as clients before this rule sent
//! on the datagram socket, or a stream client naming another process) is
//! refused, saying how to pin it: no path trusts a pid number that may have
//! been recycled. `unregister` needs no pin: it names a process the agent
//! already holds by its pidfd.

use crate::sys::dgram;
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The longest request the agent reads, in bytes, not counting the newline
/// that ends it: a line on the stream socket, or a datagram (which may end
/// in one newline more). Requests are a few dozen bytes. A request of
/// exactly this many is read; a longer one is refused whole, unread, and a
/// longer line ends its connection.
pub const MAX_REQUEST: usize = 4096;

/// The longest function name, in bytes.
pub const MAX_FUNCTION_NAME: usize = 128;

/// Whether `name` may name a function: 1 to [`MAX_FUNCTION_NAME`] bytes, no
/// control characters (it is logged and shown in a table). If not, why.
pub(crate) fn check_function_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_FUNCTION_NAME || name.chars().any(char::is_control) {
        return Err(format!(
            "a function name is 1 to {MAX_FUNCTION_NAME} bytes, no control characters"
        ));
    }
    Ok(())
}

/// The datagram socket of the agent whose stream socket is `socket`: beside
/// it, with the extension `.dgram`.
pub fn datagram_path(socket: &Path) -> PathBuf {
    socket.with_extension("dgram")
}

/// `value` as the protocol writes it: its JSON and a newline. A request or
/// an answer is one such line on the stream socket, and one datagram on the
/// datagram socket.
pub(crate) fn line(value: &impl Serialize) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    Ok(line)
}

/// A client's request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum Request {
    /// Steer process `pid`, an invocation of `function`, until it exits or
    /// is unregistered.
    Register {
        /// The process.
        pid: libc::pid_t,
        /// Its pidfs inode, read by the client when it chose the process:
        /// what pins `pid` to it (see the module docs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        inode: Option<u64>,
        /// Its function's name.
        function: String,
    },
    /// The invocation running as `pid` is over (the process may live on, as
    /// a warm container does): learn from it and give the process back what
    /// it ran under before.
    Unregister {
        /// The process.
        pid: libc::pid_t,
    },
    /// What the agent steers. (A variant with no fields rather than a unit
    /// one: serde lets a unit variant of an internally tagged enum ignore
    /// unknown fields, and every request refuses them.)
    Status {},
}

/// The agent's answer to one request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Whether the request was carried out.
    pub ok: bool,
    /// The task of a registered or unregistered process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<u64>,
    /// The answer to `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// Why the request was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Response {
    /// A refusal.
    pub fn error(why: impl Into<String>) -> Response {
        Response {
            error: Some(why.into()),
            ..Response::default()
        }
    }

    /// The answer for a task.
    pub fn task(task: u64) -> Response {
        Response {
            ok: true,
            task: Some(task),
            ..Response::default()
        }
    }
}

/// What the agent steers and how it is doing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The agent's pid.
    pub pid: u32,
    /// The policy it runs.
    pub policy: String,
    /// The socket it listens on.
    pub socket: String,
    /// Time since it started, µs.
    pub uptime_us: u64,
    /// CPU time it has used, µs.
    pub cpu_us: u64,
    /// Processes handed over since it started (re-adopted ones included).
    pub registered: u64,
    /// Invocations finished (exited or unregistered).
    pub finished: u64,
    /// Of those, how many exited and were reaped by their parent before the
    /// agent read their final CPU time, so their outcome holds an earlier
    /// reading.
    pub estimated: u64,
    /// Requests refused.
    pub refused: u64,
    /// Per function, in order of first registration.
    pub functions: Vec<FunctionStatus>,
    /// The processes steered now, by task.
    pub processes: Vec<ProcessStatus>,
}

/// One function.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionStatus {
    /// Its name.
    pub name: String,
    /// Processes steered now.
    pub live: u64,
    /// Invocations finished.
    pub finished: u64,
    /// Mean CPU time of the finished ones, µs.
    pub mean_cpu_us: u64,
    /// The attributes its latest process got when it was handed over, as
    /// the kernel reported them: how the policy ranks the function (a
    /// learned rank shows as a nice value, a learned slice as the slice).
    pub latest: Option<Sched>,
}

/// One steered process.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessStatus {
    /// Its pid.
    pub pid: libc::pid_t,
    /// Its task.
    pub task: u64,
    /// Its function.
    pub function: String,
    /// The uid of the client that handed it over.
    pub uid: u32,
    /// Time since it was handed over, µs.
    pub age_us: u64,
    /// CPU time since it was handed over, µs.
    pub cpu_us: u64,
    /// What it runs under now, read from the kernel.
    pub sched: Option<Sched>,
}

/// A task's scheduling attributes as the kernel reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sched {
    /// `SCHED_OTHER`, `SCHED_FIFO`, ...
    pub class: String,
    /// Real-time priority (0 in the fair classes).
    pub priority: u32,
    /// Nice value.
    pub nice: i32,
    /// The fair slice, µs.
    pub slice_us: u64,
}

impl From<crate::sys::sched::Current> for Sched {
    fn from(c: crate::sys::sched::Current) -> Sched {
        let class = match c.policy {
            libc::SCHED_OTHER => "SCHED_OTHER",
            libc::SCHED_FIFO => "SCHED_FIFO",
            libc::SCHED_RR => "SCHED_RR",
            libc::SCHED_BATCH => "SCHED_BATCH",
            libc::SCHED_IDLE => "SCHED_IDLE",
            6 => "SCHED_DEADLINE",
            _ => "unknown",
        };
        Sched {
            class: class.into(),
            priority: c.priority,
            nice: c.nice,
            slice_us: c.slice / 1000,
        }
    }
}

/// Why a client's call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No agent answers on the socket.
    #[error(
        "cannot reach the faasched agent at {path}: {error} (is `faasched agent` running there?)"
    )]
    Connect {
        /// The socket.
        path: PathBuf,
        /// The error (not a `source`: the message holds it).
        error: io::Error,
    },
    /// The connection failed mid-call.
    #[error("talking to the faasched agent at {path}: {error}")]
    Io {
        /// The socket.
        path: PathBuf,
        /// The error (not a `source`: the message holds it).
        error: io::Error,
    },
    /// The agent answered with something that is not a response.
    #[error("the faasched agent at {path} answered {answer:?}, not a response")]
    Malformed {
        /// The socket.
        path: PathBuf,
        /// The answer.
        answer: String,
    },
    /// The process to hand over could not be pinned (no such process, or
    /// one that is a thread, not a process).
    #[error("cannot hand over pid {pid}: {why}")]
    Pin {
        /// The process.
        pid: libc::pid_t,
        /// Why, in words.
        why: String,
    },
    /// The agent refused the request.
    #[error("the faasched agent refused: {0}")]
    Refused(String),
}

/// The pidfs inode of process `pid` now: what pins a `register` to it.
pub fn pidfs_inode(pid: libc::pid_t) -> Result<u64, ClientError> {
    let pin = |why| ClientError::Pin { pid, why };
    let pidfd = crate::sys::process::pidfd_open(pid).map_err(|e| {
        pin(match e.raw_os_error() {
            Some(libc::ESRCH) => format!("no process {pid}"),
            Some(libc::EINVAL) => {
                format!("{pid} is a thread, not a process: hand over its process id")
            }
            _ => format!("pidfd_open({pid}): {e}"),
        })
    })?;
    crate::sys::pidfd::inode(std::os::fd::AsFd::as_fd(&pidfd))
        .map_err(|e| pin(format!("fstat of a pidfd: {e}")))
}

/// How long a client waits for an answer: the agent answers in
/// microseconds, so this only bounds a wedged or stopped one.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest answer datagram a client reads, in bytes: an answer to
/// `register` or `unregister` quotes at most its request (up to
/// [`MAX_REQUEST`]) and a sentence.
const MAX_ANSWER: usize = 4 * MAX_REQUEST;

/// A connection to the agent.
pub struct Client {
    path: PathBuf,
    reader: BufReader<UnixStream>,
}

impl Client {
    /// Connects to the agent listening on `path`.
    pub fn connect(path: &Path) -> Result<Client, ClientError> {
        let connect = |error| ClientError::Connect {
            path: path.to_path_buf(),
            error,
        };
        let stream = UnixStream::connect(path).map_err(connect)?;
        stream
            .set_read_timeout(Some(ANSWER_TIMEOUT))
            .map_err(connect)?;
        Ok(Client {
            path: path.to_path_buf(),
            reader: BufReader::new(stream),
        })
    }

    /// Sends `request` and waits for the answer; a refusal is an error.
    pub fn call(&mut self, request: &Request) -> Result<Response, ClientError> {
        self.send(request)?;
        self.receive()
    }

    fn io(&self) -> impl FnOnce(io::Error) -> ClientError + use<> {
        let path = self.path.clone();
        move |error| ClientError::Io { path, error }
    }

    fn send(&mut self, request: &Request) -> Result<(), ClientError> {
        let line = line(request).map_err(self.io())?;
        let io = self.io();
        self.reader.get_mut().write_all(&line).map_err(io)
    }

    fn receive(&mut self) -> Result<Response, ClientError> {
        let mut answer = String::new();
        let io = self.io();
        if self.reader.read_line(&mut answer).map_err(io)? == 0 {
            return Err(self.io()(io::ErrorKind::UnexpectedEof.into()));
        }
        parse(&self.path, answer.as_bytes())
    }

    /// Connects, sends `request`, says it will send nothing more, and waits
    /// for the answer: the agent then reads the request and the end of the
    /// connection in one go.
    pub fn once(path: &Path, request: &Request) -> Result<Response, ClientError> {
        let mut client = Client::connect(path)?;
        client.send(request)?;
        client
            .reader
            .get_ref()
            .shutdown(std::net::Shutdown::Write)
            .map_err(|error| ClientError::Io {
                path: path.to_path_buf(),
                error,
            })?;
        client.receive()
    }

    /// Sends `request` in one datagram to the datagram socket of the agent
    /// on `path` and waits for the one datagram that answers it: the
    /// cheapest call for the agent. The client's socket is connected to the
    /// agent's, so no other process can send it an answer.
    fn datagram(path: &Path, request: &Request) -> Result<Response, ClientError> {
        let to = datagram_path(path);
        let io = |error| ClientError::Io {
            path: path.to_path_buf(),
            error,
        };
        let line = line(request).map_err(io)?;
        let socket = UnixDatagram::unbound().map_err(io)?;
        // The kernel then gives the socket an address of its own at
        // `connect` (autobind), and the answer comes there.
        dgram::pass_credentials(&socket).map_err(io)?;
        socket.connect(&to).map_err(|e| ClientError::Connect {
            path: path.to_path_buf(),
            error: io::Error::new(e.kind(), format!("{}: {e}", to.display())),
        })?;
        // Sending waits while the agent's queue is full (a stopped agent's
        // fills up): bounded as the wait for the answer is.
        socket.set_write_timeout(Some(ANSWER_TIMEOUT)).map_err(io)?;
        socket.set_read_timeout(Some(ANSWER_TIMEOUT)).map_err(io)?;
        socket.send(&line).map_err(io)?;
        let mut answer = vec![0; MAX_ANSWER];
        let n = socket.recv(&mut answer).map_err(io)?;
        parse(path, &answer[..n])
    }

    /// Hands process `pid` over as an invocation of `function` to the agent
    /// on `path` (on its datagram socket); its task. The request is pinned
    /// to the process `pid` names now, by its pidfs inode ([`pidfs_inode`]):
    /// if that process exits and its pid is reused before the agent reads
    /// the request, the agent refuses it rather than steer another process.
    pub fn register(path: &Path, pid: libc::pid_t, function: &str) -> Result<u64, ClientError> {
        let request = Request::Register {
            pid,
            inode: Some(pidfs_inode(pid)?),
            function: function.into(),
        };
        Ok(Client::datagram(path, &request)?.task.unwrap_or_default())
    }

    /// Ends the invocation running as `pid` (on the datagram socket of the
    /// agent on `path`); its task.
    pub fn unregister(path: &Path, pid: libc::pid_t) -> Result<u64, ClientError> {
        let request = Request::Unregister { pid };
        Ok(Client::datagram(path, &request)?.task.unwrap_or_default())
    }

    /// What the agent on `path` steers.
    pub fn status(path: &Path) -> Result<Status, ClientError> {
        Client::once(path, &Request::Status {})?
            .status
            .ok_or_else(|| ClientError::Malformed {
                path: path.to_path_buf(),
                answer: "a status response without a status".into(),
            })
    }
}

/// An answer from the agent on `path`; a refusal is an error.
fn parse(path: &Path, answer: &[u8]) -> Result<Response, ClientError> {
    let response: Response =
        serde_json::from_slice(answer).map_err(|_| ClientError::Malformed {
            path: path.to_path_buf(),
            answer: String::from_utf8_lossy(answer).trim_end().to_string(),
        })?;
    match response.ok {
        true => Ok(response),
        false => Err(ClientError::Refused(
            response.error.unwrap_or_else(|| "no reason given".into()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_in_the_documented_form() {
        let cases = [
            (
                Request::Register {
                    pid: 4242,
                    inode: Some(9120),
                    function: "resize".into(),
                },
                r#"{"op":"register","pid":4242,"inode":9120,"function":"resize"}"#,
            ),
            (
                Request::Register {
                    pid: 4242,
                    inode: None,
                    function: "resize".into(),
                },
                r#"{"op":"register","pid":4242,"function":"resize"}"#,
            ),
            (
                Request::Unregister { pid: 4242 },
                r#"{"op":"unregister","pid":4242}"#,
            ),
            (Request::Status {}, r#"{"op":"status"}"#),
        ];
        for (request, text) in cases {
            assert_eq!(serde_json::to_string(&request).unwrap(), text);
            assert_eq!(serde_json::from_str::<Request>(text).unwrap(), request);
        }
    }

    #[test]
    fn malformed_requests_are_rejected() {
        for bad in [
            r#"{"op":"reboot"}"#,
            r#"{"op":"register","pid":1}"#,
            r#"{"op":"register","pid":"1","function":"f"}"#,
            r#"{"op":"register","pid":1,"inode":-1,"function":"f"}"#,
            r#"{"op":"register","pid":1,"function":"f","uid":0}"#,
            r#"{"op":"unregister","pid":1,"function":"f"}"#,
            r#"{"op":"status","pad":"x"}"#,
            r#"{"pid":1}"#,
            "register 1 f",
        ] {
            assert!(serde_json::from_str::<Request>(bad).is_err(), "{bad}");
        }
        // An unknown field is named, whatever the operation.
        for (bad, field) in [
            (r#"{"op":"status","pad":"x"}"#, "pad"),
            (r#"{"op":"unregister","pid":1,"function":"f"}"#, "function"),
            (r#"{"op":"register","pid":1,"function":"f","uid":0}"#, "uid"),
        ] {
            let e = serde_json::from_str::<Request>(bad)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("unknown field `{field}`")),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn responses_carry_only_what_they_have() {
        assert_eq!(
            serde_json::to_string(&Response::task(7)).unwrap(),
            r#"{"ok":true,"task":7}"#
        );
        assert_eq!(
            serde_json::to_string(&Response::error("no process 9")).unwrap(),
            r#"{"ok":false,"error":"no process 9"}"#
        );
        let status = Response {
            ok: true,
            status: Some(Status {
                policy: "alps".into(),
                functions: vec![FunctionStatus {
                    name: "resize".into(),
                    latest: Some(Sched {
                        class: "SCHED_OTHER".into(),
                        nice: -5,
                        slice_us: 3000,
                        ..Sched::default()
                    }),
                    ..FunctionStatus::default()
                }],
                ..Status::default()
            }),
            ..Response::default()
        };
        let text = serde_json::to_string(&status).unwrap();
        assert_eq!(serde_json::from_str::<Response>(&text).unwrap(), status);
    }

    #[test]
    fn a_client_pins_the_process_it_hands_over_or_says_why_not() {
        let me = std::process::id() as libc::pid_t;
        let pidfd = crate::sys::process::pidfd_open(me).unwrap();
        let inode = crate::sys::pidfd::inode(std::os::fd::AsFd::as_fd(&pidfd)).unwrap();
        assert_eq!(pidfs_inode(me).unwrap(), inode);
        // No process has the largest pid (above the kernel's PID_MAX_LIMIT).
        let dir = tempfile::tempdir().unwrap();
        let err = Client::register(&dir.path().join("a.sock"), libc::pid_t::MAX, "f")
            .unwrap_err()
            .to_string();
        let max = libc::pid_t::MAX;
        assert_eq!(err, format!("cannot hand over pid {max}: no process {max}"));
    }

    #[test]
    fn a_client_reports_a_missing_socket_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none.sock");
        let stream = Client::connect(&path).err().unwrap();
        let datagram = Client::register(&path, 1, "f").unwrap_err();
        for err in [stream, datagram].map(|e| e.to_string()) {
            assert!(
                err.contains(&format!(
                    "cannot reach the faasched agent at {}",
                    path.display()
                )),
                "{err}"
            );
        }
    }
}
