//! A server whose cores are a node: the node engine's dispatchers and
//! workers under a node policy ([`Dispatch`]), every mechanism charged what
//! its [`Costs`](crate::node::Costs) say. The cluster engine keeps the
//! containers; each invocation it starts becomes one request on the node,
//! arriving when it starts (after any wait for memory), so the node policy
//! sees exactly the invocations the server admitted.

use super::cores::{Cores, Done, Job};
use crate::node::engine::Engine;
use crate::node::{NodeConfig, NodeStats};
use faasched_model::cluster::NodePlace;
use faasched_model::node::{Dispatch, Request, RequestId, RequestOutcome};
use faasched_model::{Function, Nanos, TIME_LIMIT, Time};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::ops::DerefMut;
use std::sync::Arc;

/// Bits of a request id that hold the engine's slot of its invocation; the
/// bits above count the server's requests, so ids increase in arrival
/// order as the node engine requires.
const SLOT_BITS: u32 = 32;

/// One server's node engine, its policies (one per dispatcher), and the
/// outcomes it has handed out and the cluster engine not yet taken.
pub(crate) struct NodeCores<P> {
    engine: Engine,
    policies: Vec<P>,
    done: VecDeque<RequestOutcome>,
    /// A request's relative deadline over its function's warm time.
    deadline_factor: f64,
    /// The name every request carries: no node policy reads names, and the
    /// cluster's functions are known by id.
    name: Arc<str>,
    /// Requests added so far.
    requests: u64,
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
    pub(crate) fn new(
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
            requests: 0,
            in_flight: 0,
            last: start,
        }
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

    fn advance(&mut self, now: Time) -> Result<(), String> {
        self.last = self.last.max(now);
        let done = &mut self.done;
        let mut sink = |o: RequestOutcome| done.push_back(o);
        while self.engine.next_event().is_some_and(|at| at <= now) {
            self.engine
                .handle_next::<Infallible, _, _>(self.policies.as_mut_slice(), &mut sink)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The invocation arrives on the node now, its deadline the deadline
    /// factor times its function's warm time.
    fn add(&mut self, job: Job) -> Result<(), String> {
        if self.requests >> (64 - SLOT_BITS) != 0 {
            return Err(format!(
                "ran out of request ids after {} invocations",
                self.requests
            ));
        }
        let id = RequestId(self.requests << SLOT_BITS | u64::from(job.slot));
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
        self.requests += 1;
        self.in_flight += 1;
        let done = &mut self.done;
        let mut sink = |o: RequestOutcome| done.push_back(o);
        self.engine
            .arrive::<Infallible, _, _>(req, self.policies.as_mut_slice(), &mut sink)
            .map_err(|e| e.to_string())
    }

    fn next_at(&self) -> Option<Time> {
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
            slot: (o.info.id.0 & ((1 << SLOT_BITS) - 1)) as u32,
            finish: o.finish,
            node: Some(NodePlace {
                dispatcher: o.dispatcher,
                worker: o.worker,
                first_run: o.first_run,
                preemptions: o.preemptions,
                missed: o.missed(),
            }),
        })
    }

    fn busy(&self) -> Nanos {
        self.engine.stats.worker_busy.iter().sum()
    }

    fn end(&mut self) -> Result<Option<NodeStats>, String> {
        self.engine
            .drained::<Infallible, _>(self.policies.as_slice())
            .map_err(|e| e.to_string())?;
        Ok(Some(self.engine.finish_stats()))
    }
}
