//! What a run can end as: why it could not start, what a call was
//! answered or why it was not, and how it ended.

use crate::node::invoke::Completed;
use std::fmt;
use std::io;

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A field of the [`LoadConfig`](super::LoadConfig) is out of range.
    #[error("{field}: {why}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The target did not accept a connection before the run started.
    #[error("cannot connect to {target}: {source}")]
    Connect {
        /// `HOST:PORT`.
        target: String,
        /// The system's answer.
        source: io::Error,
    },
    /// The runtime the run uses could not start.
    #[error("cannot start the load generator's runtime: {0}")]
    Runtime(#[source] io::Error),
}

impl LoadError {
    pub(crate) fn invalid(field: &'static str, why: impl Into<String>) -> LoadError {
        LoadError::Invalid {
            field,
            why: why.into(),
        }
    }
}

/// What a response (or, in process, the runtime) said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// Its HTTP status.
    pub status: u16,
    /// `x-faasched-runtime-us`.
    pub runtime_us: Option<u64>,
    /// `x-faasched-cpu-us`.
    pub cpu_us: Option<u64>,
    /// `x-faasched-preemptions`.
    pub preemptions: Option<u64>,
    /// The gateway's `x-faasched-node`: the node that answered.
    pub node: Option<String>,
    /// `x-faasched-cold`: whether the node started a container for it;
    /// `None` if absent or neither `0` nor `1`.
    pub cold: Option<bool>,
    /// The failure a non-2xx status is.
    pub failure: Option<Failure>,
    /// In process: the runtime's own account of the call, in ns; over
    /// HTTP, `None`.
    pub completed: Option<Completed>,
}

/// Why a request was not answered with a 2xx. Each request that is not
/// answered has exactly one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Failure {
    /// A connection for it could not be opened (`connect-failed`).
    ConnectFailed,
    /// Its connection broke before its response was whole: reset, closed
    /// or not HTTP (`connection-lost`).
    ConnectionLost,
    /// Its whole response did not come within [`LoadConfig::timeout`](super::LoadConfig::timeout) of
    /// its sending (`response-timeout`).
    ResponseTimeout,
    /// The runtime answered with a status other than 2xx: `kind` is its
    /// `x-faasched-error` (`overloaded`, `trap`, ...), or `http-STATUS`
    /// without one.
    Server {
        /// The error's kind.
        kind: String,
    },
    /// It was due but still waiting for a connection when sending stopped
    /// (`unsent`).
    Unsent,
    /// It was in flight when the drain time ran out (`unfinished`).
    Unfinished,
    /// It was in flight when the run was stopped (`interrupted`).
    Interrupted,
}

impl Failure {
    /// Its kind, as requests.csv and summary.json spell it.
    pub fn kind(&self) -> &str {
        match self {
            Failure::ConnectFailed => "connect-failed",
            Failure::ConnectionLost => "connection-lost",
            Failure::ResponseTimeout => "response-timeout",
            Failure::Server { kind } => kind,
            Failure::Unsent => "unsent",
            Failure::Unfinished => "unfinished",
            Failure::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Every request sent was answered or failed on its own.
    Completed,
    /// `stop` ended it.
    Interrupted,
    /// The drain time ran out with requests still queued or in flight.
    DrainTimeout,
}

impl End {
    /// As summary.json spells it.
    pub fn as_str(&self) -> &'static str {
        match self {
            End::Completed => "completed",
            End::Interrupted => "interrupted",
            End::DrainTimeout => "drain-timeout",
        }
    }
}
