//! The Azure Functions 2019 reader against its fixture: three timed functions (two
//! in app b1 sharing its memory row), one invoked function without durations, one
//! function with durations but no invocations.
//!
//! | function | app | invocations (minute: count) | percentiles (ms) |
//! |---|---|---|---|
//! | f1a10000 | b1 | 1: 3, 2: 1, 1440: 2 | 10 .. 100 |
//! | f2a10000 | b1 | 2: 4 | 200 .. 600 (empty `Minimum`) |
//! | f3a20000 | b2 | 3: 1, 10: 5 | 0.1 .. 0.9 (empty `Maximum`) |
//! | f4a20000 | b2 | 1: 2 | none: skipped |
//! | f5a10000 | b1 | none | 5 |
//!
//! Memory: app b1 301 MB over f1, f2 → 151 each (f5 is not invoked all day);
//! app b2 100 MB over f3 → 100 (f4 has no durations).

use crate::common::{
    assert_parse_error, assert_sorted_with_dense_ids, cpu_of, fixture, names, per_minute,
};
use faasched_model::{MS, SEC};
use faasched_workload::Error;
use faasched_workload::traces::azure2019::{Options, first_day, header_minutes, read};
use faasched_workload::traces::{Arrivals, DEFAULT_MEMORY_MB, Trace};
use std::collections::BTreeMap;
use std::fs;
use std::ops::RangeInclusive;
use std::path::Path;

const INVOCATIONS: &str = "invocations_per_function_md.anon.d01.csv";
const DURATIONS: &str = "function_durations_percentiles.anon.d01.csv";
const MEMORY: &str = "app_memory_percentiles.anon.d01.csv";

fn options() -> Options {
    Options::new(fixture("azure2019"), 1)
}

fn counts(expected: &[(&str, u64, usize)]) -> BTreeMap<(String, u64), usize> {
    expected
        .iter()
        .map(|&(f, m, k)| ((f.to_string(), m), k))
        .collect()
}

#[test]
fn a_whole_day() {
    let trace = read(&options()).unwrap();
    let invs = &trace.invocations;
    assert_eq!(invs.len(), 16);
    assert_eq!(trace.skipped, 1, "f4 has no durations");
    assert_sorted_with_dense_ids(invs);
    let table: Vec<_> = trace.functions.iter().map(|f| f.name.to_string()).collect();
    assert_eq!(table, ["f1a10000", "f2a10000", "f3a20000"]);
    assert_eq!(
        per_minute(invs),
        counts(&[
            ("f1a10000", 1, 3),
            ("f1a10000", 2, 1),
            ("f1a10000", 1440, 2),
            ("f2a10000", 2, 4),
            ("f3a20000", 3, 1),
            ("f3a20000", 10, 5),
        ])
    );
    for inv in invs {
        let (memory, low, high) = match &*inv.function.name {
            "f1a10000" => (151, 10 * MS, 100 * MS),
            "f2a10000" => (151, 200 * MS, 600 * MS),
            _ => (100, MS, MS),
        };
        assert_eq!(inv.memory_mb, memory, "{inv:?}");
        assert!((low..=high).contains(&cpu_of(inv)), "{inv:?}");
        assert_eq!(inv.deadline, None);
    }
    // Draws spread over the percentile range rather than sticking to one point.
    let f1: Vec<_> = invs
        .iter()
        .filter(|i| &*i.function.name == "f1a10000")
        .map(cpu_of)
        .collect();
    assert!(f1.iter().any(|&c| c != f1[0]));
}

#[test]
fn a_window_starts_at_zero() {
    let opts = Options {
        minutes: Some(2..=3),
        ..options()
    };
    let trace = read(&opts).unwrap();
    assert_eq!(trace.skipped, 0, "f4 is not invoked in minutes 2..=3");
    assert_eq!(
        per_minute(&trace.invocations),
        counts(&[("f1a10000", 1, 1), ("f2a10000", 1, 4), ("f3a20000", 2, 1)])
    );
    assert_eq!(names(&trace.invocations).len(), 3);
    let last = read(&Options {
        minutes: Some(1440..=1440),
        ..options()
    })
    .unwrap();
    assert_eq!(per_minute(&last.invocations), counts(&[("f1a10000", 1, 2)]));
}

#[test]
fn equidistant_arrivals_split_the_minute_evenly() {
    let opts = Options {
        arrivals: Arrivals::Equidistant,
        ..options()
    };
    let trace = read(&opts).unwrap();
    let f2: Vec<u64> = trace
        .invocations
        .iter()
        .filter(|i| &*i.function.name == "f2a10000")
        .map(|i| i.arrival)
        .collect();
    // Minute 2's four, 15 s apart, shifted by the function's phase.
    assert_eq!(f2.len(), 4);
    assert!((60 * SEC..75 * SEC).contains(&f2[0]), "{f2:?}");
    assert!(f2.windows(2).all(|w| w[1] - w[0] == 15 * SEC), "{f2:?}");
    // f1's minutes 1 and 1440 (k = 3 and 2) share its phase φ: both first
    // arrivals are φ × 60 s / k after their minute's start.
    let f1: Vec<u64> = trace
        .invocations
        .iter()
        .filter(|i| &*i.function.name == "f1a10000")
        .map(|i| i.arrival)
        .collect();
    let phase_of = |first: u64, k: u64| (first % (60 * SEC)) * k;
    let (a, b) = (phase_of(f1[0], 3), phase_of(f1[4], 2));
    assert!(a.abs_diff(b) < 3, "{f1:?}");
}

#[test]
fn no_placement_puts_the_first_arrival_at_the_minute_start() {
    // Six (function, minute) cells: a placement that starts each at its
    // minute puts 6 of the 16 arrivals on a minute boundary.
    for arrivals in [Arrivals::Uniform, Arrivals::Equidistant, Arrivals::Poisson] {
        for seed in 0..10 {
            let trace = read(&Options {
                arrivals,
                seed,
                ..options()
            })
            .unwrap();
            let on_boundary = trace
                .invocations
                .iter()
                .filter(|i| i.arrival % (60 * SEC) == 0)
                .count();
            assert_eq!(on_boundary, 0, "{arrivals:?}, seed {seed}");
        }
    }
}

#[test]
fn every_arrival_mode_stays_in_its_minute() {
    for arrivals in [Arrivals::Uniform, Arrivals::Equidistant, Arrivals::Poisson] {
        let trace = read(&Options {
            arrivals,
            ..options()
        })
        .unwrap();
        assert_eq!(
            per_minute(&trace.invocations),
            per_minute(&read(&options()).unwrap().invocations),
            "{arrivals:?}"
        );
    }
}

#[test]
fn sampling_keeps_whole_functions() {
    let whole = read(&options()).unwrap();
    let mut seen = BTreeMap::new();
    for seed in 0..20 {
        let trace = read(&Options {
            functions: Some(1),
            seed,
            ..options()
        })
        .unwrap();
        let picked = names(&trace.invocations);
        assert_eq!(picked.len(), 1);
        assert_eq!(trace.functions.len(), 1);
        let expected = whole
            .invocations
            .iter()
            .filter(|i| *i.function.name == *picked[0])
            .count();
        assert_eq!(trace.invocations.len(), expected);
        *seen.entry(picked[0].clone()).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), 3, "every function gets picked by some seed");
    let all = read(&Options {
        functions: Some(10),
        ..options()
    })
    .unwrap();
    assert_eq!(all.invocations, whole.invocations);
    // f4 cannot be timed and f5 is not invoked: three to sample from.
    assert_eq!((all.candidates, whole.candidates), (3, 3));
}

#[test]
fn same_seed_same_trace_other_seed_other_arrivals() {
    let a = read(&options()).unwrap();
    let b = read(&options()).unwrap();
    assert_eq!(a.invocations, b.invocations);
    let c = read(&Options {
        seed: 1,
        ..options()
    })
    .unwrap();
    let arrivals = |t: &Trace| t.invocations.iter().map(|i| i.arrival).collect::<Vec<_>>();
    assert_ne!(arrivals(&a), arrivals(&c));
}

/// The fixture copied as day `day` into a temporary directory, each file passed
/// through `edit(file name, content)`; `None` drops the file.
fn edited(day: u32, edit: impl Fn(&str, String) -> Option<String>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in [INVOCATIONS, DURATIONS, MEMORY] {
        let content = fs::read_to_string(fixture("azure2019").join(name)).unwrap();
        if let Some(content) = edit(name, content) {
            let renamed = name.replace("d01", &format!("d{day:02}"));
            fs::write(dir.path().join(renamed), content).unwrap();
        }
    }
    dir
}

#[test]
fn days_without_a_memory_file_get_the_default() {
    let dir = edited(13, |name, content| (name != MEMORY).then_some(content));
    let trace = read(&Options::new(dir.path(), 13)).unwrap();
    assert_eq!(trace.invocations.len(), 16);
    assert!(
        trace
            .invocations
            .iter()
            .all(|i| i.memory_mb == DEFAULT_MEMORY_MB)
    );
}

/// Replaces the `n`th (0-based) line of `content` by `f(line)`.
fn edit_line(content: &str, n: usize, f: impl Fn(&str) -> String) -> String {
    content
        .lines()
        .enumerate()
        .map(|(i, l)| if i == n { f(l) } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn read_edited(file: &str, edit: impl Fn(&str) -> String) -> Error {
    let dir = edited(1, |name, content| {
        Some(if name == file {
            edit(&content)
        } else {
            content
        })
    });
    read(&Options::new(dir.path(), 1)).unwrap_err()
}

/// The fixture with each file passed through `edit(file name, content)`, read.
fn read_all_edited(edit: impl Fn(&str, String) -> String) -> Trace {
    let dir = edited(1, |name, content| Some(edit(name, content)));
    read(&Options::new(dir.path(), 1)).unwrap()
}

#[test]
fn repeated_keys_count_once_and_decreasing_percentiles_cannot_time() {
    let plain = read(&options()).unwrap();
    assert_eq!(plain.duplicates, 0);
    // Each file's line 2 again at its end, with other numbers (a percentile
    // curve that still rises): ignored, counted.
    let repeated = read_all_edited(|_, c| {
        let line = c.lines().nth(1).unwrap();
        let line = line
            .replace(",10.0,12.0,", ",11.0,12.0,")
            .replace(",3,1,", ",4,2,");
        let line = line.replace(",301.0,", ",401.0,");
        format!("{}\n{line}\n", c.trim_end())
    });
    assert_eq!((repeated.duplicates, repeated.conflicts), (3, 3));
    assert_eq!(repeated.invocations, plain.invocations);

    // The same lines again unchanged: repeats, no conflict. The memory file
    // as invitro writes it, one row per function with the app's values.
    let same = read_all_edited(|name, c| match name {
        MEMORY => {
            let mut lines = c.lines();
            let header = lines.next().unwrap();
            let header = header.replacen("HashApp,", "HashApp,HashFunction,", 1);
            let mut out = format!("{header}\n");
            for (line, functions) in lines.zip([["f1", "f2", "f5"].as_slice(), &["f3", "f4"]]) {
                let (owner, rest) = line.split_once(',').unwrap();
                let (app, rest) = rest.split_once(',').unwrap();
                for f in functions {
                    out.push_str(&format!("{owner},{app},{f},{rest}\n"));
                }
            }
            out
        }
        _ => {
            let line = c.lines().nth(1).unwrap();
            format!("{}\n{line}\n", c.trim_end())
        }
    });
    assert_eq!((same.duplicates, same.conflicts), (5, 0));
    assert_eq!(same.invocations, plain.invocations);

    // Rows that differ only outside the window read agree inside it.
    let outside = |minutes| {
        let dir = edited(1, |name, c| {
            Some(match name {
                INVOCATIONS => {
                    // f1 again, its minute 1440 count 2 made 9.
                    let line = c.lines().nth(1).unwrap();
                    let line = format!("{},9", line.rsplit_once(',').unwrap().0);
                    format!("{}\n{line}\n", c.trim_end())
                }
                _ => c,
            })
        });
        let trace = read(&Options {
            minutes,
            ..Options::new(dir.path(), 1)
        })
        .unwrap();
        (trace.duplicates, trace.conflicts)
    };
    assert_eq!(outside(Some(1..=1439)), (1, 0));
    assert_eq!(outside(None), (1, 1));

    // f2's 75th percentile below its median: f2 is skipped like f4.
    let decreasing = read_all_edited(|name, c| match name {
        DURATIONS => edit_line(&c, 2, |l| l.replace(",350.0,", ",299.0,")),
        _ => c,
    });
    assert_eq!(decreasing.skipped, 2);
    assert!(
        names(&decreasing.invocations)
            .iter()
            .all(|n| n != "f2a10000")
    );
}

#[test]
fn bad_cells_are_reported_with_file_line_and_field() {
    // Line 3 (f2), percentile_Average_50 is the 11th column.
    let err = read_edited(DURATIONS, |c| {
        edit_line(c, 2, |l| l.replace(",300.0,", ",fast,"))
    });
    assert_parse_error(&err, DURATIONS, 3, "percentile_Average_50");

    let err = read_edited(DURATIONS, |c| {
        edit_line(c, 2, |l| l.replace(",300.0,", ",NaN,"))
    });
    assert_parse_error(&err, DURATIONS, 3, "percentile_Average_50");

    // Line 4 (f3), minute 3 holds its one invocation.
    let err = read_edited(INVOCATIONS, |c| {
        edit_line(c, 3, |l| {
            let mut cells: Vec<&str> = l.split(',').collect();
            cells[6] = "-1";
            cells.join(",")
        })
    });
    assert_parse_error(&err, INVOCATIONS, 4, "3");

    // A short row: the first missing column is named.
    let err = read_edited(INVOCATIONS, |c| {
        edit_line(c, 1, |l| l.rsplit_once(',').unwrap().0.to_string())
    });
    assert_parse_error(&err, INVOCATIONS, 2, "1440");

    let err = read_edited(MEMORY, |c| {
        edit_line(c, 2, |l| l.replace(",100.0,", ",-100,"))
    });
    assert_parse_error(&err, MEMORY, 3, "AverageAllocatedMb");

    let err = read_edited(DURATIONS, |c| c.replace("percentile_Average_99", "p99"));
    assert_parse_error(&err, DURATIONS, 1, "percentile_Average_99");
    // A column named twice: two values for one thing.
    let err = read_edited(INVOCATIONS, |c| c.replacen(",1440", ",1439", 1));
    assert_parse_error(&err, INVOCATIONS, 1, "1439");

    let err = read_edited(INVOCATIONS, |_| String::new());
    assert_parse_error(&err, INVOCATIONS, 1, "header");
}

#[test]
fn bad_options_are_refused() {
    for opts in [
        Options::new(fixture("azure2019"), 0),
        Options::new(fixture("azure2019"), 15),
        Options {
            minutes: Some(0..=3),
            ..options()
        },
        Options {
            minutes: Some(RangeInclusive::new(5, 4)),
            ..options()
        },
        Options {
            minutes: Some(1..=1441),
            ..options()
        },
        Options {
            max_invocations: 15,
            ..options()
        },
    ] {
        let err = read(&opts).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{opts:?}: {err}");
    }
    // With no window given, the invocations file's header says it: the
    // first file opened.
    let missing = read(&Options::new(Path::new("/nonexistent"), 1)).unwrap_err();
    assert!(matches!(missing, Error::Io { .. }));
    assert!(missing.to_string().contains(INVOCATIONS), "{missing}");
    let missing = read(&Options {
        minutes: Some(1..=2),
        ..Options::new(Path::new("/nonexistent"), 1)
    })
    .unwrap_err();
    assert!(missing.to_string().contains(DURATIONS), "{missing}");
}

#[test]
fn a_header_with_part_of_the_day_names_its_minutes() {
    // The fixture's minutes 2..=10 only, as a sample of a few hours is cut.
    let partial = |minutes| {
        read(&Options {
            minutes,
            ..Options::new(fixture("azure2019-partial"), 1)
        })
    };
    for (minutes, missing) in [(Some(1..=3), "1"), (Some(5..=11), "11")] {
        let err = partial(minutes.clone()).unwrap_err();
        assert_parse_error(&err, INVOCATIONS, 1, missing);
        assert!(
            err.to_string()
                .ends_with("the header has minutes 2..10 only: pass --minutes within them"),
            "{minutes:?}: {err}"
        );
    }
    // No window: every minute the header has.
    let within = partial(Some(2..=10)).unwrap();
    assert_eq!(partial(None).unwrap().invocations, within.invocations);
    let whole = read(&Options {
        minutes: Some(2..=10),
        ..options()
    })
    .unwrap();
    assert_eq!(within.invocations, whole.invocations);

    // Gaps are named as runs; a lone minute as itself.
    let err = read_edited(INVOCATIONS, |c| {
        c.replacen(",5,", ",five,", 1)
            .replacen(",100,", ",hundred,", 1)
    });
    assert!(
        err.to_string().ends_with(
            "field `5`: the header has minutes 1..4, 6..99, 101..1440 only: \
             pass --minutes within them"
        ),
        "{err}"
    );
}

#[test]
fn invitros_layout_reads_as_the_datasets() {
    // `minute_1`..`minute_1440` and no `Trigger` column: the same trace.
    let invitro = |minutes| Options {
        minutes,
        ..Options::new(fixture("azure2019-invitro"), 1)
    };
    assert_eq!(
        read(&invitro(None)).unwrap().invocations,
        read(&options()).unwrap().invocations
    );
    let window = Some(2..=3);
    assert_eq!(
        read(&invitro(window.clone())).unwrap().invocations,
        read(&Options {
            minutes: window,
            ..options()
        })
        .unwrap()
        .invocations
    );
}

#[test]
fn a_header_without_minutes_says_what_it_has() {
    let err = read_edited(INVOCATIONS, |c| {
        let (header, rest) = c.split_once('\n').unwrap();
        let header: Vec<String> = header
            .split(',')
            .map(|n| match n.parse::<u32>() {
                Ok(m) => format!("t{m}"),
                Err(_) => n.to_string(),
            })
            .collect();
        format!("{}\n{rest}", header.join(","))
    });
    assert_parse_error(&err, INVOCATIONS, 1, "header");
    assert!(
        err.to_string().ends_with(
            "no minute columns: expected `1`..`1440` (the dataset) or \
             `minute_1`..`minute_1440` (invitro), found \
             `HashOwner,HashApp,HashFunction,Trigger,t1,t2,t3,t4,...`"
        ),
        "{err}"
    );
    // Two namings in one header: which column is which minute is unclear.
    let err = read_edited(INVOCATIONS, |c| c.replacen(",7,", ",minute_7,", 1));
    assert_parse_error(&err, INVOCATIONS, 1, "minute_7");
    assert!(
        err.to_string().ends_with(
            "a minute column named like `minute_1`, while earlier ones are named like `1`: \
             a file names its minutes one way"
        ),
        "{err}"
    );
}

/// The minutes a header holds: a whole day, a sample's few, invitro's
/// `minute_N` names alike.
#[test]
fn the_header_says_which_minutes_the_file_holds() {
    assert_eq!(header_minutes(&fixture("azure2019"), 1).unwrap(), 1..=1440);
    assert_eq!(
        header_minutes(&fixture("azure2019-partial"), 1).unwrap(),
        2..=10
    );
    assert_eq!(
        header_minutes(&fixture("azure2019-invitro"), 1).unwrap(),
        1..=1440
    );
    let err = header_minutes(&fixture("azure2019"), 2)
        .unwrap_err()
        .to_string();
    assert!(err.contains("d02.csv"), "{err}");
    assert_eq!(first_day(&fixture("azure2019")).unwrap(), 1);
    let err = first_day(&fixture("azure2021")).unwrap_err().to_string();
    assert!(
        err.contains("azure2021") && err.contains("no invocations_per_function_md.anon.dNN.csv"),
        "{err}"
    );
    assert_eq!(options().files()[0], fixture("azure2019").join(INVOCATIONS));
}
