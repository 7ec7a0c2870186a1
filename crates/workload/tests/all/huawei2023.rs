//! The Huawei 2023 reader against its fixture: day 0 in 2-digit files, day 1 in
//! 3-digit files, three functions.
//!
//! | time (s) | requests 0 / 1 / 2 | delay (ms) 0 / 1 / 2 |
//! |---|---|---|
//! | 0 | 3.0 / – / 1 | 12.5 / – / – |
//! | 60 | – / 2 / – | – / 30.0 / – |
//! | 120 | 1 / 0 / 4.0 | – / 0.5 / – |
//! | 86400 | 2 / – / – | – / – / – |
//! | 86460 | – / 1 / – | – / – / – |
//! | 86520 | – / – / – | 20.0 / – / – |
//!
//! Over both days, function 0's mean delay is (12.5 + 20) / 2 = 16.25 ms and
//! function 1's (30 + 0.5) / 2 = 15.25 ms; function 2 has no delay: skipped.

use crate::common::{assert_parse_error, assert_sorted_with_dense_ids, copy_dir, cpu_of, fixture};
use faasched_model::{Nanos, SEC, US};
use faasched_workload::Error;
use faasched_workload::traces::huawei2023::{Options, read};
use faasched_workload::traces::{Arrivals, DEFAULT_MEMORY_MB, Trace};
use std::collections::BTreeMap;
use std::fs;
use std::ops::RangeInclusive;

fn options(days: impl IntoIterator<Item = u32>) -> Options {
    Options::new(fixture("huawei2023"), days)
}

/// Invocations per (function, window minute, CPU demand in µs).
fn shape(trace: &Trace) -> BTreeMap<(String, u64, Nanos), usize> {
    let mut shape = BTreeMap::new();
    for inv in &trace.invocations {
        let key = (
            inv.function.name.to_string(),
            inv.arrival / (60 * SEC) + 1,
            cpu_of(inv) / US,
        );
        *shape.entry(key).or_default() += 1;
    }
    shape
}

fn expect(rows: &[(&str, u64, Nanos, usize)]) -> BTreeMap<(String, u64, Nanos), usize> {
    rows.iter()
        .map(|&(f, minute, cpu_us, k)| ((f.to_string(), minute, cpu_us), k))
        .collect()
}

#[test]
fn two_days_with_two_and_three_digit_files() {
    let trace = read(&options([0, 1])).unwrap();
    assert_sorted_with_dense_ids(&trace.invocations);
    assert_eq!(trace.skipped, 1, "function 2 has no delay");
    let table: Vec<_> = trace.functions.iter().map(|f| f.name.to_string()).collect();
    assert_eq!(table, ["0", "1"]);
    assert_eq!(
        shape(&trace),
        expect(&[
            ("0", 1, 12_500, 3),
            ("0", 3, 16_250, 1),
            ("0", 1441, 16_250, 2),
            ("1", 2, 30_000, 2),
            ("1", 1442, 15_250, 1),
        ])
    );
    assert!(
        trace
            .invocations
            .iter()
            .all(|i| i.memory_mb == DEFAULT_MEMORY_MB && i.deadline.is_none())
    );
    // Order and repeats of the days do not matter.
    assert_eq!(
        read(&options([1, 0, 0])).unwrap().invocations,
        trace.invocations
    );
}

#[test]
fn a_minute_window_is_measured_from_its_start() {
    let trace = read(&Options {
        minutes: Some(2..=3),
        memory_mb: 300,
        ..options([0, 1])
    })
    .unwrap();
    // Function 0's only delays (minutes 1 and 1443) are outside: it is skipped too.
    assert_eq!(trace.skipped, 2);
    assert_eq!(shape(&trace), expect(&[("1", 1, 30_000, 2)]));
    assert!(trace.invocations.iter().all(|i| i.memory_mb == 300));
}

#[test]
fn one_three_digit_day_starts_at_its_first_row() {
    let trace = read(&options([1])).unwrap();
    assert_eq!(trace.skipped, 1, "function 1 has no delay on day 1");
    assert_eq!(shape(&trace), expect(&[("0", 1, 20_000, 2)]));
}

#[test]
fn equidistant_arrivals_and_determinism() {
    let trace = read(&Options {
        arrivals: Arrivals::Equidistant,
        ..options([0])
    })
    .unwrap();
    let f0: Vec<u64> = trace
        .invocations
        .iter()
        .filter(|i| &*i.function.name == "0")
        .map(|i| i.arrival)
        .collect();
    // Minute 1's three 20 s apart and minute 3's one, shifted by the same
    // phase φ: by φ × 60 s / 3, then by φ × 60 s (up to rounding down).
    assert_eq!(f0.len(), 4);
    assert!((1..20 * SEC).contains(&f0[0]), "{f0:?}");
    assert_eq!([f0[1] - f0[0], f0[2] - f0[1]], [20 * SEC, 20 * SEC]);
    assert!((f0[3] - 120 * SEC).abs_diff(3 * f0[0]) < 3, "{f0:?}");

    for arrivals in [Arrivals::Uniform, Arrivals::Equidistant, Arrivals::Poisson] {
        let opts = |seed| Options {
            arrivals,
            seed,
            ..options([0, 1])
        };
        let a = read(&opts(7)).unwrap();
        assert_eq!(a.invocations, read(&opts(7)).unwrap().invocations);
        let arrivals_of = |t: &Trace| t.invocations.iter().map(|i| i.arrival).collect::<Vec<_>>();
        assert_ne!(arrivals_of(&a), arrivals_of(&read(&opts(8)).unwrap()));
        assert_eq!(shape(&a), shape(&read(&options([0, 1])).unwrap()));
    }
}

#[test]
fn sampling_picks_among_timed_functions() {
    let mut picked = BTreeMap::new();
    for seed in 0..20 {
        let trace = read(&Options {
            functions: Some(1),
            seed,
            ..options([0, 1])
        })
        .unwrap();
        assert_eq!(trace.functions.len(), 1);
        assert_eq!(trace.candidates, 2, "function 2 has no delay");
        let name = trace.functions.iter().next().unwrap().name.to_string();
        let expected = if name == "0" { 6 } else { 3 };
        assert_eq!(trace.invocations.len(), expected, "{name}");
        *picked.entry(name).or_insert(0) += 1;
    }
    assert_eq!(
        picked.len(),
        2,
        "both timed functions get picked: {picked:?}"
    );
}

/// The fixture in a temporary directory, with `file` (relative) passed through
/// `edit`, or removed if `edit` gives `None`.
fn edited(file: &str, edit: impl Fn(String) -> Option<String>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("huawei2023"), dir.path());
    let path = dir.path().join(file);
    match edit(fs::read_to_string(&path).unwrap()) {
        Some(content) => fs::write(&path, content).unwrap(),
        None => fs::remove_file(&path).unwrap(),
    }
    dir
}

fn read_edited(file: &str, edit: impl Fn(String) -> Option<String>) -> Error {
    let dir = edited(file, edit);
    read(&Options::new(dir.path(), [0, 1])).unwrap_err()
}

#[test]
fn bad_cells_are_reported_with_file_line_and_field() {
    let requests0 = "requests_minute/day_00.csv";
    let delays0 = "function_delay_minute/day_00.csv";
    let requests1 = "requests_minute/day_001.csv";

    let err = read_edited(requests0, |c| Some(c.replace("0,60,,2,", "0,60,,-1,")));
    assert_parse_error(&err, "day_00.csv", 3, "1");
    let err = read_edited(requests0, |c| Some(c.replace("0,60,,2,", "0,60,,2.5,")));
    assert_parse_error(&err, "day_00.csv", 3, "1");
    let err = read_edited(delays0, |c| Some(c.replace("0,0,12.5,,", "0,0,NaN,,")));
    assert_parse_error(&err, "day_00.csv", 2, "0");
    let err = read_edited(delays0, |c| Some(c.replace("0,0,12.5,,", "0,0,12.5,")));
    assert_parse_error(&err, "day_00.csv", 2, "2");
    let err = read_edited(requests0, |c| Some(c.replace("0,120,", "0,zero,")));
    assert_parse_error(&err, "day_00.csv", 4, "time");
    // Time must go forward across days.
    let err = read_edited(requests1, |c| Some(c.replace("1,86400,", "1,60,")));
    assert_parse_error(&err, "day_001.csv", 2, "time");
    let err = read_edited(requests1, |c| Some(c.replace("day,time,", "day,minute,")));
    assert_parse_error(&err, "day_001.csv", 1, "header");
    // So must the delay files' (a repeated minute there had two delays).
    let err = read_edited(delays0, |c| Some(c.replace("0,120,,0.5,", "0,60,,0.5,")));
    assert_parse_error(&err, "day_00.csv", 4, "time");
    // A function named twice has two series, and neither can be chosen.
    let err = read_edited(requests0, |c| {
        Some(c.replace("day,time,0,1,2", "day,time,0,1,0"))
    });
    assert_parse_error(&err, "day_00.csv", 1, "0");
    let err = read_edited(delays0, |c| {
        Some(c.replace("day,time,0,1,2", "day,time,1,1,2"))
    });
    assert_parse_error(&err, "day_00.csv", 1, "1");

    let err = read_edited("function_delay_minute/day_001.csv", |_| None);
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert!(err.to_string().contains("day_001.csv"), "{err}");
}

#[test]
fn bad_options_are_refused() {
    for opts in [
        options([]),
        Options {
            minutes: Some(0..=2),
            ..options([0])
        },
        Options {
            minutes: Some(RangeInclusive::new(3, 2)),
            ..options([0])
        },
        Options {
            max_invocations: 8,
            ..options([0, 1])
        },
    ] {
        let err = read(&opts).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{opts:?}: {err}");
    }
    assert!(matches!(read(&options([2])).unwrap_err(), Error::Io { .. }));
}
