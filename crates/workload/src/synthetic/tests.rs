//! Generator tests: determinism, arrival rate, and each workload's shape.

use super::*;
use faasched_model::{MS, US};
use std::collections::HashMap;

fn params(spec: Spec, cores: usize, load: f64, invocations: u64, seed: u64) -> Params {
    Params {
        spec,
        cores,
        load,
        invocations,
        seed,
    }
}

fn run(spec: Spec, cores: usize, load: f64, n: u64, seed: u64) -> Vec<Invocation> {
    let g = Generator::new(&params(spec, cores, load, n, seed)).expect("valid params");
    let v: Vec<_> = g.collect::<Result<_, _>>().expect("within the time limit");
    assert_eq!(v.len() as u64, n);
    v
}

fn cpu(inv: &Invocation) -> Nanos {
    match inv.phases[..] {
        [Phase::Cpu(d)] => d,
        ref p => panic!("expected one CPU phase, got {p:?}"),
    }
}

/// Total CPU / (cores × span): the load the invocations actually offer.
fn offered_load(invs: &[Invocation], cores: usize) -> f64 {
    let total: f64 = invs.iter().map(|i| i.cpu_demand() as f64).sum();
    total / (cores as f64 * invs.last().unwrap().arrival as f64)
}

/// Fraction of invocations per function name.
fn shares(invs: &[Invocation]) -> HashMap<String, f64> {
    let mut counts: HashMap<String, f64> = HashMap::new();
    for i in invs {
        *counts.entry(i.function.name.to_string()).or_default() += 1.0;
    }
    counts.values_mut().for_each(|c| *c /= invs.len() as f64);
    counts
}

#[test]
fn same_params_same_sequence_other_seed_other_sequence() {
    for spec in [
        Spec::Huawei,
        Spec::Lognormal { scale: 0.1 },
        BIMODAL_EXTREME,
        Spec::MixedIo,
    ] {
        let a = run(spec.clone(), 8, 0.8, 2_000, 42);
        assert_eq!(a, run(spec.clone(), 8, 0.8, 2_000, 42), "{spec}");
        assert_ne!(a, run(spec.clone(), 8, 0.8, 2_000, 43), "{spec}");
    }
}

#[test]
fn ids_count_up_in_arrival_order_and_functions_are_interned() {
    let g = Generator::new(&params(Spec::Huawei, 4, 0.9, 5_000, 1)).unwrap();
    assert_eq!(g.len(), 5_000);
    let functions = g.functions().clone();
    assert_eq!(functions.len(), 50);
    let names: Vec<_> = functions.iter().map(|f| &*f.name).collect();
    let table: Vec<_> = alps::DEPLOYMENTS.iter().map(|d| d.name).collect();
    assert_eq!(names, table);
    let mut last = 0;
    for (k, inv) in g.enumerate() {
        let inv = inv.unwrap();
        assert_eq!(inv.id, k as u64);
        assert!(inv.arrival >= last);
        last = inv.arrival;
        assert_eq!(functions.get(inv.function.id), Some(&inv.function));
        assert_eq!(inv.deadline, None);
    }
}

#[test]
fn alps_group_mix_ranges_memory_and_mean() {
    for (spec, mix) in [
        (Spec::Huawei, alps::HUAWEI_MIX),
        (Spec::Azure, alps::AZURE_MIX),
    ] {
        let invs = run(spec.clone(), 56, 0.9, 200_000, 7);
        let by_name: HashMap<_, _> = alps::DEPLOYMENTS.iter().map(|d| (d.name, d)).collect();
        let mut groups = [0u64; 4];
        let mut seen = HashMap::new();
        for inv in &invs {
            let d = by_name[&*inv.function.name];
            let c = cpu(inv);
            assert!(
                (d.lo..=d.hi).contains(&c),
                "{}: {c} outside its range",
                d.name
            );
            assert_eq!(Group::of(c), d.group, "{}", d.name);
            assert_eq!(inv.memory_mb, d.memory_mb());
            groups[inv.group().index()] += 1;
            *seen.entry(d.name).or_insert(0u64) += 1;
        }
        assert_eq!(seen.len(), 50, "{spec}: every deployment is invoked");
        for g in Group::ALL {
            let got = 100.0 * groups[g.index()] as f64 / invs.len() as f64;
            let want = f64::from(mix[g.index()]) / 10.0;
            assert!(
                (got - want).abs() <= 0.5,
                "{spec} {g}: {got:.2}% vs {want}%"
            );
        }
        let mean = invs.iter().map(|i| cpu(i) as f64).sum::<f64>() / invs.len() as f64;
        let want = spec.mean_cpu() as f64;
        assert!(
            (mean / want - 1.0).abs() < 0.01,
            "{spec}: mean {mean} vs {want}"
        );
    }
}

#[test]
fn offered_load_matches_the_target() {
    for (spec, cores, load) in [
        (Spec::Huawei, 56, 0.9),
        (Spec::Exponential { mean: 100 * MS }, 16, 0.7),
        // Demands of a few µs, where rounding them to whole µs matters.
        (Spec::Exponential { mean: 2 * US }, 4, 0.9),
    ] {
        let g = Generator::new(&params(spec.clone(), cores, load, 200_000, 11)).unwrap();
        let rate = load * cores as f64 / (spec.mean_cpu_exact() / SEC as f64);
        assert!((g.arrival_rate_per_s() / rate - 1.0).abs() < 1e-7);
        let invs: Vec<_> = g.collect::<Result<_, _>>().unwrap();
        let got = offered_load(&invs, cores);
        assert!(
            (got / load - 1.0).abs() < 0.02,
            "{spec}: load {got} vs {load}"
        );
        let span_s = invs.last().unwrap().arrival as f64 / SEC as f64;
        let rate_got = invs.len() as f64 / span_s;
        assert!(
            (rate_got / rate - 1.0).abs() < 0.01,
            "{spec}: rate {rate_got} vs {rate}"
        );
    }
}

#[test]
fn gaps_keep_their_mean_at_nanosecond_scale() {
    // Mean gap 0.5 ns: rounding exponential gaps would lose 15% of the span.
    let invs = run(Spec::Fixed { cpu: US }, 4, 500.0, 200_000, 5);
    let span = invs.last().unwrap().arrival as f64;
    assert!((span / 100_000.0 - 1.0).abs() < 0.01, "span {span}");
}

#[test]
fn lognormal_median_and_mean() {
    for scale in [1.0, 0.001] {
        let spec = Spec::Lognormal { scale };
        let invs = run(spec.clone(), 16, 0.9, 200_000, 3);
        let mut d: Vec<Nanos> = invs.iter().map(cpu).collect();
        d.sort_unstable();
        let median = d[d.len() / 2] as f64;
        let want = AZURE_LN_MU.exp() * SEC as f64 * scale;
        assert!(
            (median / want - 1.0).abs() < 0.03,
            "{spec}: median {median} vs {want}"
        );
        assert!(d[0] as f64 >= LOGNORMAL_MIN as f64 * scale - 0.5);
        assert!(*d.last().unwrap() as f64 <= LOGNORMAL_MAX as f64 * scale + 0.5);
        // The clamped demand has σ ≈ 12.4 s at scale 1 against a mean of 5.30 s,
        // so over 200 000 draws the mean's standard error is 0.52% of it:
        // 3% is about six standard errors.
        let mean = d.iter().map(|&x| x as f64).sum::<f64>() / d.len() as f64;
        let want = spec.mean_cpu() as f64;
        assert!(
            (mean / want - 1.0).abs() < 0.03,
            "{spec}: mean {mean} vs {want}"
        );
        assert!(invs.iter().all(|i| &*i.function.name == "lognormal"));
    }
}

#[test]
fn bimodal_presets_have_exact_durations_and_fractions() {
    for (spec, p, short, long) in [
        (BIMODAL_HIGH, 0.5, 26 * US, 2070 * US),
        (BIMODAL_EXTREME, 0.995, 10 * US, 10 * MS),
    ] {
        let invs = run(spec.clone(), 6, 0.9, 200_000, 9);
        for inv in &invs {
            let want = match &*inv.function.name {
                "short" => short,
                "long" => long,
                other => panic!("unexpected function {other}"),
            };
            assert_eq!(cpu(inv), want);
            assert_eq!(inv.memory_mb, SYNTHETIC_MEMORY_MB);
        }
        let got = shares(&invs)["short"];
        assert!((got - p).abs() <= 0.005, "{spec}: short share {got}");
    }
}

#[test]
fn exponential_and_fixed_demands() {
    let invs = run(Spec::Fixed { cpu: 5 * MS }, 2, 0.5, 10_000, 2);
    assert!(
        invs.iter()
            .all(|i| cpu(i) == 5 * MS && &*i.function.name == "fixed")
    );
    let invs = run(Spec::Exponential { mean: 10 * MS }, 2, 0.5, 100_000, 2);
    let mean = invs.iter().map(|i| cpu(i) as f64).sum::<f64>() / invs.len() as f64;
    assert!((mean / (10 * MS) as f64 - 1.0).abs() < 0.02, "{mean}");
    assert!(invs.iter().all(|i| cpu(i) >= 1));
}

#[test]
fn mixed_io_classes_have_their_shapes_and_equal_shares() {
    let invs = run(Spec::MixedIo, 16, 0.9, 200_000, 4);
    for inv in &invs {
        let class = mixed_io::CLASSES
            .iter()
            .find(|c| *c.name == *inv.function.name)
            .expect("a mixed-io class");
        assert_eq!(inv.phases[..], *class.phases);
        let io = class.name.starts_with("io-");
        assert_eq!(
            matches!(inv.phases[..], [Phase::Cpu(_), Phase::Io(_), Phase::Cpu(_)]),
            io
        );
        assert_eq!(matches!(inv.phases[..], [Phase::Cpu(_)]), !io);
    }
    let shares = shares(&invs);
    assert_eq!(shares.len(), 4);
    for (name, share) in shares {
        assert!((share - 0.25).abs() <= 0.005, "{name}: {share}");
    }
    // Load counts CPU only.
    assert!((offered_load(&invs, 16) / 0.9 - 1.0).abs() < 0.02);
}

#[test]
fn rejects_bad_params_naming_them() {
    let bad = [
        (params(Spec::Huawei, 0, 0.9, 10, 0), "cores"),
        (params(Spec::Huawei, 1, 0.0, 10, 0), "load"),
        (params(Spec::Huawei, 1, -1.0, 10, 0), "load"),
        (params(Spec::Huawei, 1, f64::NAN, 10, 0), "load"),
        (params(Spec::Huawei, 1, f64::INFINITY, 10, 0), "load"),
        (params(Spec::Huawei, 1, 1e-300, 10, 0), "at load 1e-300"),
        (
            params(Spec::Huawei, 1, 0.9, u64::MAX, 0),
            "fewer invocations",
        ),
        (params(Spec::Huawei, 1, 1e-12, 1000, 0), "about 208 days"),
        (params(Spec::Huawei, 1, 0.9, 0, 0), "invocations"),
        (params(Spec::Fixed { cpu: 0 }, 1, 0.9, 10, 0), "cpu-ms"),
        (
            params(
                Spec::Exponential {
                    mean: MAX_DURATION + 1,
                },
                1,
                0.9,
                10,
                0,
            ),
            "mean-ms",
        ),
        (
            params(Spec::Lognormal { scale: f64::NAN }, 1, 0.9, 10, 0),
            "scale",
        ),
        (
            params(
                Spec::Bimodal {
                    short_fraction: 1.5,
                    short: 1,
                    long: 2,
                },
                1,
                0.9,
                10,
                0,
            ),
            "`p`",
        ),
        (
            params(
                Spec::Bimodal {
                    short_fraction: 0.5,
                    short: 2,
                    long: 2,
                },
                1,
                0.9,
                10,
                0,
            ),
            "short-us",
        ),
    ];
    for (p, want) in bad {
        let e = Generator::new(&p).expect_err(want).to_string();
        assert!(e.contains(want), "{p:?}: `{e}` should name {want}");
    }
    // Overload is allowed.
    assert!(Generator::new(&params(Spec::Huawei, 1, 3.0, 10, 0)).is_ok());
}

#[test]
fn an_arrival_drawn_past_the_time_limit_is_an_error_and_the_last_item() {
    // The expected span (one gap) is within the limit, but seed 1's gap is
    // longer than the mean: the invocation would end past it.
    let p = params(Spec::Huawei, 56, 7.4e-11, 1, 1);
    let mut g = Generator::new(&p).expect("the expected span is within the limit");
    let err = g.next().unwrap().unwrap_err().to_string();
    assert!(
        err.contains("load and invocations")
            && err.contains("invocation 0")
            && err.contains("208 days"),
        "{err}"
    );
    assert!(g.next().is_none());
}
