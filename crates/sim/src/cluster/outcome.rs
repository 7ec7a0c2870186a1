//! What a cluster run hands out: each invocation's outcome to a
//! [`ClusterSink`], the run's [`ClusterStats`] at the end, or why it
//! stopped, [`ClusterError`].

use super::config::ConfigError;
use crate::node::NodeStats;
use crate::os::RunStats;
use faasched_model::cluster::loads::LoadSeries;
use faasched_model::cluster::{InvocationId, InvocationOutcome, ServerId};
use faasched_model::{Nanos, SEC};

/// Where a cluster run's outcomes go, each as soon as it is final. Any
/// `FnMut(InvocationOutcome)` is one.
pub trait ClusterSink {
    /// An invocation finished or was dropped.
    fn outcome(&mut self, outcome: InvocationOutcome);

    /// Whether the run should stop now ([`ClusterError::Interrupted`]):
    /// asked at least every [`POLL_EVENTS`](super::POLL_EVENTS) events.
    /// Never, by default.
    fn interrupted(&mut self) -> bool {
        false
    }
}

impl<F: FnMut(InvocationOutcome)> ClusterSink for F {
    fn outcome(&mut self, outcome: InvocationOutcome) {
        self(outcome)
    }
}

/// What one server did over a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerStats {
    /// Invocations the router sent it.
    pub routed: u64,
    /// Core-time its cores were busy: ∫ min(in flight, cores) dt, cold
    /// starts and contention included.
    pub busy: Nanos,
    /// Invocations that started in a new container.
    pub cold_starts: u64,
    /// Invocations that reused an idle warm container.
    pub warm_starts: u64,
    /// Invocations dropped because no memory could be freed for their
    /// container: at once, or after a wait (`drops_after_wait`).
    pub drops: u64,
    /// Invocations that waited for memory (see
    /// [`ClusterConfig::memory_wait`](super::ClusterConfig::memory_wait)),
    /// whether they then started or were dropped.
    pub waits: u64,
    /// Their time spent waiting, in all.
    pub wait_time: Nanos,
    /// Invocations dropped after waiting for memory: their wait ran out, or
    /// nothing on the server could free memory for them any more.
    pub drops_after_wait: u64,
    /// Idle containers its keep-alive evicted to make room.
    pub evictions: u64,
    /// Idle containers its keep-alive let expire by themselves.
    pub expirations: u64,
    /// The most memory its containers (busy and idle) held at once, MB.
    pub max_memory_mb: u64,
    /// Invocations its node policy dropped after they started (a node
    /// server's; see [`NodeServers`](super::NodeServers)).
    pub node_drops: u64,
    /// What its node engine or kernel model measured, on a node or OS
    /// server.
    pub inside: Option<InsideStats>,
}

/// What a server's own engine measured.
#[derive(Clone, Debug, PartialEq)]
pub enum InsideStats {
    /// A node server's: dispatcher and worker busy time, preemptions,
    /// context switches, quantum ticks.
    Node(NodeStats),
    /// An OS server's: its invocations, busy time, kernel events.
    Os(RunStats),
}

impl InsideStats {
    /// A node server's stats, if it is one.
    pub fn node(&self) -> Option<&NodeStats> {
        match self {
            InsideStats::Node(n) => Some(n),
            InsideStats::Os(_) => None,
        }
    }

    /// An OS server's stats, if it is one.
    pub fn os(&self) -> Option<&RunStats> {
        match self {
            InsideStats::Os(o) => Some(o),
            InsideStats::Node(_) => None,
        }
    }
}

/// What a whole cluster run measured, beyond the per-invocation outcomes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterStats {
    /// Invocations that arrived.
    pub invocations: u64,
    /// Invocations that finished.
    pub finished: u64,
    /// Invocations the router dropped.
    pub dropped_by_router: u64,
    /// Invocations a server dropped for want of memory, at once or after a
    /// wait (the sum of [`ServerStats::drops`]).
    pub dropped_for_memory: u64,
    /// Invocations a node server's policy dropped after they started (the
    /// sum of [`ServerStats::node_drops`]).
    pub dropped_by_server: u64,
    /// Events processed: arrivals and timers (finishes, expiries, ends of
    /// waits for memory, load samples, publications).
    pub events: u64,
    /// From the first arrival to the last finish (0 without a finish).
    pub span: Nanos,
    /// Each server's, by id.
    pub servers: Vec<ServerStats>,
    /// The loads as published every
    /// [`ClusterConfig::publish`](super::ClusterConfig::publish) while
    /// anything was left to run (with
    /// [`Loads::Exact`](super::Loads::Exact), the exact
    /// loads at each period's end).
    pub loads: LoadSeries,
}

impl ClusterStats {
    /// Cold starts over all servers.
    pub fn cold_starts(&self) -> u64 {
        self.servers.iter().map(|s| s.cold_starts).sum()
    }

    /// Invocations dropped, by the router, for memory, or by a node
    /// server's policy.
    pub fn dropped(&self) -> u64 {
        self.dropped_by_router + self.dropped_for_memory + self.dropped_by_server
    }
}

/// Why a cluster run stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClusterError<E> {
    /// The configuration cannot run.
    Config(ConfigError),
    /// A function profile is not where its id says.
    Profile {
        /// Its index in the profiles.
        index: usize,
        /// What is wrong with it.
        what: String,
    },
    /// The invocation stream failed (a bad input file, say).
    Input(E),
    /// The invocation stream holds an invocation the cluster cannot take.
    Invocation {
        /// The invocation.
        id: InvocationId,
        /// What is wrong with it.
        what: String,
    },
    /// The router broke the [`Route`](faasched_model::cluster::Route)
    /// contract (a server the cluster does not have).
    Route {
        /// The router's name.
        policy: String,
        /// What it did.
        what: String,
    },
    /// A keep-alive policy broke the
    /// [`KeepAlive`](faasched_model::cluster::KeepAlive) contract (a
    /// container it does not hold idle).
    KeepAlive {
        /// The policy's name.
        policy: String,
        /// Its server.
        server: ServerId,
        /// What it did.
        what: String,
    },
    /// A node server's policy broke the
    /// [`Dispatch`](faasched_model::node::Dispatch) contract.
    Server {
        /// The server.
        server: ServerId,
        /// What went wrong, as the node engine says it.
        what: String,
    },
    /// A closed-loop client asked for something impossible.
    Client {
        /// The client.
        client: u32,
        /// What it asked.
        what: String,
    },
    /// The next event falls after [`RUN_LIMIT`](crate::RUN_LIMIT): the load
    /// exceeds the cluster so much that its backlog never drains.
    TimeLimit {
        /// Invocations finished by then.
        finished: u64,
    },
    /// The sink asked the run to stop.
    Interrupted {
        /// Invocations finished by then.
        finished: u64,
    },
}

impl<E: std::fmt::Display> std::fmt::Display for ClusterError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterError::Config(e) => e.fmt(f),
            ClusterError::Profile { index, what } => {
                write!(f, "function profile {index}: {what}")
            }
            ClusterError::Input(e) => e.fmt(f),
            ClusterError::Invocation { id, what } => write!(f, "invocation {}: {what}", id.0),
            ClusterError::Route { policy, what } => write!(f, "router {policy} {what}"),
            ClusterError::KeepAlive {
                policy,
                server,
                what,
            } => write!(f, "keep-alive {policy} (server {}) {what}", server.0),
            ClusterError::Server { server, what } => write!(f, "server {}: {what}", server.0),
            ClusterError::Client { client, what } => write!(f, "client {client} {what}"),
            ClusterError::TimeLimit { finished } => write!(
                f,
                "the simulated clock reached its limit ({} days) with {finished} invocations \
                 finished: the load exceeds the cluster so much that its backlog does not \
                 drain; lower the load or add --servers",
                crate::RUN_LIMIT / (86_400 * SEC)
            ),
            ClusterError::Interrupted { finished } => {
                write!(f, "interrupted with {finished} invocations finished")
            }
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for ClusterError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClusterError::Config(e) => Some(e),
            ClusterError::Input(e) => Some(e),
            _ => None,
        }
    }
}
