//! Node requests: the built-in workloads' means and profiles, the Poisson
//! stream, deadlines and their spec, estimates, and reading a workload CSV.

use crate::common::{assert_parse_error, fixture};
use faasched_model::node::{Request, RequestId};
use faasched_model::{FunctionId, MS, Nanos, SEC, US};
use faasched_workload::Error;
use faasched_workload::node::{
    Deadline, Deadlines, Estimate, LOGNORMAL_CAP, LOGNORMAL_FLOOR, Length, Params, RequestFile,
    Workload,
};
use proptest::prelude::*;

fn params(rate_per_s: f64, length: Length, seed: u64) -> Params {
    Params {
        rate_per_s,
        length,
        seed,
        deadlines: Deadlines::default(),
        estimate: Estimate::Exact,
    }
}

fn take(name: &str, p: &Params) -> Vec<Request> {
    Workload::builtin(name)
        .unwrap()
        .requests(p)
        .unwrap()
        .collect()
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    ((got - want) / want).abs() <= rel
}

#[test]
fn builtins_state_table_3_means_and_capacities() {
    // (name, mean work in µs, capacity of 6 workers in requests/s)
    let cases = [
        ("fixed", 10.0, 600_000.0),
        ("bimodal-high", 1_048.0, 5_725.19),
        ("bimodal-extreme", 59.95, 100_083.4),
        ("sd-vbs", 221.4, 27_100.3),
        ("exponential", 100.0, 60_000.0),
        ("lognormal", 9_500.0, 631.6),
        ("colocated", 147.583, 40_655.0),
    ];
    for (name, mean_us, capacity) in cases {
        let w = Workload::builtin(name).unwrap();
        w.validate().unwrap();
        let mean = w.mean_work() / US as f64;
        assert!(close(mean, mean_us, 1e-3), "{name}: mean {mean} µs");
        let cap = w.capacity(6);
        assert!(close(cap, capacity, 1e-3), "{name}: capacity {cap}");
        let profile = w.profile();
        assert!(close(profile.mean_work(), w.mean_work(), 1e-12), "{name}");
        let shares: f64 = profile.functions().iter().map(|f| f.work_share).sum();
        assert!(
            close(shares, 1.0, 1e-12),
            "{name}: work shares sum to {shares}"
        );
        assert_eq!(w.deadline_factor, 10.0);
    }
    assert_eq!(
        Workload::names().collect::<Vec<_>>(),
        [
            "fixed",
            "bimodal-high",
            "bimodal-extreme",
            "sd-vbs",
            "exponential",
            "lognormal",
            "colocated"
        ]
    );
    let err = Workload::builtin("bimodal").unwrap_err().to_string();
    assert!(err.contains("`bimodal`") && err.contains("sd-vbs"), "{err}");
}

#[test]
fn sd_vbs_profile_has_the_notes_work_shares() {
    let p = Workload::builtin("sd-vbs").unwrap().profile();
    let got: Vec<_> = p
        .functions()
        .iter()
        .map(|f| {
            (
                f.name.as_str(),
                f.request_share,
                (f.work_share * 1000.0).round(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("sift", 0.90, 459.0),
            ("segmentation", 0.09, 447.0),
            ("classification", 0.01, 93.0)
        ]
    );
    assert_eq!(p.functions()[1].mean_work, 1_100_000.0);
}

#[test]
fn each_builtins_sampled_mean_is_its_stated_mean() {
    for w in Workload::builtins() {
        // The log-normal's heavy tail needs more draws for the same precision.
        let n = if w.name == "lognormal" {
            2_000_000
        } else {
            400_000
        };
        let (mut sum, mut count) = (0u128, vec![0u64; w.functions.len()]);
        let mut lo = Nanos::MAX;
        let mut hi = 0;
        for r in w.requests(&params(1e5, Length::Count(n), 7)).unwrap() {
            sum += u128::from(r.work);
            count[r.function.id.0 as usize] += 1;
            lo = lo.min(r.work);
            hi = hi.max(r.work);
        }
        let mean = sum as f64 / n as f64;
        assert!(
            close(mean, w.mean_work(), 0.02),
            "{}: sampled {mean} ns, stated {}",
            w.name,
            w.mean_work()
        );
        for (f, &c) in w.functions.iter().zip(&count) {
            let share = c as f64 / n as f64;
            assert!((share - f.share).abs() < 0.003, "{}: {share}", f.name);
        }
        if w.name == "lognormal" {
            assert_eq!((lo, hi), (LOGNORMAL_FLOOR, LOGNORMAL_CAP));
        }
    }
}

#[test]
fn lognormal_percentiles_and_clamps_are_as_documented() {
    let n = 400_001;
    let mut works: Vec<Nanos> = take("lognormal", &params(1e3, Length::Count(n), 3))
        .iter()
        .map(|r| r.work)
        .collect();
    works.sort_unstable();
    let at = |p: f64| works[(p * (n - 1) as f64) as usize] as f64 / MS as f64;
    assert!(close(at(0.5), 0.684, 0.02), "median {} ms", at(0.5));
    assert!(close(at(0.99), 165.7, 0.05), "p99 {} ms", at(0.99));
    // 3.7% land on the floor, 0.1% on the cap.
    let share = |w: Nanos| works.iter().filter(|&&x| x == w).count() as f64 / n as f64;
    assert!(
        close(share(LOGNORMAL_FLOOR), 0.037, 0.05),
        "{}",
        share(LOGNORMAL_FLOOR)
    );
    assert!(
        close(share(LOGNORMAL_CAP), 0.001, 0.2),
        "{}",
        share(LOGNORMAL_CAP)
    );
}

#[test]
fn poisson_arrivals_keep_the_rate_for_a_duration() {
    for rate in [500.0, 10_000.0, 600_000.0] {
        let seconds = if rate > 1e5 { 1 } else { 20 };
        let reqs = take("fixed", &params(rate, Length::Duration(seconds * SEC), 11));
        let got = reqs.len() as f64 / seconds as f64;
        assert!(close(got, rate, 0.02), "rate {rate}: {got}");
        assert!(reqs.last().unwrap().arrival < seconds * SEC);
        // Exponential gaps: their standard deviation is their mean.
        let gaps: Vec<f64> = reqs
            .windows(2)
            .map(|w| (w[1].arrival - w[0].arrival) as f64)
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!(
            close(var.sqrt(), mean, 0.03),
            "rate {rate}: sd {} mean {mean}",
            var.sqrt()
        );
    }
}

#[test]
fn a_count_gives_that_many_with_ids_in_arrival_order() {
    let reqs = take("sd-vbs", &params(4_000.0, Length::Count(50_000), 5));
    assert_eq!(reqs.len(), 50_000);
    for (i, r) in reqs.iter().enumerate() {
        assert_eq!(r.id, RequestId(i as u64));
    }
    assert!(reqs.windows(2).all(|w| w[0].arrival <= w[1].arrival));
    let span = reqs.last().unwrap().arrival as f64 / SEC as f64;
    assert!(close(50_000.0 / span, 4_000.0, 0.02), "span {span} s");
    // The function's id is its index in the workload.
    let w = Workload::builtin("sd-vbs").unwrap();
    for r in &reqs[..100] {
        assert_eq!(
            *r.function.name,
            *w.functions[r.function.id.0 as usize].name
        );
    }
}

#[test]
fn same_seed_same_requests_other_seed_others() {
    let p = params(4_000.0, Length::Duration(2 * SEC), 1);
    for name in Workload::names() {
        assert_eq!(take(name, &p), take(name, &p), "{name}");
        let other = take(
            name,
            &Params {
                seed: 2,
                ..p.clone()
            },
        );
        assert_ne!(take(name, &p), other, "{name}");
    }
}

#[test]
fn a_stream_ended_by_its_duration_stays_ended() {
    let w = Workload::builtin("fixed").unwrap();
    let mut reqs = w
        .requests(&params(1_000.0, Length::Duration(10 * MS), 4))
        .unwrap();
    while reqs.next().is_some() {}
    assert!(reqs.next().is_none());
}

#[test]
fn deadlines_default_to_ten_times_the_work() {
    for r in take("exponential", &params(1e4, Length::Count(1_000), 9)) {
        assert_eq!(r.deadline, 10 * r.work);
        assert_eq!(r.estimate, r.work);
    }
}

#[test]
fn deadline_overrides_apply_per_function() {
    let deadlines: Deadlines = "sift=1.13ms, segmentation=2x".parse().unwrap();
    let p = Params {
        deadlines,
        ..params(4_000.0, Length::Count(20_000), 2)
    };
    let reqs = take("sd-vbs", &p);
    let mut seen = [false; 3];
    for r in &reqs {
        let want = match &*r.function.name {
            "sift" => 1_130 * US,
            "segmentation" => 2 * r.work,
            "classification" => 10 * r.work,
            other => panic!("{other}"),
        };
        assert_eq!(r.deadline, want, "{}", r.function.name);
        seen[r.function.id.0 as usize] = true;
    }
    assert_eq!(seen, [true; 3]);
    // `*` sets every function not named; the draws are the same.
    let p2 = Params {
        deadlines: "*=500us,sift=3x".parse().unwrap(),
        ..p.clone()
    };
    for (a, b) in reqs.iter().zip(take("sd-vbs", &p2)) {
        assert_eq!(
            (a.arrival, a.work, &a.function),
            (b.arrival, b.work, &b.function)
        );
        let want = if &*b.function.name == "sift" {
            3 * b.work
        } else {
            500 * US
        };
        assert_eq!(b.deadline, want);
    }
}

#[test]
fn deadline_specs_parse_and_print_back() {
    let d =
        Deadlines::parse("sift=1.13ms,segmentation=2x,*=0.5s,a=250µs,b=7ns,c=1.5x,e=1e-3s,f=3μs")
            .unwrap();
    assert_eq!(d.override_for("e"), Some(Deadline::Absolute(MS)));
    assert_eq!(d.override_for("sift"), Some(Deadline::Absolute(1_130 * US)));
    assert_eq!(d.override_for("segmentation"), Some(Deadline::Factor(2.0)));
    assert_eq!(d.override_for("a"), Some(Deadline::Absolute(250 * US)));
    assert_eq!(d.override_for("b"), Some(Deadline::Absolute(7)));
    assert_eq!(d.default_deadline(), Some(Deadline::Absolute(500 * MS)));
    assert_eq!(d.for_function("other"), Some(Deadline::Absolute(500 * MS)));
    let text = d.to_string();
    assert_eq!(
        text,
        "sift=1130us,segmentation=2x,a=250us,b=7ns,c=1.5x,e=1ms,f=3us,*=500ms"
    );
    assert_eq!(Deadlines::parse(&text).unwrap(), d);
    assert_eq!(Deadlines::parse("").unwrap(), Deadlines::default());
    assert_eq!(Deadlines::default().to_string(), "");
    assert_eq!(Deadline::Factor(3.0).of(7), 21);
    assert_eq!(Deadline::Absolute(5).of(1_000), 5);
}

#[test]
fn bad_deadline_specs_name_the_bad_part() {
    let cases = [
        ("sift", "`sift`"),
        ("sift=", "`sift=`"),
        ("=2x", "name is empty"),
        ("sift=2", "`sift=2`"),
        ("sift=abcx", "`abcx`: expected a factor"),
        ("sift=1.2.3x", "`1.2.3` is not"),
        ("sift=0x", "`0`"),
        ("sift=-1ms", "`-1`"),
        ("sift=infx", "units"),
        ("sift=1e400s", "`1e400`"),
        ("sift=NaNx", "units"),
        ("sift=2h", "units"),
        ("sift=2x,sift=3x", "`sift` is given twice"),
        ("*=2x,*=3x", "`*` is given twice"),
        ("sift=2x,,seg=1x", "expected `function=value`"),
        ("sift=2days", "units"),
        ("sift=2 ms", "`2 `"),
        ("sift=100000000s", "1 day"),
        ("sift=0.1ns", "1 ns"),
    ];
    for (spec, needle) in cases {
        let err = Deadlines::parse(spec).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{spec}: {err:?}");
        let text = err.to_string();
        assert!(text.contains(needle), "{spec}: `{text}` lacks {needle}");
    }
    // A name the workload lacks is refused when the stream is made.
    let p = Params {
        deadlines: Deadlines::parse("sift=2x,resize=3x").unwrap(),
        ..params(1e3, Length::Count(1), 0)
    };
    let err = Workload::builtin("sd-vbs")
        .unwrap()
        .requests(&p)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`resize`") && err.contains("segmentation"),
        "{err}"
    );
}

#[test]
fn bad_stream_parameters_are_errors() {
    let w = Workload::builtin("fixed").unwrap();
    let cases = [
        (params(0.0, Length::Count(1), 0), "rate"),
        (params(f64::NAN, Length::Count(1), 0), "rate"),
        (params(2e9, Length::Count(1), 0), "rate"),
        (params(1.0, Length::Count(0), 0), "length"),
        (params(1.0, Length::Duration(0), 0), "length"),
        (params(1e-6, Length::Count(u64::MAX), 0), "count"),
    ];
    for (p, what) in cases {
        match w.requests(&p) {
            Err(Error::Invalid { what: got, .. }) => assert_eq!(got, what),
            Err(other) => panic!("{what}: {other:?}"),
            Ok(_) => panic!("{what}: accepted"),
        }
    }
}

#[test]
fn noisy_estimates_stay_within_their_bounds() {
    let exact = take("exponential", &params(1e4, Length::Count(100_000), 8));
    for error in [0.1, 0.5, 1.0] {
        let p = Params {
            estimate: Estimate::noisy(error).unwrap(),
            ..params(1e4, Length::Count(100_000), 8)
        };
        let noisy = take("exponential", &p);
        let mut ratio_sum = 0.0;
        let mut off = 0;
        for (e, n) in exact.iter().zip(&noisy) {
            // Same arrivals, functions, work and deadlines: only estimates move.
            assert_eq!(
                (e.arrival, e.work, e.deadline),
                (n.arrival, n.work, n.deadline)
            );
            let w = n.work as f64;
            assert!(n.estimate >= 1);
            assert!(
                (n.estimate as f64 - w).abs() <= error * w + 0.5,
                "work {} estimate {} error {error}",
                n.work,
                n.estimate
            );
            ratio_sum += n.estimate as f64 / w;
            off += usize::from(n.estimate != n.work);
        }
        // Unbiased, and really noisy.
        let mean_ratio = ratio_sum / noisy.len() as f64;
        assert!((mean_ratio - 1.0).abs() < 0.01, "{error}: {mean_ratio}");
        assert!(off > noisy.len() * 9 / 10, "{error}: {off}");
        // Seeded: the same again.
        assert_eq!(noisy, take("exponential", &p));
    }
    assert_eq!(Estimate::noisy(0.0).unwrap(), Estimate::Exact);
    for bad in [-0.1, 1.5, f64::NAN] {
        let err = Estimate::noisy(bad).unwrap_err();
        assert!(
            matches!(&err, Error::Invalid { what, .. } if what == "estimate error"),
            "{err:?}"
        );
    }
}

#[test]
fn a_request_file_reads_with_deadlines_and_profile() {
    let file = RequestFile::open(&fixture("node/good.csv")).unwrap();
    assert_eq!(file.len(), 4);
    let reqs: Vec<Request> = file
        .requests(&Deadlines::default(), Estimate::Exact, 0)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let got: Vec<_> = reqs
        .iter()
        .map(|r| {
            (
                r.id.0,
                &*r.function.name,
                r.arrival,
                r.work,
                r.deadline,
                r.estimate,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, "sift", 0, 113 * US, 1_130 * US, 113 * US),
            (
                1,
                "segmentation",
                5 * US,
                1_100 * US,
                2_200 * US,
                1_100 * US
            ),
            (
                2,
                "sift\nwith a newline",
                7 * US,
                100 * US,
                1_000 * US,
                100 * US
            ),
            (3, "sift", 9 * US, 113 * US, US, 113 * US),
        ]
    );
    let profile: Vec<_> = file
        .profile()
        .functions()
        .iter()
        .map(|f| (f.name.as_str(), f.mean_work, f.request_share))
        .collect();
    assert_eq!(
        profile,
        [
            ("sift", 113_000.0, 0.5),
            ("segmentation", 1_100_000.0, 0.25),
            ("sift\nwith a newline", 100_000.0, 0.25)
        ]
    );
    assert_eq!(file.profile().functions()[1].work_share, 1_100.0 / 1_426.0);
    assert_eq!(reqs[1].function.id, FunctionId(1));

    // A named override beats the row's deadline; `*` only fills empty ones.
    let d = Deadlines::parse("sift=2x,*=1ms").unwrap();
    let deadlines: Vec<Nanos> = file
        .requests(&d, Estimate::Exact, 0)
        .unwrap()
        .map(|r| r.unwrap().deadline)
        .collect();
    assert_eq!(deadlines, [226 * US, 2_200 * US, MS, 226 * US]);

    let err = file
        .requests(&Deadlines::parse("resize=2x").unwrap(), Estimate::Exact, 0)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("`resize`") && err.contains("segmentation"),
        "{err}"
    );
}

#[test]
fn a_request_file_with_noisy_estimates_is_seeded() {
    let file = RequestFile::open(&fixture("node/good.csv")).unwrap();
    let read = |seed| -> Vec<Nanos> {
        let noisy = Estimate::noisy(0.5).unwrap();
        file.requests(&Deadlines::default(), noisy, seed)
            .unwrap()
            .map(|r| r.unwrap().estimate)
            .collect()
    };
    assert_eq!(read(1), read(1));
    assert_ne!(read(1), read(2));
}

#[test]
fn rows_that_are_not_node_requests_name_file_line_and_field() {
    let cases = [
        ("io-phase.csv", 5, "phases", "2 phases, 1 of them I/O"),
        ("two-cpu.csv", 3, "phases", "2 CPU phases"),
        ("bad-deadline.csv", 3, "deadline_us", "`soon`"),
    ];
    for (name, line, field, says) in cases {
        let err = RequestFile::open(&fixture(&format!("node/{name}"))).unwrap_err();
        assert_parse_error(&err, name, line, field);
        assert!(err.to_string().contains(says), "{err}");
    }
    let err = RequestFile::open(&fixture("node/missing.csv")).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
}

/// A deadline value as a spec may spell it, valid or not.
fn deadline_text() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        (1u32..100_000).prop_map(|n| n.to_string()),
        (1u32..1_000, 1u32..1_000).prop_map(|(a, b)| format!("{a}.{b}")),
        "[-+.eE0-9a-z ]{0,6}",
    ];
    let unit = prop::sample::select(vec!["x", "ns", "us", "µs", "ms", "s", "", "h", "xs"]);
    (number, unit).prop_map(|(n, u)| format!("{n}{u}"))
}

proptest! {
    /// A spec parses or is refused with an `Invalid` error naming one of its
    /// items, never panics, and a parsed one prints back to itself.
    #[test]
    fn deadline_specs_round_trip_or_name_the_bad_item(
        items in prop::collection::vec(("[a-z*]{0,4}", deadline_text()), 0..5),
    ) {
        let spec = items
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join(",");
        match Deadlines::parse(&spec) {
            Ok(d) => prop_assert_eq!(Deadlines::parse(&d.to_string()).unwrap(), d),
            Err(Error::Invalid { what, message }) => {
                prop_assert_eq!(what, "deadline");
                prop_assert!(
                    spec.split(',').any(|item| message.contains(&format!("`{}`", item.trim()))),
                    "{} names no item of {}", message, spec
                );
            }
            Err(other) => prop_assert!(false, "{:?}", other),
        }
    }

    /// Any bytes after a valid header: a request file opens or is refused
    /// with an error, never a panic, and what opens streams the same rows.
    #[test]
    fn arbitrary_rows_never_panic(body in "[0-9a-z,;\"\n]{0,80}") {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fuzz.csv");
        let head = "id,function,arrival_us,phases,memory_mb,deadline_us\n";
        std::fs::write(&path, format!("{head}{body}")).unwrap();
        if let Ok(file) = RequestFile::open(&path) {
            let reqs: Vec<Request> = file
                .requests(&Deadlines::default(), Estimate::Exact, 0)
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            prop_assert_eq!(reqs.len() as u64, file.len());
        }
    }
}
