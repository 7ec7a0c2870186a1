//! What a node run hands out: each request's outcome to a [`NodeSink`], the
//! run's [`NodeStats`] at the end, or why it stopped, [`NodeError`].

use super::config::ConfigError;
use faasched_model::node::{RequestId, RequestInfo, RequestOutcome};
use faasched_model::{Nanos, SEC, Time};

/// Where a node run's outcomes go, each as soon as it is final. Any
/// `FnMut(RequestOutcome)` is one.
pub trait NodeSink {
    /// A request finished or was dropped.
    fn outcome(&mut self, outcome: RequestOutcome);

    /// Whether the run should stop now ([`NodeError::Interrupted`]): asked
    /// at least every [`POLL_EVENTS`](super::POLL_EVENTS) events. Never, by
    /// default.
    fn interrupted(&mut self) -> bool {
        false
    }

    /// A worker picks `request` for the first time, now (`at`): whether it
    /// runs, and what its start costs beyond the node's sandbox set-up. A
    /// cluster's node server takes the invocation's container here, as a
    /// live node's worker does, and a cold one adds its start to the
    /// request's work. It runs at no extra cost, by default.
    fn first_pick(&mut self, request: &RequestInfo, at: Time) -> Start {
        let _ = (request, at);
        Start::Run(0)
    }
}

/// What a request's first pick does ([`NodeSink::first_pick`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// It runs, this much more work on its worker.
    Run(Nanos),
    /// It is dropped before it runs (its server has no memory for it);
    /// its worker picks its next.
    Refuse,
}

impl<F: FnMut(RequestOutcome)> NodeSink for F {
    fn outcome(&mut self, outcome: RequestOutcome) {
        self(outcome)
    }
}

/// What a whole node run measured, beyond the per-request outcomes.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct NodeStats {
    /// Requests that arrived.
    pub requests: u64,
    /// Requests that finished.
    pub finished: u64,
    /// Requests dropped by their dispatcher, or refused at their first
    /// pick ([`Start::Refuse`]).
    pub dropped: u64,
    /// Events processed: arrivals, and the scheduled events that still
    /// applied when due (dispatcher steps that took time, finishes, ticks,
    /// wake-ups, signals).
    pub events: u64,
    /// From the first arrival to the last finish (0 without a finish).
    pub span: Nanos,
    /// Busy time of each worker, dispatcher by dispatcher (worker `w` of
    /// dispatcher `d` at `d × workers + w`): running requests and paying
    /// sandbox set-up, context switches and quantum ticks.
    pub worker_busy: Vec<Nanos>,
    /// Busy time of each dispatcher: decisions, idle pulls and signals.
    pub dispatcher_busy: Vec<Nanos>,
    /// Times a request was taken off a worker before it finished (local
    /// quantum, dispatcher signal, or dispatcher quantum).
    pub preemptions: u64,
    /// Context switches paid: one per preemption, by the worker's next
    /// pick (a worker whose request went back to its policy pays it only if
    /// it runs again).
    pub switches: u64,
    /// Local quantum timer firings.
    pub ticks: u64,
}

/// Why a node run stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum NodeError<E> {
    /// The configuration cannot run.
    Config(ConfigError),
    /// The request stream failed (a bad input file, say).
    Input(E),
    /// The request stream holds a request the node cannot take.
    Request {
        /// The request.
        id: RequestId,
        /// What is wrong with it.
        what: String,
    },
    /// A policy broke the [`Dispatch`](faasched_model::node::Dispatch)
    /// contract (a worker it does not have, a request it does not hold).
    Policy {
        /// The policy's name.
        policy: String,
        /// Its dispatcher.
        dispatcher: usize,
        /// What it did.
        what: String,
    },
    /// The next event falls after [`RUN_LIMIT`](crate::RUN_LIMIT): the load
    /// exceeds the node so much that its backlog never drains.
    TimeLimit {
        /// Requests finished by then.
        finished: u64,
    },
    /// The sink asked the run to stop.
    Interrupted {
        /// Requests finished by then.
        finished: u64,
    },
}

impl<E: std::fmt::Display> std::fmt::Display for NodeError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeError::Config(e) => e.fmt(f),
            NodeError::Input(e) => e.fmt(f),
            NodeError::Request { id, what } => write!(f, "request {}: {what}", id.0),
            NodeError::Policy {
                policy,
                dispatcher,
                what,
            } => write!(f, "policy {policy} (dispatcher {dispatcher}) {what}"),
            NodeError::TimeLimit { finished } => write!(
                f,
                "the simulated clock reached its limit ({} days) with {finished} requests \
                 finished: the load exceeds the node so much that its backlog does not drain; \
                 lower --rate or add --workers",
                crate::RUN_LIMIT / (86_400 * SEC)
            ),
            NodeError::Interrupted { finished } => {
                write!(f, "interrupted with {finished} requests finished")
            }
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for NodeError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NodeError::Config(e) => Some(e),
            NodeError::Input(e) => Some(e),
            _ => None,
        }
    }
}

/// The span from `start` to `end`, 0 if there was no end.
pub(crate) fn span(start: Option<Time>, end: Option<Time>) -> Nanos {
    match (start, end) {
        (Some(s), Some(e)) => e.saturating_sub(s),
        _ => 0,
    }
}
