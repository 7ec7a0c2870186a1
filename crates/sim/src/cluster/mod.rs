//! The cluster engine: invocations reach one router ([`Route`]), which
//! sends each to a server or drops it; each server runs them in containers
//! kept by its own keep-alive policy ([`KeepAlive`]) and publishes its load
//! to the router every few seconds.
//!
//! One loop merges the arrivals with the pending timers by time (timers due
//! at an arrival's instant first; among themselves finishes, expiries, load
//! samples, publications, closed-loop sends, each kind by server or client
//! index), so a run is fully determined by its inputs:
//!
//! 1. An arrival is routed by what
//!    [`Servers`](faasched_model::cluster::Servers) shows now: the loads as last
//!    published, the exact invocations running, the idle warm containers.
//!    A [`Choice::Drop`](faasched_model::cluster::Choice::Drop) is final at
//!    once.
//! 2. On its server it takes the most recently idle warm container of its
//!    function ([`KeepAlive::on_reuse`]), or starts cold in a new one
//!    ([`KeepAlive::on_created`]), the keep-alive naming idle containers to
//!    evict ([`KeepAlive::victim`]) until the new one fits in the server's
//!    memory. If it cannot fit (the keep-alive names none, or evicting
//!    every idle container would not free enough, in which case none is
//!    evicted), the invocation waits on its server for memory, as in
//!    OpenWhisk's ContainerPool run buffer: it runs nothing and counts in
//!    no load. Each time memory may have been freed on the server (a
//!    container ends its invocation, or an idle one expires) the waiting
//!    invocations are served in arrival order, each as an arrival is (so
//!    one whose function's container became idle meanwhile starts warm).
//!    There is no overtaking: while any invocation waits, a later one
//!    waits behind it even if it would fit, or find a warm container, now.
//!    One still waiting [`ClusterConfig::memory_wait`] after its arrival
//!    is dropped, as is one that could never fit (its function needs more
//!    memory than the server has, or nothing in flight or expiring on the
//!    server is left to free memory); its outcome names the server. Its
//!    latency includes the wait.
//! 3. A server's cores are shared by processor sharing, each invocation
//!    capped at one core: n in flight on k cores each run at min(1, k/n),
//!    times 1/(1 + γ·n) with contention γ ([`ClusterConfig::contention`]).
//!    A cold start adds its function's cold − warm, as extra CPU work (by
//!    default) or as a delay that takes no core ([`ColdStart`]); either way
//!    it counts in the load while it runs, as the kernel counts a
//!    container's start (runnable or in D state).
//!    With [`run_on`] a node engine runs each server's work instead
//!    ([`NodeServers`]): an invocation arrives on its server's node when it
//!    starts, and its node policy places, orders, preempts or drops it; or
//!    the kernel model does ([`OsServers`]): it is spawned as a process
//!    then, and its OS policy steers it.
//! 4. When its work is done the invocation finishes and its container is
//!    idle ([`KeepAlive::on_idle`]) until reused, evicted, or expired
//!    ([`KeepAlive::next_expiry`], [`KeepAlive::expired`]).
//! 5. Each server's kernel samples its invocations in flight every
//!    [`LOAD_FREQ`] into the 1-minute load average ([`LoadAvg`]); every
//!    [`ClusterConfig::publish`] every server publishes that average over
//!    its cores, as `uptime` prints it, and the router is told
//!    ([`Route::on_loads`]). With [`Loads::Exact`] a server instead
//!    publishes its exact load at every change.
//! 6. Each outcome goes to the router ([`Route::on_finish`]) and the sink
//!    once final, and a closed-loop client then sends its next invocation
//!    ([`Clients`]); with a [`ClusterConfig::transport`], the client has
//!    the answer (and a finished invocation its finish) that much later.
//!
//! Memory is proportional to the invocations in flight and the containers:
//! the stream is pulled one invocation ahead, outcomes are handed out and
//! forgotten, the timers are a few per server, and the load series in the
//! stats is bounded ([`MAX_LOAD_SAMPLES`]).

mod config;
mod cores;
mod engine;
mod events;
mod node;
mod os;
mod outcome;
mod ps;

pub use config::{
    ClusterConfig, ColdStart, ConfigError, DEFAULT_MEMORY_WAIT, Loads, MAX_CONTENTION, MAX_CORES,
    MAX_PUBLISH, MAX_SERVERS, MAX_TRANSPORT, MIN_PUBLISH, ServerShape,
};
pub use node::{MAX_DEADLINE_FACTOR, NodeServers, deadline_factor_fits};
pub use os::OsServers;
// The load average is the model's, shared with the live nodes' reports.
pub use faasched_model::cluster::loadavg::{EXP_1, FIXED_1, FSHIFT, LOAD_FREQ, LoadAvg, calc_load};
// The load series is the model's, shared with the live gateway's.
pub use faasched_model::cluster::loads::{LoadSample, LoadSeries, MAX_LOAD_SAMPLES};
pub use outcome::{ClusterError, ClusterSink, ClusterStats, InsideStats, ServerStats};

use engine::Engine;
use faasched_model::cluster::{FunctionProfile, Invocation, KeepAlive, Route, ServerId};
use faasched_model::{FunctionId, Nanos, TIME_LIMIT, Time};
use ps::Ps;
use std::convert::Infallible;
use std::ops::DerefMut;

/// The most events the engine processes without asking
/// [`ClusterSink::interrupted`].
pub const POLL_EVENTS: u64 = 1 << 12;

/// A closed-loop client's next invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientCall {
    /// The function it invokes.
    pub function: FunctionId,
    /// When it is sent (at or after the previous one's end: the client's
    /// think time).
    pub send: Time,
    /// The CPU it needs warm.
    pub work: Nanos,
}

/// Closed-loop clients: each sends one invocation, waits for its outcome,
/// then sends the next, as the paper's Locust threads do (ch-rlu-hpdc22
/// §6.1). A sampler that answers "client `c`'s next call after `now`"
/// drives the engine through a thin adapter.
///
/// ```text
/// next(c, start) ─► send ─► outcome ─► next(c, finish or drop) ─► ... ─► None
/// ```
pub trait Clients {
    /// How many clients; client ids are `0..clients()`.
    fn clients(&self) -> u32;

    /// Client `client`'s next invocation, asked at `now`: at the start of
    /// the run, then each time its previous invocation finished or was
    /// dropped. `None`: it sends no more; the run ends when every client
    /// has said so (a sampler bounds its run by a duration or a count).
    fn next(&mut self, client: u32, now: Time) -> Option<ClientCall>;
}

/// No clients: an open-loop run's.
struct NoClients;

impl Clients for NoClients {
    fn clients(&self) -> u32 {
        0
    }

    fn next(&mut self, _client: u32, _now: Time) -> Option<ClientCall> {
        None
    }
}

/// How every server of a cluster runs the work it starts: its cores
/// shared by processor sharing ([`Shared`]), a node engine's dispatchers
/// and workers under a node policy ([`NodeServers`]), or the kernel model's
/// cores under an OS policy ([`OsServers`]). Sealed: the cluster engine
/// drives the cores through calls of its own.
pub trait Servers: cores::Build {}

impl<T: cores::Build> Servers for T {}

/// Every server's cores shared by processor sharing, each invocation
/// capped at one core and slowed by the cluster's contention γ.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shared;

impl cores::Build for Shared {
    type Cores = Ps;

    fn cores(&mut self, config: &ClusterConfig, start: Time) -> Result<Vec<Ps>, ConfigError> {
        let gamma = config.contention_micro();
        Ok((0..config.servers)
            .map(|_| Ps::new(config.cores, gamma, start))
            .collect())
    }
}

/// Runs `invocations` (open loop: in arrival order, ids increasing, each
/// function indexing `profiles`) through a cluster of `config`'s shape,
/// routed by `router`, each server's containers kept by the keep-alive
/// `keep_alive` builds for it and its cores shared by processor sharing;
/// hands each outcome to `sink` as soon as it is final. The servers boot at
/// the first arrival.
///
/// The keep-alives may be boxes (`Box<dyn KeepAlive>`) or references. Stops
/// at the first error of the stream, the first invocation out of order,
/// or the first breach of a policy's contract, and returns it; nothing
/// panics on bad input.
pub fn run<R, F, K, I, E, S>(
    config: &ClusterConfig,
    router: &mut R,
    keep_alive: F,
    profiles: &[FunctionProfile],
    invocations: I,
    sink: S,
) -> Result<ClusterStats, ClusterError<E>>
where
    R: Route + ?Sized,
    F: FnMut(ServerId) -> K,
    K: DerefMut,
    K::Target: KeepAlive,
    I: IntoIterator<Item = Result<Invocation, E>>,
    S: ClusterSink,
{
    run_on(
        config,
        router,
        keep_alive,
        Shared,
        profiles,
        invocations,
        sink,
    )
}

/// Runs closed-loop `clients` from time 0 until none sends any more, on a
/// cluster as [`run`] does; invocation ids are given in arrival order from
/// 0.
pub fn run_closed<R, F, K, C, S>(
    config: &ClusterConfig,
    router: &mut R,
    keep_alive: F,
    profiles: &[FunctionProfile],
    clients: &mut C,
    sink: S,
) -> Result<ClusterStats, ClusterError<Infallible>>
where
    R: Route + ?Sized,
    F: FnMut(ServerId) -> K,
    K: DerefMut,
    K::Target: KeepAlive,
    C: Clients + ?Sized,
    S: ClusterSink,
{
    run_closed_on(config, router, keep_alive, Shared, profiles, clients, sink)
}

/// Runs `invocations` as [`run`] does, each server's work run as
/// `servers` say.
pub fn run_on<R, F, K, V, I, E, S>(
    config: &ClusterConfig,
    router: &mut R,
    keep_alive: F,
    mut servers: V,
    profiles: &[FunctionProfile],
    invocations: I,
    mut sink: S,
) -> Result<ClusterStats, ClusterError<E>>
where
    R: Route + ?Sized,
    F: FnMut(ServerId) -> K,
    K: DerefMut,
    K::Target: KeepAlive,
    V: Servers,
    I: IntoIterator<Item = Result<Invocation, E>>,
    S: ClusterSink,
{
    check(config, profiles)?;
    let mut stream = invocations.into_iter();
    let mut next = stream.next().transpose().map_err(ClusterError::Input)?;
    let start = next.as_ref().map_or(0, |i| i.arrival);
    let cpus = servers.cores(config, start).map_err(ClusterError::Config)?;
    let mut engine = Engine::new(config, profiles, keep_alive, cpus, start);
    let mut last: Option<Invocation> = None;
    let mut steps: u64 = 0;
    loop {
        steps += 1;
        if steps.is_multiple_of(POLL_EVENTS) && sink.interrupted() {
            return Err(ClusterError::Interrupted {
                finished: engine.stats.finished,
            });
        }
        match (&next, engine.next_at()) {
            (None, _) if !engine.live() || engine.stalled() => break,
            (None, None) => break,
            (Some(inv), Some(at)) if at <= inv.arrival => {
                engine.fire(router, &mut sink, &mut NoClients)?
            }
            (None, Some(_)) => engine.fire(router, &mut sink, &mut NoClients)?,
            (Some(_), _) => {
                let Some(inv) = next.take() else { break };
                check_invocation(&inv, last.as_ref(), profiles.len())?;
                next = stream.next().transpose().map_err(ClusterError::Input)?;
                engine.advance_to(inv.arrival);
                engine.arrive(
                    inv.id,
                    inv.function,
                    inv.work,
                    None,
                    router,
                    &mut sink,
                    &mut NoClients,
                )?;
                last = Some(inv);
            }
        }
    }
    engine.end()
}

/// Runs closed-loop `clients` as [`run_closed`] does, each server's work
/// run as `servers` say.
pub fn run_closed_on<R, F, K, V, C, S>(
    config: &ClusterConfig,
    router: &mut R,
    keep_alive: F,
    mut servers: V,
    profiles: &[FunctionProfile],
    clients: &mut C,
    mut sink: S,
) -> Result<ClusterStats, ClusterError<Infallible>>
where
    R: Route + ?Sized,
    F: FnMut(ServerId) -> K,
    K: DerefMut,
    K::Target: KeepAlive,
    V: Servers,
    C: Clients + ?Sized,
    S: ClusterSink,
{
    check(config, profiles)?;
    let cpus = servers.cores(config, 0).map_err(ClusterError::Config)?;
    let mut engine = Engine::new(config, profiles, keep_alive, cpus, 0);
    for c in 0..clients.clients() {
        engine.ask(c, 0, clients)?;
    }
    let mut steps: u64 = 0;
    while engine.live() && !engine.stalled() {
        steps += 1;
        if steps.is_multiple_of(POLL_EVENTS) && sink.interrupted() {
            return Err(ClusterError::Interrupted {
                finished: engine.stats.finished,
            });
        }
        engine.fire(router, &mut sink, clients)?;
    }
    engine.end()
}

/// Checks the configuration, and that profile `i` is function `i`'s.
fn check<E>(config: &ClusterConfig, profiles: &[FunctionProfile]) -> Result<(), ClusterError<E>> {
    config.validate().map_err(ClusterError::Config)?;
    for (index, p) in profiles.iter().enumerate() {
        if p.function.0 as usize != index {
            return Err(ClusterError::Profile {
                index,
                what: format!(
                    "it profiles function {}: profiles go by function id",
                    p.function.0
                ),
            });
        }
        if p.warm > TIME_LIMIT || p.cold > TIME_LIMIT {
            return Err(ClusterError::Profile {
                index,
                what: format!(
                    "warm {} ns or cold {} ns exceeds the clock's limit of {TIME_LIMIT} ns",
                    p.warm, p.cold
                ),
            });
        }
    }
    Ok(())
}

/// Checks an open-loop invocation against the one before it.
fn check_invocation<E>(
    inv: &Invocation,
    last: Option<&Invocation>,
    functions: usize,
) -> Result<(), ClusterError<E>> {
    let err = |what: String| Err(ClusterError::Invocation { id: inv.id, what });
    if let Some(last) = last {
        if inv.arrival < last.arrival {
            return err(format!(
                "arrives at {} ns, before invocation {} ({} ns): invocations come in arrival order",
                inv.arrival, last.id.0, last.arrival
            ));
        }
        if inv.id <= last.id {
            return err(format!(
                "comes after invocation {}: ids increase in arrival order",
                last.id.0
            ));
        }
    }
    if inv.function.0 as usize >= functions {
        return err(format!(
            "invokes function {}, of {functions} profiled",
            inv.function.0
        ));
    }
    if inv.arrival > TIME_LIMIT || inv.work > TIME_LIMIT {
        return err(format!(
            "arrival {} ns or work {} ns exceeds the clock's limit of {TIME_LIMIT} ns",
            inv.arrival, inv.work
        ));
    }
    Ok(())
}
