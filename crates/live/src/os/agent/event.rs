//! What the agent tells its log, and what it did over its life.

use crate::os::steering::SteerStats;
use crate::sys::peercred::PeerCred;
use faasched_model::{Nanos, Outcome, fmt_ms};
use std::fmt;
use std::path::Path;

/// What the agent did, for its log.
#[derive(Debug)]
pub enum Event<'a> {
    /// It listens, with `adopted` processes re-adopted from its state file.
    Listening {
        /// The socket.
        socket: &'a Path,
        /// The state file.
        state: &'a Path,
        /// Processes re-adopted.
        adopted: usize,
    },
    /// A client handed a process over.
    Registered {
        /// The process.
        pid: libc::pid_t,
        /// Its task.
        task: u64,
        /// Its function.
        function: &'a str,
        /// The client's uid.
        uid: u32,
    },
    /// A process of the state file was not re-adopted.
    Dropped {
        /// The process.
        pid: libc::pid_t,
        /// Why.
        why: &'a str,
    },
    /// A request was refused.
    Refused {
        /// The client's pid and uid.
        client: PeerCred,
        /// Why.
        why: &'a str,
    },
    /// An invocation finished (its process exited or was unregistered).
    Finished {
        /// Its outcome, as the policy got it.
        outcome: &'a Outcome,
        /// `false` if the process was reaped before its final reading.
        exact: bool,
    },
    /// Requests refused in the last second beyond the
    /// [`REFUSALS_LOGGED_PER_SECOND`] that were logged.
    Unlogged {
        /// How many.
        refusals: u64,
    },
    /// Something went wrong that does not stop the agent.
    Warning(String),
}

/// Refusals logged in any one second: a client flooding the agent with bad
/// requests (any local user may send them) must not flood its log too; the
/// rest are counted ([`Event::Unlogged`], [`Summary::refused`]).
pub const REFUSALS_LOGGED_PER_SECOND: u64 = 20;

impl Event<'_> {
    /// Whether this happens once per invocation (worth logging only when
    /// asked: the log would cost more than the steering).
    pub fn routine(&self) -> bool {
        matches!(self, Event::Registered { .. } | Event::Finished { .. })
    }
}

impl fmt::Display for Event<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Listening {
                socket,
                state,
                adopted,
            } => write!(
                f,
                "listening on {} (state in {}; {adopted} processes re-adopted)",
                socket.display(),
                state.display()
            ),
            Event::Registered {
                pid,
                task,
                function,
                uid,
            } => write!(f, "task {task}: pid {pid} ({function}) from uid {uid}"),
            Event::Dropped { pid, why } => write!(f, "not re-adopting pid {pid}: {why}"),
            Event::Refused { client, why } => write!(
                f,
                "refused a request from pid {} (uid {}): {why}",
                client.pid, client.uid
            ),
            Event::Finished { outcome: o, exact } => {
                write!(
                    f,
                    "task {} ({}) finished: {:.1} ms, {:.1} ms CPU",
                    o.id,
                    o.function,
                    fmt_ms(o.turnaround()),
                    fmt_ms(o.cpu)
                )?;
                if !exact {
                    f.write_str(" (reaped before its last reading: CPU time from an earlier one)")?;
                }
                Ok(())
            }
            Event::Unlogged { refusals } => write!(
                f,
                "{refusals} more requests refused in the last second (not logged one by one)"
            ),
            Event::Warning(w) => f.write_str(w),
        }
    }
}

/// What the agent did over its life.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// The signal that stopped it.
    pub signal: i32,
    /// Processes handed over (re-adopted ones included).
    pub registered: u64,
    /// Invocations finished.
    pub finished: u64,
    /// Of those, outcomes from an earlier reading (see [`Status::estimated`](super::protocol::Status::estimated)).
    pub estimated: u64,
    /// Requests refused.
    pub refused: u64,
    /// CPU time of the agent's thread.
    pub cpu: Nanos,
    /// What steering did (its own CPU share is not counted in the agent:
    /// see [`Steering::count_cpu`](crate::os::steering::Steering::count_cpu)).
    pub steering: SteerStats,
}
