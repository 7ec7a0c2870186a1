//! The router's side of an invocation: decided once under the lock
//! (invariant 2), started on its node in the table, and its outcome told
//! to the router unless the up nodes changed meanwhile (invariant 4).

use super::link::NodeLink;
use super::metrics::record;
use super::{Inner, lock, nanos};
use crate::wire::response::{self, Counted};
use faasched_model::cluster::{
    Choice, FunctionProfile, InvocationId, InvocationInfo, InvocationOutcome,
};
use hyper::StatusCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The error kind of an invocation the router dropped or no node was up
/// for, as the node runtime names the ones it refuses.
const OVERLOADED: &str = "overloaded";

/// How a node answered an invocation.
#[derive(Clone, Copy, Debug)]
pub(super) struct Answered {
    /// With a 2xx.
    pub(super) ok: bool,
    /// It started its container cold.
    pub(super) cold: bool,
}

/// An invocation started on a node: what its end tells the table and the
/// router.
#[derive(Clone, Copy, Debug)]
pub(super) struct Started {
    /// The node's id in the table.
    node: usize,
    /// The table's epoch when it was decided: the router learns its
    /// outcome only if the up nodes are still those.
    epoch: u64,
    info: InvocationInfo,
}

impl Started {
    /// The node's id in the table.
    pub(super) fn node(&self) -> usize {
        self.node
    }
}

/// What the router decided for an invocation.
pub(super) enum Decision {
    /// Forward it to the link's node, where the table counts it started.
    Forward(Started, Arc<NodeLink>),
    /// Answer it 503: the router dropped it, or no node was up
    /// (`no_node`).
    Drop { info: InvocationInfo, no_node: bool },
}

impl Inner {
    /// Decides an invocation of `profile` under the lock (invariant 2):
    /// the router reads the up nodes, and its time alone is measured.
    pub(super) fn decide(&self, profile: FunctionProfile) -> Decision {
        let mut state = lock(&self.state);
        let state = &mut *state;
        let now = self.now();
        let info = InvocationInfo {
            id: InvocationId(state.next_id),
            arrival: now,
            profile,
        };
        state.next_id += 1;
        let decided = Instant::now();
        let choice = if state.table.servers().is_empty() {
            Choice::Drop
        } else {
            state.router.route(now, &info, state.table.servers())
        };
        record(&self.metrics.decision, nanos(decided.elapsed()));
        match choice {
            Choice::Server(s) if (s.0 as usize) < state.table.servers().len() => {
                let node = state.table.node_of(s);
                state.table.start(node);
                let started = Started {
                    node,
                    epoch: state.table.epoch(),
                    info,
                };
                Decision::Forward(started, Arc::clone(&state.links[&node]))
            }
            _ => Decision::Drop {
                info,
                no_node: state.table.servers().is_empty(),
            },
        }
    }

    /// The 503 `overloaded` of a dropped invocation, saying whether no node
    /// was up; the router learns it was dropped.
    pub(super) fn dropped(&self, info: InvocationInfo, no_node: bool) -> Counted {
        self.metrics.dropped.fetch_add(1, Ordering::Relaxed);
        let mut state = lock(&self.state);
        let now = self.now();
        state.router.on_finish(
            now,
            &InvocationOutcome {
                info,
                work: info.profile.warm,
                server: None,
                cold: false,
                first_run: None,
                finish: None,
                inside: None,
            },
        );
        drop(state);
        let why = if no_node {
            "the gateway has no node up: overloaded\n"
        } else {
            "the gateway's router dropped the invocation: overloaded\n"
        };
        response::error(StatusCode::SERVICE_UNAVAILABLE, why.to_owned(), OVERLOADED)
    }

    /// `started`'s node is done with it: how it answered, `None` if it did
    /// not. The router learns the outcome if the up nodes are still those
    /// it chose among (invariant 4).
    pub(super) fn finish(&self, started: Started, answered: Option<Answered>) {
        let Started { node, epoch, info } = started;
        let mut state = lock(&self.state);
        let state = &mut *state;
        state.table.finish(node);
        if state.table.epoch() != epoch {
            return;
        }
        let now = self.now();
        state.router.on_finish(
            now,
            &InvocationOutcome {
                info,
                work: info.profile.warm,
                server: state.table.server_of(node),
                cold: answered.is_some_and(|a| a.cold),
                // The node's answer does not say when its work first ran.
                first_run: None,
                finish: answered.filter(|a| a.ok).map(|_| now),
                inside: None,
            },
        );
    }
}
