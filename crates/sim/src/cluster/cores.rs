//! One server's cores as the cluster engine drives them ([`Cores`]): shared
//! by processor sharing ([`Ps`](super::ps::Ps)), run by a node engine's
//! dispatchers and workers under a node policy
//! ([`NodeCores`](super::node::NodeCores)), or by the kernel model under an
//! OS policy ([`OsCores`](super::os::OsCores)). The engine keeps containers,
//! memory, cold starts and loads; the cores only run the work it hands
//! them and say when each piece is done. Cores that queue work take an
//! invocation's container only when they first run it, through the
//! engine's [`Bind`].

use super::config::{ClusterConfig, ConfigError, ServerShape};
use super::outcome::InsideStats;
use crate::node::Start;
use faasched_model::cluster::{Inside, InvocationId};
use faasched_model::{FunctionId, Nanos, Time};

/// An invocation's work, as the engine hands it to its server's cores.
#[derive(Clone, Copy, Debug)]
pub struct Job {
    /// The engine's slot of the invocation.
    pub(crate) slot: u32,
    pub(crate) id: InvocationId,
    pub(crate) function: FunctionId,
    /// The CPU it needs, a cold start's extra CPU included.
    pub(crate) work: Nanos,
    /// What the platform expects it to need: its function's warm time, plus
    /// the cold extra when that is CPU.
    pub(crate) estimate: Nanos,
    /// Its function's warm time alone on an idle server.
    pub(crate) warm: Nanos,
    /// Its function's memory.
    pub(crate) memory_mb: u32,
}

/// An invocation the cores are done with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    /// The engine's slot of the invocation.
    pub(crate) slot: u32,
    /// When its work first took a core, where the cores hold work before
    /// they run it (a node's queues, a kernel's run queue); `None` if it
    /// never ran, or the cores ran it from the instant it was added
    /// (processor sharing: the engine knows that instant).
    pub(crate) first_run: Option<Time>,
    /// When its work ended; `None` if the server's own policy dropped it.
    pub(crate) finish: Option<Time>,
    /// Where it went inside a node or OS server.
    pub(crate) inside: Option<Inside>,
}

/// The engine's containers, as cores that take them when they first run
/// an invocation ([`Cores::BINDS_AT_FIRST_RUN`]) reach them: a node's
/// worker takes a container when it picks the invocation, and gives it
/// back when it is done with it, so an invocation queued behind another
/// of its function finds that one's container warm, as on a live node.
pub trait Bind {
    /// The invocation in `slot` first takes a core at `at`: it takes a
    /// warm container of its function, or starts a new one cold (its extra
    /// is more work), or is refused if its memory cannot be freed.
    fn first_run(&mut self, slot: u32, at: Time) -> Start;

    /// The invocation in `slot` is done with its core at `at` (finished,
    /// or dropped by the server): its container goes idle.
    fn done(&mut self, slot: u32, at: Time);
}

/// One server's cores. Calls come in time order: the engine advances them
/// to an instant before it adds work then, and asks for finished work only
/// after advancing to the instant it is due ([`Cores::next_at`]).
pub trait Cores {
    /// Invocations added and not yet done.
    fn in_flight(&self) -> u64;

    /// How many more invocations are in flight on the server without taking
    /// a core (starting cold in wall time): they slow the cores only
    /// through contention. Called after [`Cores::advance`] to now.
    fn set_starting(&mut self, starting: u64);

    /// Whether the cores take an invocation's container when they first
    /// run it ([`Bind`]), rather than the engine when it adds the
    /// invocation: cores that may hold work queued before running it.
    const BINDS_AT_FIRST_RUN: bool = false;

    /// Runs the cores until `now`; errs if a policy of theirs breaks its
    /// contract. Cores that bind at first run reach the containers through
    /// `bind`.
    fn advance(&mut self, now: Time, bind: &mut impl Bind) -> Result<(), String>;

    /// Adds an invocation at the instant last advanced to.
    fn add(&mut self, job: Job, bind: &mut impl Bind) -> Result<(), String>;

    /// When the next invocation may be done, if nothing is added (or the
    /// cores' next event that may change that); the instant last advanced
    /// to if one is done already.
    fn next_at(&mut self) -> Option<Time>;

    /// An invocation done by the instant last advanced to, in the order
    /// they were done.
    fn pop_done(&mut self) -> Option<Done>;

    /// Core-time busy so far: running invocations and paying the
    /// mechanisms' costs.
    fn busy(&self) -> Nanos;

    /// Ends the run: errs if work is left that nothing will ever run; the
    /// server's own stats on a node or OS server.
    fn end(&mut self) -> Result<Option<InsideStats>, String>;
}

/// Ids for the work a server's own engine tracks (a node's requests, a
/// kernel's processes): the low bits hold the cluster engine's slot of the
/// invocation, so an outcome finds its way back; the bits above count the
/// server's ids, so they stay unique and increase in the order issued (as
/// the node engine requires of arrivals).
#[derive(Debug, Default)]
pub(crate) struct Ids {
    issued: u64,
}

impl Ids {
    /// Bits of an id that hold the slot.
    const SLOT_BITS: u32 = 32;

    /// The next id, for the invocation in `slot`; errs once the count no
    /// longer fits beside the slot, naming `what` the ids are.
    pub(crate) fn issue(&mut self, slot: u32, what: &str) -> Result<u64, String> {
        if self.issued >> (64 - Self::SLOT_BITS) != 0 {
            return Err(format!(
                "ran out of {what} ids after {} invocations",
                self.issued
            ));
        }
        let id = self.issued << Self::SLOT_BITS | u64::from(slot);
        self.issued += 1;
        Ok(id)
    }

    /// The slot an id was issued for.
    pub(crate) fn slot(id: u64) -> u32 {
        (id & ((1 << Self::SLOT_BITS) - 1)) as u32
    }
}

/// Errs unless `config` has no contention term: node and OS servers charge
/// their mechanisms' costs instead.
pub(crate) fn uncontended(config: &ClusterConfig) -> Result<(), ConfigError> {
    if config.contention != 0.0 {
        return Err(ConfigError::Server(ServerShape::Contention(
            config.contention,
        )));
    }
    Ok(())
}

/// Builds every server's cores: the sealed half of
/// [`Servers`](super::Servers), so that the cores' calls stay the
/// engine's.
pub trait Build {
    /// One server's cores.
    type Cores: Cores;

    /// Every server's cores, idle from `start`; errs if they do not fit
    /// `config`.
    fn cores(
        &mut self,
        config: &ClusterConfig,
        start: Time,
    ) -> Result<Vec<Self::Cores>, ConfigError>;
}
