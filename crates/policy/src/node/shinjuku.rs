//! `shinjuku`, `shinjuku-mq` and `shinjuku-any`: Shinjuku's centralized
//! preemptive dispatcher, as the SledgeScale paper integrates it (§4
//! "Baselines", §4.4) and as its authors built it. Late binding: the
//! dispatcher holds every request and hands one to a worker when it has
//! nothing to run; once a request has run [`SHINJUKU_QUANTUM`] and another
//! waits, the dispatcher hands that one to the worker and takes the running
//! request back.
//!
//! - [`Queues::Single`]: one FIFO for every request (the paper's choice for
//!   the exponential and log-normal workloads).
//! - [`Queues::Multi`]: one FIFO per function; an idle worker takes the head
//!   of the queue whose head has waited longest relative to its deadline,
//!   the greatest (now − head arrival) / relative deadline (original
//!   Shinjuku's `smart_tskq_dequeue` with each type's SLO; the SledgeScale
//!   code's `shinjuku_select_sandbox`). Ties go to the lowest function id.
//!
//! Where the request taken back goes ([`Resume`]):
//! - [`Resume::SameWorker`], the paper's integration: "Preempted requests
//!   are moved to the end of the global queue and resumed by the same
//!   worker" (§4). Its code puts the request at the head of the queue
//!   (`insertfront`), where the next selection sends it to the worker it
//!   left (`global_worker_thread_idx`), busy or not; here it joins that
//!   worker's queue at once. Such a request no longer counts as waiting:
//!   the dispatcher preempts only for a request it still holds, and an idle
//!   worker cannot take a request queued on another.
//! - [`Resume::AnyWorker`], original Shinjuku (NSDI '19,
//!   `tskq_enqueue_tail`): back to the tail of its queue, keeping its
//!   arrival time, and resumed by whichever worker reaches it.
//!
//! Workers run their queue FIFO without a local quantum. The quantum counts
//! from when the request's work (re)started; the SledgeScale code counts it
//! from the hand-over (`start_ts`), which would cut a request queued behind
//! a resumed one shorter still. A relative deadline of 0 counts as 1 ns in
//! the multi-queue ratio.

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

/// Where a request taken back off a worker resumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resume {
    /// On the worker it left (the SledgeScale paper's Shinjuku).
    SameWorker,
    /// On whichever worker reaches it at the tail of its queue (original
    /// Shinjuku).
    AnyWorker,
}

/// Shinjuku's dispatcher: see the module docs.
#[derive(Clone, Debug)]
pub struct Shinjuku {
    queues: Queues,
    resume: Resume,
    /// Per function under `Multi` (only non-empty queues are kept, so a
    /// pick reads only those); one queue under `FunctionId(0)` under
    /// `Single`, kept when empty (it is the only one).
    held: BTreeMap<FunctionId, VecDeque<RequestInfo>>,
}

impl Shinjuku {
    /// Shinjuku with `queues`, resuming a preempted request as `resume`
    /// says.
    pub fn new(queues: Queues, resume: Resume) -> Shinjuku {
        Shinjuku {
            queues,
            resume,
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

    /// Takes the request a worker runs next at `now`, if one is held.
    fn take(&mut self, now: Time) -> Option<RequestId> {
        let f = self.pick(now)?;
        let q = self.held.get_mut(&f)?;
        let r = q.pop_front();
        if q.is_empty() && self.queues == Queues::Multi {
            self.held.remove(&f);
        }
        r.map(|r| r.id)
    }
}

impl Dispatch for Shinjuku {
    fn name(&self) -> &str {
        match (self.queues, self.resume) {
            (Queues::Single, Resume::SameWorker) => "shinjuku",
            (Queues::Multi, Resume::SameWorker) => "shinjuku-mq",
            (Queues::Single, Resume::AnyWorker) => "shinjuku-any",
            (Queues::Multi, Resume::AnyWorker) => "shinjuku-mq-any",
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
        out.extend(self.take(now));
    }

    fn quantum(&self) -> Option<Nanos> {
        Some(SHINJUKU_QUANTUM)
    }

    /// Preempts only for a request it holds: with none, the worker would
    /// only be handed its own request back.
    fn on_quantum(
        &mut self,
        now: Time,
        _worker: WorkerId,
        _workers: &Workers,
        out: &mut Vec<RequestId>,
    ) {
        out.extend(self.take(now));
    }

    fn on_returned(&mut self, _now: Time, req: &RequestInfo, worker: WorkerId) -> Option<WorkerId> {
        match self.resume {
            Resume::SameWorker => Some(worker),
            Resume::AnyWorker => {
                self.hold(req);
                None
            }
        }
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

    fn quantum(p: &mut Shinjuku, now: Time, ws: &Workers) -> Vec<RequestId> {
        let mut out = Vec::new();
        p.on_quantum(now, WorkerId(0), ws, &mut out);
        out
    }

    #[test]
    fn the_original_preempts_only_for_a_waiting_request_and_requeues_at_the_tail() {
        let mut p = Shinjuku::new(Queues::Single, Resume::AnyWorker);
        let ws = Workers::new(1, p.local());
        assert_eq!(p.quantum(), Some(15 * US));
        p.on_request(0, &info(0, 0, 0, 1_000, 100), &ws);
        assert_eq!(idle(&mut p, 0, &ws), [RequestId(0)]);
        // Nothing else held: request 0 keeps the worker.
        assert!(quantum(&mut p, 15 * US, &ws).is_empty());
        p.on_request(20 * US, &info(1, 1, 20 * US, 1_000, 100), &ws);
        p.on_request(21 * US, &info(2, 0, 21 * US, 1_000, 100), &ws);
        // The worker is handed request 1 with the interrupt.
        assert_eq!(quantum(&mut p, 30 * US, &ws), [RequestId(1)]);
        let back = p.on_returned(30 * US, &info(0, 0, 0, 1_000, 100), WorkerId(0));
        assert_eq!(back, None);
        // Request 0 arrived first but waits behind 2.
        let order: Vec<RequestId> = (0..3).flat_map(|_| idle(&mut p, 30 * US, &ws)).collect();
        assert_eq!(order, [RequestId(2), RequestId(0)]);
        assert!(quantum(&mut p, 40 * US, &ws).is_empty());
    }

    #[test]
    fn the_papers_integration_resumes_a_request_on_the_worker_it_left() {
        let mut p = Shinjuku::new(Queues::Single, Resume::SameWorker);
        let ws = Workers::new(3, p.local());
        p.on_request(0, &info(0, 0, 0, 1_000, 100), &ws);
        p.on_request(1, &info(1, 0, 1, 1_000, 100), &ws);
        assert_eq!(idle(&mut p, 1, &ws), [RequestId(0)]);
        assert_eq!(quantum(&mut p, 15 * US, &ws), [RequestId(1)]);
        let back = p.on_returned(17 * US, &info(0, 0, 0, 1_000, 100), WorkerId(2));
        assert_eq!(back, Some(WorkerId(2)));
        // It is not held: another worker finds nothing to take, and the
        // running request is not preempted for it.
        assert!(idle(&mut p, 17 * US, &ws).is_empty());
        assert!(quantum(&mut p, 32 * US, &ws).is_empty());
        assert_eq!(p.name(), "shinjuku");
    }

    #[test]
    fn multi_queue_serves_the_head_most_overdue_relative_to_its_deadline() {
        let mut p = Shinjuku::new(Queues::Multi, Resume::SameWorker);
        let ws = Workers::new(1, p.local());
        // At 100: function 0's head waited 90 of 1,000 (0.09), function 1's
        // 40 of 100 (0.4), function 2's 20 of 50 (0.4, a tie: lower id wins).
        p.on_request(10, &info(0, 0, 10, 1_000, 1), &ws);
        p.on_request(20, &info(1, 0, 20, 1, 1), &ws);
        p.on_request(60, &info(2, 1, 60, 100, 1), &ws);
        p.on_request(80, &info(3, 2, 80, 50, 1), &ws);
        assert_eq!(idle(&mut p, 100, &ws), [RequestId(2)]);
        // Function 2's head now leads (0.4 vs 0.09): its queue, not arrival
        // order, decides; a quantum's hand-over chooses the same way.
        assert_eq!(quantum(&mut p, 100, &ws), [RequestId(3)]);
        // Function 0: request 0, then 1 (its deadline no longer matters:
        // only the head's does).
        assert_eq!(idle(&mut p, 100, &ws), [RequestId(0)]);
        assert_eq!(idle(&mut p, 100, &ws), [RequestId(1)]);
        assert!(idle(&mut p, 100, &ws).is_empty());
        assert!(quantum(&mut p, 100, &ws).is_empty());
    }

    #[test]
    fn single_queue_is_arrival_order() {
        let mut p = Shinjuku::new(Queues::Single, Resume::SameWorker);
        let ws = Workers::new(1, p.local());
        p.on_request(10, &info(0, 0, 10, 1_000, 1), &ws);
        p.on_request(60, &info(1, 1, 60, 100, 1), &ws);
        assert_eq!(idle(&mut p, 100, &ws), [RequestId(0)]);
        assert_eq!(idle(&mut p, 100, &ws), [RequestId(1)]);
    }
}
