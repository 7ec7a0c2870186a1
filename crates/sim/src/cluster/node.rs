//! A server whose cores are a node: the node engine's dispatchers and
//! workers under a node policy ([`Dispatch`]), every mechanism charged what
//! its [`Costs`](crate::node::Costs) say. Each invocation routed to the
//! server becomes one request on the node, arriving then; the cluster
//! engine keeps the containers, and a worker takes one when it first picks
//! the request ([`Bind`]), as a live node's worker does.

use super::config::{ClusterConfig, ConfigError, ServerShape};
use super::cores::{Bind, Build, Cores, Done, Ids, Job, uncontended};
use super::outcome::InsideStats;
use crate::node::engine::Engine;
use crate::node::{NodeConfig, NodeSink, Start};
use faasched_model::cluster::{Inside, NodePlace, ServerId};
use faasched_model::node::{Dispatch, Request, RequestId, RequestInfo, RequestOutcome};
use faasched_model::{Function, Nanos, TIME_LIMIT, Time};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::ops::DerefMut;
use std::sync::Arc;

/// Servers run as nodes: each server's cores are a node engine's
/// dispatchers and workers ([`NodeConfig`], one shape for every server),
/// each dispatcher under its own instance of a node policy. An invocation
/// routed to a server arrives on its node at once, its estimate its
/// function's warm time, its deadline `deadline_factor` times that; its
/// outcome names its dispatcher and worker ([`NodePlace`]). When a worker
/// first picks it, it takes a warm container of its function, or starts
/// a new one cold, or is refused if the keep-alive cannot free its memory
/// then ([`ClusterStats::dropped_for_memory`](super::ClusterStats::dropped_for_memory)):
/// an invocation queued on the node holds no container, and one queued
/// behind another of its function takes that one's container warm. A cold
/// start's extra is more work on the worker, whether the cluster's cold
/// starts take CPU or wall time: a live node's worker waits out the start
/// (loading the code, then the start's wait) before it runs the
/// invocation. The server never waits for memory
/// ([`ClusterConfig::memory_wait`] applies to servers that take containers
/// as invocations arrive). A request the node policy drops is dropped on
/// its server ([`ClusterStats::dropped_by_server`](super::ClusterStats::dropped_by_server)).
pub struct NodeServers<N> {
    /// Every server's node: its dispatchers × workers are the cluster's
    /// cores per server.
    pub config: NodeConfig,
    /// A request's relative deadline over its function's warm time.
    pub deadline_factor: f64,
    /// Server `s`'s policies, one per dispatcher.
    pub policies: N,
}

/// The largest [`NodeServers::deadline_factor`].
pub const MAX_DEADLINE_FACTOR: f64 = 1e6;

/// Whether node servers take `f` as their deadline factor: finite, above
/// 0 and at most [`MAX_DEADLINE_FACTOR`].
pub fn deadline_factor_fits(f: f64) -> bool {
    f.is_finite() && f > 0.0 && f <= MAX_DEADLINE_FACTOR
}

impl<N, P> Build for NodeServers<N>
where
    N: FnMut(ServerId) -> Vec<P>,
    P: DerefMut,
    P::Target: Dispatch,
{
    type Cores = NodeCores<P>;

    fn cores(
        &mut self,
        config: &ClusterConfig,
        start: Time,
    ) -> Result<Vec<NodeCores<P>>, ConfigError> {
        let bad = |e| Err(ConfigError::Server(e));
        let node = &self.config;
        if node.dispatchers.saturating_mul(node.workers) != config.cores as usize {
            return bad(ServerShape::Cores {
                dispatchers: node.dispatchers,
                workers: node.workers,
                cores: config.cores,
            });
        }
        uncontended(config)?;
        let f = self.deadline_factor;
        if !deadline_factor_fits(f) {
            return bad(ServerShape::DeadlineFactor(f));
        }
        (0..config.servers)
            .map(|s| {
                let policies = (self.policies)(ServerId(s as u32));
                crate::node::check(node, &policies)
                    .map_err(|e| ConfigError::Server(ServerShape::Node(e)))?;
                Ok(NodeCores::new(node, policies, f, start))
            })
            .collect()
    }
}

/// One server's node engine, its policies (one per dispatcher), and the
/// outcomes it has handed out and the cluster engine not yet taken.
pub struct NodeCores<P> {
    engine: Engine,
    policies: Vec<P>,
    done: VecDeque<RequestOutcome>,
    /// A request's relative deadline over its function's warm time.
    deadline_factor: f64,
    /// The name every request carries: no node policy reads names, and the
    /// cluster's functions are known by id.
    name: Arc<str>,
    /// The ids of the requests added so far.
    ids: Ids,
    in_flight: u64,
    /// The instant last advanced to.
    last: Time,
}

impl<P> NodeCores<P>
where
    P: DerefMut,
    P::Target: Dispatch,
{
    /// A node of `config`'s shape (checked against `policies` by the
    /// caller), idle from `start`.
    fn new(
        config: &NodeConfig,
        policies: Vec<P>,
        deadline_factor: f64,
        start: Time,
    ) -> NodeCores<P> {
        NodeCores {
            engine: Engine::new(config, &policies),
            policies,
            done: VecDeque::new(),
            deadline_factor,
            name: Arc::from("invocation"),
            ids: Ids::default(),
            in_flight: 0,
            last: start,
        }
    }
}

/// Where a node's outcomes and first picks go: the server's queue of done
/// work, and the engine's containers.
struct Queue<'a, B> {
    done: &'a mut VecDeque<RequestOutcome>,
    bind: &'a mut B,
    /// The instant the node is advanced to: its events due then are the
    /// only ones it handles (the engine advances a server to its next
    /// event).
    now: Time,
}

impl<B: Bind> NodeSink for Queue<'_, B> {
    fn outcome(&mut self, o: RequestOutcome) {
        self.bind
            .done(Ids::slot(o.info.id.0), o.finish.unwrap_or(self.now));
        self.done.push_back(o);
    }

    fn first_pick(&mut self, request: &RequestInfo, at: Time) -> Start {
        self.bind.first_run(Ids::slot(request.id.0), at)
    }
}

impl<P> Cores for NodeCores<P>
where
    P: DerefMut,
    P::Target: Dispatch,
{
    fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Wall-time cold starts do not slow a node's workers: a node server
    /// has no contention term.
    fn set_starting(&mut self, _starting: u64) {}

    const BINDS_AT_FIRST_RUN: bool = true;

    fn advance(&mut self, now: Time, bind: &mut impl Bind) -> Result<(), String> {
        self.last = self.last.max(now);
        let mut sink = Queue {
            done: &mut self.done,
            bind,
            now: self.last,
        };
        while self.engine.next_event().is_some_and(|at| at <= now) {
            self.engine
                .handle_next::<Infallible, _, _>(self.policies.as_mut_slice(), &mut sink)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The invocation arrives on the node now, its deadline the deadline
    /// factor times its function's warm time.
    fn add(&mut self, job: Job, bind: &mut impl Bind) -> Result<(), String> {
        let id = RequestId(self.ids.issue(job.slot, "request")?);
        let deadline = (job.warm as f64 * self.deadline_factor).min(TIME_LIMIT as f64) as Nanos;
        let req = Request {
            id,
            function: Function {
                id: job.function,
                name: Arc::clone(&self.name),
            },
            arrival: self.last,
            work: job.work,
            deadline,
            estimate: job.estimate,
        };
        self.engine
            .check::<Infallible>(&req)
            .map_err(|e| e.to_string())?;
        self.in_flight += 1;
        let mut sink = Queue {
            done: &mut self.done,
            bind,
            now: self.last,
        };
        self.engine
            .arrive::<Infallible, _, _>(req, self.policies.as_mut_slice(), &mut sink)
            .map_err(|e| e.to_string())
    }

    fn next_at(&mut self) -> Option<Time> {
        if self.done.is_empty() {
            self.engine.next_event()
        } else {
            Some(self.last)
        }
    }

    fn pop_done(&mut self) -> Option<Done> {
        let o = self.done.pop_front()?;
        self.in_flight -= 1;
        Some(Done {
            slot: Ids::slot(o.info.id.0),
            first_run: o.first_run,
            finish: o.finish,
            inside: Some(Inside::Node(NodePlace {
                dispatcher: o.dispatcher,
                worker: o.worker,
                preemptions: o.preemptions,
                missed: o.missed(),
            })),
        })
    }

    fn busy(&self) -> Nanos {
        self.engine.stats.worker_busy.iter().sum()
    }

    fn end(&mut self) -> Result<Option<InsideStats>, String> {
        self.engine
            .drained::<Infallible, _>(self.policies.as_slice())
            .map_err(|e| e.to_string())?;
        Ok(Some(InsideStats::Node(self.engine.finish_stats())))
    }
}
