//! The cluster level's vocabulary and its two seams: [`Route`], which picks
//! the server an invocation runs on, and [`KeepAlive`], which decides which
//! idle warm containers a server keeps.
//!
//! The simulator's cluster engine and the live gateway both keep their
//! servers in [`Servers`] and call a [`Route`] and a [`KeepAlive`] the same
//! way, so a policy is written once. Terms (CH-RLU, ch-rlu-hpdc22 §2, §4):
//! a **server** (invoker) has cores and memory for **containers**, one per
//! concurrent invocation of a function; an invocation that finds no idle
//! warm container of its function starts **cold** and pays the function's
//! cold − warm time; a server's **load** is its Linux 1-minute load average
//! over its cores, published every few seconds, so a router reads it
//! **stale**. [`loadavg`] computes that average the kernel's way, for the
//! simulated servers and the live nodes alike; [`loads`] summarises how
//! evenly the published loads spread, for the simulator and the live
//! gateway alike.

pub mod loadavg;
pub mod loads;

mod pool;

pub use pool::ContainerPool;

use crate::node::WorkerId;
use crate::{FunctionId, Nanos, Time};

/// A server's index in the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerId(pub u32);

/// An invocation's id, unique in a run, in arrival order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InvocationId(pub u64);

/// A container's id, unique in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContainerId(pub u64);

/// What the cluster knows of a function: its memory and its running times
/// alone on an idle server, warm and cold (CH-RLU Table 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionProfile {
    /// The function.
    pub function: FunctionId,
    /// Memory of one container.
    pub memory_mb: u32,
    /// Running time in a warm container.
    pub warm: Nanos,
    /// Running time when the container starts cold (≥ `warm`).
    pub cold: Nanos,
}

impl FunctionProfile {
    /// What a cold start adds: cold − warm.
    pub fn cold_extra(&self) -> Nanos {
        self.cold.saturating_sub(self.warm)
    }
}

/// An invocation as the cluster receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// Unique in a run; invocations come in arrival order.
    pub id: InvocationId,
    /// The function it invokes.
    pub function: FunctionId,
    /// When it reaches the router.
    pub arrival: Time,
    /// The CPU it needs warm (its function's warm time, or a draw around
    /// it); a cold start adds the profile's cold − warm.
    pub work: Nanos,
}

/// An invocation as a router sees it: its function's profile, not its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvocationInfo {
    /// The invocation.
    pub id: InvocationId,
    /// When it reached the router.
    pub arrival: Time,
    /// Its function's profile (the router's estimates of warm and cold).
    pub profile: FunctionProfile,
}

/// Where a router sends an invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// To this server.
    Server(ServerId),
    /// Nowhere: the cluster is overloaded (CH-RLU drops when its fallback
    /// server is overloaded too).
    Drop,
}

/// One server as a router may see it.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerView {
    /// Its cores.
    pub cores: u32,
    /// Its memory for containers.
    pub memory_mb: u32,
    /// Its 1-minute load average over its cores as last published: what a
    /// router that reads loads the way the paper's does sees.
    pub load: f64,
    /// When `load` was published.
    pub published: Time,
    /// Invocations running on it now (the engine's exact count; a router
    /// that uses it reads fresh state the paper's could not).
    pub running: u32,
}

/// Every server, as the engine that runs them keeps it and a router reads
/// it; plus which idle warm containers each holds, for routers that assume
/// they know (the paper's greedy baseline).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Servers {
    servers: Vec<ServerView>,
    /// Per server, idle warm containers by function (only non-zero counts).
    warm: Vec<std::collections::BTreeMap<FunctionId, u32>>,
}

impl Servers {
    /// `views`, none holding a warm container.
    pub fn new(views: Vec<ServerView>) -> Servers {
        let warm = vec![Default::default(); views.len()];
        Servers {
            servers: views,
            warm,
        }
    }

    /// How many servers.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Server `s`.
    pub fn get(&self, s: ServerId) -> &ServerView {
        &self.servers[s.0 as usize]
    }

    /// Server `s`, to update.
    pub fn get_mut(&mut self, s: ServerId) -> &mut ServerView {
        &mut self.servers[s.0 as usize]
    }

    /// Every server, by id.
    pub fn iter(&self) -> impl Iterator<Item = (ServerId, &ServerView)> {
        self.servers
            .iter()
            .enumerate()
            .map(|(i, v)| (ServerId(i as u32), v))
    }

    /// Idle warm containers of `f` on server `s`.
    pub fn warm(&self, s: ServerId, f: FunctionId) -> u32 {
        self.warm[s.0 as usize].get(&f).copied().unwrap_or(0)
    }

    /// Server `s` has one more idle warm container of `f`.
    pub fn add_warm(&mut self, s: ServerId, f: FunctionId) {
        *self.warm[s.0 as usize].entry(f).or_insert(0) += 1;
    }

    /// Server `s` has one idle warm container of `f` fewer (reused or
    /// evicted); a count already at 0 stays there.
    pub fn remove_warm(&mut self, s: ServerId, f: FunctionId) {
        let map = &mut self.warm[s.0 as usize];
        if let Some(n) = map.get_mut(&f) {
            *n -= 1;
            if *n == 0 {
                map.remove(&f);
            }
        }
    }
}

/// What became of an invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvocationOutcome {
    /// The invocation as the router saw it.
    pub info: InvocationInfo,
    /// The CPU it needed warm.
    pub work: Nanos,
    /// Where it ran, or the server that dropped it for want of memory
    /// (so a router that counts the memory it sent each server can give it
    /// back); `None` if the router dropped it.
    pub server: Option<ServerId>,
    /// Whether it started cold.
    pub cold: bool,
    /// When its work first took a core on its server (after a cold start
    /// that holds no core, and after any wait in a node's queues or a
    /// kernel's run queue); `None` if it never ran, or nothing measured it.
    pub first_run: Option<Time>,
    /// When it finished; `None` if dropped.
    pub finish: Option<Time>,
    /// Where it went inside its server, when a node engine or a kernel
    /// model runs the server; `None` where the server shares its cores or
    /// nothing sees inside it.
    pub inside: Option<Inside>,
}

/// Where an invocation went inside its server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inside {
    /// On a node server: its dispatcher, its worker, what its node policy
    /// did with it.
    Node(NodePlace),
    /// On an OS server: how its process fared on the kernel's cores.
    Os(OsPlace),
}

impl Inside {
    /// Its place on a node server, if it ran on one.
    pub fn node(&self) -> Option<&NodePlace> {
        match self {
            Inside::Node(n) => Some(n),
            Inside::Os(_) => None,
        }
    }

    /// Its place on an OS server, if it ran on one.
    pub fn os(&self) -> Option<&OsPlace> {
        match self {
            Inside::Os(o) => Some(o),
            Inside::Node(_) => None,
        }
    }
}

/// How an invocation's process fared on an OS server's kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OsPlace {
    /// Switches away from it because it blocked or exited.
    pub voluntary_switches: u64,
    /// Switches away from it because something else took its core.
    pub involuntary_switches: u64,
}

/// Where an invocation went inside a node server: its dispatcher, its
/// worker, and how its node policy treated it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodePlace {
    /// Its dispatcher on the server.
    pub dispatcher: u32,
    /// The last worker (in the dispatcher's group) that ran it, if any did.
    pub worker: Option<WorkerId>,
    /// Times it was taken off a worker before it finished.
    pub preemptions: u32,
    /// It finished after its deadline on the server, or the server dropped
    /// it.
    pub missed: bool,
}

impl InvocationOutcome {
    /// Whether it was dropped.
    pub fn dropped(&self) -> bool {
        self.finish.is_none()
    }

    /// Execution: finish − first run, the duration a FaaS provider bills;
    /// `None` if dropped or its first run is unknown.
    pub fn execution(&self) -> Option<Nanos> {
        Some(self.finish?.saturating_sub(self.first_run?))
    }

    /// Latency: finish − arrival; `None` if dropped.
    pub fn latency(&self) -> Option<Nanos> {
        self.finish.map(|f| f.saturating_sub(self.info.arrival))
    }

    /// Latency over the function's warm time alone on an idle server: the
    /// paper's latency increase (§6.1) and its simulator's slowdown (§6.3).
    pub fn slowdown(&self) -> Option<f64> {
        self.latency()
            .map(|l| l as f64 / self.info.profile.warm.max(1) as f64)
    }
}

/// The router in front of the servers.
///
/// ```text
/// on_loads (every publication) ... route ─► Server | Drop ─► on_finish
/// ```
pub trait Route {
    /// Short name, as the CLI spells it.
    fn name(&self) -> &str;

    /// Where `inv` runs, from what `servers` shows now.
    fn route(&mut self, now: Time, inv: &InvocationInfo, servers: &Servers) -> Choice;

    /// The servers published new loads (every period; a router may cache
    /// what it derives from them, as the paper's reads Redis).
    fn on_loads(&mut self, _now: Time, _servers: &Servers) {}

    /// An invocation finished or was dropped; its outcome is final.
    fn on_finish(&mut self, _now: Time, _outcome: &InvocationOutcome) {}
}

/// A warm container as a keep-alive policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Container {
    /// Unique in a run.
    pub id: ContainerId,
    /// The function it holds, with its memory and cold cost.
    pub profile: FunctionProfile,
    /// When it was created (its cold start began).
    pub created: Time,
    /// When its last invocation finished (or began, while one runs).
    pub last_used: Time,
}

/// One server's keep-alive policy: which idle containers it keeps.
///
/// ```text
/// cold start ─► on_created ─► [on_idle ─► on_reuse]* ─► on_idle ─► victim | expired ─► gone
/// ```
pub trait KeepAlive {
    /// Short name, as the CLI spells it.
    fn name(&self) -> &str;

    /// A container was created for an invocation (a cold start).
    fn on_created(&mut self, _now: Time, _c: &Container) {}

    /// A container's invocation finished: it is idle and may be reused or
    /// evicted from now on.
    fn on_idle(&mut self, now: Time, c: &Container);

    /// An idle container was taken for an invocation of its function (a
    /// warm start).
    fn on_reuse(&mut self, now: Time, c: &Container);

    /// The server needs memory for a new container: the idle container to
    /// evict next, or `None` to refuse (the engine then asks no more: the
    /// invocation waits on the server until a container ends its
    /// invocation or expires, and is asked for again then, or is dropped
    /// once its wait for memory runs out). Called repeatedly until enough
    /// memory is free; a container it names is gone when it returns.
    fn victim(&mut self, now: Time) -> Option<ContainerId>;

    /// The earliest time an idle container expires by itself (TTL), if any:
    /// the engine calls [`KeepAlive::expired`] then.
    fn next_expiry(&self) -> Option<Time> {
        None
    }

    /// Appends to `out` the idle containers that have expired by `now`;
    /// they are gone when it returns.
    fn expired(&mut self, _now: Time, _out: &mut Vec<ContainerId>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> FunctionProfile {
        FunctionProfile {
            function: FunctionId(3),
            memory_mb: 128,
            warm: 100,
            cold: 250,
        }
    }

    #[test]
    fn slowdown_is_latency_over_the_warm_time_and_none_when_dropped() {
        let info = InvocationInfo {
            id: InvocationId(0),
            arrival: 1_000,
            profile: profile(),
        };
        let done = InvocationOutcome {
            info,
            work: 100,
            server: Some(ServerId(1)),
            cold: true,
            first_run: Some(1_300),
            finish: Some(1_400),
            inside: None,
        };
        assert_eq!(done.latency(), Some(400));
        assert_eq!(done.execution(), Some(100));
        assert_eq!(done.slowdown(), Some(4.0));
        assert_eq!(profile().cold_extra(), 150);
        let dropped = InvocationOutcome {
            server: None,
            finish: None,
            ..done
        };
        assert!(dropped.dropped() && dropped.slowdown().is_none());
        assert_eq!(dropped.execution(), None);
        // A server's drop for want of memory names the server.
        let full = InvocationOutcome {
            finish: None,
            ..done
        };
        assert!(full.dropped() && full.latency().is_none() && full.server.is_some());
    }

    #[test]
    fn warm_counts_go_up_and_down_and_never_below_zero() {
        let view = ServerView {
            cores: 4,
            memory_mb: 1024,
            load: 0.0,
            published: 0,
            running: 0,
        };
        let mut s = Servers::new(vec![view.clone(), view]);
        let f = FunctionId(7);
        s.add_warm(ServerId(1), f);
        s.add_warm(ServerId(1), f);
        assert_eq!((s.warm(ServerId(0), f), s.warm(ServerId(1), f)), (0, 2));
        s.remove_warm(ServerId(1), f);
        s.remove_warm(ServerId(1), f);
        s.remove_warm(ServerId(1), f);
        assert_eq!(s.warm(ServerId(1), f), 0);
        assert_eq!(s.len(), 2);
    }
}
