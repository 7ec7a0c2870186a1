//! Offered load and rescaling to a target load.

use crate::common::cpu_invocation;
use faasched_model::{Functions, Invocation, MS, Phase, Phases, SEC};
use faasched_workload::Error;
use faasched_workload::scale::{offered_load, rescale_to_load};
use proptest::prelude::*;

/// Invocations of one function at `arrivals` (ns), each needing `cpu` ns.
fn workload(arrivals: &[u64], cpu: u64) -> Vec<Invocation> {
    let f = Functions::new().intern("f");
    (0..)
        .zip(arrivals)
        .map(|(id, &at)| cpu_invocation(id, &f, at, cpu))
        .collect()
}

#[test]
fn offered_load_is_demand_over_core_time() {
    // 3 s of CPU over a 2 s span on 2 cores.
    let invs = workload(&[SEC, 2 * SEC, 3 * SEC], SEC);
    assert_eq!(offered_load(&invs, 2), 0.75);
    // I/O is not demand.
    let mut with_io = invs.clone();
    with_io[0].phases.push(Phase::Io(10 * SEC));
    assert_eq!(offered_load(&with_io, 2), 0.75);
}

#[test]
fn offered_load_edge_cases() {
    assert_eq!(offered_load(&[], 4), 0.0);
    assert_eq!(offered_load(&workload(&[5], MS), 4), f64::INFINITY);
    assert_eq!(offered_load(&workload(&[5, 9], MS), 0), f64::INFINITY);
    let mut io_only = workload(&[5, 9], MS);
    for inv in &mut io_only {
        inv.phases = Phases::from_buf([Phase::Io(MS)]);
    }
    assert_eq!(offered_load(&io_only, 4), 0.0);
    // Not sorted: the span is still latest − earliest.
    assert_eq!(offered_load(&workload(&[2 * SEC, 0, SEC], SEC), 1), 1.5);
}

#[test]
fn rescaling_hits_the_target() {
    let mut invs = workload(&[10 * SEC, 11 * SEC, 13 * SEC, 20 * SEC], 800 * MS);
    // 3.2 s over 10 s on 4 cores = 0.08; to 0.5 the gaps shrink by 0.16.
    let factor = rescale_to_load(&mut invs, 4, 0.5).unwrap();
    assert!((factor - 0.16).abs() < 1e-12);
    let arrivals: Vec<u64> = invs.iter().map(|i| i.arrival).collect();
    assert_eq!(arrivals, [10 * SEC, 10_160 * MS, 10_480 * MS, 11_600 * MS]);
    assert!((offered_load(&invs, 4) - 0.5).abs() <= 0.5 * 1e-9);
}

#[test]
fn rescaling_rejects_what_it_cannot_do() {
    let invs = workload(&[0, SEC, 2 * SEC], MS);
    let cases: Vec<(Vec<Invocation>, usize, f64)> = vec![
        (invs.clone(), 4, 0.0),
        (invs.clone(), 4, -0.5),
        (invs.clone(), 4, f64::NAN),
        (invs.clone(), 4, f64::INFINITY),
        (invs.clone(), 0, 0.5),
        (workload(&[SEC], MS), 4, 0.5),
        (workload(&[SEC, SEC], MS), 4, 0.5),
        // New span under 1 ns.
        (invs.clone(), 1, 1e12),
        // New span beyond u64.
        (workload(&[0, SEC], SEC), 1, 1e-12),
    ];
    for (mut invs, cores, target) in cases {
        let before = invs.clone();
        let err = rescale_to_load(&mut invs, cores, target).unwrap_err();
        assert!(
            matches!(err, Error::Invalid { .. }),
            "{cores} {target}: {err}"
        );
        assert_eq!(invs, before, "a failed rescale leaves the workload alone");
    }
    let mut io_only = workload(&[0, SEC], MS);
    for inv in &mut io_only {
        inv.phases = Phases::from_buf([Phase::Io(MS)]);
    }
    assert!(rescale_to_load(&mut io_only, 1, 0.5).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn rescaling_hits_any_target_and_keeps_order(
        mut gaps in prop::collection::vec(0u64..100 * SEC, 2..60),
        cpus in prop::collection::vec(MS..10 * SEC, 60),
        start in 0u64..1_000 * SEC,
        cores in 1usize..64,
        target in 0.01f64..4.0,
    ) {
        gaps[1] = gaps[1].max(1);
        let f = Functions::new().intern("f");
        let mut at = start;
        let mut invs: Vec<Invocation> = (0..)
            .zip(gaps.iter().zip(&cpus))
            .map(|(id, (&gap, &cpu))| {
                at += gap;
                cpu_invocation(id, &f, at, cpu)
            })
            .collect();
        let before = invs.clone();
        let span = invs.last().unwrap().arrival - invs[0].arrival;
        let factor = rescale_to_load(&mut invs, cores, target).unwrap();

        // Same invocations, same first arrival, sorted, gaps scaled.
        prop_assert_eq!(invs[0].arrival, before[0].arrival);
        prop_assert!(invs.windows(2).all(|w| w[0].arrival <= w[1].arrival));
        for (new, old) in invs.iter().zip(&before) {
            prop_assert_eq!((new.id, &new.phases), (old.id, &old.phases));
            let new_offset = (new.arrival - invs[0].arrival) as f64;
            let old_offset = (old.arrival - before[0].arrival) as f64;
            prop_assert!((new_offset - old_offset * factor).abs() <= 1.0);
        }
        let new_span = invs.last().unwrap().arrival - invs[0].arrival;
        prop_assert!((factor - new_span as f64 / span as f64).abs() <= 1e-12 * factor);

        // Exact up to the whole-ns new span; within 1e-9 once the span is ≥ 0.5 s.
        let error = (offered_load(&invs, cores) - target).abs() / target;
        prop_assert!(error <= 0.5 / new_span as f64 + 1e-12, "error {} span {}", error, new_span);
        if new_span >= SEC / 2 {
            prop_assert!(error <= 1e-9);
        }
    }
}
