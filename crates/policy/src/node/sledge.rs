//! `sledge`: the eRPC-based Sledge baseline (§4 "Baselines", Fig. 8). Late
//! binding over one global FIFO queue: "each worker competes for a batch of
//! requests (batch size 5) from the global queue and schedules them locally
//! using Round Robin" (§4.3), with the 1 ms timer quantum §4 gives every
//! timer-driven baseline.
//!
//! The paper names three local policies for Sledge (note section 3 row 3):
//! round robin with a 5 ms polling interval (§3.2), EDF with a 1 ms quantum
//! (§4 "Baselines"), round robin (§4.3, the figure it runs in). This follows
//! §4.3 with §4's quantum: FIFO re-picked every 1 ms, the running request to
//! the tail. Nothing is dropped and the dispatcher never preempts.

use faasched_model::node::{
    Decision, Dispatch, Local, Order, Placement, RequestId, RequestInfo, WorkerId, Workers,
};
use faasched_model::{MS, Nanos, Time};
use std::collections::VecDeque;

/// Requests an idle worker pulls from the global queue at once: 5 (§4.3;
/// `SLEDGE_FIFO_QUEUE_BATCH_SIZE` in the code).
pub const SLEDGE_BATCH: usize = 5;

/// The workers' round-robin quantum: 1 ms (§4 "Baselines"; the code's
/// setitimer default).
pub const SLEDGE_QUANTUM: Nanos = MS;

/// Sledge's global queue: see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Sledge {
    queue: VecDeque<RequestId>,
}

impl Sledge {
    /// An empty global queue.
    pub fn new() -> Sledge {
        Sledge::default()
    }
}

impl Dispatch for Sledge {
    fn name(&self) -> &str {
        "sledge"
    }

    fn local(&self) -> Local {
        Local {
            order: Order::Fifo,
            quantum: Some(SLEDGE_QUANTUM),
        }
    }

    fn on_request(&mut self, _now: Time, req: &RequestInfo, _workers: &Workers) -> Decision {
        self.queue.push_back(req.id);
        Decision {
            placement: Placement::Hold,
            scanned: 0,
        }
    }

    fn on_idle(
        &mut self,
        _now: Time,
        _worker: WorkerId,
        _workers: &Workers,
        out: &mut Vec<RequestId>,
    ) {
        let n = self.queue.len().min(SLEDGE_BATCH);
        out.extend(self.queue.drain(..n));
    }

    /// Never called (no dispatcher quantum); a request handed back all the
    /// same joins the tail, as a round-robin requeue would.
    fn on_returned(
        &mut self,
        _now: Time,
        req: &RequestInfo,
        _worker: WorkerId,
    ) -> Option<WorkerId> {
        self.queue.push_back(req.id);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::testkit::info;
    use faasched_model::node::RequestId;

    #[test]
    fn an_idle_worker_pulls_a_batch_of_five_in_arrival_order() {
        let ws = Workers::new(2, Sledge::new().local());
        let mut p = Sledge::new();
        for id in 0..7 {
            let d = p.on_request(id, &info(id, 0, id, 100, 10), &ws);
            assert_eq!((d.placement, d.scanned), (Placement::Hold, 0));
        }
        let mut out = Vec::new();
        p.on_idle(10, WorkerId(1), &ws, &mut out);
        assert_eq!(out, (0..5).map(RequestId).collect::<Vec<_>>());
        out.clear();
        p.on_idle(10, WorkerId(0), &ws, &mut out);
        assert_eq!(out, [RequestId(5), RequestId(6)]);
        out.clear();
        p.on_idle(10, WorkerId(0), &ws, &mut out);
        assert!(out.is_empty());
    }
}
