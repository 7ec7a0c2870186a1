//! Hand-computed node timelines: every instant below is derived in the
//! comments from the costs the test sets.

use crate::node::{
    Central, DropOdd, RoundRobin, Seen, ToWorker, finishes_us, node, request, simulate,
    simulate_in_order, us,
};
use faasched_model::node::{Local, Order, RequestId, RequestOutcome, WorkerId};
use faasched_model::{MS, US};
use faasched_sim::node::{Costs, Estimate, NodeConfig, NodeError, NodeSink, run};
use std::convert::Infallible;

#[test]
fn early_binding_preemption_pays_latency_and_a_context_switch() {
    let mut costs = Costs::zero();
    costs.preempt_latency = 2 * US;
    costs.context_switch = US;
    let policy = ToWorker {
        preempt: true,
        ..ToWorker::zero(Order::Edf)
    };
    // A: 0–100 µs work, due at 1 ms. B arrives at 10 µs, 5 µs of work, due
    // at 30 µs.
    let reqs = vec![
        request(0, 0, 0, 100 * US, 1000 * US),
        request(1, 0, 10 * US, 5 * US, 20 * US),
    ];
    let (out, stats) = simulate(&node(1, costs), vec![policy], reqs);
    // The signal reaches the worker at 12 µs: A has run 12 µs and goes back
    // to the queue; B runs after a 1 µs switch, 13–18 µs; A resumes at 18
    // with 88 µs left and finishes at 106.
    assert_eq!(finishes_us(&out), [Some(106), Some(18)]);
    assert_eq!(out[1].first_run, Some(12 * US));
    assert_eq!((out[0].preemptions, out[1].preemptions), (1, 0));
    assert_eq!((stats.preemptions, stats.switches), (1, 1));
    // Busy: 105 µs of work and the switch.
    assert_eq!(stats.worker_busy, [106 * US]);
}

#[test]
fn a_preemption_for_a_later_deadline_changes_nothing() {
    let mut costs = Costs::zero();
    costs.preempt_latency = 2 * US;
    let policy = ToWorker {
        preempt: true,
        ..ToWorker::zero(Order::Edf)
    };
    // B is due after A: the signal at 12 µs finds A first in EDF order.
    let reqs = vec![
        request(0, 0, 0, 100 * US, 200 * US),
        request(1, 0, 10 * US, 5 * US, 500 * US),
    ];
    let (out, stats) = simulate(&node(1, costs), vec![policy], reqs);
    assert_eq!(finishes_us(&out), [Some(100), Some(105)]);
    assert_eq!(stats.preemptions, 0);
}

#[test]
fn a_local_round_robin_quantum_takes_turns_and_ticks() {
    let mut costs = Costs::zero();
    costs.quantum_tick = 10 * US;
    costs.context_switch = 5 * US;
    let policy = ToWorker {
        local: Local {
            order: Order::Fifo,
            quantum: Some(MS),
        },
        ..ToWorker::zero(Order::Fifo)
    };
    // A: 2,500 µs from 0; B: 1,000 µs from 500 µs.
    let (out, stats) = simulate(
        &node(1, costs),
        vec![policy],
        vec![us(0, 0, 2_500), us(1, 500, 1_000)],
    );
    // Tick at 1,000: A (1,500 left) to the tail; B after the tick and a
    // switch, 1,015–2,015. A resumes at 2,015; its tick at 3,015 finds
    // nothing queued and costs 10 µs: A finishes at 3,525.
    assert_eq!(finishes_us(&out), [Some(3_525), Some(2_015)]);
    assert_eq!(out[1].first_run, Some(1_000 * US));
    assert_eq!((stats.ticks, stats.preemptions, stats.switches), (2, 1, 1));
    assert_eq!(stats.worker_busy, [3_525 * US]);
}

#[test]
fn late_binding_pulls_a_batch_through_a_serial_dispatcher() {
    let mut costs = Costs::zero();
    costs.idle_pull = US;
    costs.wake = 5 * US;
    costs.poll = false;
    let reqs = (0..4).map(|i| us(i, 0, 10)).collect();
    let (out, stats) = simulate(&node(2, costs), vec![Central::new(2)], reqs);
    // At 0: request 0 is held, both idle workers are offered: worker 0
    // pulls [0] (the dispatcher is busy until 1 µs), worker 1 finds nothing
    // at 1 µs; requests 1–3 are held in turn, worker 1 is offered again
    // and pulls [1, 2] (until 2 µs). Worker 0 wakes at 6 and runs 0 until
    // 16; worker 1 wakes at 7 and runs 1 until 17 and 2 until 27. Worker 0,
    // idle at 16, pulls [3] until 17, wakes at 22 and finishes it at 32.
    assert_eq!(finishes_us(&out), [Some(16), Some(17), Some(27), Some(32)]);
    let workers: Vec<_> = out.iter().map(|o| o.worker).collect();
    assert_eq!(
        workers,
        [
            Some(WorkerId(0)),
            Some(WorkerId(1)),
            Some(WorkerId(1)),
            Some(WorkerId(0))
        ]
    );
    assert_eq!(stats.dispatcher_busy, [3 * US]);
}

#[test]
fn a_dispatcher_quantum_returns_the_request_to_its_policy() {
    let mut costs = Costs::zero();
    costs.preempt_signal = US;
    costs.preempt_latency = 2 * US;
    costs.context_switch = US;
    let policy = Central {
        quantum: Some(15 * US),
        ..Central::new(1)
    };
    let mut policies = vec![Box::new(policy)];
    let mut out = Vec::new();
    let stats = run(
        &node(1, costs),
        &mut policies,
        vec![us(0, 0, 50), us(1, 5, 10)]
            .into_iter()
            .map(Ok::<_, Infallible>),
        |o| out.push(o),
    )
    .unwrap();
    out.sort_by_key(|o| o.info.id);
    // A runs from 0; its quantum expires at 15 with B held: the signal
    // costs 1 µs and lands at 18. A (32 µs left) goes back to the tail, the
    // idle worker gets B: 1 µs switch, 19–29. Then A again, 29–61 (its
    // quantum at 44 and 59 finds nothing waiting).
    assert_eq!(finishes_us(&out), [Some(61), Some(29)]);
    assert_eq!(out[1].first_run, Some(18 * US));
    assert_eq!(out[0].preemptions, 1);
    assert_eq!(policies[0].returned, [RequestId(0)]);
    assert_eq!(stats.dispatcher_busy, [US]);
    assert_eq!(stats.worker_busy, [61 * US]);
}

#[test]
fn a_request_resumed_where_it_left_waits_there_while_another_worker_idles() {
    let mut costs = Costs::zero();
    costs.preempt_signal = US;
    costs.preempt_latency = 2 * US;
    costs.context_switch = US;
    let policy = Central {
        quantum: Some(15 * US),
        pin: true,
        ..Central::new(1)
    };
    let mut policies = vec![Box::new(policy)];
    let mut out = Vec::new();
    let stats = run(
        &node(2, costs),
        &mut policies,
        vec![us(0, 0, 50), us(1, 0, 50), us(2, 5, 40)]
            .into_iter()
            .map(Ok::<_, Infallible>),
        |o| out.push(o),
    )
    .unwrap();
    out.sort_by_key(|o| o.info.id);
    // A on worker 0 and B on worker 1 from 0; C is held at 5. At 15 A's
    // quantum hands C to worker 0 with the signal (15–16); B's finds nothing
    // held. A leaves at 18 and is queued on worker 0 behind C, which runs
    // 19–59 (its quantum finds nothing held: A is not). Worker 1 is idle
    // from 50, but A resumes only on worker 0: 59–91.
    assert_eq!(finishes_us(&out), [Some(91), Some(50), Some(59)]);
    assert_eq!(out[0].worker, Some(WorkerId(0)));
    assert_eq!(out[2].first_run, Some(18 * US));
    assert_eq!(policies[0].returned, [RequestId(0)]);
    assert_eq!((stats.preemptions, stats.dispatcher_busy[0]), (1, US));
}

#[test]
fn a_drop_is_final_when_its_decision_ends() {
    let mut costs = Costs::zero();
    costs.dispatch_base = 2 * US;
    let (out, stats) = simulate_in_order(
        &node(1, costs),
        vec![DropOdd::default()],
        vec![us(0, 0, 10), us(1, 0, 10)],
    )
    .unwrap();
    // Request 0 is placed at 2 µs and runs until 12; request 1's decision
    // ends at 4 µs with a drop, which reaches the sink first.
    let order: Vec<u64> = out.iter().map(|o| o.info.id.0).collect();
    assert_eq!(order, [1, 0]);
    let dropped: &RequestOutcome = &out[0];
    assert!(dropped.dropped() && dropped.missed());
    assert_eq!((dropped.worker, dropped.first_run), (None, None));
    assert_eq!(out[1].finish, Some(12 * US));
    assert_eq!((stats.finished, stats.dropped), (1, 1));
    assert_eq!(stats.span, 12 * US);
}

#[test]
fn decisions_that_cost_time_queue_at_the_dispatcher() {
    let mut costs = Costs::zero();
    costs.dispatch_base = 3 * US;
    costs.dispatch_per_worker = US;
    let policy = RoundRobin {
        next: 0,
        local: Local {
            order: Order::Fifo,
            quantum: None,
        },
        scanned: 2,
    };
    let reqs = (0..3).map(|i| us(i, 0, 10)).collect();
    let (out, stats) = simulate(&node(2, costs), vec![policy], reqs);
    // Each decision takes 3 + 2 × 1 µs: they end at 5, 10 and 15. Request 2
    // reaches worker 0 at 15, as request 0 finishes there.
    assert_eq!(finishes_us(&out), [Some(15), Some(20), Some(25)]);
    assert_eq!(
        out.iter()
            .map(|o| o.first_run.unwrap() / US)
            .collect::<Vec<_>>(),
        [5, 10, 15]
    );
    assert_eq!(stats.dispatcher_busy, [15 * US]);
}

#[test]
fn a_sleeping_worker_pays_its_wake_up_and_a_polling_one_does_not() {
    let reqs = || vec![us(0, 0, 10), us(1, 100, 10), us(2, 110, 10)];
    let mut costs = Costs::zero();
    costs.sandbox_setup = 3 * US;
    costs.wake = 5 * US;
    costs.poll = false;
    let (out, stats) = simulate(&node(1, costs), vec![ToWorker::zero(Order::Fifo)], reqs());
    // Request 0 wakes the worker at 5, set-up until 8, done at 18; request 1
    // at 105, 108–118; request 2 finds it running: 118 + 3, done at 131.
    assert_eq!(finishes_us(&out), [Some(18), Some(118), Some(131)]);
    assert_eq!(out[0].first_run, Some(5 * US));
    // Busy: 30 µs of work and three set-ups, not the sleeps.
    assert_eq!(stats.worker_busy, [39 * US]);
    costs.poll = true;
    let (out, _) = simulate(&node(1, costs), vec![ToWorker::zero(Order::Fifo)], reqs());
    assert_eq!(finishes_us(&out), [Some(13), Some(113), Some(126)]);
}

#[test]
fn the_median_estimator_feeds_the_policy() {
    let config = NodeConfig {
        estimate: Estimate::Median { window: 2 },
        ..node(1, Costs::zero())
    };
    let mut reqs: Vec<_> = [10, 30, 20, 40]
        .iter()
        .enumerate()
        .map(|(i, &w)| request(i as u64, 0, i as u64 * 100 * US, w * US, MS))
        .collect();
    for r in &mut reqs {
        r.estimate = 99 * US;
    }
    let mut policies = vec![Box::new(Seen::default())];
    run(
        &config,
        &mut policies,
        reqs.into_iter().map(Ok::<_, Infallible>),
        |_| {},
    )
    .unwrap();
    // Nothing finished: the given 99; then [10]; [10, 30] (the lower
    // middle); [30, 20].
    assert_eq!(policies[0].estimates, [99 * US, 10 * US, 10 * US, 20 * US]);
}

/// Stops the run at once.
struct Impatient(u32);

impl NodeSink for Impatient {
    fn outcome(&mut self, _outcome: RequestOutcome) {
        self.0 += 1;
    }
    fn interrupted(&mut self) -> bool {
        true
    }
}

#[test]
fn a_sink_can_interrupt_a_run() {
    let mut policies = vec![Box::new(ToWorker::zero(Order::Fifo))];
    let reqs = (0..100_000).map(|i| Ok::<_, Infallible>(us(i, i, 1)));
    let e = run(&node(1, Costs::zero()), &mut policies, reqs, Impatient(0)).unwrap_err();
    assert!(matches!(e, NodeError::Interrupted { .. }), "{e}");
}

#[test]
fn an_overdue_worker_is_asked_again_as_soon_as_a_request_waits() {
    let mut costs = Costs::zero();
    costs.preempt_signal = US;
    costs.preempt_latency = 2 * US;
    costs.context_switch = US;
    let policy = Central {
        quantum: Some(15 * US),
        ..Central::new(1)
    };
    let (out, stats) = simulate(
        &node(1, costs),
        vec![policy],
        vec![us(0, 0, 50), us(1, 20, 10)],
    );
    // At 15 µs nothing waits: A goes on. B is held at 20: the dispatcher
    // asks again at once (not at A's next quantum, 30), signals until 21,
    // and A leaves at 23 with 27 µs left. B: switch, 24–34; A: 34–61.
    assert_eq!(finishes_us(&out), [Some(61), Some(34)]);
    assert_eq!(out[1].first_run, Some(23 * US));
    assert_eq!((stats.preemptions, stats.dispatcher_busy[0]), (1, US));
}

#[test]
fn a_preemption_landing_during_set_up_waits_for_it() {
    let mut costs = Costs::zero();
    costs.sandbox_setup = 10 * US;
    costs.preempt_latency = 2 * US;
    costs.context_switch = US;
    let policy = ToWorker {
        preempt: true,
        ..ToWorker::zero(Order::Edf)
    };
    let reqs = vec![
        request(0, 0, 0, 100 * US, 1000 * US),
        request(1, 0, US, 5 * US, 20 * US),
    ];
    let (out, stats) = simulate(&node(1, costs), vec![policy], reqs);
    // A's set-up runs 0–10; B's signal lands at 3 and is taken at 10: A
    // (no work done) goes back, B pays a switch and its set-up, 21–26; A
    // resumes at 26 without either, 26–126.
    assert_eq!(finishes_us(&out), [Some(126), Some(26)]);
    assert_eq!(out[1].first_run, Some(10 * US));
    assert_eq!(stats.worker_busy, [126 * US]);
}
