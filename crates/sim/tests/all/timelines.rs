//! Small schedules computed by hand (context switches free unless stated).

use super::*;
use faasched_model::{SEC, US};
use faasched_sim::os::{FairClass, Prediction};

/// A (0 ms, 10 ms), B (1, 5), C (2, 1) on one core.
fn abc() -> Vec<Invocation> {
    vec![cpu(0, 0, 10), cpu(1, 1, 5), cpu(2, 2, 1)]
}

#[test]
fn fifo_runs_in_arrival_order_to_completion() {
    for (cfg, mut policy) in [
        (ideal(1, Discipline::Linux), all(Class::Fifo(50))),
        (ideal(1, Discipline::FifoNp), all(Class::Normal)),
    ] {
        let out = simulate(&cfg, &mut policy, abc());
        assert_eq!(finishes_ms(&out), [10.0, 15.0, 16.0]);
        assert_eq!(
            out.iter().map(|o| o.response()).collect::<Vec<_>>(),
            [0, 9 * MS, 13 * MS]
        );
        assert!(
            out.iter()
                .all(|o| o.involuntary_switches == 0 && o.voluntary_switches == 1)
        );
    }
}

#[test]
fn srpt_preempts_for_shorter_remaining() {
    // t=1: B (5) < A's 9 left; t=2: C (1) < B's 4 left. C ends 3, B 7, A 16.
    let out = simulate(
        &ideal(1, Discipline::Srpt(Prediction::Exact)),
        &mut all(Class::Normal),
        abc(),
    );
    assert_eq!(finishes_ms(&out), [16.0, 7.0, 3.0]);
    assert_eq!(
        out.iter()
            .map(|o| o.involuntary_switches)
            .collect::<Vec<_>>(),
        [1, 1, 0]
    );
}

#[test]
fn ps_shares_the_core_equally() {
    // 0–1 A alone; 1–2 A,B at 1/2; from 2 three at 1/3: C's 1 ms ends at 5
    // (A 7.5, B 3.5 left); then halves: B ends at 12, A alone ends at 16.
    let out = simulate(&ideal(1, Discipline::Ps), &mut all(Class::Normal), abc());
    assert_eq!(finishes_ms(&out), [16.0, 12.0, 5.0]);
    assert!(out.iter().all(|o| o.cpu == o.turnaround() - o.waiting()));
}

#[test]
fn a_voluntary_switch_is_a_cpu_phase_ending_into_io_or_the_exit() {
    // I/O first and last, CPU then I/O, I/O only, CPU then CPU: one task
    // each, apart, so that nothing is preempted.
    let (c, i) = (Phase::Cpu(MS), Phase::Io(MS));
    let invs = || {
        vec![
            inv(0, 0, 0, &[i, c, i]),
            inv(1, 1, 10 * MS, &[c, i]),
            inv(2, 2, 20 * MS, &[i]),
            inv(3, 3, 30 * MS, &[c, c]),
        ]
    };
    for discipline in [
        Discipline::Linux,
        Discipline::Ps,
        Discipline::FifoNp,
        Discipline::Srpt(Prediction::Exact),
    ] {
        let out = simulate(&ideal(1, discipline), &mut all(Class::Normal), invs());
        let voluntary: Vec<u64> = out.iter().map(|o| o.voluntary_switches).collect();
        assert_eq!(voluntary, [1, 1, 0, 1], "{discipline:?}");
    }
}

#[test]
fn ps_on_two_cores_gives_each_a_core_until_oversubscribed() {
    // Three 6 ms tasks at 0 on 2 cores: rate 2/3 each, all end at 9 ms.
    let invs = vec![cpu(0, 0, 6), cpu(1, 0, 6), cpu(2, 0, 6)];
    let out = simulate(&ideal(2, Discipline::Ps), &mut all(Class::Normal), invs);
    assert_eq!(finishes_ms(&out), [9.0, 9.0, 9.0]);
}

#[test]
fn rr_rotates_every_quantum_at_the_tick() {
    // A (250 ms) and B (100 ms) at 0: A 0–100, B 100–200 (done), A 200–350.
    let invs = vec![cpu(0, 0, 250), cpu(1, 0, 100)];
    let out = simulate(&ideal(1, Discipline::Linux), &mut all(Class::Rr(50)), invs);
    assert_eq!(finishes_ms(&out), [350.0, 200.0]);
    assert_eq!(out[0].involuntary_switches, 1);
}

#[test]
fn fifo_on_two_cores_uses_both() {
    let invs = vec![cpu(0, 0, 10), cpu(1, 0, 10), cpu(2, 0, 5)];
    let out = simulate(
        &ideal(2, Discipline::Linux),
        &mut all(Class::Fifo(50)),
        invs,
    );
    assert_eq!(finishes_ms(&out), [10.0, 10.0, 15.0]);
}

#[test]
fn eevdf_alternates_equal_tasks_at_each_tick() {
    // Base slice 0.7 ms < tick 4 ms: each turn lasts one tick. A runs 0–4,
    // B 4–8, ... A's 25th turn ends at 196, B's at 200; 24 preemptions each.
    let invs = vec![cpu(0, 0, 100), cpu(1, 0, 100)];
    let out = simulate(&ideal(1, Discipline::Linux), &mut all(Class::Normal), invs);
    assert_eq!(finishes_ms(&out), [196.0, 200.0]);
    assert_eq!(
        out.iter()
            .map(|o| o.involuntary_switches)
            .collect::<Vec<_>>(),
        [24, 24]
    );
}

#[test]
fn eevdf_running_task_keeps_its_core_when_only_it_is_eligible() {
    // One core, 10 µs per switch. B (0 ms): 7.9 ms CPU, 0.6 ms I/O, 1 ms CPU.
    // A (4.1 ms): 5 ms CPU. Vruntimes in ms (nice 0: virtual = real).
    // - B runs 0–7.91 (switch until 0.01). A joins at 4.1 at V = 4.1 and
    //   waits: B is eligible with the earlier deadline. B's tick would come at
    //   8, but B blocks at 7.91 at v 7.91, ahead of A (4.1): lag −1.905.
    // - A runs from 7.91 (work from 7.92); at 8.51 B wakes at V = v_A = 4.7
    //   with its lag scaled by (W + w)/W = 2: v_B = 8.51, ineligible, so it
    //   waits and A's tick is armed: A's deadline (4.45) has passed, so 12.
    // - At 12: A's request expired (v_A 8.19, new deadline 8.89), but A is
    //   eligible (8.19 ≤ V = 8.35) and B is not (8.51): `pick_eevdf` returns A,
    //   which keeps the core without a switch, and finishes its 5 ms at 12.92.
    //   B then runs 12.92–13.93.
    // Were A switched out at 12 (the bug this pins), the pick among the
    // waiting would fall back to the earliest deadline, A's own (8.89 < 9.21):
    // an involuntary switch out and back, 10 µs more, A ending at 12.93.
    let b = inv(
        0,
        0,
        0,
        &[Phase::Cpu(7_900 * US), Phase::Io(600 * US), Phase::Cpu(MS)],
    );
    let a = inv(1, 1, 4_100 * US, &[Phase::Cpu(5 * MS)]);
    let mut cfg = ideal(1, Discipline::Linux);
    cfg.context_switch = 10 * US;
    let out = simulate(&cfg, &mut all(Class::Normal), vec![b, a]);
    // By id: B, A.
    assert_eq!(
        out.iter().map(|o| o.finish).collect::<Vec<_>>(),
        [13_930 * US, 12_920 * US]
    );
    assert_eq!(
        out.iter()
            .map(|o| (o.involuntary_switches, o.voluntary_switches))
            .collect::<Vec<_>>(),
        [(0, 2), (0, 1)]
    );
    // Switch costs: B two (one per turn), A one.
    assert_eq!(
        out.iter().map(|o| o.cpu).collect::<Vec<_>>(),
        [8_920 * US, 5_010 * US]
    );
}

#[test]
fn eevdf_protects_a_running_task_only_while_it_is_eligible() {
    // One core, base slice 0.7 ms. A (30 ms) and B (0.1 ms, 0.3 ms I/O,
    // 1 ms) arrive at 0; vruntimes in ms.
    // - A runs 0–4 (B waits, A protected); at 4 A (v 4) is past V = 2, B
    //   runs 4–4.1 and blocks with lag V − v = 2.05 − 0.1 = 1.95.
    // - A runs again from 4.1, protected to v 4.7. B wakes at 4.4 with its
    //   lag doubled: v_B = 4.3 − 3.9 = 0.4, eligible against V = 2.35,
    //   deadline 1.1. A (v 4.3) is protected but not eligible, and
    //   `pick_eevdf` drops an ineligible running task before it looks at
    //   protection: B preempts and ends at 5.4; A ends at 31.1.
    // A protected regardless would have kept B waiting until the 8 ms tick.
    let a = inv(0, 0, 0, &[Phase::Cpu(30 * MS)]);
    let b = inv(
        1,
        1,
        0,
        &[Phase::Cpu(100 * US), Phase::Io(300 * US), Phase::Cpu(MS)],
    );
    let out = simulate(
        &ideal(1, Discipline::Linux),
        &mut all(Class::Normal),
        vec![a, b],
    );
    assert_eq!(finishes_ms(&out), [31.1, 5.4]);
    assert_eq!(
        out.iter()
            .map(|o| (o.involuntary_switches, o.voluntary_switches))
            .collect::<Vec<_>>(),
        [(2, 1), (0, 2)]
    );
}

#[test]
fn eevdf_decides_at_the_tick_after_protection_ends() {
    // One core. L (200 ms, custom slice 100 ms) and S (10 ms, base slice
    // 0.7 ms) arrive at 0; vruntimes in ms.
    // - S preempts L at once (PREEMPT_SHORT: a shorter slice and an earlier
    //   deadline) and runs 0–4; at 4 S (v 4) is past V = 2: L runs.
    // - L's protection is the queue's least slice: to v 0.7, at 4.7, though
    //   its deadline is 50. From 6.17, a tick past the end of protection asks
    //   for a pick: at 8 both are eligible (V = 4) and S's deadline (4.7)
    //   comes first. S runs 8–12, L 12–16 (protected to v 4.7), S 16–18 (done),
    //   L to 210.
    // Decided only at L's deadline, S would wait until the 56 ms tick.
    let mut policy = ByFunction(|f, cpus| Attrs {
        slice: (f == 0).then_some(100 * MS),
        ..Attrs::normal(cpus)
    });
    let invs = vec![cpu(0, 0, 200), cpu(1, 0, 10)];
    let out = simulate(&ideal(1, Discipline::Linux), &mut policy, invs);
    assert_eq!(finishes_ms(&out), [210.0, 18.0]);
    assert_eq!(
        out.iter()
            .map(|o| o.involuntary_switches)
            .collect::<Vec<_>>(),
        [3, 2]
    );
}

#[test]
fn cfs_alternates_equal_tasks_by_sched_slice() {
    // Legacy CFS, 1 core: sched_slice = 6 ms latency / 2 = 3 ms, checked at
    // 4 ms ticks, so turns of one tick; both finish within one turn of 200 ms.
    let mut cfg = ideal(1, Discipline::Linux);
    cfg.fair = FairClass::Cfs;
    let invs = vec![cpu(0, 0, 100), cpu(1, 0, 100)];
    let out = simulate(&cfg, &mut all(Class::Normal), invs);
    let f = finishes_ms(&out);
    assert!(f.iter().all(|&t| (192.0..=200.0).contains(&t)), "{f:?}");
    assert!(
        out.iter()
            .all(|o| (20..=30).contains(&o.involuntary_switches)),
        "{out:?}"
    );
}

/// Two CPU hogs on one core, A at nice 0 and B at `nice_b`; returns A's finish.
fn share(fair: FairClass, nice_b: i8) -> f64 {
    let mut cfg = ideal(1, Discipline::Linux);
    cfg.fair = fair;
    let mut policy = ByFunction(move |f, cpus| Attrs {
        nice: if f == 1 { nice_b } else { 0 },
        ..Attrs::normal(cpus)
    });
    let invs = vec![cpu(0, 0, 1000), cpu(1, 0, 10_000)];
    ms(simulate(&cfg, &mut policy, invs)[0].finish)
}

#[test]
fn nice_weights_split_the_cpu_in_ratio() {
    // Weights 1024 : 335 (nice 5): A gets 1024/1359 of the core, so its 1 s of
    // work takes 1359/1024 s = 1327 ms.
    for fair in [FairClass::Eevdf, FairClass::Cfs] {
        let a = share(fair, 5);
        assert!(
            (a - 1327.1).abs() < 1327.1 * 0.01,
            "{fair:?}: A finished at {a} ms"
        );
        let equal = share(fair, 0);
        assert!(
            (equal - 2000.0).abs() < 20.0,
            "{fair:?}: equal weights, A at {equal} ms"
        );
    }
}

#[test]
fn custom_slice_changes_switches_not_share() {
    let run_with = |slice: Option<Nanos>| {
        let mut policy = ByFunction(move |_, cpus| Attrs {
            slice,
            ..Attrs::normal(cpus)
        });
        let invs = vec![cpu(0, 0, 400), cpu(1, 0, 400)];
        simulate(&ideal(1, Discipline::Linux), &mut policy, invs)
    };
    let base = run_with(None);
    let long = run_with(Some(20 * MS));
    let switches = |o: &[Outcome]| o.iter().map(|o| o.involuntary_switches).sum::<u64>();
    // 4 ms turns versus 20 ms turns: five times fewer preemptions.
    assert_eq!(switches(&base), 198);
    assert!((38..=40).contains(&switches(&long)), "{}", switches(&long));
    // Same share: both finish together at the end, either way.
    for o in [&base, &long] {
        let f = finishes_ms(o);
        assert!(f.iter().all(|t| (780.0..=800.0).contains(t)), "{f:?}");
    }
}

#[test]
fn rt_preempts_fair_at_once() {
    let mut policy = ByFunction(|f, cpus| {
        let class = if f == 1 {
            Class::Fifo(10)
        } else {
            Class::Normal
        };
        Attrs::normal(cpus).with_class(class)
    });
    let invs = vec![cpu(0, 0, 100), cpu(1, 10, 50)];
    let mut cfg = ideal(1, Discipline::Linux);
    cfg.context_switch = 5 * US;
    let out = simulate(&cfg, &mut policy, invs);
    assert_eq!(out[1].first_run, 10 * MS, "RT ran at its arrival");
    assert_eq!(out[1].finish, 60 * MS + 5 * US);
    assert_eq!(out[0].involuntary_switches, 1);
    // A: 100 ms of work delayed by B's 50 ms and three switch-ins of 5 µs
    // (A at 0, B at 10 ms, A again at 60.005 ms).
    assert_eq!(out[0].finish, 150 * MS + 15 * US);
}

#[test]
fn fair_keeps_its_reserve_under_an_rt_hog() {
    // B: SCHED_FIFO, 3 s of CPU; A: fair, 200 ms. The fair server gives A 50 ms
    // after each 950 ms of starvation: 950–1000, 1950–2000, 2950–3000; B ends
    // at 3150 and A takes its last 50 ms to 3200.
    let mut policy = ByFunction(|f, cpus| {
        let class = if f == 0 {
            Class::Fifo(50)
        } else {
            Class::Normal
        };
        Attrs::normal(cpus).with_class(class)
    });
    let invs = vec![cpu(0, 0, 3000), cpu(1, 0, 200)];
    let out = simulate(&ideal(1, Discipline::Linux), &mut policy, invs);
    assert_eq!(finishes_ms(&out), [3150.0, 3200.0]);
    assert_eq!(out[1].first_run, 950 * MS);
    // Without the reserve, A starves until B is done.
    let mut cfg = ideal(1, Discipline::Linux);
    cfg.fair_server = false;
    let out = simulate(&cfg, &mut policy, vec![cpu(0, 0, 3000), cpu(1, 0, 200)]);
    assert_eq!(finishes_ms(&out), [3000.0, 3200.0]);
    let _ = SEC;
}

#[test]
fn io_blocks_off_core_and_the_wakeup_runs_on_a_free_core() {
    // A: 2 ms CPU, 10 ms I/O, 2 ms CPU. B: 20 ms CPU at 0. One core, FIFO:
    // A 0–2, blocks; B 2–22; A wakes at 12 but waits for B (FIFO, same prio).
    let a = inv(
        0,
        0,
        0,
        &[Phase::Cpu(2 * MS), Phase::Io(10 * MS), Phase::Cpu(2 * MS)],
    );
    let b = inv(1, 1, 0, &[Phase::Cpu(20 * MS)]);
    let out = simulate(
        &ideal(1, Discipline::Linux),
        &mut all(Class::Fifo(50)),
        vec![a, b],
    );
    assert_eq!(finishes_ms(&out), [24.0, 22.0]);
    assert_eq!((out[0].io, out[0].cpu), (10 * MS, 4 * MS));
    assert_eq!(out[0].voluntary_switches, 2);
    // Under SRPT the woken A (2 ms left) preempts B (10 ms left) at 12.
    let a = inv(
        0,
        0,
        0,
        &[Phase::Cpu(2 * MS), Phase::Io(10 * MS), Phase::Cpu(2 * MS)],
    );
    let b = inv(1, 1, 0, &[Phase::Cpu(20 * MS)]);
    let srpt = ideal(1, Discipline::Srpt(Prediction::Exact));
    let out = simulate(&srpt, &mut all(Class::Normal), vec![a, b]);
    assert_eq!(finishes_ms(&out), [14.0, 24.0]);
}

#[test]
fn context_switches_cost_core_time() {
    // FIFO, three 1 ms tasks at 0 on one core, 10 µs per switch: each dispatch
    // costs 10 µs, charged to the incoming task.
    let mut cfg = ideal(1, Discipline::Linux);
    cfg.context_switch = 10 * US;
    let invs = vec![cpu(0, 0, 1), cpu(1, 0, 1), cpu(2, 0, 1)];
    let out = simulate(&cfg, &mut all(Class::Fifo(50)), invs);
    let f: Vec<Time> = out.iter().map(|o| o.finish).collect();
    assert_eq!(f, [1010 * US, 2020 * US, 3030 * US]);
    assert!(out.iter().all(|o| o.cpu == 1010 * US));
}

/// The ALPS paper's patched CFS on 1 core: A (function 0, rank 2) runs 100 ms
/// from 0; B (function 1, rank 1) wants 10 ms from 1 ms. CFS places B a
/// START_DEBIT slice behind (vruntime 10 ms against A's 7 ms), so B's wakeup
/// preempts nothing; A's turn ends at the first tick past its 3 ms
/// `sched_slice`, at 4 ms, or, held by a learned slice of 50 ms, at the first
/// tick past 50 ms, 52 ms. Then B comes first by rank (plain CFS would have
/// kept A, whose vruntime is lower), runs 10 ms, and A finishes the rest.
#[test]
fn alps_kernel_orders_by_rank_and_holds_for_the_learned_slice() {
    let run_with = |hold: Option<Nanos>| {
        let mut policy = ByFunction(move |f, cpus| Attrs {
            rank: Some(2 - f),
            slice: if f == 0 { hold } else { None },
            ..Attrs::normal(cpus)
        });
        let invs = vec![cpu(0, 0, 100), cpu(1, 1, 10)];
        simulate(&ideal(1, Discipline::AlpsKernel), &mut policy, invs)
    };
    let free = run_with(None);
    assert_eq!(finishes_ms(&free), [110.0, 14.0]);
    assert_eq!(free[1].first_run, 4 * MS);
    let held = run_with(Some(50 * MS));
    assert_eq!(finishes_ms(&held), [110.0, 62.0]);
    assert_eq!(held[1].first_run, 52 * MS);
    assert_eq!(held[0].involuntary_switches, 1);

    // Without the discipline, ranks and holds mean nothing: plain CFS keeps A
    // at the 4 ms tick (its vruntime, 10 ms, ties B's and A is older).
    let mut cfg = ideal(1, Discipline::Linux);
    cfg.fair = FairClass::Cfs;
    let mut policy = ByFunction(|f, cpus| Attrs {
        rank: Some(2 - f),
        slice: Some(50 * MS),
        ..Attrs::normal(cpus)
    });
    let plain = simulate(&cfg, &mut policy, vec![cpu(0, 0, 100), cpu(1, 1, 10)]);
    assert_ne!(plain[1].first_run, 4 * MS);
    assert_ne!(plain[1].first_run, 52 * MS);
}

/// Records the first runs it is told of; asks for them if `wants`.
struct Starts {
    wants: bool,
    seen: Vec<(u64, Time)>,
}

impl Steer for Starts {
    fn name(&self) -> &str {
        "starts"
    }
    fn on_arrival(&mut self, _now: Time, _task: &TaskInfo, cpus: CpuSet) -> Attrs {
        Attrs::normal(cpus).with_class(Class::Fifo(50))
    }
    fn on_start(&mut self, now: Time, task: TaskId) -> Option<Attrs> {
        self.seen.push((task.0, now));
        None
    }
    fn wants_start(&self) -> bool {
        self.wants
    }
}

#[test]
fn first_runs_reach_only_a_policy_that_asks() {
    // Under FIFO A runs 0–10, B 10–15, C 15–16; under PS each starts at its
    // arrival.
    for (discipline, starts) in [
        (Discipline::Linux, [(0, 0), (1, 10 * MS), (2, 15 * MS)]),
        (Discipline::Ps, [(0, 0), (1, MS), (2, 2 * MS)]),
    ] {
        for wants in [false, true] {
            let mut policy = Starts {
                wants,
                seen: Vec::new(),
            };
            let out = simulate(&ideal(1, discipline), &mut policy, abc());
            let first_runs: Vec<_> = out.iter().map(|o| (o.id, o.first_run)).collect();
            assert_eq!(first_runs, starts, "{discipline:?}");
            let expected: &[_] = if wants { &starts } else { &[] };
            assert_eq!(policy.seen, expected, "{discipline:?}, wants {wants}");
        }
    }
}

#[test]
fn an_invocation_that_begins_with_io_starts_at_its_arrival() {
    // One core, FIFO. A: 10 ms CPU at 0. B at 2 ms: 5 ms I/O, then 1 ms CPU,
    // so its handler runs from its arrival (response 0) though its CPU
    // waits for A (10–11). C at 3 ms: 4 ms I/O only, never on a core. Under
    // PS, B's CPU shares the core with A's last 3 ms from 7: B ends at 9.
    let invs = || {
        vec![
            cpu(0, 0, 10),
            inv(1, 1, 2 * MS, &[Phase::Io(5 * MS), Phase::Cpu(MS)]),
            inv(2, 2, 3 * MS, &[Phase::Io(4 * MS)]),
        ]
    };
    for (discipline, finishes) in [
        (Discipline::Linux, [10.0, 11.0, 7.0]),
        (Discipline::Ps, [11.0, 9.0, 7.0]),
    ] {
        for wants in [false, true] {
            let mut policy = Starts {
                wants,
                seen: Vec::new(),
            };
            let out = simulate(&ideal(1, discipline), &mut policy, invs());
            assert_eq!(finishes_ms(&out), finishes, "{discipline:?}");
            let starts = [(0, 0), (1, 2 * MS), (2, 3 * MS)];
            let first_runs: Vec<_> = out.iter().map(|o| (o.id, o.first_run)).collect();
            assert_eq!(first_runs, starts, "{discipline:?}");
            assert_eq!(out[1].response(), 0);
            assert_eq!(out[2].execution(), 4 * MS, "{discipline:?}");
            let mut seen = policy.seen.clone();
            seen.sort_unstable();
            let expected: &[_] = if wants { &starts } else { &[] };
            assert_eq!(seen, expected, "{discipline:?}, wants {wants}");
        }
    }
}

/// SCHED_FIFO until a task has used `watch` of CPU, then SCHED_OTHER (SFS's
/// demotion); records when and at what CPU time it heard of each watch.
struct DemoteAt {
    watch: Nanos,
    heard: Vec<(u64, Time, Nanos)>,
}

impl Steer for DemoteAt {
    fn name(&self) -> &str {
        "demote"
    }
    fn on_arrival(&mut self, _now: Time, _task: &TaskInfo, cpus: CpuSet) -> Attrs {
        Attrs::normal(cpus).with_class(Class::Fifo(50))
    }
    fn cpu_watch(&self, task: TaskId) -> Option<Nanos> {
        (!self.heard.iter().any(|h| h.0 == task.0)).then_some(self.watch)
    }
    fn on_cpu_used(&mut self, now: Time, task: TaskId, used: Nanos) -> Option<Attrs> {
        self.heard.push((task.0, now, used));
        Some(Attrs::normal(CpuSet::first(1)))
    }
}

#[test]
fn a_watch_is_heard_at_its_instant_or_as_a_live_watcher_sees_it() {
    // A (10 ms) at 0, B (3 ms) at 1 ms, on one core at 250 Hz (ticks every
    // 4 ms). Exact: A is demoted at 5 ms and B, FIFO, runs 5–8, A 8–13.
    // Seen at the tick (8 ms) plus 0.3 ms: A runs on to 8.3 ms, B 8.3–11.3,
    // A 11.3–13.
    let invs = || vec![cpu(0, 0, 10), cpu(1, 1, 3)];
    for (watch_at_tick, heard, finishes) in [
        (None, (5 * MS, 5 * MS), [13.0, 8.0]),
        (Some(300 * US), (8_300 * US, 8_300 * US), [13.0, 11.3]),
        (Some(0), (8 * MS, 8 * MS), [13.0, 11.0]),
    ] {
        let mut cfg = ideal(1, Discipline::Linux);
        cfg.watch_at_tick = watch_at_tick;
        let mut policy = DemoteAt {
            watch: 5 * MS,
            heard: Vec::new(),
        };
        let out = simulate(&cfg, &mut policy, invs());
        assert_eq!(policy.heard[0], (0, heard.0, heard.1), "{watch_at_tick:?}");
        assert_eq!(finishes_ms(&out), finishes, "{watch_at_tick:?}");
        // A watch past any phase's end, however far, is never heard.
        let mut never = DemoteAt {
            watch: Nanos::MAX,
            heard: Vec::new(),
        };
        let out = simulate(&cfg, &mut never, invs());
        assert_eq!(never.heard, [], "{watch_at_tick:?}");
        assert_eq!(finishes_ms(&out), [10.0, 13.0], "{watch_at_tick:?}");
    }
}

/// Every task on core 0 of the machine, nice 0; function 0's task is
/// watched at `watch` of CPU, which the policy hears and lets pass.
struct Listen {
    watch: Nanos,
    heard: Vec<u64>,
}

impl Steer for Listen {
    fn name(&self) -> &str {
        "listen"
    }
    fn on_arrival(&mut self, _now: Time, _task: &TaskInfo, _cpus: CpuSet) -> Attrs {
        Attrs::normal(CpuSet::first(1))
    }
    fn cpu_watch(&self, task: TaskId) -> Option<Nanos> {
        (task.0 == 0 && self.heard.is_empty()).then_some(self.watch)
    }
    fn on_cpu_used(&mut self, _now: Time, task: TaskId, _used: Nanos) -> Option<Attrs> {
        self.heard.push(task.0);
        None
    }
}

#[test]
fn a_cfs_turn_goes_on_through_ticks_that_do_not_end_it() {
    // Legacy CFS on 8 cores, both tasks pinned to core 0: A (30 ms) and B
    // (2 ms) at 0. A watch on A heard at a tick, to which the policy says
    // nothing, must change nothing: the tick that reports it does not
    // reschedule, and Linux restarts a turn only when a task is put on the
    // core (`set_next_entity`).
    let mut cfg = ideal(8, Discipline::Linux);
    cfg.fair = FairClass::Cfs;
    cfg.watch_at_tick = Some(0);
    let run = |watch| {
        let mut policy = Listen {
            watch,
            heard: Vec::new(),
        };
        let out = simulate(&cfg, &mut policy, vec![cpu(0, 0, 30), cpu(1, 0, 2)]);
        (policy.heard, out)
    };
    let (heard, watched) = run(5 * MS);
    assert_eq!(heard, [0]);
    let (_, plain) = run(Nanos::MAX);
    assert_eq!(watched, plain);
}

/// Function 0's task starts fair and turns SCHED_RR at `at` of CPU; the
/// others are SCHED_RR from their arrival.
struct TurnRr {
    at: Nanos,
    turned: bool,
}

impl Steer for TurnRr {
    fn name(&self) -> &str {
        "turn-rr"
    }
    fn on_arrival(&mut self, _now: Time, task: &TaskInfo, cpus: CpuSet) -> Attrs {
        match task.function.0 {
            0 => Attrs::normal(cpus),
            _ => Attrs::normal(cpus).with_class(Class::Rr(10)),
        }
    }
    fn cpu_watch(&self, task: TaskId) -> Option<Nanos> {
        (task.0 == 0 && !self.turned).then_some(self.at)
    }
    fn on_cpu_used(&mut self, _now: Time, _task: TaskId, _used: Nanos) -> Option<Attrs> {
        self.turned = true;
        Some(Attrs::normal(CpuSet::first(1)).with_class(Class::Rr(10)))
    }
}

#[test]
fn the_rr_quantum_drains_only_while_a_task_is_rr() {
    // One core. A (150 ms) runs fair alone and turns RR at 120 ms with its
    // quantum (100 ms) whole: B, RR at the same priority from 121 ms, waits
    // for A's end at 150 and runs to 200. (Drained while A was fair, the
    // quantum would have ended at the 124 ms tick.)
    let mut policy = TurnRr {
        at: 120 * MS,
        turned: false,
    };
    let out = simulate(
        &ideal(1, Discipline::Linux),
        &mut policy,
        vec![cpu(0, 0, 150), cpu(1, 121, 50)],
    );
    assert_eq!(finishes_ms(&out), [150.0, 200.0]);
}

/// SCHED_FIFO at priority 30, 20, 10 for functions 0, 1, 2; at its first
/// period (3 ms) it lowers task 1 to priority 10.
struct Lower {
    lowered: bool,
}

impl Steer for Lower {
    fn name(&self) -> &str {
        "lower"
    }
    fn on_arrival(&mut self, _now: Time, task: &TaskInfo, cpus: CpuSet) -> Attrs {
        let prio = [30, 20, 10][task.function.0 as usize];
        Attrs::normal(cpus).with_class(Class::Fifo(prio))
    }
    fn period(&self) -> Option<Nanos> {
        Some(3 * MS)
    }
    fn on_period(&mut self, _now: Time, _load: Load) -> Vec<(TaskId, Attrs)> {
        if std::mem::replace(&mut self.lowered, true) {
            return Vec::new();
        }
        let attrs = Attrs::normal(CpuSet::first(1)).with_class(Class::Fifo(10));
        vec![(TaskId(1), attrs)]
    }
}

#[test]
fn an_rt_task_whose_priority_falls_goes_to_the_head_of_its_new_level() {
    // One core. X (FIFO 30, 10 ms) runs from 0; A (FIFO 20, 5 ms) waits from
    // 1 ms, B (FIFO 10, 5 ms) from 2 ms. At 3 ms A falls to 10: Linux
    // queues it at the head of that level, before B. X ends at 10, A runs
    // 10–15, B 15–20.
    let out = simulate(
        &ideal(1, Discipline::Linux),
        &mut Lower { lowered: false },
        vec![cpu(0, 0, 10), cpu(1, 1, 5), cpu(2, 2, 5)],
    );
    assert_eq!(finishes_ms(&out), [10.0, 15.0, 20.0]);
}
