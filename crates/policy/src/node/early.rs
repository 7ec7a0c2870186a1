//! The simple early-binding baselines of §3.3 and §4 "Baselines": round
//! robin (`rr`), join the shortest queue (`jsq`) and join the least loaded
//! queue (`lld`, LL(D)). Each puts a request on one worker at once and never
//! preempts from the dispatcher; "each worker schedules using EDF with a
//! fixed 1 ms scheduling quantum triggered by a timer, consistent across RR,
//! LL(D), and eRPC-based Sledge" (§4), so every worker re-picks its earliest
//! deadline each millisecond.
//!
//! Choices where the paper is silent: `rr` cycles over the group in id
//! order from worker 0 and examines no worker (`scanned` = 0; the code's
//! `rr_index` reads no queue); `jsq` and `lld` examine every worker and
//! break ties to the lowest id. `jsq` counts unfinished requests, queued plus
//! the running one (§3.3: "the least number of unfinished jobs"); `lld`
//! counts remaining estimated work, queued plus what the running request has
//! left by its estimate (§3.3: "the smallest amount of remaining work").

use faasched_model::node::{
    Decision, Dispatch, Local, Order, Placement, Refusal, RequestInfo, WorkerId, WorkerState,
    Workers,
};
use faasched_model::{MS, Nanos, Time};

/// The workers' timer quantum under `rr`, `jsq` and `lld`: 1 ms (§4
/// "Baselines").
pub const BASELINE_QUANTUM: Nanos = MS;

/// EDF with the baselines' 1 ms quantum.
const LOCAL: Local = Local {
    order: Order::Edf,
    quantum: Some(BASELINE_QUANTUM),
};

/// Round-robin early binding: request k goes to worker k mod N.
#[derive(Clone, Debug, Default)]
pub struct RoundRobin {
    next: usize,
}

impl RoundRobin {
    /// Starting at worker 0.
    pub fn new() -> RoundRobin {
        RoundRobin::default()
    }
}

impl Dispatch for RoundRobin {
    fn name(&self) -> &str {
        "rr"
    }

    fn local(&self) -> Local {
        LOCAL
    }

    fn on_request(&mut self, _now: Time, _req: &RequestInfo, workers: &Workers) -> Decision {
        if workers.is_empty() {
            return Decision {
                placement: Placement::Drop(Refusal::Unplaced),
                scanned: 0,
            };
        }
        let w = self.next % workers.len();
        self.next = (w + 1) % workers.len();
        Decision {
            placement: Placement::Worker {
                worker: WorkerId(w as u32),
                preempt: false,
            },
            scanned: 0,
        }
    }
}

/// The worker with the least `load`, the first on ties; `Drop` if none.
fn least(workers: &Workers, mut load: impl FnMut(&WorkerState) -> u64) -> Decision {
    let mut best: Option<(WorkerId, u64)> = None;
    for (w, s) in workers.iter() {
        let l = load(s);
        if best.is_none_or(|(_, b)| l < b) {
            best = Some((w, l));
        }
    }
    Decision {
        placement: best.map_or(Placement::Drop(Refusal::Unplaced), |(worker, _)| {
            Placement::Worker {
                worker,
                preempt: false,
            }
        }),
        scanned: workers.len() as u32,
    }
}

/// Join the shortest queue: the worker with the fewest unfinished requests.
#[derive(Clone, Debug, Default)]
pub struct Jsq;

impl Jsq {
    /// The policy; it has no parameters.
    pub fn new() -> Jsq {
        Jsq
    }
}

impl Dispatch for Jsq {
    fn name(&self) -> &str {
        "jsq"
    }

    fn local(&self) -> Local {
        LOCAL
    }

    fn on_request(&mut self, _now: Time, _req: &RequestInfo, workers: &Workers) -> Decision {
        least(workers, |s| {
            s.queued() as u64 + u64::from(s.running().is_some())
        })
    }
}

/// Join the least loaded queue, LL(D): the worker with the least remaining
/// estimated work.
#[derive(Clone, Debug, Default)]
pub struct Lld;

impl Lld {
    /// The policy; it has no parameters.
    pub fn new() -> Lld {
        Lld
    }
}

impl Dispatch for Lld {
    fn name(&self) -> &str {
        "lld"
    }

    fn local(&self) -> Local {
        LOCAL
    }

    fn on_request(&mut self, now: Time, _req: &RequestInfo, workers: &Workers) -> Decision {
        least(workers, |s| {
            s.queued_work()
                .saturating_add(s.running().map_or(0, |r| r.remaining(now)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::testkit::{info, queue, run};

    fn to(worker: u32) -> Placement {
        Placement::Worker {
            worker: WorkerId(worker),
            preempt: false,
        }
    }

    /// Worker 0: runs one request with 1,000 left, queues one of 10 (2
    /// unfinished, 1,010 work). Worker 1: runs 100 left, queues 100 and 200
    /// (3 unfinished, 400 work). Worker 2: runs nothing yet, queues one of
    /// 5,000 (1 unfinished, 5,000 work).
    fn state() -> Workers {
        let mut ws = Workers::new(3, LOCAL);
        run(&mut ws, 0, info(0, 0, 0, 10_000, 1_000), 0);
        queue(&mut ws, 0, info(5, 0, 0, 10_000, 10));
        run(&mut ws, 1, info(1, 0, 0, 10_000, 100), 0);
        queue(&mut ws, 1, info(2, 0, 0, 10_000, 100));
        queue(&mut ws, 1, info(3, 0, 0, 10_000, 200));
        queue(&mut ws, 2, info(4, 0, 0, 10_000, 5_000));
        ws
    }

    #[test]
    fn rr_cycles_in_id_order_whatever_the_load() {
        let ws = state();
        let mut p = RoundRobin::new();
        let got: Vec<Placement> = (0..4)
            .map(|i| p.on_request(0, &info(9 + i, 0, 0, 10, 1), &ws).placement)
            .collect();
        assert_eq!(got, [to(0), to(1), to(2), to(0)]);
        assert_eq!(p.on_request(0, &info(20, 0, 0, 1, 1), &ws).scanned, 0);
    }

    #[test]
    fn jsq_counts_requests_running_included_and_breaks_ties_to_the_first() {
        let d = Jsq::new().on_request(0, &info(9, 0, 0, 10, 1), &state());
        assert_eq!((d.placement, d.scanned), (to(2), 3));
        let mut ws = Workers::new(2, LOCAL);
        queue(&mut ws, 1, info(0, 0, 0, 10, 1));
        queue(&mut ws, 0, info(1, 0, 0, 10, 1));
        let d = Jsq::new().on_request(0, &info(9, 0, 0, 10, 1), &ws);
        assert_eq!(d.placement, to(0));
    }

    #[test]
    fn lld_counts_remaining_work_running_included() {
        let ws = state();
        let d = Lld::new().on_request(0, &info(9, 0, 0, 10, 1), &ws);
        assert_eq!((d.placement, d.scanned), (to(1), 3));
        // At 650 worker 0 has 350 + 10 left, worker 1 its queued 300 (its
        // running request is past its estimate); at 710 both have 300: the
        // first wins.
        assert_eq!(
            Lld::new()
                .on_request(650, &info(9, 0, 0, 10, 1), &ws)
                .placement,
            to(1)
        );
        assert_eq!(
            Lld::new()
                .on_request(710, &info(9, 0, 0, 10, 1), &ws)
                .placement,
            to(0)
        );
    }

    #[test]
    fn no_workers_drops() {
        let ws = Workers::new(0, LOCAL);
        let r = info(0, 0, 0, 10, 1);
        assert_eq!(
            RoundRobin::new().on_request(0, &r, &ws).placement,
            Placement::Drop(Refusal::Unplaced)
        );
        assert_eq!(
            Jsq::new().on_request(0, &r, &ws).placement,
            Placement::Drop(Refusal::Unplaced)
        );
        assert_eq!(
            Lld::new().on_request(0, &r, &ws).placement,
            Placement::Drop(Refusal::Unplaced)
        );
    }
}
