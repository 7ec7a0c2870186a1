//! `srpt`: SledgeScale's dispatch and dispatcher-triggered preemption with
//! size in place of deadline, the control the paper lacks (note section 10
//! item 2). With deadlines at 10× the estimate, EDF orders by arrival +
//! 10 × size; this policy orders by size alone, so a comparison separates
//! deadline-awareness from size-awareness.
//!
//! Exactly, for a request `r` estimated at `e`:
//!
//! 1. Workers run their queues shortest remaining estimate first
//!    ([`Order::Srpt`]), no quantum; ties in arrival order.
//! 2. GetWaitTime: an empty worker (nothing running, nothing queued) takes
//!    `r` and ends the scan; a worker whose running request has more than
//!    `e` estimated work left is a preemption candidate; any other worker
//!    answers W = the running request's remaining estimate + the queued
//!    requests that run before `r` (remaining estimate below `e`, or equal
//!    and earlier in arrival order: all that precedes `r` in the order).
//! 3. Alg. 2 as in [`SledgeScale`](super::SledgeScale): candidates ranked by
//!    queued work C, least first and told to preempt; else least W.
//!
//! Choices where "SledgeScale by size" leaves room: slack plays no part
//! (no zero-slack rule: a pure size policy, or the control would mix in
//! deadlines); the scan tells empty from busy as `sledgescale+` does, so the
//! control does not inherit the paper's busy-worker-read-as-idle flaw; W
//! counts every request that would run first, ties included, rather than
//! under-counting equal keys as SledgeScale's tree does.

use super::sledgescale::{Wait, dispatch};
use faasched_model::Time;
use faasched_model::node::{Decision, Dispatch, Local, Order, RequestInfo, WorkerState, Workers};

/// SRPT dispatch: see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Srpt;

impl Srpt {
    /// The policy; it has no parameters.
    pub fn new() -> Srpt {
        Srpt
    }
}

/// GetWaitTime by size for `r` on `s` at `now`.
fn wait(now: Time, r: &RequestInfo, s: &WorkerState) -> Wait {
    if s.is_idle() {
        return Wait::Empty;
    }
    let running = match s.running() {
        Some(cr) if cr.remaining(now) > r.estimate => return Wait::Preempt,
        Some(cr) => cr.remaining(now),
        None => 0,
    };
    // The queue is in (remaining, arrival id) order, the order `r` joins.
    let key = (r.estimate, r.id);
    let queued: u64 = s
        .queue()
        .take_while(|q| (q.remaining, q.info.id) < key)
        .map(|q| q.remaining)
        .sum();
    Wait::Behind(queued.saturating_add(running))
}

impl Dispatch for Srpt {
    fn name(&self) -> &str {
        "srpt"
    }

    fn local(&self) -> Local {
        Local {
            order: Order::Srpt,
            quantum: None,
        }
    }

    fn on_request(&mut self, now: Time, req: &RequestInfo, workers: &Workers) -> Decision {
        dispatch(workers, |_, s| wait(now, req, s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::testkit::{info, queue, run};
    use faasched_model::node::{Placement, WorkerId};

    const SRPT: Local = Local {
        order: Order::Srpt,
        quantum: None,
    };

    fn to(worker: u32, preempt: bool) -> Placement {
        Placement::Worker {
            worker: WorkerId(worker),
            preempt,
        }
    }

    #[test]
    fn a_shorter_request_preempts_the_longer_remaining_with_less_queued() {
        // Worker 0 runs 100 left, queues 60; worker 1 runs 80 left, queues 5.
        // Deadlines play no part: the newcomer is due last of all.
        let mut ws = Workers::new(2, SRPT);
        run(&mut ws, 0, info(0, 0, 0, 10, 100), 0);
        queue(&mut ws, 0, info(1, 0, 0, 10, 60));
        run(&mut ws, 1, info(2, 0, 0, 10, 80), 0);
        queue(&mut ws, 1, info(3, 0, 0, 10, 5));
        let d = Srpt::new().on_request(0, &info(9, 0, 0, 1_000, 50), &ws);
        assert_eq!((d.placement, d.scanned), (to(1, true), 2));
    }

    #[test]
    fn otherwise_least_work_ahead_in_size_order_wins() {
        // Newcomer estimated at 30. Worker 0: runs 20 left, queues 25 and 40
        // (W = 20 + 25 = 45). Worker 1: runs 30 left (not more than 30: not
        // preemptible), queues 30 from an earlier arrival and 100 (W = 60).
        let mut ws = Workers::new(2, SRPT);
        run(&mut ws, 0, info(0, 0, 0, 10, 20), 0);
        queue(&mut ws, 0, info(1, 0, 0, 10, 25));
        queue(&mut ws, 0, info(2, 0, 0, 10, 40));
        run(&mut ws, 1, info(3, 0, 0, 10, 30), 0);
        queue(&mut ws, 1, info(4, 0, 0, 10, 30));
        queue(&mut ws, 1, info(5, 0, 0, 10, 100));
        let d = Srpt::new().on_request(0, &info(9, 0, 0, 10, 30), &ws);
        assert_eq!(d.placement, to(0, false));
        // A busy worker that cannot be preempted does not end the scan, however
        // little it has left: the empty worker after it does.
        let mut ws3 = Workers::new(3, SRPT);
        run(&mut ws3, 0, info(0, 0, 0, 10, 20), 0);
        let d = Srpt::new().on_request(10, &info(9, 0, 10, 10, 30), &ws3);
        assert_eq!((d.placement, d.scanned), (to(1, false), 2));
    }
}
