//! How fast the node engine simulates, not a pass/fail test: run it in
//! release with
//!
//! ```text
//! cargo test --release -p faasched-sim --test all node_speed -- --ignored --nocapture
//! ```
//!
//! The workload is the engine's target case: 6 workers under one dispatcher
//! at 80% load, exponential work of mean 100 µs, deadlines 10× the work,
//! exact estimates, the default costs, and a policy that scans like
//! SledgeScale's Alg. 2 (an empty worker wins; else a preemptible one with
//! the least queued work; else the least earlier work).

use faasched_model::node::{
    Decision, Dispatch, Local, Order, Placement, Request, RequestId, RequestInfo, WorkerId, Workers,
};
use faasched_model::{Function, FunctionId, Nanos, Time, US};
use faasched_sim::node::{NodeConfig, run};
use rand::{Rng, SeedableRng};
use rand_distr::Exp;
use rand_pcg::Pcg64;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

/// CPU time this thread has run, ns (the machine is shared: wall time
/// counts other builds too).
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// SledgeScale's scan, enough of it to cost what the real one costs.
struct Scan;

impl Dispatch for Scan {
    fn name(&self) -> &str {
        "scan"
    }
    fn local(&self) -> Local {
        Local {
            order: Order::Edf,
            quantum: None,
        }
    }
    fn on_request(&mut self, now: Time, req: &RequestInfo, workers: &Workers) -> Decision {
        let due = req.due();
        let mut preempt: Option<(Nanos, WorkerId)> = None;
        let mut least: Option<(Nanos, WorkerId)> = None;
        let mut scanned = 0;
        for (w, s) in workers.iter() {
            scanned += 1;
            let Some(r) = s.running() else {
                if s.queued() == 0 {
                    return place(w, false, scanned);
                }
                continue;
            };
            if r.due() > due && r.slack > req.estimate as i64 {
                if preempt.is_none_or(|(c, _)| s.queued_work() < c) {
                    preempt = Some((s.queued_work(), w));
                }
                continue;
            }
            let ahead = if r.due() <= due { r.remaining(now) } else { 0 };
            let wait = ahead + workers.earlier_work(w, due);
            if least.is_none_or(|(c, _)| wait < c) {
                least = Some((wait, w));
            }
        }
        match (preempt, least) {
            (Some((_, w)), _) => place(w, true, scanned),
            (None, Some((_, w))) => place(w, false, scanned),
            (None, None) => place(WorkerId(0), false, scanned),
        }
    }
}

fn place(worker: WorkerId, preempt: bool, scanned: u32) -> Decision {
    Decision {
        placement: Placement::Worker { worker, preempt },
        scanned,
    }
}

#[test]
#[ignore = "a timing to read, run in release"]
fn node_speed() {
    const N: u64 = 4_000_000;
    let workers = 6;
    let mean_us = 100.0;
    let rate = 0.8 * workers as f64 / mean_us;
    let mut rng = Pcg64::seed_from_u64(1);
    let gap = Exp::new(rate).unwrap();
    let work = Exp::new(1.0 / mean_us).unwrap();
    let functions: Vec<Function> = (0..8)
        .map(|f| Function {
            id: FunctionId(f),
            name: Arc::from(format!("f{f}")),
        })
        .collect();
    // Generated ahead, so the timing is the engine's alone.
    let mut t = 0.0f64;
    let reqs: Vec<Request> = (0..N)
        .map(|i| {
            t += rng.sample(gap);
            let w = ((rng.sample(work) * US as f64) as Nanos).max(1);
            Request {
                id: RequestId(i),
                function: functions[(i % 8) as usize].clone(),
                arrival: (t * US as f64) as u64,
                work: w,
                deadline: 10 * w,
                estimate: w,
            }
        })
        .collect();
    let config = NodeConfig::new(1, workers);
    let mut policies = vec![Box::new(Scan)];
    let mut missed = 0u64;
    let start = Instant::now();
    let cpu = cpu_ns();
    let stats = run(
        &config,
        &mut policies,
        reqs.into_iter().map(Ok::<_, Infallible>),
        |o: faasched_model::node::RequestOutcome| missed += o.missed() as u64,
    )
    .unwrap();
    let secs = (cpu_ns() - cpu) as f64 / 1e9;
    let wall = start.elapsed().as_secs_f64();
    println!(
        "{N} requests in {secs:.2} s of CPU ({wall:.2} s wall): {:.0} requests/s, \
         {:.0} events/s; {} preemptions, {:.2}% missed",
        N as f64 / secs,
        stats.events as f64 / secs,
        stats.preemptions,
        missed as f64 * 100.0 / N as f64
    );
}
