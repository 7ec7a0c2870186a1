//! `shinjuku` and `shinjuku-mq`: Shinjuku's centralized preemptive
//! dispatcher as the paper integrates it (§4 "Baselines", §4.4). Late
//! binding: the dispatcher holds every request and hands one to a worker
//! when it has nothing to run; once a request has run [`SHINJUKU_QUANTUM`]
//! the dispatcher takes it back if anything else waits, and puts it at the
//! tail of its queue, keeping its arrival time.
//!
//! - [`Queues::Single`]: one FIFO for every request (the paper's choice for
//!   the exponential and log-normal workloads).
//! - [`Queues::Multi`]: one FIFO per function; an idle worker takes the head
//!   of the queue whose head has waited longest relative to its deadline,
//!   the greatest (now − head arrival) / relative deadline (original
//!   Shinjuku's `smart_tskq_dequeue` with each type's SLO; the SledgeScale
//!   code's `shinjuku_select_sandbox`). Ties go to the lowest function id.
//!
//! Where sources differ: a preempted request goes to the TAIL, as original
//! Shinjuku does (`tskq_enqueue_tail`) and §4 says ("moved to the end of the
//! global queue"); the SledgeScale code puts it back at the head
//! (`insertfront`, note section 4 row 14). §4's "resumed by the same worker"
//! is not modelled: a returned request runs on whichever worker next asks
//! when it reaches its queue's head. Workers run one request at a time
//! (FIFO, no local quantum), and each `on_idle` hands out one request.
//! A relative deadline of 0 counts as 1 ns in the multi-queue ratio.

use faasched_model::node::{
    Decision, Dispatch, Local, Order, Placement, RequestId, RequestInfo, WorkerId, Workers,
};
use faasched_model::{FunctionId, Nanos, Time, US};
use std::collections::{BTreeMap, VecDeque};

/// The dispatcher's preemption quantum: 15 µs ("Our testing showed that a
/// 15µs quantum yields optimal performance", §4.4; `INTERRUPT_INTERVAL` in
/// the SledgeScale code).
pub const SHINJUKU_QUANTUM: Nanos = 15 * US;

/// How Shinjuku queues the requests it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Queues {
    /// One FIFO queue.
    Single,
    /// One FIFO queue per function, served by waiting time over deadline.
    Multi,
}

/// Shinjuku's dispatcher: see the module docs.
#[derive(Clone, Debug)]
pub struct Shinjuku {
    queues: Queues,
    /// Per function under `Multi` (only non-empty queues are kept); one
    /// queue under `FunctionId(0)` under `Single`.
    held: BTreeMap<FunctionId, VecDeque<RequestInfo>>,
}

impl Shinjuku {
    /// Shinjuku with `queues`.
    pub fn new(queues: Queues) -> Shinjuku {
        Shinjuku {
            queues,
            held: BTreeMap::new(),
        }
    }

    /// Holds `req` at the tail of its queue.
    fn hold(&mut self, req: &RequestInfo) {
        let key = match self.queues {
            Queues::Single => FunctionId(0),
            Queues::Multi => req.function,
        };
        self.held.entry(key).or_default().push_back(*req);
    }

    /// The queue an idle worker serves at `now`.
    fn pick(&self, now: Time) -> Option<FunctionId> {
        // (function, waited, deadline) of the best head: a/b > c/d as
        // a·d > c·b, exact in u128.
        let mut best: Option<(FunctionId, u128, u128)> = None;
        for (&f, q) in &self.held {
            let Some(head) = q.front() else { continue };
            let waited = u128::from(now.saturating_sub(head.arrival));
            let deadline = u128::from(head.deadline.max(1));
            if best.is_none_or(|(_, w, d)| waited * d > w * deadline) {
                best = Some((f, waited, deadline));
            }
        }
        best.map(|(f, _, _)| f)
    }
}

impl Dispatch for Shinjuku {
    fn name(&self) -> &str {
        match self.queues {
            Queues::Single => "shinjuku",
            Queues::Multi => "shinjuku-mq",
        }
    }

    fn local(&self) -> Local {
        Local {
            order: Order::Fifo,
            quantum: None,
        }
    }

    fn on_request(&mut self, _now: Time, req: &RequestInfo, _workers: &Workers) -> Decision {
        self.hold(req);
        Decision {
            placement: Placement::Hold,
            scanned: 0,
        }
    }

    fn on_idle(
        &mut self,
        now: Time,
        _worker: WorkerId,
        _workers: &Workers,
        out: &mut Vec<RequestId>,
    ) {
        let Some(f) = self.pick(now) else { return };
        let Some(q) = self.held.get_mut(&f) else {
            return;
        };
        if let Some(r) = q.pop_front() {
            out.push(r.id);
        }
        if q.is_empty() {
            self.held.remove(&f);
        }
    }

    fn quantum(&self) -> Option<Nanos> {
        Some(SHINJUKU_QUANTUM)
    }

    /// Preempts only when another request waits: with nothing held the
    /// worker would be handed the same request back.
    fn on_quantum(&mut self, _now: Time, _worker: WorkerId, _workers: &Workers) -> bool {
        !self.held.is_empty()
    }

    fn on_returned(&mut self, _now: Time, req: &RequestInfo) {
        self.hold(req);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::testkit::info;

    fn idle(p: &mut Shinjuku, now: Time, ws: &Workers) -> Vec<RequestId> {
        let mut out = Vec::new();
        p.on_idle(now, WorkerId(0), ws, &mut out);
        out
    }

    #[test]
    fn a_preempted_request_goes_to_the_tail_and_only_when_another_waits() {
        let mut p = Shinjuku::new(Queues::Single);
        let ws = Workers::new(1, p.local());
        assert_eq!(p.quantum(), Some(15 * US));
        p.on_request(0, &info(0, 0, 0, 1_000, 100), &ws);
        assert_eq!(idle(&mut p, 0, &ws), [RequestId(0)]);
        // Nothing else held: request 0 keeps the worker.
        assert!(!p.on_quantum(15 * US, WorkerId(0), &ws));
        p.on_request(20 * US, &info(1, 1, 20 * US, 1_000, 100), &ws);
        p.on_request(21 * US, &info(2, 0, 21 * US, 1_000, 100), &ws);
        assert!(p.on_quantum(30 * US, WorkerId(0), &ws));
        p.on_returned(30 * US, &info(0, 0, 0, 1_000, 100));
        // Request 0 arrived first but waits behind 1 and 2.
        let order: Vec<RequestId> = (0..4).flat_map(|_| idle(&mut p, 30 * US, &ws)).collect();
        assert_eq!(order, [RequestId(1), RequestId(2), RequestId(0)]);
        assert!(!p.on_quantum(40 * US, WorkerId(0), &ws));
    }

    #[test]
    fn multi_queue_serves_the_head_most_overdue_relative_to_its_deadline() {
        let mut p = Shinjuku::new(Queues::Multi);
        let ws = Workers::new(1, p.local());
        // At 100: function 0's head waited 90 of 1,000 (0.09), function 1's
        // 40 of 100 (0.4), function 2's 20 of 50 (0.4, a tie: lower id wins).
        p.on_request(10, &info(0, 0, 10, 1_000, 1), &ws);
        p.on_request(20, &info(1, 0, 20, 1, 1), &ws);
        p.on_request(60, &info(2, 1, 60, 100, 1), &ws);
        p.on_request(80, &info(3, 2, 80, 50, 1), &ws);
        assert_eq!(idle(&mut p, 100, &ws), [RequestId(2)]);
        // Function 2's head now leads (0.4 vs 0.09): its queue, not arrival
        // order, decides.
        assert_eq!(idle(&mut p, 100, &ws), [RequestId(3)]);
        // Function 0: request 0, then 1 (its deadline no longer matters:
        // only the head's does).
        assert_eq!(idle(&mut p, 100, &ws), [RequestId(0)]);
        assert_eq!(idle(&mut p, 100, &ws), [RequestId(1)]);
        assert!(idle(&mut p, 100, &ws).is_empty());
        assert!(!p.on_quantum(100, WorkerId(0), &ws));
    }

    #[test]
    fn single_queue_is_arrival_order() {
        let mut p = Shinjuku::new(Queues::Single);
        let ws = Workers::new(1, p.local());
        p.on_request(10, &info(0, 0, 10, 1_000, 1), &ws);
        p.on_request(60, &info(1, 1, 60, 100, 1), &ws);
        assert_eq!(idle(&mut p, 100, &ws), [RequestId(0)]);
        assert_eq!(idle(&mut p, 100, &ws), [RequestId(1)]);
    }
}
