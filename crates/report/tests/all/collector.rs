//! The collector on five hand-made outcomes, against values computed by hand.

use faasched_model::Group;
use faasched_report::cost::USD_PER_GB_SECOND;
use faasched_report::os::{Collector, Metric, PolicySummary, Scope};

/// Percentiles come from the histogram: within its 0.049% bound of the exact value.
fn close(got: f64, want: f64, rel: f64, what: &str) {
    assert!(
        (got - want).abs() <= rel * want.abs(),
        "{what}: got {got}, want {want}"
    );
}

fn summary() -> PolicySummary {
    let mut c = Collector::new("cfs", false);
    for o in crate::common::five() {
        c.record(&o);
    }
    assert_eq!(c.count(), 5);
    c.finish(0.75)
}

/// (scope, metric, mean, p50, max) in ms, or ratio for slowdown, by hand.
const EXPECTED: [(Scope, Metric, f64, f64, f64); 15] = [
    (Scope::All, Metric::Turnaround, 334.2 / 5.0, 22.0, 200.0),
    (Scope::All, Metric::Response, 23.0 / 5.0, 1.0, 20.0),
    (Scope::All, Metric::Execution, 311.2 / 5.0, 20.0, 180.0),
    (Scope::All, Metric::Waiting, 108.0 / 5.0, 7.0, 60.0),
    // slowdowns are recorded to 1e-6, rounded down
    (
        Scope::All,
        Metric::Slowdown,
        (1.1 + 1.466666 + 1.0 + 1.666666 + 1.428571) / 5.0,
        1.428571,
        1.666666,
    ),
    (
        Scope::Group(Group::G1),
        Metric::Turnaround,
        34.2 / 3.0,
        11.0,
        22.0,
    ),
    (Scope::Group(Group::G1), Metric::Response, 1.0, 1.0, 2.0),
    (
        Scope::Group(Group::G1),
        Metric::Execution,
        31.2 / 3.0,
        10.0,
        20.0,
    ),
    (
        Scope::Group(Group::G1),
        Metric::Waiting,
        8.0 / 3.0,
        1.0,
        7.0,
    ),
    (
        Scope::Group(Group::G1),
        Metric::Slowdown,
        (1.1 + 1.466666 + 1.0) / 3.0,
        1.1,
        1.466666,
    ),
    (
        Scope::Group(Group::G2),
        Metric::Turnaround,
        150.0,
        100.0,
        200.0,
    ),
    (Scope::Group(Group::G2), Metric::Response, 10.0, 0.0, 20.0),
    (
        Scope::Group(Group::G2),
        Metric::Execution,
        140.0,
        100.0,
        180.0,
    ),
    (Scope::Group(Group::G2), Metric::Waiting, 50.0, 40.0, 60.0),
    (
        Scope::Group(Group::G2),
        Metric::Slowdown,
        (1.666666 + 1.428571) / 2.0,
        1.428571,
        1.666666,
    ),
];

#[test]
fn mean_p50_max_per_scope_and_metric() {
    let s = summary();
    for (scope, metric, mean, p50, max) in EXPECTED {
        let what = format!("{scope} {metric}");
        let st = s.scope(scope).stats(metric).expect("non-empty scope");
        close(st.mean, mean, 1e-12, &format!("{what} mean"));
        close(st.max, max, 1e-12, &format!("{what} max"));
        close(st.p50, p50, 0.00049, &format!("{what} p50"));
        // With n ≤ 5, the nearest rank of p90, p99 and p99.9 is n: the exact max.
        assert_eq!(
            (st.p90, st.p99, st.p999),
            (st.max, st.max, st.max),
            "{what}"
        );
    }
}

#[test]
fn counts_and_empty_groups() {
    let s = summary();
    let counts: Vec<u64> = s.scopes.iter().map(|sc| sc.count).collect();
    assert_eq!(counts, [5, 3, 2, 0, 0]);
    for g in [Group::G3, Group::G4] {
        let sc = s.scope(Scope::Group(g));
        assert!(Metric::ALL.iter().all(|&m| sc.stats(m).is_none()));
        assert_eq!(sc.voluntary_per_invocation(), None);
        assert_eq!(sc.cost.usd(), 0.0);
    }
    assert_eq!(s.scopes.map(|sc| sc.scope), Scope::ALL);
    assert_eq!(
        (s.policy.as_str(), s.sim_only, s.utilisation),
        ("cfs", false, 0.75)
    );
}

#[test]
fn switches_per_invocation() {
    let s = summary();
    let per = |scope| {
        let sc = s.scope(scope);
        (
            sc.voluntary_per_invocation().unwrap(),
            sc.involuntary_per_invocation().unwrap(),
        )
    };
    assert_eq!(per(Scope::All), (2.0, 2.0));
    assert_eq!(per(Scope::Group(Group::G1)), (5.0 / 3.0, 2.0 / 3.0));
    assert_eq!(per(Scope::Group(Group::G2)), (2.5, 4.0));
}

#[test]
fn cost_by_hand() {
    let s = summary();
    // Billed ms × MB: 10×128 + 20×256 + 2×128 (1.2 ms rounds up) = 6656 in G1,
    // 100×512 + 180×1024 = 235520 in G2.
    let g1 = s.scope(Scope::Group(Group::G1)).cost;
    let g2 = s.scope(Scope::Group(Group::G2)).cost;
    assert_eq!(g1.billed_mb_ms(), 6656);
    assert_eq!(g2.billed_mb_ms(), 235_520);
    let all = s.all().cost;
    assert_eq!(all.billed_mb_ms(), 242_176);
    assert_eq!(all.requests(), 5);
    let gb_s = 242_176.0 / 1024.0 / 1000.0;
    close(all.billed_gb_s(), gb_s, 1e-12, "GB-s");
    close(
        all.usd(),
        gb_s * 0.0000166667 + 5.0 * 0.20 / 1e6,
        1e-12,
        "USD",
    );
    assert_eq!(USD_PER_GB_SECOND, 0.0000166667);
}

#[test]
fn turnaround_cdfs_and_completions_for_the_charts() {
    let s = summary();
    for sc in &s.scopes {
        let cdf = &sc.turnaround_cdf;
        if sc.count == 0 {
            assert!(cdf.is_empty(), "{}", sc.scope);
            continue;
        }
        assert!(
            cdf.windows(2)
                .all(|w| w[0].ms <= w[1].ms && w[0].fraction <= w[1].fraction),
            "{} CDF is monotone: {cdf:?}",
            sc.scope
        );
        let stats = sc.stats(Metric::Turnaround).unwrap();
        let (first, last) = (cdf[0], *cdf.last().unwrap());
        assert_eq!((first.fraction, last.fraction), (0.0, 1.0), "{}", sc.scope);
        assert_eq!(last.ms, stats.max, "{}", sc.scope);
    }
    // Turnarounds 1.2, 11, 22 (G1): three occupied cells with gaps between them.
    let g1 = &s.scope(Scope::Group(Group::G1)).turnaround_cdf;
    let fractions: Vec<f64> = g1.iter().map(|p| p.fraction).collect();
    assert_eq!(
        fractions,
        [0.0, 1.0 / 3.0, 1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0, 1.0]
    );

    assert_eq!(s.completions.total(), 5);
    let cumulative = s.completions.cumulative();
    assert_eq!(cumulative.last().unwrap().1, 5);
}
