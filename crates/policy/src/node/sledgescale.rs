//! SledgeScale's load-aware dispatch with deadline-driven interrupts
//! (sledgescale-sec25 §3.3, Algorithms 1 and 2), and `sledgescale+`, the same
//! with the busy worker no longer taken for an idle one.
//!
//! For each request `r` the dispatcher asks every worker of its group, in id
//! order, how long `r` would wait there (Alg. 1, GetWaitTime):
//!
//! 1. Nothing running and nothing queued: `(0, false)`, the worker is empty.
//! 2. The running request `cr` is due later than `r` and may be preempted
//!    ([`PreemptTest`]): `(0, true)`.
//! 3. Otherwise `(W, false)`, W being the remaining estimated work that runs
//!    before `r` (Eq. 1). The paper's tree holds the running request too, so
//!    W counts `cr`'s remaining estimate when `cr` is due strictly before
//!    `r`, plus [`Workers::earlier_work`] (queued work due strictly before `r`;
//!    equal deadlines not counted, as the tree counts them).
//!
//! Then Alg. 2: the first `(0, false)` takes `r` and ends the scan; among
//! the `(0, true)` workers the one with the least queued work C (Eq. 2, the
//! running request not counted) wins, first on ties, and is told to preempt;
//! if there is none, the least W wins (strict `>`, so the first minimum). The
//! prose says the fallback minimises C; Alg. 2 line 26 and the public code
//! minimise W, which is what is done here (note section 3 row 2). The code's
//! rotating scan start (note section 4 row 3) is not followed: workers are
//! scanned from 0, so ties go to the lowest id.
//!
//! **The flaw `sledgescale+` fixes** (note section 10 item 1): in step 3, W
//! is 0 for a busy worker whose `cr` is due later than `r` but may not be
//! preempted and that queues nothing due before `r`. Alg. 2 takes that
//! `(0, false)` for an empty worker, stops, and queues `r` behind `cr`
//! although another worker may be empty. [`Scan::Plus`] answers step 1
//! only for an empty worker and, since a worker without a quantum runs
//! `cr` to the end unless told to preempt, counts `cr`'s remaining estimate
//! in W whenever `cr` is not preempted, whatever its deadline. A busy worker
//! with W = 0 (its `cr` ran past its estimate, nothing queued before `r`)
//! then competes on W like any other and never ends the scan.
//!
//! Where the paper is silent: a worker running nothing but queueing requests
//! (a transient the engine may show between a stop and the next start) is
//! not empty and has no `cr` to preempt, so it answers step 3 with its
//! queued W (under [`Scan::Paper`], W = 0 there again reads as empty);
//! [`Decision::scanned`] counts the workers asked, so a scan that stops at
//! worker `i` examined `i + 1`.

use faasched_model::Time;
use faasched_model::node::{
    Decision, Dispatch, Local, Order, Placement, Refusal, RequestInfo, WorkerId, WorkerState,
    Workers,
};

/// Which test makes a running request preemptible (note section 4 row 1).
/// Under both, a running request whose slack is 0 or less is never
/// preempted (§3.2: "if the remaining slack ... diminishes to zero, the
/// request will not be interrupted").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PreemptTest {
    /// Alg. 1 line 3: the running request's slack exceeds the new request's
    /// estimate, so it can wait that long and still make its deadline.
    Paper,
    /// The public code (`local_runqueue_binary_tree_try_add_index`): the
    /// running request's slack is positive.
    Code,
}

impl PreemptTest {
    /// Whether a running request with `slack` (frozen since its run began)
    /// may be preempted for a request estimated at `estimate`.
    pub fn allows(self, slack: i64, estimate: u64) -> bool {
        slack > 0
            && match self {
                PreemptTest::Paper => i128::from(slack) > i128::from(estimate),
                PreemptTest::Code => true,
            }
    }
}

impl std::fmt::Display for PreemptTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PreemptTest::Paper => "paper",
            PreemptTest::Code => "code",
        })
    }
}

/// A preemption test that is neither `paper` nor `code`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: give paper or code")]
pub struct UnknownPreemptTest(pub String);

impl std::str::FromStr for PreemptTest {
    type Err = UnknownPreemptTest;

    /// `paper` or `code`, as [`Display`](std::fmt::Display) writes them.
    fn from_str(s: &str) -> Result<PreemptTest, UnknownPreemptTest> {
        match s {
            "paper" => Ok(PreemptTest::Paper),
            "code" => Ok(PreemptTest::Code),
            _ => Err(UnknownPreemptTest(s.to_string())),
        }
    }
}

/// How GetWaitTime tells an empty worker from a busy one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scan {
    /// Alg. 1 and 2 as printed: W = 0 without preemption reads as an empty
    /// worker and ends the scan.
    Paper,
    /// Only an empty worker ends the scan; the running request counts in W
    /// whenever it is not preempted (`sledgescale+`).
    Plus,
}

/// A worker's answer to GetWaitTime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// `(0, false)`: take the request and stop the scan.
    Empty,
    /// `(0, true)`: a preemption candidate, ranked by its queued work C.
    Preempt,
    /// `(W, false)`: `r` would wait this much.
    Behind(u64),
}

/// Alg. 2 over `workers`, with `wait` as GetWaitTime.
pub(crate) fn dispatch(
    workers: &Workers,
    mut wait: impl FnMut(WorkerId, &WorkerState) -> Wait,
) -> Decision {
    // (worker, C) of the best preemption candidate; (worker, W) of the best
    // worker to queue on.
    let mut preempt: Option<(WorkerId, u64)> = None;
    let mut queue: Option<(WorkerId, u64)> = None;
    let mut scanned = 0;
    for (w, s) in workers.iter() {
        scanned += 1;
        match wait(w, s) {
            Wait::Empty => {
                return Decision {
                    placement: Placement::Worker {
                        worker: w,
                        preempt: false,
                    },
                    scanned,
                };
            }
            Wait::Preempt => {
                let c = s.queued_work();
                if preempt.is_none_or(|(_, best)| c < best) {
                    preempt = Some((w, c));
                }
            }
            Wait::Behind(wi) => {
                if queue.is_none_or(|(_, best)| best > wi) {
                    queue = Some((w, wi));
                }
            }
        }
    }
    let placement = match (preempt, queue) {
        (Some((worker, _)), _) => Placement::Worker {
            worker,
            preempt: true,
        },
        (None, Some((worker, _))) => Placement::Worker {
            worker,
            preempt: false,
        },
        (None, None) => Placement::Drop(Refusal::Unplaced),
    };
    Decision { placement, scanned }
}

/// SledgeScale's dispatcher: see the module docs.
#[derive(Clone, Debug)]
pub struct SledgeScale {
    scan: Scan,
    test: PreemptTest,
}

impl SledgeScale {
    /// The paper's algorithm (`Scan::Paper`) or `sledgescale+`
    /// (`Scan::Plus`), preempting by `test`.
    pub fn new(scan: Scan, test: PreemptTest) -> SledgeScale {
        SledgeScale { scan, test }
    }

    /// GetWaitTime (Alg. 1) for `r` on worker `w` at `now`.
    fn wait(&self, now: Time, r: &RequestInfo, workers: &Workers, w: WorkerId) -> Wait {
        let s = workers.get(w);
        if s.is_idle() {
            return Wait::Empty;
        }
        let due = r.due();
        let running = match s.running() {
            Some(cr) if cr.due() > due && self.test.allows(cr.slack, r.estimate) => {
                return Wait::Preempt;
            }
            Some(cr) if self.scan == Scan::Plus || cr.due() < due => cr.remaining(now),
            _ => 0,
        };
        // Summed only now: a preemption candidate needs no W.
        let wi = workers.earlier_work(w, due).saturating_add(running);
        if wi == 0 && self.scan == Scan::Paper {
            Wait::Empty
        } else {
            Wait::Behind(wi)
        }
    }
}

impl Dispatch for SledgeScale {
    fn name(&self) -> &str {
        match (self.scan, self.test) {
            (Scan::Paper, PreemptTest::Paper) => "sledgescale",
            (Scan::Paper, PreemptTest::Code) => "sledgescale-code",
            (Scan::Plus, PreemptTest::Paper) => "sledgescale+",
            (Scan::Plus, PreemptTest::Code) => "sledgescale+-code",
        }
    }

    /// EDF without a quantum: a worker re-picks only when a request
    /// finishes or the dispatcher tells it to preempt (§3.2).
    fn local(&self) -> Local {
        Local {
            order: Order::Edf,
            quantum: None,
        }
    }

    fn on_request(&mut self, now: Time, req: &RequestInfo, workers: &Workers) -> Decision {
        dispatch(workers, |w, _| self.wait(now, req, workers, w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::testkit::{info, queue, run};
    use faasched_model::Nanos;
    use faasched_model::node::{Placement, Workers};
    use proptest::prelude::*;

    const EDF: Local = Local {
        order: Order::Edf,
        quantum: None,
    };

    fn to(worker: u32, preempt: bool) -> Placement {
        Placement::Worker {
            worker: WorkerId(worker),
            preempt,
        }
    }

    /// Fig. 4 in time units of 1 ns, all arriving at 0: worker 0 runs a
    /// request due at 100 with 30 left and queues 50 due at 110 and 40 due
    /// at 150 (W for a request due at 125 = 30 + 50 = 80, C = 90); worker 1
    /// runs one due at 90 with 20 left and queues 30 due at 120 and 100 due
    /// at 200 (W = 20 + 30 = 50, C = 130).
    fn fig4() -> Workers {
        let mut ws = Workers::new(2, EDF);
        run(&mut ws, 0, info(0, 0, 0, 100, 30), 0);
        queue(&mut ws, 0, info(1, 0, 0, 110, 50));
        queue(&mut ws, 0, info(2, 0, 0, 150, 40));
        run(&mut ws, 1, info(3, 0, 0, 90, 20), 0);
        queue(&mut ws, 1, info(4, 0, 0, 120, 30));
        queue(&mut ws, 1, info(5, 0, 0, 200, 100));
        ws
    }

    fn all() -> [SledgeScale; 4] {
        [
            SledgeScale::new(Scan::Paper, PreemptTest::Paper),
            SledgeScale::new(Scan::Paper, PreemptTest::Code),
            SledgeScale::new(Scan::Plus, PreemptTest::Paper),
            SledgeScale::new(Scan::Plus, PreemptTest::Code),
        ]
    }

    #[test]
    fn fig4a_a_later_request_queues_where_it_waits_least_not_where_least_is_queued() {
        let ws = fig4();
        assert_eq!(ws.get(WorkerId(0)).queued_work(), 90);
        assert_eq!(ws.get(WorkerId(1)).queued_work(), 130);
        for mut p in all() {
            let d = p.on_request(0, &info(9, 0, 0, 125, 10), &ws);
            assert_eq!(d.placement, to(1, false), "{}", p.name());
            assert_eq!(d.scanned, 2);
        }
    }

    #[test]
    fn fig4b_an_urgent_request_preempts_the_worker_with_less_queued_work() {
        let ws = fig4();
        for mut p in all() {
            let d = p.on_request(0, &info(9, 0, 0, 60, 10), &ws);
            assert_eq!(d.placement, to(0, true), "{}", p.name());
            assert_eq!(d.scanned, 2);
        }
    }

    #[test]
    fn the_first_empty_worker_ends_the_scan() {
        let mut ws = Workers::new(3, EDF);
        run(&mut ws, 0, info(0, 0, 0, 100, 30), 0);
        for mut p in all() {
            let d = p.on_request(0, &info(9, 0, 0, 125, 10), &ws);
            assert_eq!((d.placement, d.scanned), (to(1, false), 2), "{}", p.name());
        }
        let mut p = SledgeScale::new(Scan::Paper, PreemptTest::Paper);
        let d = p.on_request(0, &info(9, 0, 0, 125, 10), &Workers::new(0, EDF));
        assert_eq!(
            (d.placement, d.scanned),
            (Placement::Drop(Refusal::Unplaced), 0)
        );
    }

    #[test]
    fn the_paper_test_needs_slack_above_the_estimate_the_code_test_any_slack() {
        // The running request has slack 100 − 30 − 0 = 70; the newcomer is
        // due earlier and estimated at 80: only the code's test preempts.
        let mut ws = Workers::new(2, EDF);
        run(&mut ws, 0, info(0, 0, 0, 100, 30), 0);
        run(&mut ws, 1, info(1, 0, 0, 50, 40), 0);
        let r = info(9, 0, 0, 90, 80);
        let mut paper = SledgeScale::new(Scan::Paper, PreemptTest::Paper);
        let mut code = SledgeScale::new(Scan::Paper, PreemptTest::Code);
        // Paper: worker 0 W = 0 (due later, not counted) reads as empty.
        assert_eq!(paper.on_request(0, &r, &ws).placement, to(0, false));
        assert_eq!(code.on_request(0, &r, &ws).placement, to(0, true));
    }

    #[test]
    fn a_running_request_without_slack_is_never_preempted() {
        // Started at 80 after arriving at 0: slack 100 − 30 − 80 = −10.
        // Worker 1 runs one due at 50, ahead of the newcomer: W = 40 − 5.
        let mut ws = Workers::new(2, EDF);
        run(&mut ws, 0, info(0, 0, 0, 100, 30), 80);
        run(&mut ws, 1, info(1, 0, 0, 50, 40), 80);
        let r = info(9, 0, 85, 5, 0);
        assert!(r.due() < 100);
        for mut p in all() {
            let d = p.on_request(85, &r, &ws);
            let Placement::Worker { preempt, worker } = d.placement else {
                panic!("{}: {:?}", p.name(), d.placement);
            };
            assert!(!preempt, "{}", p.name());
            // Paper: worker 0 reads as empty; plus: it waits 25, worker 1 35.
            assert_eq!(worker, WorkerId(0), "{}", p.name());
        }
    }

    #[test]
    fn sledgescale_queues_behind_a_long_unpreemptible_request_and_plus_takes_the_empty_worker() {
        // Worker 0 runs a 10 ms request with slack 50 µs (deadline 10.05 ms);
        // worker 1 is empty. A 100 µs request due at 1 ms is more urgent
        // but cannot preempt it under the paper's test (50 ≤ 100).
        let mut ws = Workers::new(2, EDF);
        run(&mut ws, 0, info(0, 0, 0, 10_050_000, 10_000_000), 0);
        let r = info(9, 0, 1_000, 1_000_000, 100_000);
        let mut paper = SledgeScale::new(Scan::Paper, PreemptTest::Paper);
        let d = paper.on_request(1_000, &r, &ws);
        assert_eq!((d.placement, d.scanned), (to(0, false), 1));
        let mut plus = SledgeScale::new(Scan::Plus, PreemptTest::Paper);
        let d = plus.on_request(1_000, &r, &ws);
        assert_eq!((d.placement, d.scanned), (to(1, false), 2));
    }

    #[test]
    fn plus_counts_the_running_request_whatever_its_deadline() {
        // Both busy with requests due after the newcomer and no slack left:
        // plus compares what runs before it, 9,000 vs 4,000.
        let mut ws = Workers::new(2, EDF);
        run(&mut ws, 0, info(0, 0, 0, 10_000, 10_000), 1_000);
        run(&mut ws, 1, info(1, 0, 0, 5_000, 5_000), 1_000);
        let r = info(9, 0, 2_000, 1_000, 100);
        let mut plus = SledgeScale::new(Scan::Plus, PreemptTest::Code);
        assert_eq!(plus.on_request(2_000, &r, &ws).placement, to(1, false));
        // A busy worker with W = 0 (ran past its estimate) does not end the
        // scan: the empty worker after it wins.
        let mut ws = Workers::new(2, EDF);
        run(&mut ws, 0, info(0, 0, 0, 100, 10), 0);
        let r = info(9, 0, 50, 1_000, 10);
        let d = plus.on_request(50, &r, &ws);
        assert_eq!((d.placement, d.scanned), (to(1, false), 2));
    }

    #[test]
    fn ties_go_to_the_first_worker() {
        let mut ws = Workers::new(3, EDF);
        for w in 0..3 {
            run(&mut ws, w, info(u64::from(w), 0, 0, 100, 50), 0);
        }
        for mut p in all() {
            // Due later than all: W = 50 everywhere.
            assert_eq!(
                p.on_request(0, &info(9, 0, 0, 200, 10), &ws).placement,
                to(0, false)
            );
            // Due earlier than all, all preemptible with C = 0.
            assert_eq!(
                p.on_request(0, &info(9, 0, 0, 60, 10), &ws).placement,
                to(0, true)
            );
        }
    }

    /// The latest time in a random state: arrivals and starts fall in
    /// `0..=NOW`, and the newcomer arrives at `NOW`.
    const NOW: Time = 300;

    /// A request's arrival, relative deadline and estimate (its id is given
    /// when the state is built, so ids stay unique).
    type Req = (Time, Nanos, Nanos);

    /// Any request that has arrived by `NOW`.
    fn request() -> impl Strategy<Value = Req> {
        (0..=NOW, 1..=400u64, 0..=200u64)
    }

    /// One worker: a running request (three times in four) with the time it
    /// started, at or after its arrival, and 0–3 queued requests.
    fn worker() -> impl Strategy<Value = (Option<(Req, Time)>, Vec<Req>)> {
        let running = request().prop_flat_map(|r| (Just(r), r.0..=NOW));
        (
            prop::option::weighted(0.75, running),
            prop::collection::vec(request(), 0..=3),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Random states of 1–5 workers: a preemption only ever hits a worker
        /// whose running request is due later than the newcomer and has
        /// positive slack (above the newcomer's estimate under the paper's
        /// test), and an unpreempting placement under `Scan::Plus` goes to an
        /// empty worker whenever one exists.
        #[test]
        fn preemptions_respect_deadline_and_slack_in_random_states(
            state in prop::collection::vec(worker(), 1..=5),
            (deadline, estimate) in (1..=400u64, 0..=200u64),
        ) {
            let n = state.len();
            let mut ws = Workers::new(n, EDF);
            let mut id = 0;
            let mut next = |(arrival, deadline, estimate): Req| {
                id += 1;
                info(id, 0, arrival, deadline, estimate)
            };
            for (w, (running, queued)) in (0..).zip(state) {
                if let Some((r, start)) = running {
                    run(&mut ws, w, next(r), start);
                }
                for r in queued {
                    queue(&mut ws, w, next(r));
                }
            }
            let r = next((NOW, deadline, estimate));
            for mut p in all() {
                let d = p.on_request(NOW, &r, &ws);
                let Placement::Worker { worker, preempt } = d.placement else {
                    panic!("{}: dropped", p.name());
                };
                let s = ws.get(worker);
                if preempt {
                    let cr = s.running().expect("preempts a running request");
                    prop_assert!(cr.due() > r.due(), "{}", p.name());
                    prop_assert!(cr.slack > 0, "{}: slack {}", p.name(), cr.slack);
                    if p.test == PreemptTest::Paper {
                        prop_assert!(cr.slack > r.estimate as i64, "{}", p.name());
                    }
                }
                if ws.iter().any(|(_, s)| s.is_idle()) {
                    prop_assert!(!preempt, "{}", p.name());
                    if p.scan == Scan::Plus {
                        prop_assert!(s.is_idle(), "{}", p.name());
                    }
                }
                prop_assert!(d.scanned as usize <= n);
            }
        }
    }
}
