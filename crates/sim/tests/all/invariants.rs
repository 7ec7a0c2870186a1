//! Properties over random workloads, for every class and discipline: each
//! invocation finishes exactly once, accounting adds up, and (checked inside
//! the kernel after every step in debug builds) no core idles while a task it
//! may run waits.

use super::*;
use faasched_model::US;
use faasched_sim::os::{FairClass, Prediction};
use proptest::prelude::*;

fn phases() -> impl Strategy<Value = Vec<Phase>> {
    prop::collection::vec((1u64..20_000, 0u64..20_000), 1..4).prop_map(|bursts| {
        let mut p = Vec::new();
        for (i, (c, io)) in bursts.iter().enumerate() {
            if i > 0 && *io > 0 {
                p.push(Phase::Io(io * US));
            }
            p.push(Phase::Cpu(c * US));
        }
        p
    })
}

fn workload() -> impl Strategy<Value = Vec<Invocation>> {
    prop::collection::vec((0u64..50_000, 0u32..6, phases()), 1..40).prop_map(|mut v| {
        v.sort_by_key(|x| x.0);
        v.into_iter()
            .enumerate()
            .map(|(i, (at, f, p))| inv(i as u64, f, at * US, &p))
            .collect()
    })
}

/// A policy mixing every class, by function: the nastiest case for the model.
fn mixed(f: u32, cpus: CpuSet) -> Attrs {
    let class = [
        Class::Normal,
        Class::Fifo(20),
        Class::Rr(20),
        Class::Batch,
        Class::Idle,
        Class::Fifo(70),
    ][f as usize % 6];
    Attrs {
        nice: (f as i8 % 5) * 3 - 6,
        slice: f.is_multiple_of(2).then_some(300 * US),
        rank: Some(f % 3),
        ..Attrs::normal(cpus).with_class(class)
    }
}

/// Starts tasks like [`mixed`], then every 3 ms moves every live task to the
/// attributes of another function and, every other time, to one core: every
/// path of `set_attrs` (queued, running, blocked; across classes and masks).
#[derive(Default)]
struct Reshuffle {
    live: std::collections::BTreeMap<TaskId, u32>,
    turn: u32,
}

impl Steer for Reshuffle {
    fn name(&self) -> &str {
        "reshuffle"
    }
    fn on_arrival(&mut self, _now: Time, task: &TaskInfo, cpus: CpuSet) -> Attrs {
        self.live.insert(task.task, task.function.0);
        mixed(task.function.0, cpus)
    }
    fn on_exit(&mut self, _now: Time, task: TaskId, _outcome: &Outcome) {
        self.live.remove(&task);
    }
    fn period(&self) -> Option<Nanos> {
        Some(3 * MS)
    }
    fn on_period(&mut self, _now: Time, load: Load) -> Vec<(TaskId, Attrs)> {
        self.turn += 1;
        let cpus = if self.turn.is_multiple_of(2) {
            CpuSet::range(load.cores - 1, load.cores)
        } else {
            CpuSet::first(load.cores)
        };
        self.live
            .iter()
            .map(|(&t, &f)| (t, mixed(f + self.turn, cpus)))
            .collect()
    }
}

fn disciplines() -> Vec<(Discipline, FairClass)> {
    vec![
        (Discipline::Linux, FairClass::Eevdf),
        (Discipline::Linux, FairClass::Cfs),
        (Discipline::Srpt(Prediction::Exact), FairClass::Eevdf),
        (Discipline::Srpt(Prediction::Random(0.4)), FairClass::Eevdf),
        (Discipline::Ps, FairClass::Eevdf),
        (Discipline::FifoNp, FairClass::Eevdf),
        (Discipline::AlpsKernel, FairClass::Eevdf),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_invocation_finishes_once_and_accounting_adds_up(
        invs in workload(), cores in 1usize..4, cs in 0u64..20
    ) {
        for (d, fair) in disciplines() {
            let mut cfg = Config::new(cores);
            cfg.discipline = d;
            cfg.fair = fair;
            cfg.context_switch = cs * US;
            let policies: [&mut dyn Steer; 2] = [&mut ByFunction(mixed), &mut Reshuffle::default()];
            for policy in policies {
            let mut out = Vec::new();
            let stats = run(&cfg, policy, invs.iter().cloned().map(Ok::<_, Infallible>), |o| out.push(o)).unwrap();
            out.sort_by_key(|o| o.id);
            prop_assert_eq!(out.len(), invs.len(), "{:?}", d);
            for (o, i) in out.iter().zip(&invs) {
                prop_assert_eq!(o.id, i.id);
                prop_assert!(o.first_run >= o.arrival && o.finish >= o.first_run);
                prop_assert_eq!(o.io, i.io_demand());
                // CPU time is the demand plus the switch-ins charged to it.
                prop_assert!(o.cpu >= i.cpu_demand(), "{:?}: cpu {} < demand {}", d, o.cpu, i.cpu_demand());
                prop_assert!(o.turnaround() >= o.cpu + o.io);
            }
            // Work conservation of the accounting: every busy core-ns is some
            // task's CPU time. PS rounds each phase's end up to a whole ns.
            let cpu: u64 = out.iter().map(|o| o.cpu).sum();
            let slack = if d == Discipline::Ps {
                invs.iter().map(|i| i.phases.len() as u64).sum()
            } else {
                0
            };
            prop_assert!(stats.busy >= cpu && stats.busy - cpu <= slack, "{:?}: busy {} vs cpu {}", d, stats.busy, cpu);
            }
        }
    }

    #[test]
    fn same_inputs_same_outcomes(invs in workload(), cores in 1usize..3) {
        for (d, fair) in disciplines() {
            let mut cfg = Config::new(cores);
            cfg.discipline = d;
            cfg.fair = fair;
            let a = simulate(&cfg, &mut ByFunction(mixed), invs.clone());
            let b = simulate(&cfg, &mut ByFunction(mixed), invs.clone());
            prop_assert_eq!(a, b);
        }
    }
}

/// Near the end of the clock: a backlog that drains before
/// [`faasched_sim::RUN_LIMIT`] finishes exactly; one that would not is an
/// error, not a clock that wraps or a queue that misorders.
#[test]
fn the_clock_runs_to_its_limit_and_no_further() {
    use faasched_model::TIME_LIMIT;
    use faasched_sim::RUN_LIMIT;
    use faasched_sim::os::RunError;
    let longest = |n: u64| -> Vec<Invocation> {
        (0..n)
            .map(|id| inv(id, 0, 0, &[Phase::Cpu(TIME_LIMIT)]))
            .collect()
    };
    let cfg = ideal(1, Discipline::Linux);
    let out = simulate(&cfg, &mut all(Class::Fifo(1)), longest(2));
    assert_eq!(
        out.iter().map(|o| o.finish).collect::<Vec<_>>(),
        [TIME_LIMIT, 2 * TIME_LIMIT]
    );

    let n = RUN_LIMIT / TIME_LIMIT + 1;
    let err = run(
        &cfg,
        &mut all(Class::Fifo(1)),
        longest(n).into_iter().map(Ok::<_, Infallible>),
        |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(err, RunError::TimeLimit { finished } if finished == n - 1),
        "{err}"
    );
    assert!(err.to_string().contains("lower --load"), "{err}");
}

use std::cell::Cell;

/// A sink that asks the run to stop on its `after`-th look, counting its
/// looks and the outcomes it got.
struct StopAfter<'a> {
    after: u64,
    looks: &'a Cell<u64>,
    outcomes: &'a Cell<u64>,
}

impl faasched_sim::os::Sink for StopAfter<'_> {
    fn outcome(&mut self, _: Outcome) {
        self.outcomes.set(self.outcomes.get() + 1);
    }
    fn interrupted(&mut self) -> bool {
        self.looks.set(self.looks.get() + 1);
        self.looks.get() >= self.after
    }
}

/// Two 5-minute invocations sharing a core under EEVDF: 150,000 ticks and
/// the preemptions between them before the first outcome; the engine still asks whether to stop every
/// [`faasched_sim::os::POLL_EVENTS`] events, and stops when told.
#[test]
fn a_run_without_outcomes_still_asks_whether_to_stop() {
    use faasched_sim::os::{POLL_EVENTS, RunError};
    let hour = || {
        let long = [Phase::Cpu(300_000 * MS)];
        let invs = vec![inv(0, 0, 0, &long), inv(1, 1, 0, &long)];
        invs.into_iter().map(Ok::<_, Infallible>)
    };
    let cfg = ideal(1, Discipline::Linux);
    let (looks, outcomes) = (Cell::new(0), Cell::new(0));
    let sink = |after| StopAfter {
        after,
        looks: &looks,
        outcomes: &outcomes,
    };
    let stats = run(&cfg, &mut all(Class::Normal), hour(), sink(u64::MAX)).unwrap();
    assert_eq!(outcomes.get(), 2);
    assert!(stats.events > 2 * POLL_EVENTS, "{} events", stats.events);
    assert!(
        looks.get() > stats.events / POLL_EVENTS,
        "{} looks over {} events",
        looks.get(),
        stats.events
    );
    looks.set(0);
    outcomes.set(0);
    let err = run(&cfg, &mut all(Class::Normal), hour(), sink(3)).unwrap_err();
    assert!(
        matches!(err, RunError::Interrupted { finished: 0 }),
        "{err}"
    );
    assert_eq!((looks.get(), outcomes.get()), (3, 0));
}
