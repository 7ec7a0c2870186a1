//! Agent mode: steer processes faasched did not start.
//!
//! A platform hands a process over (its pid, pinned, and its function's
//! name) on one of the agent's two Unix sockets ([`protocol`]): in one
//! datagram on the datagram socket, answered with one datagram (`faasched
//! exec` does this), or as a line on a connection to the stream socket,
//! which also answers `status`. The agent steers the process with the
//! policy exactly as replay steers the processes it starts, through
//! [`Steering`](crate::os::steering::Steering): `on_arrival` when it is handed
//! over, `on_start` at once (it runs already), CPU watches and periods,
//! `on_exit` with its outcome when it exits or is unregistered. `faasched
//! exec` hands over itself, then `exec`s the function, which keeps the pid
//! and so the attributes.
//!
//! One thread, one wait (`epoll_pwait2`), as in replay: the two sockets,
//! each connected client, each steered process's pidfd, the terminating
//! signals, and the steering's next CPU watch or period.
//!
//! The invariants:
//!
//! 1. A client hands over only a process whose scheduling it could change
//!    itself (`target::may_hand_over`, against the credentials the kernel
//!    recorded for it: `SO_PEERCRED` at `connect` on the stream socket,
//!    `SCM_CREDENTIALS` attached to each datagram at send); never init, the
//!    agent, a kernel thread or a thread that is not its process's leader.
//! 2. No bare pid is trusted. A hand-over names the process the client
//!    chose, pinned by its pidfs inode or, for a stream client naming
//!    itself, by the client's pidfd from the kernel (`pin`; the protocol's
//!    "Pinning"); the agent's pidfd on the pid, opened before any check,
//!    must be of that process. The credentials and parent checked are the
//!    pidfd's process's (`PIDFD_GET_INFO`), and the checks, and the calls
//!    that reach the process by its pid while it is handed over, count only
//!    if it was not reaped after them (a zombie keeps its pid). The pidfd,
//!    its pidfs inode (in the state file) and the schedstat steering keeps
//!    open name that process for good; an exit is the pidfd turning
//!    readable.
//! 3. Every path out of [`serve`] gives each steered process back what it ran
//!    under before (never a real-time class): a terminating signal or an
//!    error by `Registry`'s drop, a panic by unwinding through it. Only
//!    SIGKILL (or an abort) skips it: then RLIMIT_RTTIME, set on every
//!    process while the policy may make it real-time, stops a runaway, and
//!    the next agent re-adopts the processes from the state file.
//!
//! Where things are: [`protocol`] (the wire format and a client), `socket`
//! (binding the two sockets), `clients` (connections, datagrams, refusals),
//! `admission` (carrying out requests: the checks, hand-overs, ends and
//! outcomes), `pin` (which process a request names), `registry` (the steered processes, held by their pidfds),
//! `serve` (the loop and its set-up), `event` (the log and the summary),
//! `state` (the journal a restarted agent re-adopts from), `target` (what a
//! process ran under before, and who may hand it over) and `guard` (giving
//! back what a killed agent steered).

pub mod protocol;

mod admission;
mod clients;
mod core;
mod event;
mod guard;
mod pin;
mod registry;
mod serve;
mod socket;
mod state;
mod status_text;
mod target;
mod throttle;
mod tokens;

pub use event::{Event, REFUSALS_LOGGED_PER_SECOND, Summary};
pub use guard::guard;
pub use serve::serve;
pub use state::StateError;

use crate::os::steering::SteerError;
use faasched_model::CpuSet;
use std::io;
use std::path::PathBuf;

/// Where the agent listens unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/faasched/agent.sock";

/// How to run the agent.
#[derive(Clone, Debug)]
pub struct Config {
    /// The stream socket to listen on; the datagram socket
    /// ([`protocol::datagram_path`]) and the state file go beside it.
    pub socket: PathBuf,
    /// The cores the policy steers.
    pub cpus: CpuSet,
    /// RLIMIT_RTTIME (µs) set on every steered process when the policy may
    /// make processes real-time (`None`: it never does): the backstop that
    /// stops a real-time process that runs away while no agent watches.
    pub rt_time_limit_us: Option<u64>,
}

/// Why the agent stopped other than by a signal.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Another agent answers on the socket.
    #[error("another faasched agent is listening on {0}")]
    Running(PathBuf),
    /// Something that is not a socket is in the way.
    #[error("{0} exists and is not a socket: remove it or choose another --socket")]
    NotASocket(PathBuf),
    /// A system call the agent needs failed.
    #[error("{what}: {error}")]
    System {
        /// What was being done.
        what: String,
        /// The error (not a `source`: the message holds it).
        error: io::Error,
    },
    /// Steering could not start.
    #[error(transparent)]
    Steer(#[from] SteerError),
    /// The state file could not be trusted or read.
    #[error(transparent)]
    State(#[from] StateError),
}

/// Maps a failed system call to [`AgentError::System`], saying what was
/// being done.
fn system(what: impl Into<String>) -> impl FnOnce(io::Error) -> AgentError {
    let what = what.into();
    move |error| AgentError::System { what, error }
}
