//! What a cluster run is given: its servers' shape, how their loads reach
//! the router, and the contention a busy server suffers.

use faasched_model::{MS, Nanos, SEC};
use serde::{Deserialize, Serialize};

/// The most servers a cluster may have: server ids are `u32`, and a
/// cluster far beyond the paper's 8 invokers (or Fig. 14's 32 servers) is a
/// typo.
pub const MAX_SERVERS: usize = 1 << 16;

/// The most cores a server may have; it also keeps the engine's
/// processor-sharing arithmetic far from overflowing 128 bits.
pub const MAX_CORES: u32 = 1 << 12;

/// The shortest publication period [`ClusterConfig::publish`] accepts: a
/// millisecond (each publication costs a step per server; for loads with
/// no delay at all, use [`Loads::Exact`]).
pub const MIN_PUBLISH: Nanos = MS;

/// The longest publication period [`ClusterConfig::publish`] accepts: an
/// hour, 720 times the paper's 5 s.
pub const MAX_PUBLISH: Nanos = 3_600 * SEC;

/// How long an invocation may wait on its server for memory by default:
/// 5 minutes, the function timeout of the paper's OpenWhisk deployment
/// (ch-rlu-hpdc22 §5) and OpenWhisk's largest action time limit. An
/// OpenWhisk controller that has no answer from the invoker by then gives
/// the activation up, so one still waiting in the invoker's run buffer is
/// lost to its caller; and a bound keeps an overloaded run's backlog, and
/// the run itself, finite.
pub const DEFAULT_MEMORY_WAIT: Nanos = 300 * SEC;

/// The largest contention [`ClusterConfig::contention`] accepts: each busy
/// container slowing every other by 100% is already far beyond anything
/// measured.
pub const MAX_CONTENTION: f64 = 1.0;

/// Which load of each server the router reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Loads {
    /// Its 1-minute load average, published every
    /// [`ClusterConfig::publish`]: stale between publications, as the
    /// paper's invokers push theirs (§4.3).
    #[default]
    Published,
    /// Its exact load (invocations in flight over cores), at every change:
    /// the paper's "real-time loads" ablation (§6.3), which measures what
    /// staleness costs.
    Exact,
}

/// The cluster: identical servers behind one router.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterConfig {
    /// Servers (the paper's invokers). By default 8 (ch-rlu-hpdc22 §6.1).
    pub servers: usize,
    /// Cores of each server, shared by processor sharing with each
    /// invocation capped at one core (OpenWhisk's `--cpus 1`, §5). By
    /// default 16 (§6.1).
    pub cores: u32,
    /// Memory of each server for containers, MB. By default 32,768 (the
    /// paper's "32 GB RAM for hosting functions", §6.1).
    pub memory_mb: u32,
    /// How often every server publishes its load to the router, ns. By
    /// default 5 s: invokers "periodically (every 5 seconds) push their
    /// load information" (§4.3).
    pub publish: Nanos,
    /// Which load of each server the router reads. By default
    /// [`Loads::Published`].
    pub loads: Loads,
    /// γ of a service-rate penalty for contention on a busy server: with
    /// n invocations in flight (r of them running, the others starting
    /// cold in [`ColdStart::Wall`] mode), each running one runs at
    /// min(1, cores / r) / (1 + γ·n)
    /// (cluster-level note §10 item 9: dockerd and lock contention that
    /// grows with concurrent containers, which makes large servers worse,
    /// Fig. 14). Resolved to millionths. By default 0: pure processor
    /// sharing.
    pub contention: f64,
    /// What a cold start's extra (its function's cold − warm) costs. By
    /// default [`ColdStart::Cpu`].
    pub cold_start: ColdStart,
    /// How long an invocation whose new container does not fit in its
    /// server's memory (evicting every idle container would not free
    /// enough, or the keep-alive refuses to evict) may wait there for
    /// memory (a container that ends its invocation, or expires) before it
    /// is dropped, ns; `None`: as long as it takes. `Some(0)` drops it at
    /// once: nothing ever waits. One that cannot ever start (its function
    /// needs more memory than the server has, or nothing in flight or
    /// expiring on the server is left to free memory) is dropped as soon as
    /// that is so, whatever the limit: it would wait forever. By default
    /// [`DEFAULT_MEMORY_WAIT`].
    pub memory_wait: Option<Nanos>,
    /// The platform's transport: how much later than its server's end (or
    /// its drop) each invocation's client has the answer, ns. The request's
    /// way to its server and the answer's way back (a gateway's hops, the
    /// network) lumped after the end: it takes no core, the router decides
    /// and hears of the outcome without it, and it counts in the latency and
    /// delays a closed-loop client's next send. What a live cluster pays per
    /// invocation outside its nodes (`cluster compare` measures it). At most
    /// [`MAX_TRANSPORT`]. By default 0.
    pub transport: Nanos,
}

/// The longest [`ClusterConfig::transport`]: a minute, far above any
/// platform's (OpenWhisk's averages 0.5 s, ch-rlu-hpdc22 §2).
pub const MAX_TRANSPORT: Nanos = 60 * SEC;

/// What a cold start's extra time is. Either way the invocation counts in
/// its server's load while it starts, as the kernel counts a container's
/// start (runnable, or waiting on I/O in D state: why the paper picks the
/// load average, ch-rlu-hpdc22 §4.3), and in the contention term.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColdStart {
    /// Extra CPU work on the server's cores, shared with everything else
    /// running there: a start slows down, and slows others, on a busy
    /// server (a runtime's imports and initialisation are CPU-bound).
    #[default]
    Cpu,
    /// A fixed delay before the invocation's work runs, taking no core (a
    /// start that waits on the container daemon and the disk).
    Wall,
}

impl Default for ClusterConfig {
    fn default() -> ClusterConfig {
        ClusterConfig {
            servers: 8,
            cores: 16,
            memory_mb: 32 * 1024,
            publish: 5 * SEC,
            loads: Loads::Published,
            contention: 0.0,
            cold_start: ColdStart::Cpu,
            memory_wait: Some(DEFAULT_MEMORY_WAIT),
            transport: 0,
        }
    }
}

impl ClusterConfig {
    /// `servers` servers of `cores` cores and `memory_mb` MB, the rest by
    /// default.
    pub fn new(servers: usize, cores: u32, memory_mb: u32) -> ClusterConfig {
        ClusterConfig {
            servers,
            cores,
            memory_mb,
            ..ClusterConfig::default()
        }
    }

    /// Checks every field; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_SERVERS).contains(&self.servers) {
            return Err(ConfigError::Servers(self.servers));
        }
        if !(1..=MAX_CORES).contains(&self.cores) {
            return Err(ConfigError::Cores(self.cores));
        }
        if self.memory_mb == 0 {
            return Err(ConfigError::Memory);
        }
        if !(MIN_PUBLISH..=MAX_PUBLISH).contains(&self.publish) {
            return Err(ConfigError::Publish(self.publish));
        }
        if !(0.0..=MAX_CONTENTION).contains(&self.contention) {
            return Err(ConfigError::Contention(self.contention));
        }
        if self.transport > MAX_TRANSPORT {
            return Err(ConfigError::Transport(self.transport));
        }
        Ok(())
    }

    /// γ in millionths, as the engine computes with it.
    pub(crate) fn contention_micro(&self) -> u64 {
        (self.contention * 1e6).round() as u64
    }
}

/// A cluster configuration that cannot run.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ConfigError {
    /// No server, or more than [`MAX_SERVERS`].
    Servers(usize),
    /// No core, or more than [`MAX_CORES`].
    Cores(u32),
    /// No memory for containers.
    Memory,
    /// A publication period below [`MIN_PUBLISH`] or above [`MAX_PUBLISH`].
    Publish(Nanos),
    /// A contention γ below 0, above [`MAX_CONTENTION`], or not a number.
    Contention(f64),
    /// A transport above [`MAX_TRANSPORT`].
    Transport(Nanos),
    /// Node or OS servers ([`NodeServers`](super::NodeServers),
    /// [`OsServers`](super::OsServers)) that do not fit the cluster.
    Server(ServerShape),
}

/// Why node or OS servers do not fit a cluster.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ServerShape {
    /// Dispatchers × workers are not the cores of a server.
    Cores {
        /// Dispatchers per node.
        dispatchers: usize,
        /// Workers per dispatcher.
        workers: usize,
        /// Cores per server.
        cores: u32,
    },
    /// A contention γ: a node or a kernel charges its mechanisms' costs
    /// instead.
    Contention(f64),
    /// A deadline factor not above 0, above
    /// [`MAX_DEADLINE_FACTOR`](super::MAX_DEADLINE_FACTOR), or not a number.
    DeadlineFactor(f64),
    /// The node's own configuration, or its policies, cannot run.
    Node(crate::node::ConfigError),
    /// The kernel's cores are not the cores of a server.
    KernelCores {
        /// Cores of the kernel model.
        kernel: usize,
        /// Cores per server.
        cores: u32,
    },
    /// The kernel's own configuration cannot run.
    Kernel(crate::os::ConfigError),
}

impl std::fmt::Display for ServerShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerShape::Cores {
                dispatchers,
                workers,
                cores,
            } => write!(
                f,
                "a node of {dispatchers} dispatchers × {workers} workers does not have the \
                 {cores} cores of a server"
            ),
            ServerShape::Contention(g) => write!(
                f,
                "contention γ = {g} with node or OS servers: they charge their mechanisms' \
                 costs instead; give 0"
            ),
            ServerShape::DeadlineFactor(k) => write!(
                f,
                "deadline factor {k} is out of range (0, {}]",
                super::MAX_DEADLINE_FACTOR
            ),
            ServerShape::Node(e) => write!(f, "node servers: {e}"),
            ServerShape::KernelCores { kernel, cores } => write!(
                f,
                "a kernel of {kernel} cores does not have the {cores} cores of a server"
            ),
            ServerShape::Kernel(e) => write!(f, "OS servers: {e}"),
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Servers(n) => {
                write!(f, "servers = {n} is out of range 1..={MAX_SERVERS}")
            }
            ConfigError::Cores(n) => write!(f, "cores = {n} is out of range 1..={MAX_CORES}"),
            ConfigError::Memory => write!(f, "a server needs more than 0 MB of memory"),
            ConfigError::Publish(p) => write!(
                f,
                "load publication period {p} ns is out of range {MIN_PUBLISH}..={MAX_PUBLISH} ns"
            ),
            ConfigError::Contention(g) => {
                write!(f, "contention γ = {g} is out of range 0..={MAX_CONTENTION}")
            }
            ConfigError::Transport(t) => {
                write!(f, "transport {t} ns is above {MAX_TRANSPORT} ns")
            }
            ConfigError::Server(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ConfigError {}
