//! The ALPS kernel's starvation guard ([`Config::alps_wait_limit`]): the
//! adversarial cases where the paper's strict rank order starves a task, and
//! the property the guard keeps on random workloads.

use super::*;
use faasched_model::{SEC, US};
use faasched_policy::os::wait_guard::{TICK, WAIT_LIMIT, WaitGuard};
use faasched_sim::os::DEFAULT_ALPS_WAIT_LIMIT;
use proptest::prelude::*;

/// The ALPS paper's kernel on `cores` cores with free context switches and
/// the given wait limit.
fn alps_kernel(cores: usize, wait_limit: Option<Nanos>) -> Config {
    let mut cfg = ideal(cores, Discipline::AlpsKernel);
    cfg.alps_wait_limit = wait_limit;
    cfg
}

/// The wait before each invocation's first run, by id.
fn responses(out: &[Outcome]) -> Vec<Nanos> {
    out.iter().map(|o| o.first_run - o.arrival).collect()
}

/// Two cores. Two invocations of function 0 (rank 1, learned slice an hour,
/// 20 s of CPU) arrive at 0 and take both cores. From 10 ms, every 250 ms, a
/// burst of eight 3 ms invocations of function 1 (rank 2, no hold) arrives.
fn held_cores_and_bursts() -> Vec<Invocation> {
    let long = |id| inv(id, 0, 0, &[Phase::Cpu(20 * SEC)]);
    let mut invs = vec![long(0), long(1)];
    for burst in 0..20u64 {
        for _ in 0..8 {
            let id = invs.len() as u64;
            invs.push(inv(id, 1, (10 + 250 * burst) * MS, &[Phase::Cpu(3 * MS)]));
        }
    }
    invs
}

fn rank_and_hold(f: u32, cpus: CpuSet) -> Attrs {
    Attrs {
        rank: Some(f + 1),
        slice: (f == 0).then_some(3_600 * SEC),
        ..Attrs::normal(cpus)
    }
}

/// As the paper publishes it, the held long invocations keep both cores
/// for their whole 20 s: every short one waits until then. With the guard,
/// a burst reaches the limit together; at the next tick (4 ms) both long
/// ones lose their hold (their CFS turn is long over) and the eight short
/// ones run two at a time, 3 ms each: the last starts three runs later.
#[test]
fn bursts_while_held_cores_starve_without_the_limit_and_not_with_it() {
    let shorts = 2..;
    let strict = simulate(
        &alps_kernel(2, None),
        &mut ByFunction(rank_and_hold),
        held_cores_and_bursts(),
    );
    let waits = responses(&strict);
    assert!(
        waits[shorts.clone()].iter().all(|&w| w > 15 * SEC),
        "the strict order no longer starves: {:?}",
        &waits[2..10]
    );

    let limit = DEFAULT_ALPS_WAIT_LIMIT;
    let cfg = alps_kernel(2, Some(limit));
    let guarded = simulate(
        &cfg,
        &mut ByFunction(rank_and_hold),
        held_cores_and_bursts(),
    );
    let bound = limit + cfg.tick() + 3 * 3 * MS;
    let waits = responses(&guarded);
    let worst = *waits[shorts].iter().max().unwrap();
    assert!(worst <= bound, "a short invocation waited {} ms", ms(worst));
    // The long ones still finish (each burst takes 12 ms of their cores).
    assert!(guarded[0].finish < 21 * SEC && guarded[1].finish < 21 * SEC);
}

/// One core, the other way round: 2.1 ms invocations of function 0 (rank 1)
/// arrive every 2 ms for 3 s, a load of 1.05 on their own, and one 50 ms
/// invocation of function 1 (rank 2) at 1 ms. Strictly ranked it waits for
/// the stream to end; with the guard it starts once it reached the limit,
/// when the running 2.1 ms invocation ends. (Preempted by rank after its CFS
/// turn, it waits for the limit again each time: a turn per limit.)
#[test]
fn a_saturating_better_ranked_stream_cannot_starve_a_worse_ranked_task() {
    let workload = || {
        let mut invs: Vec<Invocation> = (0..1_500)
            .map(|i| inv(i, 0, 2 * i * MS, &[Phase::Cpu(2_100 * US)]))
            .collect();
        invs.insert(1, inv(1_500, 1, MS, &[Phase::Cpu(50 * MS)]));
        invs
    };
    let rank = |f: u32, cpus| Attrs {
        rank: Some(f + 1),
        ..Attrs::normal(cpus)
    };
    let strict = simulate(&alps_kernel(1, None), &mut ByFunction(rank), workload());
    assert!(strict[1_500].first_run >= 3 * SEC);

    let limit = DEFAULT_ALPS_WAIT_LIMIT;
    let guarded = simulate(
        &alps_kernel(1, Some(limit)),
        &mut ByFunction(rank),
        workload(),
    );
    let long = &guarded[1_500];
    assert!(long.first_run - long.arrival <= limit + 2_100 * US);
}

/// `alps` on a stock kernel, in the held-cores case: the long function's
/// rank is nice -5 and its slice the kernel's largest custom slice (100 ms),
/// the short one's nice 5 and 3 ms, and EEVDF lets each short invocation in
/// at once (PREEMPT_SHORT: it is eligible, with the earlier deadline).
#[test]
fn alps_on_eevdf_does_not_starve_the_bursts_either() {
    let stock = |f: u32, cpus| Attrs {
        nice: if f == 0 { -5 } else { 5 },
        slice: Some(if f == 0 { 100 * MS } else { 3 * MS }),
        ..Attrs::normal(cpus)
    };
    let cfg = ideal(2, Discipline::Linux);
    let out = simulate(&cfg, &mut ByFunction(stock), held_cores_and_bursts());
    let worst = *responses(&out)[2..].iter().max().unwrap();
    assert!(
        worst <= DEFAULT_ALPS_WAIT_LIMIT + cfg.tick() + 3 * 3 * MS,
        "a short invocation waited {} ms",
        ms(worst)
    );
}

/// Weights and slices together delay a first run on EEVDF for seconds: one
/// core, 32 invocations of 10 s at nice -5 with 100 ms slices (what
/// `alps` gives a well-ranked function), and at 50 ms one of 10 ms at
/// nice 5, also with a 100 ms slice (a badly ranked function whose SRPT
/// turns were long). The newcomer's first virtual deadline is half its
/// slice over its weight away, 153 ms of virtual time at nice 5, and every
/// held task whose deadline comes sooner runs its protected 100 ms first,
/// round after round. `alps`'s wait guard promotes it once it has waited
/// the limit: nice -20 and the kernel's shortest slice, so it preempts at
/// the guard's next tick (PREEMPT_SHORT). (Then it is back at nice 5 and
/// waits its turns again: the guard bounds the first run, no more.)
#[test]
fn the_wait_guard_bounds_a_first_run_that_weights_and_slices_delay() {
    const N_LONG: u64 = 32;
    let workload = || {
        let mut invs: Vec<Invocation> = (0..N_LONG)
            .map(|i| inv(i, 0, 0, &[Phase::Cpu(10 * SEC)]))
            .collect();
        invs.push(inv(N_LONG, 1, 50 * MS, &[Phase::Cpu(10 * MS)]));
        invs
    };
    let ranked = |f: u32, cpus| Attrs {
        nice: if f == 0 { -5 } else { 5 },
        slice: Some(100 * MS),
        ..Attrs::normal(cpus)
    };
    let cfg = ideal(1, Discipline::Linux);
    let unguarded = simulate(&cfg, &mut ByFunction(ranked), workload());
    let u = &unguarded[N_LONG as usize];
    assert!(
        u.first_run - u.arrival >= SEC,
        "waited only {} ms",
        ms(u.first_run - u.arrival)
    );

    let guarded = simulate(&cfg, &mut WaitGuard::new(ByFunction(ranked)), workload());
    let g = &guarded[N_LONG as usize];
    let wait = g.first_run - g.arrival;
    assert!(wait <= WAIT_LIMIT + TICK, "waited {} ms", ms(wait));
}

fn ranked_workload() -> impl Strategy<Value = (Vec<Invocation>, Vec<(Option<u32>, Nanos)>)> {
    let invocations =
        prop::collection::vec((0u64..2_000, 0u32..4, 1u64..300), 1..60).prop_map(|mut v| {
            v.sort_by_key(|x| x.0);
            v.into_iter()
                .enumerate()
                .map(|(i, (at, f, c))| inv(i as u64, f, at * MS, &[Phase::Cpu(c * MS)]))
                .collect::<Vec<_>>()
        });
    // Per function: a rank (or none, read as 0) and a hold up to 2 s.
    let functions = prop::collection::vec((prop::option::of(0u32..4), 0u64..2_000), 4);
    (
        invocations,
        functions.prop_map(|v| v.into_iter().map(|(r, h)| (r, h * MS)).collect()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the ranks and holds: no invocation starts before one that
    /// arrived at least the wait limit earlier and still waits (so none
    /// waits for ever while others come), and every one finishes.
    #[test]
    fn no_invocation_is_overtaken_by_one_arriving_a_wait_limit_later(
        (invs, functions) in ranked_workload(),
        cores in 1usize..4,
        limit_ms in 10u64..300,
    ) {
        let limit = limit_ms * MS;
        let mut cfg = Config::new(cores);
        cfg.discipline = Discipline::AlpsKernel;
        cfg.alps_wait_limit = Some(limit);
        let mut policy = ByFunction(|f, cpus| {
            let (rank, hold) = functions[f as usize];
            Attrs { rank, slice: (hold > 0).then_some(hold), ..Attrs::normal(cpus) }
        });
        let n = invs.len();
        let out = simulate(&cfg, &mut policy, invs);
        prop_assert_eq!(out.len(), n);
        for a in &out {
            for b in &out {
                prop_assert!(
                    b.arrival < a.arrival + limit || b.first_run >= a.first_run,
                    "{} (arrived {} ms) started at {} ms, before {} (arrived {} ms, started {} ms)",
                    b.id, ms(b.arrival), ms(b.first_run), a.id, ms(a.arrival), ms(a.first_run)
                );
            }
        }
    }
}
