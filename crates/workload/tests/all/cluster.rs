//! Cluster workloads: function tables against CH-RLU Table 1, the table and
//! workload CSVs and their errors, the Azure 2019 fixture as a table and a
//! replay, and the generators' determinism and rates.
//!
//! Rate checks use fixed seeds, so they cannot flake; their tolerances
//! (stated at each) are several standard deviations of a Poisson count, so a
//! change of seed would pass too.

use crate::common::{assert_parse_error, fixture};
use faasched_model::cluster::{Invocation, InvocationId};
use faasched_model::{FunctionId, MS, Nanos, SEC, TIME_LIMIT};
use faasched_workload::Error;
use faasched_workload::cluster::{
    AzureFunctions, AzureOptions, AzureParams, AzureTrace, BoostSpec, Boosted, Boosts, ClosedLoop,
    DEFAULT_COLD_START, FileInvocations, FunctionTable, OpenLoop, Ramp, RateProfile, Weights,
    fitted_rates_per_minute,
};
use faasched_workload::node::Length;
use faasched_workload::traces::Arrivals;
use proptest::prelude::*;
use rand::SeedableRng;
use rand_pcg::Pcg64;
use std::fs;
use std::path::PathBuf;

/// Asserts ids 0..n in order and arrivals that never decrease.
fn assert_stream(invs: &[Invocation]) {
    for (i, inv) in invs.iter().enumerate() {
        assert_eq!(inv.id, InvocationId(i as u64));
    }
    assert!(invs.windows(2).all(|w| w[0].arrival <= w[1].arrival));
}

/// Whether `got` is within `sds` Poisson standard deviations of `want`.
fn poisson_close(got: usize, want: f64, sds: f64) -> bool {
    (got as f64 - want).abs() <= sds * want.sqrt()
}

#[test]
fn functionbench_is_table_1_of_the_paper() {
    let table = FunctionTable::functionbench();
    // ch-rlu-hpdc22 Table 1, seconds.
    let paper = [
        ("web-serving", 0.179, 1.153),
        ("ml-inference-cnn", 2.211, 7.833),
        ("disk-bench-dd", 1.068, 2.944),
        ("matrix-multiply", 0.117, 1.067),
        ("sklearn-regression", 53.57, 54.45),
        ("aes-encryption", 0.587, 2.064),
        ("video-encoding", 10.28, 11.51),
        ("json-parsing", 0.414, 1.962),
    ];
    assert_eq!(table.len(), paper.len());
    for (i, ((name, warm, cold), (f, p))) in paper.iter().zip(table.iter()).enumerate() {
        assert_eq!(
            (&*f.name, f.id, p.function),
            (*name, FunctionId(i as u32), f.id)
        );
        assert_eq!(p.warm, (warm * 1000.0_f64).round() as Nanos * MS, "{name}");
        assert_eq!(p.cold, (cold * 1000.0_f64).round() as Nanos * MS, "{name}");
        assert!([256, 512].contains(&p.memory_mb), "{name}");
    }
    assert_eq!(table.find("video-encoding").unwrap().cold, 11_510 * MS);
    assert_eq!(DEFAULT_COLD_START, 1_353_500_000);
}

#[test]
fn a_table_csv_reads_and_writes_back() {
    let table = FunctionTable::read_csv(&fixture("cluster/table.csv")).unwrap();
    assert_eq!(table.len(), 2);
    let thumb = table.find("thumb").unwrap();
    assert_eq!(
        (thumb.memory_mb, thumb.warm, thumb.cold),
        (128, 25_500_000, 900 * MS)
    );
    assert_eq!(table.name(FunctionId(1)), Some("resize,big"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("again.csv");
    fs::write(&path, table.to_csv()).unwrap();
    let again = FunctionTable::read_csv(&path).unwrap();
    assert_eq!(again.profiles(), table.profiles());
    let bench = FunctionTable::functionbench();
    fs::write(&path, bench.to_csv()).unwrap();
    assert_eq!(
        FunctionTable::read_csv(&path).unwrap().profiles(),
        bench.profiles()
    );
}

/// Writes `text` as `name` in a fresh directory.
fn file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn bad_table_csvs_name_the_line_and_field() {
    let header = "name,memory_mb,warm_ms,cold_ms\n";
    let cases = [
        ("name,memory,warm_ms,cold_ms\na,1,1,1\n", 1, "header"),
        ("", 1, "header"),
        (
            &format!("{header}a,128,10,20\na,128,10,20\n") as &str,
            3,
            "name",
        ),
        (&format!("{header},128,10,20\n"), 2, "name"),
        (&format!("{header}a,0,10,20\n"), 2, "memory_mb"),
        (&format!("{header}a,-5,10,20\n"), 2, "memory_mb"),
        (&format!("{header}a,12.5,10,20\n"), 2, "memory_mb"),
        (&format!("{header}a,128,0,20\n"), 2, "warm_ms"),
        (&format!("{header}a,128,x,20\n"), 2, "warm_ms"),
        (&format!("{header}a,128,1e3,2000\n"), 2, "warm_ms"),
        (&format!("{header}a,128,10,5\n"), 2, "cold_ms"),
        (&format!("{header}a,128,10,1e99\n"), 2, "cold_ms"),
        (
            &format!("{header}a,128,10,99999999999999999\n"),
            2,
            "cold_ms",
        ),
        (&format!("{header}a,128,10\n"), 2, "cold_ms"),
        (&format!("{header}a,128,10,20,5\n"), 2, "record"),
    ];
    for (text, line, field) in cases {
        let (_dir, path) = file("t.csv", text);
        let err = FunctionTable::read_csv(&path).unwrap_err();
        assert_parse_error(&err, "t.csv", line, field);
    }
    let missing = FunctionTable::read_csv(&fixture("cluster/nope.csv")).unwrap_err();
    assert!(matches!(missing, Error::Io { .. }), "{missing:?}");
}

#[test]
fn a_workload_csv_becomes_invocations_of_the_table() {
    let table = FunctionTable::read_csv(&fixture("cluster/table.csv")).unwrap();
    let invs: Vec<Invocation> = FileInvocations::open(&fixture("cluster/invocations.csv"), &table)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let want = [
        (FunctionId(0), 0, 25_500_000),
        // CPU phases only: 1 s + 0.2 s, the I/O wait left out.
        (FunctionId(1), 1_000_000, 1_200 * MS),
        (FunctionId(0), 1_000_000, 20 * MS),
    ];
    assert_stream(&invs);
    let got: Vec<_> = invs
        .iter()
        .map(|i| (i.function, i.arrival, i.work))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn bad_workload_csvs_name_the_line_and_field() {
    let table = FunctionTable::functionbench();
    let header = "id,function,arrival_us,phases,memory_mb,deadline_us\n";
    let cases = [
        (
            format!("{header}0,web-serving,0,c10,128,\n1,nope,5,c10,128,\n"),
            3,
            "function",
        ),
        (format!("{header}0,web-serving,0,i10,128,\n"), 2, "phases"),
        (
            format!("{header}0,web-serving,9,c10,128,\n1,web-serving,5,c10,128,\n"),
            3,
            "arrival_us",
        ),
        ("id,function\n".to_string(), 1, "header"),
    ];
    for (text, line, field) in cases {
        let (_dir, path) = file("w.csv", &text);
        let err = FileInvocations::open(&path, &table)
            .and_then(|s| s.collect::<Result<Vec<_>, _>>())
            .unwrap_err();
        assert_parse_error(&err, "w.csv", line, field);
    }
    // Nothing after the first error.
    let (_dir, path) = file(
        "w.csv",
        &format!("{header}0,nope,0,c1,1,\n1,web-serving,1,c1,1,\n"),
    );
    let mut stream = FileInvocations::open(&path, &table).unwrap();
    assert!(stream.next().unwrap().is_err());
    assert!(stream.next().is_none());
}

fn fixture_trace(seed: u64, arrivals: Arrivals) -> AzureOptions {
    AzureOptions {
        seed,
        arrivals,
        ..AzureOptions::new(fixture("azure2019"), 1)
    }
}

#[test]
fn the_azure_fixture_gives_a_table_and_a_replay() {
    // See azure2019.rs: f1 6 invocations (10..100 ms), f2 4 (200..600 ms),
    // f3 6 (0.1..0.9 ms, so 1 ms), f4 none timed; memory 151, 151, 100.
    let trace = AzureTrace::read(&fixture_trace(0, Arrivals::Uniform)).unwrap();
    let table = trace.table();
    let names: Vec<_> = table
        .functions()
        .iter()
        .map(|f| f.name.to_string())
        .collect();
    assert_eq!(
        names,
        ["f1a10000", "f3a20000", "f2a10000"],
        "most invoked first"
    );
    assert_eq!(trace.counts(), [6, 6, 4]);
    assert_eq!((trace.rare(), trace.skipped()), (0, 1));
    assert_eq!(*trace.window(), 1..=1440);
    let p: Vec<_> = table
        .profiles()
        .iter()
        .map(|p| (p.memory_mb, p.warm))
        .collect();
    assert_eq!((p[0].0, p[1], p[2].0), (151, (100, MS), 151));
    assert!((10 * MS..=100 * MS).contains(&p[0].1), "{p:?}");
    assert!((200 * MS..=600 * MS).contains(&p[2].1), "{p:?}");
    for q in table.profiles() {
        assert_eq!(q.cold, q.warm + DEFAULT_COLD_START);
    }
    let rates = trace.rates();
    assert!((rates[2] - 4.0 / 86_400.0).abs() < 1e-12);

    let replay: Vec<Invocation> = trace.replay().unwrap().collect();
    assert_eq!(replay.len(), 16);
    assert_stream(&replay);
    for inv in &replay {
        assert_eq!(inv.work, table.profile(inv.function).unwrap().warm);
    }
    // f3's six: one in minute 3, five in minute 10.
    let f3: Vec<u64> = replay
        .iter()
        .filter(|i| i.function == FunctionId(1))
        .map(|i| i.arrival / (60 * SEC) + 1)
        .collect();
    assert_eq!(f3, [3, 10, 10, 10, 10, 10]);

    // The table does not follow the run's seed; the replay does.
    let other = AzureTrace::read(&fixture_trace(5, Arrivals::Poisson)).unwrap();
    assert_eq!(other.table().profiles(), table.profiles());
    let again: Vec<_> = AzureTrace::read(&fixture_trace(0, Arrivals::Uniform))
        .unwrap()
        .replay()
        .unwrap()
        .collect();
    assert_eq!(again, replay);
    let moved: Vec<_> = other.replay().unwrap().collect();
    assert_eq!(moved.len(), 16);
    assert_ne!(moved, replay);
}

#[test]
fn the_azure_table_keeps_the_most_invoked_twice_or_more() {
    let top = AzureTrace::read(&AzureOptions {
        top: Some(1),
        ..fixture_trace(0, Arrivals::Uniform)
    })
    .unwrap();
    assert_eq!(top.table().name(FunctionId(0)), Some("f1a10000"));
    assert_eq!(top.replay().unwrap().count(), 6);
    // Minutes 3..=9: f3 once only, nothing else.
    let once = AzureTrace::read(&AzureOptions {
        minutes: Some(3..=9),
        ..fixture_trace(0, Arrivals::Uniform)
    });
    assert!(
        matches!(once, Err(Error::Unusable(ref m)) if m.contains("twice")),
        "{once:?}"
    );
    let bad = AzureTrace::read(&AzureOptions {
        warm_quantile: 1.5,
        ..fixture_trace(0, Arrivals::Uniform)
    });
    assert!(matches!(bad, Err(Error::Invalid { .. })), "{bad:?}");
}

fn azure(seed: u64) -> AzureFunctions {
    AzureFunctions::new(&AzureParams {
        seed,
        ..AzureParams::new(8, 16, 0.7)
    })
    .unwrap()
}

#[test]
fn azure_functions_is_shaped_like_the_trace() {
    let w = azure(1);
    let s = w.summary();
    assert_eq!(s.functions, 1000);
    assert_eq!(w.table().len(), 1000);
    assert_eq!(w.table().name(FunctionId(7)), Some("f007"));
    // Scaled to 8 × 16 cores at 0.7.
    assert!((s.offered_cores - 89.6).abs() < 1e-6, "{s:?}");
    assert!((s.rate_per_s * s.mean_work_s - 89.6).abs() < 1e-6, "{s:?}");
    // The fit: 18.6% of functions at least once a minute (binomial sd 1.2
    // points over 1000), with ~99.6% of the invocations.
    assert!((s.fit_per_minute_functions - 0.186).abs() < 0.04, "{s:?}");
    assert!(s.fit_per_minute_share > 0.99, "{s:?}");
    // Mean IATs over more than six orders of magnitude, a heavy top 20%.
    assert!(s.mean_iat_s.1 / s.mean_iat_s.0 > 1e6, "{s:?}");
    assert!(s.heavy20_load_share > 0.95, "{s:?}");
    assert!(s.heavy20_over_median > 100.0, "{s:?}");
    // The least popular: once a day before scaling.
    let slowest = 86_400.0 / s.rate_scale;
    assert!((s.mean_iat_s.1 - slowest).abs() < 1e-6 * slowest, "{s:?}");
    assert!(s.top20_invocation_share > 0.9, "{s:?}");
    // Median of the log-normal: e^-0.38 = 0.68 s.
    assert!((0.4..1.2).contains(&s.median_warm_s), "{s:?}");
    for p in w.table().profiles() {
        assert!((MS..=60 * SEC).contains(&p.warm));
        assert_eq!(p.cold, p.warm + DEFAULT_COLD_START);
        assert!((1..=10_240).contains(&p.memory_mb));
    }
}

#[test]
fn azure_functions_is_deterministic_and_offers_its_rates() {
    let w = azure(3);
    let length = Length::Duration(120 * SEC);
    let a: Vec<Invocation> = w.invocations(length).unwrap().collect();
    let b: Vec<Invocation> = azure(3).invocations(length).unwrap().collect();
    assert_eq!(a, b);
    assert_ne!(
        azure(4)
            .invocations(length)
            .unwrap()
            .take(50)
            .collect::<Vec<_>>(),
        a[..50]
    );
    assert_stream(&a);
    assert!(a.iter().all(|i| i.arrival < 120 * SEC));
    // Total count within 5 sd of rate × 120 s, and so is the most invoked
    // function's.
    let s = w.summary();
    assert!(
        poisson_close(a.len(), s.rate_per_s * 120.0, 5.0),
        "{} vs {s:?}",
        a.len()
    );
    let top = Weights::new(w.rates()).unwrap().top(1)[0];
    let n = a.iter().filter(|i| i.function == top).count();
    assert!(
        poisson_close(n, w.rates()[top.0 as usize] * 120.0, 5.0),
        "{n}"
    );
    for inv in &a {
        assert_eq!(inv.work, w.table().profile(inv.function).unwrap().warm);
    }
    let counted: Vec<_> = w.invocations(Length::Count(1000)).unwrap().collect();
    assert_eq!(counted[..], a[..1000]);
}

#[test]
fn the_live_workload_is_copies_weighted_like_the_trace() {
    let copies = FunctionTable::functionbench().copies(10).unwrap();
    assert_eq!(copies.len(), 80);
    assert_eq!(copies.name(FunctionId(0)), Some("web-serving-0"));
    assert_eq!(copies.name(FunctionId(79)), Some("json-parsing-9"));
    assert_eq!(copies.find("video-encoding-3").unwrap().warm, 10_280 * MS);
    assert!(FunctionTable::functionbench().copies(0).is_err());
    let weights = fitted_rates_per_minute(120, 1);
    assert_eq!(weights, fitted_rates_per_minute(120, 1));
    assert_eq!(weights.len(), 120);
    assert!(weights.iter().all(|&w| w >= 1.0 / 1440.0));
    let frequent = weights.iter().filter(|&&w| w >= 1.0).count();
    // 18.6% of 120 is 22; binomial sd 4.3.
    assert!((5..=40).contains(&frequent), "{frequent}");
}

#[test]
fn azure_functions_refuses_bad_parameters() {
    for params in [
        AzureParams {
            functions: 0,
            ..AzureParams::new(8, 16, 0.7)
        },
        AzureParams::new(0, 16, 0.7),
        AzureParams::new(8, 0, 0.7),
        AzureParams::new(8, 16, 0.0),
        AzureParams::new(8, 16, f64::NAN),
    ] {
        let err = AzureFunctions::new(&params).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{err:?}");
    }
    assert!(azure(0).invocations(Length::Count(0)).is_err());
}

#[test]
fn fig9_bursts_multiply_the_boosted_rates() {
    let table = FunctionTable::functionbench();
    let rates = [4.0, 2.0, 1.0, 1.0, 0.5, 1.0, 0.5, 2.0];
    let weights = Weights::new(&rates).unwrap();
    let spec = BoostSpec {
        among: 3,
        ..BoostSpec::default()
    };
    let boosts = Boosts::new(spec, &weights, 9).unwrap();
    let top = [FunctionId(0), FunctionId(1), FunctionId(7)];
    for w in 0..20 {
        let pair = boosts.pair(w);
        assert_eq!(pair.len(), 2);
        assert!(pair.iter().all(|f| top.contains(f)) && pair[0] != pair[1]);
        assert_eq!(boosts.boosted_at(w * 30 * SEC + 29 * SEC), pair);
    }
    let length = Length::Duration(600 * SEC);
    let total: f64 = rates.iter().sum();
    let base = || OpenLoop::new(&table, weights.clone(), total, length, 1).unwrap();
    let run = || -> Vec<Invocation> {
        Boosted::new(base(), &table, &rates, boosts.clone(), 2)
            .unwrap()
            .collect()
    };
    let invs = run();
    assert_eq!(invs, run());
    assert_stream(&invs);
    // Per function, base rate × 600 s plus (factor − 1) × rate × 30 s per
    // window boosting it: within 5 sd.
    for (f, rate) in rates.iter().enumerate() {
        let windows = (0..20)
            .filter(|&w| boosts.pair(w).contains(&FunctionId(f as u32)))
            .count();
        let want = rate * 600.0 + 9.0 * rate * 30.0 * windows as f64;
        let got = invs.iter().filter(|i| i.function.0 as usize == f).count();
        assert!(
            poisson_close(got, want, 5.0),
            "function {f}: {got} vs {want}"
        );
    }
    assert!(invs.len() > base().count() * 2);
    let bad = BoostSpec {
        length: 31 * SEC,
        ..BoostSpec::default()
    };
    assert!(Boosts::new(bad, &weights, 0).is_err());
    let bad = BoostSpec {
        functions: 9,
        ..BoostSpec::default()
    };
    assert!(Boosts::new(bad, &weights, 0).is_err());
}

#[test]
fn fig10_rises_to_18_per_second_at_25_minutes() {
    let table = FunctionTable::functionbench();
    let profile = RateProfile::fig10();
    assert_eq!(profile.rate_at(25 * 60 * SEC), 18.0);
    assert_eq!(profile.rate_at(0), 2.0);
    assert_eq!(profile.rate_at(30 * 60 * SEC), 0.0);
    let weights = Weights::new(&[1.0; 8]).unwrap();
    let run = || -> Vec<Invocation> {
        Ramp::new(&table, weights.clone(), profile.clone(), 4)
            .unwrap()
            .collect()
    };
    let invs = run();
    assert_eq!(invs, run());
    assert_stream(&invs);
    assert!(invs.last().unwrap().arrival < 30 * 60 * SEC);
    // Every 5 minutes, the count is the profile's integral within 5 sd.
    for bin in 0..6u64 {
        let (from, to) = (bin * 300 * SEC, (bin + 1) * 300 * SEC);
        let got = invs
            .iter()
            .filter(|i| (from..to).contains(&i.arrival))
            .count();
        let want = profile.expected(from, to);
        assert!(poisson_close(got, want, 5.0), "bin {bin}: {got} vs {want}");
    }
    assert!((profile.expected(0, 30 * 60 * SEC) - (10.0 * 1500.0 + 18.0 * 300.0)).abs() < 1e-6);
    assert!(RateProfile::new(vec![(5, 1.0), (10, 1.0)]).is_err());
    assert!(RateProfile::new(vec![(0, 1.0), (0, 1.0)]).is_err());
    assert!(RateProfile::new(vec![(0, 0.0), (10, 0.0)]).is_err());
    assert!(RateProfile::new(vec![(0, -1.0), (10, 1.0)]).is_err());
}

#[test]
fn closed_loop_clients_think_then_pick_by_weight() {
    let weights = Weights::new(&[3.0, 1.0, 0.0, 0.0]).unwrap();
    let clients = ClosedLoop::new(120, weights.clone()).unwrap();
    assert!(ClosedLoop::new(0, weights.clone()).is_err());
    let mut rng = Pcg64::seed_from_u64(8);
    let mut counts = [0usize; 4];
    for i in 0..20_000u64 {
        let finish = i * 10 * SEC;
        let (f, send) = clients.next_after(finish, &mut rng);
        assert!((finish..=finish + SEC).contains(&send));
        counts[f.0 as usize] += 1;
    }
    assert_eq!(&counts[2..], [0, 0]);
    assert!(poisson_close(counts[0], 15_000.0, 5.0), "{counts:?}");
    // Same seed, same choices.
    let draw = |seed| {
        let mut rng = Pcg64::seed_from_u64(seed);
        (0..50)
            .map(|t| clients.next_after(t * SEC, &mut rng))
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(1), draw(1));

    // With Fig 9's bursts: among the top 2 by weight, both boosted × 10.
    let spec = BoostSpec {
        among: 2,
        ..BoostSpec::default()
    };
    let bursty = clients
        .clone()
        .with_boosts(Boosts::new(spec, &weights, 0).unwrap());
    let mut counts = [0usize; 2];
    for _ in 0..20_000 {
        counts[bursty.pick_at(5 * SEC, &mut rng).0 as usize] += 1;
    }
    // Weights 30 and 10 then: the same 3 : 1, drawn from the boosted ones.
    assert!(poisson_close(counts[0], 15_000.0, 5.0), "{counts:?}");
    // One boosted of the two: its weight × 10 against the other's.
    let spec = BoostSpec {
        among: 2,
        functions: 1,
        ..BoostSpec::default()
    };
    let boosts = Boosts::new(spec, &weights, 0).unwrap();
    let hot = boosts.boosted_at(0)[0];
    let one = clients.with_boosts(boosts);
    let hits = (0..20_000)
        .filter(|_| one.pick_at(0, &mut rng) == hot)
        .count();
    let (w, other) = (
        weights.weights()[hot.0 as usize] * 10.0,
        4.0 - weights.weights()[hot.0 as usize],
    );
    assert!(
        poisson_close(hits, 20_000.0 * w / (w + other), 5.0),
        "{hits}"
    );
    // After the burst of a window shorter than its period: plain weights.
    let spec = BoostSpec {
        among: 2,
        functions: 1,
        length: 10 * SEC,
        ..BoostSpec::default()
    };
    let calm = ClosedLoop::new(1, weights.clone())
        .unwrap()
        .with_boosts(Boosts::new(spec, &weights, 0).unwrap());
    let zeros = (0..20_000)
        .filter(|_| calm.pick_at(15 * SEC, &mut rng) == FunctionId(0))
        .count();
    assert!(poisson_close(zeros, 15_000.0, 5.0), "{zeros}");
}

/// Names a table CSV must quote, and plain ones.
fn table_name() -> impl Strategy<Value = String> {
    prop::string::string_regex("[a-z0-9,\" \\n-]{1,8}").unwrap()
}

proptest! {
    #[test]
    fn any_table_writes_and_reads_back_exactly(
        rows in prop::collection::vec(
            (table_name(), 1..=u32::MAX, 1..=TIME_LIMIT / 2, 0..=TIME_LIMIT / 2),
            1..8,
        ),
    ) {
        let mut table = FunctionTable::new();
        for (name, memory_mb, warm, extra) in rows {
            if table.find(&name).is_none() {
                table.push(&name, memory_mb, warm, warm + extra).unwrap();
            }
        }
        let (_dir, path) = file("t.csv", &table.to_csv());
        let again = FunctionTable::read_csv(&path).unwrap();
        prop_assert_eq!(again.profiles(), table.profiles());
        let names = |t: &FunctionTable| -> Vec<String> {
            t.functions().iter().map(|f| f.name.to_string()).collect()
        };
        prop_assert_eq!(names(&again), names(&table));
    }

    #[test]
    fn mutated_csvs_read_or_fail_without_panicking(
        at in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        which in 0..2usize,
    ) {
        let name = ["cluster/table.csv", "cluster/invocations.csv"][which];
        let mut bytes = fs::read(fixture(name)).unwrap();
        for (i, b) in at {
            let len = bytes.len();
            bytes[i % len] = b;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csv");
        fs::write(&path, &bytes).unwrap();
        if which == 0 {
            if let Ok(table) = FunctionTable::read_csv(&path) {
                for p in table.profiles() {
                    prop_assert!(p.memory_mb > 0 && p.warm > 0 && p.cold >= p.warm);
                }
            }
        } else {
            let table = FunctionTable::read_csv(&fixture("cluster/table.csv")).unwrap();
            if let Ok(stream) = FileInvocations::open(&path, &table) {
                let mut ok = Vec::new();
                for inv in stream {
                    match inv {
                        Ok(inv) => ok.push(inv),
                        Err(_) => break,
                    }
                }
                assert_stream(&ok);
                prop_assert!(ok.iter().all(|i| i.work > 0 && table.profile(i.function).is_some()));
            }
        }
    }
}
