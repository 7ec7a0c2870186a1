//! The Azure Functions 2021 reader against its fixture: ten invocations, unsorted,
//! of four functions keyed by (app, func); two of them share a func hash in
//! different apps.
//!
//! | file order | app, func | start = end − duration (s) |
//! |---|---|---|
//! | 1 | d1, aaaaaaaa | 10.0 (2.5 s) |
//! | 2 | d3, cccccccc | 90.0 (10 s) |
//! | 3 | d1, bbbbbbbb | 10.1 (0.1 s) |
//! | 4 | d2, aaaaaaaa | 10.9996 (0.4 ms → 1 ms) |
//! | 5 | d1, aaaaaaaa | 14.0 (1 s) |
//! | 6 | d2, aaaaaaaa | 19.5 (0.5 s) |
//! | 7 | d1, aaaaaaaa | 60.0 (0 s → 1 ms) |
//! | 8 | d1, bbbbbbbb | 30.0 (0.25 s) |
//! | 9 | d1, bbbbbbbb | 100.0 (0.5 s) |
//! | 10 | d3, cccccccc | 125.0 (5 s) |

use crate::common::{assert_parse_error, assert_sorted_with_dense_ids, cpu_of, fixture};
use faasched_model::MS;
use faasched_workload::Error;
use faasched_workload::traces::azure2021::{Options, read};
use faasched_workload::traces::{DEFAULT_MEMORY_MB, Trace};
use std::collections::{BTreeMap, BTreeSet};

fn options() -> Options {
    Options::new(fixture("azure2021/trace.csv"))
}

/// Asserts the trace is `expected`: (arrival ms, function, CPU ms) per invocation.
/// Arrivals come from float seconds, so they may be off by a nanosecond.
fn assert_invocations(trace: &Trace, expected: &[(f64, &str, f64)]) {
    assert_eq!(trace.invocations.len(), expected.len());
    for (inv, &(at_ms, name, cpu_ms)) in trace.invocations.iter().zip(expected) {
        let at = (at_ms * MS as f64).round() as u64;
        assert!(
            inv.arrival.abs_diff(at) <= 1,
            "{inv:?} should arrive at {at_ms} ms"
        );
        assert_eq!(&*inv.function.name, name, "{inv:?}");
        assert_eq!(cpu_of(inv), (cpu_ms * MS as f64) as u64, "{inv:?}");
    }
}

#[test]
fn all_rows_from_the_earliest_start() {
    let trace = read(&options()).unwrap();
    assert_sorted_with_dense_ids(&trace.invocations);
    assert_eq!(trace.skipped, 0);
    let table: Vec<_> = trace.functions.iter().map(|f| f.name.to_string()).collect();
    assert_eq!(table, ["aaaaaaaa", "cccccccc", "bbbbbbbb", "aaaaaaaa-2"]);
    let (a, a2, b, c) = ("aaaaaaaa", "aaaaaaaa-2", "bbbbbbbb", "cccccccc");
    assert_invocations(
        &trace,
        &[
            (0.0, a, 2_500.0),
            (100.0, b, 100.0),
            (999.6, a2, 1.0),
            (4_000.0, a, 1_000.0),
            (9_500.0, a2, 500.0),
            (20_000.0, b, 250.0),
            (50_000.0, a, 1.0),
            (80_000.0, c, 10_000.0),
            (90_000.0, b, 500.0),
            (115_000.0, c, 5_000.0),
        ],
    );
    assert!(
        trace
            .invocations
            .iter()
            .all(|i| i.memory_mb == DEFAULT_MEMORY_MB)
    );
}

#[test]
fn a_window_keeps_starts_in_it_and_measures_from_its_start() {
    let trace = read(&Options {
        window: Some(10.5..60.0),
        memory_mb: 512,
        ..options()
    })
    .unwrap();
    // 60.0 is past the window's end. Names go to the functions in the window, in
    // file order: (d2, aaaaaaaa) comes first now.
    let (a, a2, b) = ("aaaaaaaa-2", "aaaaaaaa", "bbbbbbbb");
    assert_invocations(
        &trace,
        &[
            (499.6, a2, 1.0),
            (3_500.0, a, 1_000.0),
            (9_000.0, a2, 500.0),
            (19_500.0, b, 250.0),
        ],
    );
    let table: Vec<_> = trace.functions.iter().map(|f| f.name.to_string()).collect();
    assert_eq!(table, [a2, a, b], "only functions in the window");
    assert!(trace.invocations.iter().all(|i| i.memory_mb == 512));
}

/// Each function's invocations as (arrival, CPU) pairs, in arrival order.
fn groups(trace: &Trace) -> BTreeSet<Vec<(u64, u64)>> {
    let mut by_function: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
    for inv in &trace.invocations {
        by_function
            .entry(inv.function.id.0)
            .or_default()
            .push((inv.arrival, cpu_of(inv)));
    }
    by_function.into_values().collect()
}

#[test]
fn sampling_is_seeded_and_keeps_whole_functions() {
    // Names depend on which functions are kept, so compare by content: without a
    // window, arrivals are measured from the earliest start of all rows.
    let whole = groups(&read(&options()).unwrap());
    let pick = |seed| {
        read(&Options {
            functions: Some(2),
            seed,
            ..options()
        })
        .unwrap()
    };
    let mut choices = BTreeSet::new();
    for seed in 0..20 {
        let trace = pick(seed);
        assert_eq!(trace.invocations, pick(seed).invocations, "seed {seed}");
        assert_sorted_with_dense_ids(&trace.invocations);
        assert_eq!(trace.functions.len(), 2);
        let picked = groups(&trace);
        assert_eq!(picked.len(), 2);
        assert!(picked.is_subset(&whole), "seed {seed}: {picked:?}");
        choices.insert(picked.into_iter().collect::<Vec<_>>());
    }
    assert!(choices.len() > 1, "other seeds pick other functions");
    // The trace says how many it sampled from, so that asking for more
    // than there are can be told.
    let all = read(&options()).unwrap();
    assert_eq!(pick(0).candidates, all.functions.len());
    let more = read(&Options {
        functions: Some(all.functions.len() + 1),
        ..options()
    })
    .unwrap();
    assert_eq!(more.candidates, all.functions.len());
    assert_eq!(more.invocations, all.invocations);
}

#[test]
fn bad_cells_are_reported_with_file_line_and_field() {
    let cases: &[(&str, u64, &str)] = &[
        ("d1,f,12.5,soon\n", 2, "duration"),
        ("d1,f,NaN,1.0\n", 2, "end_timestamp"),
        ("d1,f,12.5,-1.0\n", 2, "duration"),
        ("d1,f,inf,1.0\n", 2, "end_timestamp"),
        ("d1,f,1e20,1.0\n", 2, "end_timestamp"),
        ("d1,f,12.5,1e10\n", 2, "duration"),
        ("d1,f,,1.0\n", 2, "end_timestamp"),
        ("d1,f,12.5\n", 2, "duration"),
        ("d1,f,12.5,1.0\nd1,f,3\n", 3, "duration"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace2021.csv");
    for &(rows, line, field) in cases {
        std::fs::write(&path, format!("app,func,end_timestamp,duration\n{rows}")).unwrap();
        let err = read(&Options::new(&path)).unwrap_err();
        assert_parse_error(&err, "trace2021.csv", line, field);
    }
    std::fs::write(&path, "app,function,end_timestamp,duration\n").unwrap();
    let err = read(&Options::new(&path)).unwrap_err();
    assert_parse_error(&err, "trace2021.csv", 1, "func");
}

#[test]
fn bad_options_are_refused() {
    for opts in [
        Options {
            window: Some(5.0..5.0),
            ..options()
        },
        Options {
            window: Some(f64::NAN..5.0),
            ..options()
        },
        Options {
            max_invocations: 9,
            ..options()
        },
    ] {
        let err = read(&opts).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{opts:?}: {err}");
    }
}
