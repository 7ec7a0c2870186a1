//! Invariants of the node engine over random workloads, policies and costs.

use crate::node::{Central, DropOdd, RoundRobin, ToWorker, request};
use faasched_model::node::{Dispatch, Local, Order, Request, RequestOutcome};
use faasched_model::{Nanos, US};
use faasched_sim::node::{Costs, Estimate, NodeConfig, NodeStats, run};
use proptest::prelude::*;
use std::convert::Infallible;

/// One of the test policies, by number.
fn policy(kind: u8) -> Box<dyn Dispatch + Send> {
    let local = |order, quantum| Local { order, quantum };
    match kind {
        0 => Box::new(ToWorker::zero(Order::Fifo)),
        1 => Box::new(ToWorker {
            preempt: true,
            ..ToWorker::zero(Order::Edf)
        }),
        2 => Box::new(ToWorker {
            preempt: true,
            ..ToWorker::zero(Order::Srpt)
        }),
        3 => Box::new(RoundRobin {
            next: 0,
            local: local(Order::Edf, Some(20 * US)),
            scanned: 3,
        }),
        4 => Box::new(RoundRobin {
            next: 1,
            local: local(Order::Fifo, Some(10 * US)),
            scanned: 1,
        }),
        5 => Box::new(Central::new(3)),
        6 => Box::new(Central {
            quantum: Some(15 * US),
            ..Central::new(1)
        }),
        7 => Box::new(Central {
            quantum: Some(15 * US),
            pin: true,
            ..Central::new(1)
        }),
        _ => Box::new(DropOdd::default()),
    }
}

fn requests() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0u64..40, 0u64..80, 1u64..400, 0u32..3), 1..40).prop_map(|v| {
        let mut t = 0;
        v.into_iter()
            .enumerate()
            .map(|(i, (gap, work, deadline, f))| {
                t += gap * US;
                let mut r = request(i as u64, f, t, work * US, deadline * US);
                // Estimates off by up to ±50%.
                r.estimate = r.work / 2 + (r.work * (i as u64 % 3)) / 2;
                r
            })
            .collect()
    })
}

fn costs() -> impl Strategy<Value = Costs> {
    (prop::array::uniform9(0u64..4), any::<bool>()).prop_map(|(c, poll)| Costs {
        dispatch_base: c[0] * US,
        dispatch_per_worker: c[1] * US / 2,
        idle_pull: c[2] * US,
        preempt_signal: c[3] * US,
        preempt_latency: c[4] * US,
        context_switch: c[5] * US,
        sandbox_setup: c[6] * US,
        wake: c[7] * US,
        poll,
        quantum_tick: c[8] * US,
    })
}

fn simulate(config: &NodeConfig, kind: u8, reqs: &[Request]) -> (Vec<RequestOutcome>, NodeStats) {
    let mut policies: Vec<_> = (0..config.dispatchers).map(|_| policy(kind)).collect();
    let mut out = Vec::new();
    let stats = run(
        config,
        &mut policies,
        reqs.iter().cloned().map(Ok::<_, Infallible>),
        |o| out.push(o),
    )
    .unwrap();
    (out, stats)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_request_ends_once_and_busy_time_is_work_plus_costs(
        reqs in requests(),
        costs in costs(),
        kind in 0u8..9,
        dispatchers in 1usize..3,
        workers in 1usize..4,
        median in any::<bool>(),
    ) {
        let estimate = if median { Estimate::Median { window: 3 } } else { Estimate::Given };
        let config = NodeConfig { costs, estimate, ..NodeConfig::new(dispatchers, workers) };
        let (out, stats) = simulate(&config, kind, &reqs);
        let mut ids: Vec<u64> = out.iter().map(|o| o.info.id.0).collect();
        ids.sort_unstable();
        prop_assert_eq!(ids, (0..reqs.len() as u64).collect::<Vec<_>>());
        prop_assert_eq!(stats.requests, reqs.len() as u64);
        prop_assert_eq!(stats.finished + stats.dropped, stats.requests);
        let mut work = 0;
        for o in &out {
            let r = &reqs[o.info.id.0 as usize];
            prop_assert_eq!(o.work, r.work);
            if let Some(f) = o.finish {
                work += o.work;
                let first = o.first_run.unwrap();
                prop_assert!(first >= r.arrival);
                prop_assert!(f >= first + r.work);
            } else {
                prop_assert_eq!(kind, 8);
            }
        }
        let busy: Nanos = stats.worker_busy.iter().sum();
        prop_assert_eq!(
            busy,
            work + costs.sandbox_setup * stats.finished
                + costs.context_switch * stats.switches
                + costs.quantum_tick * stats.ticks
        );
        prop_assert!(stats.switches <= stats.preemptions);
        // Same inputs, same outcomes.
        let (again, stats_again) = simulate(&config, kind, &reqs);
        prop_assert_eq!(out, again);
        prop_assert_eq!(stats, stats_again);
    }

    /// Free mechanisms and a work-conserving policy (one central FIFO queue,
    /// one request per pull): no worker idles while a request waits, so
    /// every request starts exactly when the textbook FCFS multi-server
    /// queue starts it.
    #[test]
    fn a_central_queue_at_zero_cost_is_an_fcfs_multi_server(
        reqs in requests(),
        workers in 1usize..5,
    ) {
        let config = NodeConfig { costs: Costs::zero(), ..NodeConfig::new(1, workers) };
        let mut policies = vec![Box::new(Central::new(1))];
        let mut out = Vec::new();
        run(&config, &mut policies, reqs.iter().cloned().map(Ok::<_, Infallible>), |o| out.push(o))
            .unwrap();
        out.sort_by_key(|o| o.info.id);
        let mut free = vec![0; workers];
        for (r, o) in reqs.iter().zip(&out) {
            let (i, &at) = free.iter().enumerate().min_by_key(|&(_, &t)| t).unwrap();
            let start = at.max(r.arrival);
            free[i] = start + r.work;
            prop_assert_eq!(o.first_run, Some(start), "request {}", r.id.0);
            prop_assert_eq!(o.finish, Some(start + r.work));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Free mechanisms and early binding in turn: each worker serves its
    /// share first come, first served, never idle while it holds one.
    #[test]
    fn round_robin_at_zero_cost_is_one_fcfs_queue_per_worker(
        reqs in requests(),
        workers in 1usize..5,
    ) {
        let config = NodeConfig { costs: Costs::zero(), ..NodeConfig::new(1, workers) };
        let mut policies = vec![Box::new(RoundRobin {
            next: 0,
            local: Local { order: Order::Fifo, quantum: None },
            scanned: 1,
        })];
        let mut out = Vec::new();
        run(&config, &mut policies, reqs.iter().cloned().map(Ok::<_, Infallible>), |o| out.push(o))
            .unwrap();
        out.sort_by_key(|o| o.info.id);
        let mut free = vec![0; workers];
        for (i, (r, o)) in reqs.iter().zip(&out).enumerate() {
            let start = free[i % workers].max(r.arrival);
            free[i % workers] = start + r.work;
            prop_assert_eq!(o.first_run, Some(start), "request {}", r.id.0);
            prop_assert_eq!(o.finish, Some(start + r.work));
        }
    }
}
