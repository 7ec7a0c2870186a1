//! What a node run is given: its shape, how arrivals reach dispatchers, what
//! a policy is told of a request's work, and what each mechanism costs.

pub use faasched_model::node::Estimate;
use faasched_model::{Nanos, SEC};
use serde::{Deserialize, Serialize};

/// The most dispatchers × workers a node may have: worker ids are `u32`, and
/// a node far beyond the paper's 20 cores is a typo.
pub const MAX_WORKERS: usize = 1 << 16;

/// The largest cost or latency [`Costs`] accepts: a second is already a
/// thousand times any the paper's mechanisms take, and the bound keeps every
/// sum of costs far from overflowing the clock.
pub const MAX_COST: Nanos = SEC;

/// The largest window [`Estimate::Median`] accepts (a million samples of
/// each function).
pub const MAX_WINDOW: usize = 1 << 20;

/// One node: its dispatchers, each with its own group of workers.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeConfig {
    /// Dispatchers, one policy instance each. By default 1, the paper's
    /// §4.3–4.5 set-up.
    pub dispatchers: usize,
    /// Workers in each dispatcher's group. By default 6 (ibid.).
    pub workers: usize,
    /// Which dispatcher an arrival reaches. By default [`Assign::Equal`].
    pub assign: Assign,
    /// The estimate a policy sees. By default [`Estimate::Given`].
    pub estimate: Estimate,
    /// What each mechanism costs. By default [`Costs::default`].
    pub costs: Costs,
}

impl Default for NodeConfig {
    fn default() -> NodeConfig {
        NodeConfig {
            dispatchers: 1,
            workers: 6,
            assign: Assign::Equal,
            estimate: Estimate::Given,
            costs: Costs::default(),
        }
    }
}

impl NodeConfig {
    /// `dispatchers` groups of `workers` workers, the rest by default.
    pub fn new(dispatchers: usize, workers: usize) -> NodeConfig {
        NodeConfig {
            dispatchers,
            workers,
            ..NodeConfig::default()
        }
    }

    /// Checks every field; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.dispatchers == 0 {
            return Err(ConfigError::NoDispatchers);
        }
        if self.workers == 0 {
            return Err(ConfigError::NoWorkers);
        }
        if self.dispatchers.saturating_mul(self.workers) > MAX_WORKERS {
            return Err(ConfigError::TooManyWorkers {
                dispatchers: self.dispatchers,
                workers: self.workers,
            });
        }
        if let Estimate::Median { window } = self.estimate
            && !(1..=MAX_WINDOW).contains(&window)
        {
            return Err(ConfigError::Window(window));
        }
        self.costs.validate()
    }
}

/// Which dispatcher each arrival reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Assign {
    /// Round robin in arrival order: the paper's runs "ensure each dispatcher
    /// receives an equal number of requests" (§4).
    Equal,
    /// Uniformly at random from a generator seeded with `seed`, as RSS
    /// spreads packets (§3.3), groups unbalanced by chance included.
    Random {
        /// The generator's seed.
        seed: u64,
    },
}

/// What the node's mechanisms cost, in nanoseconds. The paper reports none
/// of them; the defaults are derived from its throughput numbers and from
/// measurements of the mechanisms (docs/NODE.md lists them), meant to be
/// swept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Costs {
    /// Dispatcher time per decision, before the workers it examined. By
    /// default 3,000 ns: the paper's ≈ 270–300 kRPS per dispatcher (300 K
    /// with 3 workers; 800 K over 3 dispatchers; 1.37 M over 5, §4.1) is
    /// 3.3–3.7 µs per decision, of which the scan of 6
    /// workers takes [`Costs::dispatch_per_worker`] × 6.
    pub dispatch_base: Nanos,
    /// Dispatcher time per worker a decision examined
    /// (`Decision::scanned`). By default 100 ns, so that 3 to 6 workers give
    /// 3.3–3.6 µs.
    pub dispatch_per_worker: Nanos,
    /// Dispatcher time to hand held requests to an idle worker (late
    /// binding); an offer the policy answers with nothing costs nothing (an
    /// empty central queue is seen at a glance). By default 1,000 ns
    /// (inferred: a queue pop and a hand-over, a third of a full decision).
    pub idle_pull: Nanos,
    /// Dispatcher time to send one preemption signal. By default 1,000 ns
    /// (inferred: one `pthread_kill`, the low end of 1–5 µs for a
    /// signal preemption).
    pub preempt_signal: Nanos,
    /// From the signal's sending to the worker reacting. By default 2,000
    /// ns (signal delivery takes 1–5 µs; wasmtime's epoch yield measured
    /// 0.7 µs p50 to 9 µs p99).
    pub preempt_latency: Nanos,
    /// Worker time to save one request's context and restore the next's,
    /// once per preemption, paid before the next request on that worker
    /// runs. By default 1,000 ns: the paper saves the sandbox's instruction
    /// and stack pointers (§3.2).
    pub context_switch: Nanos,
    /// Worker time before a request's first run: taking a sandbox from the
    /// worker's pool. By default 3,000 ns (pooled instantiation measured at
    /// 2.6–3.9 µs with wasmtime's pooling allocator; "a few microseconds",
    /// paper §3.4).
    pub sandbox_setup: Nanos,
    /// From work reaching a sleeping idle worker to the worker running it.
    /// By default 5,000 ns (a futex wake of a few µs: the paper's workers
    /// sleep on semaphores, §4). Ignored when `poll` is set.
    pub wake: Nanos,
    /// Idle workers busy-poll their queue instead of sleeping, so work
    /// reaching them pays no `wake` (the paper's busy-loop mode, §4.4). By
    /// default false.
    pub poll: bool,
    /// Worker time per firing of a local quantum timer (`Local::quantum`).
    /// By default 500 ns (inferred: a timer signal and its handler, below
    /// a signal preemption's cost).
    pub quantum_tick: Nanos,
}

impl Default for Costs {
    fn default() -> Costs {
        Costs {
            dispatch_base: 3_000,
            dispatch_per_worker: 100,
            idle_pull: 1_000,
            preempt_signal: 1_000,
            preempt_latency: 2_000,
            context_switch: 1_000,
            sandbox_setup: 3_000,
            wake: 5_000,
            poll: false,
            quantum_tick: 500,
        }
    }
}

impl Costs {
    /// Everything free and instant, workers polling: the node queueing
    /// theory describes.
    pub fn zero() -> Costs {
        Costs {
            dispatch_base: 0,
            dispatch_per_worker: 0,
            idle_pull: 0,
            preempt_signal: 0,
            preempt_latency: 0,
            context_switch: 0,
            sandbox_setup: 0,
            wake: 0,
            poll: true,
            quantum_tick: 0,
        }
    }

    /// Checks every cost is at most [`MAX_COST`]; the error names the first
    /// that is not.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let fields = [
            ("dispatch_base", self.dispatch_base),
            ("dispatch_per_worker", self.dispatch_per_worker),
            ("idle_pull", self.idle_pull),
            ("preempt_signal", self.preempt_signal),
            ("preempt_latency", self.preempt_latency),
            ("context_switch", self.context_switch),
            ("sandbox_setup", self.sandbox_setup),
            ("wake", self.wake),
            ("quantum_tick", self.quantum_tick),
        ];
        match fields.into_iter().find(|&(_, v)| v > MAX_COST) {
            Some((field, value)) => Err(ConfigError::Cost { field, value }),
            None => Ok(()),
        }
    }

    /// The dispatcher time of a decision that examined `scanned` workers.
    pub(crate) fn decision(&self, scanned: u32) -> Nanos {
        self.dispatch_base
            .saturating_add(self.dispatch_per_worker.saturating_mul(scanned as Nanos))
    }

    /// From work reaching an idle worker to the worker picking it.
    pub(crate) fn wake_latency(&self) -> Nanos {
        if self.poll { 0 } else { self.wake }
    }
}

/// A node configuration that cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// No dispatcher.
    NoDispatchers,
    /// No worker in a group.
    NoWorkers,
    /// More workers in all than [`MAX_WORKERS`].
    TooManyWorkers {
        /// Dispatchers asked for.
        dispatchers: usize,
        /// Workers per dispatcher asked for.
        workers: usize,
    },
    /// A median window of 0 or above [`MAX_WINDOW`].
    Window(usize),
    /// A cost above [`MAX_COST`].
    Cost {
        /// The field of [`Costs`].
        field: &'static str,
        /// Its value, ns.
        value: Nanos,
    },
    /// Not one policy per dispatcher.
    Policies {
        /// Dispatchers configured.
        dispatchers: usize,
        /// Policies given.
        policies: usize,
    },
    /// A policy asked for a quantum of 0, which would fire forever.
    ZeroQuantum {
        /// The policy's name.
        policy: String,
        /// Which quantum: "local" or "dispatcher".
        which: &'static str,
    },
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::NoDispatchers => write!(f, "a node needs at least 1 dispatcher"),
            ConfigError::NoWorkers => write!(f, "a dispatcher needs at least 1 worker"),
            ConfigError::TooManyWorkers {
                dispatchers,
                workers,
            } => write!(
                f,
                "{dispatchers} dispatchers × {workers} workers exceeds {MAX_WORKERS} workers"
            ),
            ConfigError::Window(w) => write!(
                f,
                "median estimate window {w} is out of range 1..={MAX_WINDOW}"
            ),
            ConfigError::Cost { field, value } => write!(
                f,
                "cost {field} = {value} ns exceeds the largest accepted, {MAX_COST} ns"
            ),
            ConfigError::Policies {
                dispatchers,
                policies,
            } => write!(
                f,
                "{dispatchers} dispatchers need one policy each, {policies} given"
            ),
            ConfigError::ZeroQuantum { policy, which } => {
                write!(f, "policy {policy} has a {which} quantum of 0 ns")
            }
        }
    }
}

impl std::error::Error for ConfigError {}
