//! Admission control: any dispatch policy behind bounds on what its group
//! holds, so that a flood is refused at the door instead of queued without
//! end.
//!
//! A node that queues every request it is sent answers none of them in
//! time once it is past its capacity: each newcomer waits behind all the
//! work before it. [`Admitted`] refuses a request at its arrival
//! ([`Placement::Drop`] with its [`Refusal`]) when
//!
//! 1. the group holds [`Admission::max_queued`] requests admitted and not
//!    finished ([`Refusal::QueueFull`]);
//! 2. its estimate would take the estimated work admitted and not finished
//!    past [`Admission::max_backlog`] per worker ([`Refusal::BacklogFull`]);
//!    a group that holds nothing admits any one request, so that the bound
//!    keeps queues short without capping a request's size (the sandbox's
//!    CPU limit does that);
//! 3. with [`Admission::fair_share`], its function already holds as much as
//!    is left free under either bound ([`Refusal::OverShare`]): Choudhury
//!    and Hahne's dynamic threshold with α = 1. A function alone may fill
//!    half of a bound; with `n` functions busy each settles at 1/(n+1) of
//!    it, so a function that arrives while another floods always finds
//!    room. A function that holds nothing is never over its share, so a
//!    request longer than half the backlog still runs on a quiet node;
//! 4. with [`Admission::refuse_late`], the work that would run ahead of it
//!    on the best worker, by the workers' local order, exceeds its slack
//!    (relative deadline − estimate, or 0 when the estimate alone passes
//!    the deadline): by the estimates it cannot meet its deadline, and the
//!    node would spend a worker on an answer that comes too late
//!    ([`Refusal::Late`]). Requests the policy holds (late binding) count
//!    as ahead spread evenly over the workers.
//!
//! What it counts is what the policy sees: the estimates, not the work.
//! An admitted request counts at its whole estimate until it finishes,
//! so a long one frees its share of the backlog when it ends, not as it
//! runs. The simulator and the live runtime wrap a policy the same way, so
//! refusals are modelled where they are served.

use faasched_model::node::{
    Decision, Dispatch, Local, Order, Placement, Refusal, RequestId, RequestInfo, RequestOutcome,
    WorkerId, WorkerState, Workers,
};
use faasched_model::{FunctionId, Nanos, Time};
use std::collections::HashMap;

/// The bounds a group admits requests under; the default bounds nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Admission {
    /// Most requests admitted and not finished, held or queued or running.
    pub max_queued: Option<u32>,
    /// Most estimated work admitted and not finished, per worker of the
    /// group.
    pub max_backlog: Option<Nanos>,
    /// Each function limited to what is left free under the bounds.
    pub fair_share: bool,
    /// Refuse a request whose deadline the work ahead of it would miss.
    pub refuse_late: bool,
}

impl Admission {
    /// Whether it refuses anything at all.
    pub fn bounds_anything(&self) -> bool {
        self.max_queued.is_some() || self.max_backlog.is_some() || self.refuse_late
    }

    /// The same with its times (the backlog) multiplied by `factor`, for a
    /// workload whose times are stretched by it.
    pub fn stretched(self, factor: u32) -> Admission {
        Admission {
            max_backlog: self
                .max_backlog
                .map(|b| b.saturating_mul(Nanos::from(factor))),
            ..self
        }
    }
}

/// What one function holds of the bounds.
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    requests: u32,
    work: Nanos,
}

/// `inner` behind [`Admission`]'s bounds.
pub struct Admitted<D> {
    inner: D,
    rules: Admission,
    /// Every request admitted and not finished: its function and estimate.
    admitted: HashMap<RequestId, (FunctionId, Nanos)>,
    by_function: HashMap<FunctionId, Held>,
    total: Held,
    /// The admitted requests the policy holds (in no worker's queue), with
    /// their estimates.
    held: HashMap<RequestId, Nanos>,
    held_work: Nanos,
}

impl<D: Dispatch> Admitted<D> {
    /// `inner`, admitting under `rules`.
    pub fn new(inner: D, rules: Admission) -> Admitted<D> {
        Admitted {
            inner,
            rules,
            admitted: HashMap::new(),
            by_function: HashMap::new(),
            total: Held::default(),
            held: HashMap::new(),
            held_work: 0,
        }
    }

    /// Why `req` is refused, if it is.
    fn refusal(&self, now: Time, req: &RequestInfo, workers: &Workers) -> Option<Refusal> {
        let n = workers.len().max(1) as Nanos;
        let mine = self
            .by_function
            .get(&req.function)
            .copied()
            .unwrap_or_default();
        let share = self.rules.fair_share && mine.requests > 0;
        if let Some(max) = self.rules.max_queued {
            if self.total.requests >= max {
                return Some(Refusal::QueueFull);
            }
            if share && mine.requests >= max.saturating_sub(self.total.requests) {
                return Some(Refusal::OverShare);
            }
        }
        if let Some(per_worker) = self.rules.max_backlog {
            let max = per_worker.saturating_mul(n);
            let after = self.total.work.saturating_add(req.estimate);
            if after > max && self.total.requests > 0 {
                return Some(Refusal::BacklogFull);
            }
            if share && mine.work.saturating_add(req.estimate) > max.saturating_sub(after) {
                return Some(Refusal::OverShare);
            }
        }
        if self.rules.refuse_late {
            let slack = req.deadline.saturating_sub(req.estimate);
            if self.ahead(now, req, workers) > slack {
                return Some(Refusal::Late);
            }
        }
        None
    }

    /// The least work that runs before `req` on any worker, by the local
    /// order, plus the held work spread over the workers.
    fn ahead(&self, now: Time, req: &RequestInfo, workers: &Workers) -> Nanos {
        let order = workers.local().order;
        let best = workers
            .iter()
            .map(|(_, w)| ahead_on(order, w, req, now))
            .min()
            .unwrap_or(0);
        best.saturating_add(self.held_work / workers.len().max(1) as Nanos)
    }

    fn hold(&mut self, id: RequestId, estimate: Nanos) {
        if self.held.insert(id, estimate).is_none() {
            self.held_work = self.held_work.saturating_add(estimate);
        }
    }

    /// The requests of `out` are no longer held.
    fn released(&mut self, out: &[RequestId]) {
        for id in out {
            if let Some(estimate) = self.held.remove(id) {
                self.held_work = self.held_work.saturating_sub(estimate);
            }
        }
    }
}

/// The work worker `w` runs before `req`: what its order puts first of its
/// queue, and its running request where the order would not preempt it
/// for `req`.
fn ahead_on(order: Order, w: &WorkerState, req: &RequestInfo, now: Time) -> Nanos {
    let running = w.running().map_or(0, |r| {
        let first = match order {
            Order::Edf => r.due() <= req.due(),
            Order::Fifo => true,
            Order::Srpt => r.remaining(now) <= req.estimate,
        };
        if first { r.remaining(now) } else { 0 }
    });
    let queued = match order {
        Order::Edf => w.earlier_work(order, req.due()),
        Order::Fifo => w.queued_work(),
        Order::Srpt => w
            .queue()
            .filter(|q| q.remaining <= req.estimate)
            .map(|q| q.remaining)
            .sum(),
    };
    running.saturating_add(queued)
}

impl<D: Dispatch> Dispatch for Admitted<D> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn local(&self) -> Local {
        self.inner.local()
    }

    fn on_request(&mut self, now: Time, req: &RequestInfo, workers: &Workers) -> Decision {
        if let Some(why) = self.refusal(now, req, workers) {
            return Decision {
                placement: Placement::Drop(why),
                scanned: 0,
            };
        }
        let decision = self.inner.on_request(now, req, workers);
        if matches!(decision.placement, Placement::Drop(_)) {
            return decision;
        }
        if decision.placement == Placement::Hold {
            self.hold(req.id, req.estimate);
        }
        self.admitted.insert(req.id, (req.function, req.estimate));
        let held = self.by_function.entry(req.function).or_default();
        held.requests += 1;
        held.work = held.work.saturating_add(req.estimate);
        self.total.requests += 1;
        self.total.work = self.total.work.saturating_add(req.estimate);
        decision
    }

    fn on_idle(
        &mut self,
        now: Time,
        worker: WorkerId,
        workers: &Workers,
        out: &mut Vec<RequestId>,
    ) {
        let from = out.len();
        self.inner.on_idle(now, worker, workers, out);
        self.released(&out[from..]);
    }

    fn quantum(&self) -> Option<Nanos> {
        self.inner.quantum()
    }

    fn on_quantum(
        &mut self,
        now: Time,
        worker: WorkerId,
        workers: &Workers,
        out: &mut Vec<RequestId>,
    ) {
        let from = out.len();
        self.inner.on_quantum(now, worker, workers, out);
        self.released(&out[from..]);
    }

    fn on_returned(&mut self, now: Time, req: &RequestInfo, worker: WorkerId) -> Option<WorkerId> {
        let to = self.inner.on_returned(now, req, worker);
        if to.is_none() {
            self.hold(req.id, req.estimate);
        }
        to
    }

    fn on_finish(&mut self, now: Time, outcome: &RequestOutcome) {
        let id = outcome.info.id;
        self.released(&[id]);
        if let Some((function, estimate)) = self.admitted.remove(&id) {
            if let Some(held) = self.by_function.get_mut(&function) {
                held.requests -= 1;
                held.work = held.work.saturating_sub(estimate);
                if held.requests == 0 {
                    self.by_function.remove(&function);
                }
            }
            self.total.requests -= 1;
            self.total.work = self.total.work.saturating_sub(estimate);
        }
        self.inner.on_finish(now, outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::testkit::{info, queue, run};
    use crate::node::{Lld, Sledge};
    use faasched_model::MS;

    fn finish(p: &mut impl Dispatch, req: RequestInfo, at: Time) {
        p.on_finish(
            at,
            &RequestOutcome {
                info: req,
                work: req.estimate,
                dispatcher: 0,
                worker: Some(WorkerId(0)),
                first_run: Some(req.arrival),
                finish: Some(at),
                preemptions: 0,
            },
        );
    }

    /// `lld` behind `rules`, over `n` idle workers.
    fn lld(rules: Admission, n: usize) -> (Admitted<Lld>, Workers) {
        let p = Admitted::new(Lld::new(), rules);
        let ws = Workers::new(n, p.local());
        (p, ws)
    }

    fn placed(p: &mut impl Dispatch, req: &RequestInfo, ws: &Workers) -> Placement {
        p.on_request(req.arrival, req, ws).placement
    }

    #[test]
    fn nothing_bounded_admits_everything_as_the_policy_places_it() {
        let mut p = Admitted::new(Lld::new(), Admission::default());
        let ws = Workers::new(2, p.local());
        for id in 0..1_000 {
            let r = info(id, 0, 0, MS, 1_000 * MS);
            assert!(matches!(placed(&mut p, &r, &ws), Placement::Worker { .. }));
        }
        assert!(!Admission::default().bounds_anything());
    }

    #[test]
    fn the_queue_bound_counts_requests_until_they_finish() {
        let rules = Admission {
            max_queued: Some(2),
            ..Admission::default()
        };
        let (mut p, ws) = lld(rules, 1);
        let (a, b, c) = (
            info(0, 0, 0, MS, MS),
            info(1, 1, 0, MS, MS),
            info(2, 2, 0, MS, MS),
        );
        assert!(matches!(placed(&mut p, &a, &ws), Placement::Worker { .. }));
        assert!(matches!(placed(&mut p, &b, &ws), Placement::Worker { .. }));
        assert_eq!(placed(&mut p, &c, &ws), Placement::Drop(Refusal::QueueFull));
        finish(&mut p, a, 5 * MS);
        assert!(matches!(placed(&mut p, &c, &ws), Placement::Worker { .. }));
        // A refused request's finish (its drop) releases nothing.
        finish(&mut p, info(9, 9, 0, MS, MS), 5 * MS);
        assert_eq!(
            placed(&mut p, &info(3, 0, 0, MS, MS), &ws),
            Placement::Drop(Refusal::QueueFull)
        );
    }

    #[test]
    fn the_backlog_bound_is_per_worker_and_counts_estimates() {
        let rules = Admission {
            max_backlog: Some(10 * MS),
            ..Admission::default()
        };
        let (mut p, ws) = lld(rules, 2);
        // 20 ms for the group: 12 + 8 fit, 1 more does not.
        let big = info(0, 0, 0, 100 * MS, 12 * MS);
        assert!(matches!(
            placed(&mut p, &big, &ws),
            Placement::Worker { .. }
        ));
        assert!(matches!(
            placed(&mut p, &info(1, 1, 0, 100 * MS, 8 * MS), &ws),
            Placement::Worker { .. }
        ));
        let more = info(2, 2, 0, 100 * MS, MS);
        assert_eq!(
            placed(&mut p, &more, &ws),
            Placement::Drop(Refusal::BacklogFull)
        );
        finish(&mut p, big, 12 * MS);
        assert!(matches!(
            placed(&mut p, &more, &ws),
            Placement::Worker { .. }
        ));
    }

    #[test]
    fn an_empty_group_admits_a_request_longer_than_the_backlog() {
        let rules = Admission {
            max_backlog: Some(10 * MS),
            fair_share: true,
            ..Admission::default()
        };
        let (mut p, ws) = lld(rules, 1);
        let huge = info(0, 0, 0, 1_000 * MS, 100 * MS);
        assert!(matches!(
            placed(&mut p, &huge, &ws),
            Placement::Worker { .. }
        ));
        assert_eq!(
            placed(&mut p, &info(1, 1, 0, 100 * MS, MS), &ws),
            Placement::Drop(Refusal::BacklogFull)
        );
    }

    #[test]
    fn a_flooding_function_leaves_room_for_the_others() {
        // Dynamic threshold, α = 1: a function may hold as much as is left.
        let rules = Admission {
            max_queued: Some(12),
            fair_share: true,
            ..Admission::default()
        };
        let (mut p, ws) = lld(rules, 1);
        let mut id = 0;
        let mut send = |p: &mut Admitted<Lld>, f: u32| {
            id += 1;
            placed(p, &info(id, f, 0, MS, MS), &ws)
        };
        // Alone, function 0 holds 6 of 12 (6 held, 6 free), the 7th is
        // over its share.
        for _ in 0..6 {
            assert!(matches!(send(&mut p, 0), Placement::Worker { .. }));
        }
        assert_eq!(send(&mut p, 0), Placement::Drop(Refusal::OverShare));
        // Function 1 still finds room: it settles at 3 (0 holds 6, 1 holds
        // 3, 3 free), then it too is over its share; so is 0.
        for _ in 0..3 {
            assert!(matches!(send(&mut p, 1), Placement::Worker { .. }));
        }
        assert_eq!(send(&mut p, 1), Placement::Drop(Refusal::OverShare));
        assert_eq!(send(&mut p, 0), Placement::Drop(Refusal::OverShare));
        // And a third function still gets in.
        assert!(matches!(send(&mut p, 2), Placement::Worker { .. }));
    }

    #[test]
    fn a_function_holding_nothing_is_never_over_its_share() {
        let rules = Admission {
            max_backlog: Some(10 * MS),
            fair_share: true,
            ..Admission::default()
        };
        let (mut p, ws) = lld(rules, 1);
        // 8 ms of a 10 ms backlog is more than half, yet it is alone.
        let long = info(0, 0, 0, 100 * MS, 8 * MS);
        assert!(matches!(
            placed(&mut p, &long, &ws),
            Placement::Worker { .. }
        ));
        assert_eq!(
            placed(&mut p, &info(1, 0, 0, 100 * MS, MS), &ws),
            Placement::Drop(Refusal::OverShare)
        );
    }

    #[test]
    fn the_backlog_share_counts_work() {
        let rules = Admission {
            max_backlog: Some(10 * MS),
            fair_share: true,
            ..Admission::default()
        };
        let (mut p, ws) = lld(rules, 1);
        // Function 0 holds 5 ms of 10: 1 ms more would hold 6 against 4
        // left free, over its share; function 1's 2 ms (2 against 3 left)
        // gets in.
        let a = info(0, 0, 0, 100 * MS, 5 * MS);
        assert!(matches!(placed(&mut p, &a, &ws), Placement::Worker { .. }));
        assert_eq!(
            placed(&mut p, &info(1, 0, 0, 100 * MS, MS), &ws),
            Placement::Drop(Refusal::OverShare)
        );
        assert!(matches!(
            placed(&mut p, &info(2, 1, 0, 100 * MS, 2 * MS), &ws),
            Placement::Worker { .. }
        ));
    }

    #[test]
    fn a_request_the_work_ahead_would_make_late_is_refused() {
        let rules = Admission {
            refuse_late: true,
            ..Admission::default()
        };
        let mut p = Admitted::new(Lld::new(), rules);
        let mut ws = Workers::new(2, p.local());
        // Worker 0 runs 10 ms due at 10 ms, worker 1 runs 4 ms due at 4 ms
        // and queues 3 ms due at 20 ms. At 0, a 2 ms request due at 8 ms
        // (slack 6 ms): under EDF worker 1 runs 4 ms before it (the queued
        // one is due later), worker 0 nothing (its request is due later
        // and would be preempted). Admitted.
        run(&mut ws, 0, info(0, 0, 0, 10 * MS, 10 * MS), 0);
        run(&mut ws, 1, info(1, 0, 0, 4 * MS, 4 * MS), 0);
        queue(&mut ws, 1, info(2, 0, 0, 20 * MS, 3 * MS));
        let fits = info(3, 1, 0, 8 * MS, 2 * MS);
        assert!(matches!(
            placed(&mut p, &fits, &ws),
            Placement::Worker { .. }
        ));
        // Due at 12 ms it is behind both running ones: 4 ms ahead at best,
        // past its 2 ms of slack.
        let late = info(4, 1, 0, 12 * MS, 10 * MS);
        assert_eq!(placed(&mut p, &late, &ws), Placement::Drop(Refusal::Late));
        // One whose estimate passes its deadline runs only with nothing
        // ahead of it: admitted on an idle group, refused behind the 4 ms.
        let idle = Workers::new(2, p.local());
        let hopeless = info(5, 1, 0, 11 * MS, 20 * MS);
        assert!(matches!(
            placed(&mut p, &hopeless, &idle),
            Placement::Worker { .. }
        ));
        assert_eq!(
            placed(&mut p, &hopeless, &ws),
            Placement::Drop(Refusal::Late)
        );
    }

    #[test]
    fn held_requests_count_ahead_until_a_worker_takes_them() {
        let rules = Admission {
            refuse_late: true,
            ..Admission::default()
        };
        let mut p = Admitted::new(Sledge::new(), rules);
        let ws = Workers::new(2, p.local());
        // Sledge holds everything: 3 × 4 ms held over 2 workers is 6 ms
        // ahead, past a 5 ms slack.
        for id in 0..3 {
            assert_eq!(
                placed(&mut p, &info(id, 0, 0, 100 * MS, 4 * MS), &ws),
                Placement::Hold
            );
        }
        let next = info(10, 1, 0, 6 * MS, MS);
        assert_eq!(placed(&mut p, &next, &ws), Placement::Drop(Refusal::Late));
        // Worker 0 pulls them (a batch of 5 takes all three): nothing is
        // held any more, and the next is admitted (the test's workers stay
        // idle).
        let mut out = Vec::new();
        p.on_idle(0, WorkerId(0), &ws, &mut out);
        assert_eq!(out.len(), 3);
        assert!(matches!(placed(&mut p, &next, &ws), Placement::Hold));
    }

    #[test]
    fn backlog_stretches_with_the_workload() {
        let rules = Admission {
            max_backlog: Some(MS),
            ..Admission::default()
        };
        assert_eq!(rules.stretched(10).max_backlog, Some(10 * MS));
    }
}
