//! The node experiments' cases and tables: SledgeScale's Fig. 3, 8 and 13,
//! and the studies the paper left out.

use super::Costs;
use super::admission::Admit;
use super::experiment::{CapacityCase, NodeCase, NodeRan, Offered, percent, ratio};
use super::run::{Estimates, NodeOptions, Spread};
use crate::table::Table;
use crate::table::fixed;
use faasched_policy::node::PreemptTest;
use faasched_report::node::{ALL, ScopeSummary};
use faasched_workload::node::Deadlines;

/// Seconds of arrivals per run: the paper's runs are "20 seconds each" (§4).
const SECONDS: f64 = 20.0;

/// The paper's node (1 dispatcher + 6 workers, §4.3–4.5), default costs,
/// exact estimates (its oracle for synthetic workloads), 10× deadlines.
fn options(workload: &str, seed: u64) -> NodeOptions {
    NodeOptions {
        workload: workload.to_string(),
        workers: 6,
        dispatchers: 1,
        spread: Spread::Equal,
        requests: None,
        seconds: SECONDS,
        seed,
        deadline: None,
        estimate: Estimates::Exact,
        preempt_test: PreemptTest::Paper,
        costs: Costs::default(),
        stretch: 1,
        admission: Default::default(),
    }
}

/// A deadline spec of a case, written here and known good.
fn deadlines(spec: &str) -> Deadlines {
    Deadlines::parse(spec).expect("a case's deadline spec parses")
}

fn policies(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Fig. 3: extreme bimodal under heavy load (the paper gives no level: 90%
/// and 95%), short requests due in 100 µs, long ones in 100 or 500 ms.
pub fn deadline_cases(seed: u64) -> Vec<NodeCase> {
    [100, 500]
        .map(|ms| NodeCase {
            title: format!("bimodal-extreme, long requests due in {ms} ms"),
            slug: format!("long-{ms}ms"),
            options: NodeOptions {
                deadline: Some(deadlines(&format!("long={ms}ms"))),
                ..options("bimodal-extreme", seed)
            },
            offered: Offered::Loads(vec![0.9, 0.95]),
            policies: policies(&["sledgescale"]),
        })
        .to_vec()
}

/// Per case, load and function: misses and the latency distribution.
pub fn deadline_table(ran: &[NodeRan]) -> Table {
    let mut t = Table::new(
        &[
            "case", "rate_rps", "function", "requests", "miss_pct", "p50_us", "p99_us", "p999_us",
        ],
        3,
    );
    for r in ran {
        for (l, load) in r.summary.loads.iter().enumerate() {
            for scope in ["short", "long"] {
                let Some(s) = r.scope(l, "sledgescale", scope) else {
                    continue;
                };
                let lat =
                    |f: fn(&faasched_report::Stats) -> f64| fixed(s.latency.as_ref().map(f), 1);
                t.push(vec![
                    r.case.slug.clone(),
                    format!("{:.0}", load.rate),
                    scope.to_string(),
                    s.requests.to_string(),
                    percent(s.miss_rate()),
                    lat(|l| l.p50),
                    lat(|l| l.p99),
                    lat(|l| l.p999),
                ]);
            }
        }
    }
    t.notes.push(
        "sledgescale on bimodal-extreme (10 us 99.5%, 10 ms 0.5%) at 90% and 95% load, short requests due in 10x their work (100 us); latency in us"
            .into(),
    );
    t
}

/// Fig. 8: the dispatch policies on the log-normal from light load to
/// saturation.
pub fn lognormal_cases(seed: u64) -> Vec<NodeCase> {
    vec![NodeCase {
        title: "lognormal, 1 dispatcher and 6 workers, rising load".into(),
        slug: "lognormal".into(),
        options: options("lognormal", seed),
        offered: Offered::Loads(vec![0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0]),
        policies: policies(&["sledge", "rr", "jsq", "lld", "sledgescale"]),
    }]
}

/// One row per (case, load, policy): the tail and the misses.
pub fn sweep_table(ran: &[NodeRan]) -> Table {
    let mut t = Table::new(
        &[
            "case",
            "rate_rps",
            "policy",
            "p999_slowdown",
            "miss_pct",
            "p999_us",
            "dropped",
        ],
        3,
    );
    for r in ran {
        for (l, load) in r.summary.loads.iter().enumerate() {
            for p in &load.policies {
                let s = r.scope(l, &p.policy, ALL).expect("an all scope");
                t.push(row(&r.case.slug, load.rate, &p.policy, s));
            }
        }
    }
    t.notes.push(
        "p999_slowdown: p99.9 of latency / work; miss_pct: finished after the deadline or dropped, of all requests; p999_us: p99.9 latency".into(),
    );
    t
}

fn row(case: &str, rate: f64, policy: &str, s: &ScopeSummary) -> Vec<String> {
    vec![
        case.to_string(),
        format!("{rate:.0}"),
        policy.to_string(),
        ratio(s.slowdown.as_ref().map(|x| x.p999)),
        percent(s.miss_rate()),
        fixed(s.latency.as_ref().map(|x| x.p999), 1),
        s.dropped.to_string(),
    ]
}

/// SIFT's relative deadlines in Fig. 13: 1.13 ms to 11.3 ms.
const SIFT_DEADLINES_US: [u64; 10] = [
    1_130, 2_260, 3_390, 4_520, 5_650, 6_780, 7_910, 9_040, 10_170, 11_300,
];

/// Fig. 13: SD-VBS at 14.4 kRPS, segmentation and classification due in
/// twice their work, SIFT's deadline from 1.13 to 11.3 ms.
pub fn sdvbs_cases(seed: u64) -> Vec<NodeCase> {
    SIFT_DEADLINES_US
        .map(|us| NodeCase {
            title: format!("sd-vbs at 14.4 kRPS, sift due in {} ms", us as f64 / 1e3),
            slug: format!("sift-{us}us"),
            // The paper's estimator for its real-world functions (§4).
            options: NodeOptions {
                deadline: Some(deadlines(&format!(
                    "sift={us}us,segmentation=2x,classification=2x"
                ))),
                estimate: Estimates::Median,
                ..options("sd-vbs", seed)
            },
            offered: Offered::Rates(vec![14_400.0]),
            policies: policies(&["sledgescale", "darc", "darc-paper"]),
        })
        .to_vec()
}

/// Per SIFT deadline and policy: the miss rate, overall and per function.
pub fn sdvbs_table(ran: &[NodeRan]) -> Table {
    let mut t = Table::new(
        &[
            "sift_deadline_ms",
            "policy",
            "miss_pct",
            "sift_miss_pct",
            "segmentation_miss_pct",
            "classification_miss_pct",
            "sift_p99_us",
        ],
        2,
    );
    for (r, us) in ran.iter().zip(SIFT_DEADLINES_US) {
        for p in &r.case.policies {
            let miss = |scope| percent(r.scope(0, p, scope).and_then(|s| s.miss_rate()));
            let sift = r.scope(0, p, "sift");
            t.push(vec![
                format!("{:.2}", us as f64 / 1e3),
                p.clone(),
                miss(ALL),
                miss("sift"),
                miss("segmentation"),
                miss("classification"),
                fixed(sift.and_then(|s| s.latency.as_ref()).map(|l| l.p99), 1),
            ]);
        }
    }
    t.notes.push(
        "sd-vbs (sift 113 us 90%, segmentation 1,100 us 9%, classification 2,070 us 1%) at 14,400 requests/s on 6 workers; segmentation and classification due in 2x their work".into(),
    );
    t
}

/// What the paper left out: the SRPT control and `sledgescale+`, a
/// misprediction sweep, and dispatcher groups over the same six workers.
pub fn beyond_cases(seed: u64) -> Vec<NodeCase> {
    let mut cases = Vec::new();
    for w in ["bimodal-high", "lognormal"] {
        cases.push(NodeCase {
            title: format!("control: {w} at 80% load"),
            slug: format!("control-{w}"),
            options: options(w, seed),
            offered: Offered::Loads(vec![0.8]),
            policies: policies(&["sledgescale", "sledgescale+", "srpt", "lld"]),
        });
    }
    for error in [0.0, 0.25, 0.5, 0.75, 1.0] {
        cases.push(NodeCase {
            title: format!("bimodal-high at 80% load, estimates off by up to {error}"),
            slug: format!("noisy-{error}"),
            options: NodeOptions {
                estimate: Estimates::Noisy(error),
                ..options("bimodal-high", seed)
            },
            offered: Offered::Loads(vec![0.8]),
            policies: policies(&["sledgescale", "srpt", "lld"]),
        });
    }
    for (dispatchers, workers, spread) in [
        (1, 6, Spread::Equal),
        (2, 3, Spread::Equal),
        (3, 2, Spread::Equal),
        (3, 2, Spread::Random),
    ] {
        let how = match spread {
            Spread::Random => "-random",
            Spread::Equal => "",
        };
        cases.push(NodeCase {
            title: format!(
                "exponential at 80% load, {dispatchers} dispatcher(s) of {workers} workers{how}"
            ),
            slug: format!("groups-{dispatchers}x{workers}{how}"),
            options: NodeOptions {
                dispatchers,
                workers,
                spread,
                ..options("exponential", seed)
            },
            offered: Offered::Loads(vec![0.8]),
            policies: policies(&["sledgescale"]),
        });
    }
    cases
}

/// The backlog bound the held-out cases run, ms per worker: the best of
/// the tuning cases for `sledgescale+`, the default policy of `node serve`.
pub const ADMISSION_CHOSEN_MS: f64 = 1.0;

/// Admission control past capacity and below it. Tuning: the exponential
/// at 150% load (seed `seed`), unbounded against backlog bounds of 0.2 to
/// 2 ms per worker and a deadline test alone. Held out: high bimodal and
/// the log-normal (seed `seed + 1`) at 80%, 120% and 200% load, unbounded
/// against the bound chosen on the tuning case
/// ([`ADMISSION_CHOSEN_MS`]) and the deadline test alone.
pub fn admission_cases(seed: u64) -> Vec<NodeCase> {
    let bounded = |ms: f64| Admit {
        max_backlog_ms: Some(ms),
        ..Admit::default()
    };
    let late = Admit {
        refuse_late: true,
        ..Admit::default()
    };
    let mut cases = Vec::new();
    let mut tuning = vec![("open".to_string(), Admit::default())];
    tuning.extend([0.2, 0.5, 1.0, 2.0].map(|ms| (format!("backlog-{ms}ms"), bounded(ms))));
    tuning.push(("late".to_string(), late));
    for (how, admission) in tuning {
        cases.push(NodeCase {
            title: format!("tuning: exponential at 150% load, {how}"),
            slug: format!("tune-exponential-{how}"),
            options: NodeOptions {
                seconds: 1.0,
                admission,
                ..options("exponential", seed)
            },
            offered: Offered::Loads(vec![1.5]),
            policies: policies(&["sledgescale+", "sledge"]),
        });
    }
    // Seconds enough for tens of thousands of requests at 200% load.
    for (w, seconds) in [("bimodal-high", 5.0), ("lognormal", 30.0)] {
        for (how, admission) in [
            ("open".to_string(), Admit::default()),
            (
                format!("backlog-{ADMISSION_CHOSEN_MS}ms"),
                bounded(ADMISSION_CHOSEN_MS),
            ),
            ("late".to_string(), late),
        ] {
            cases.push(NodeCase {
                title: format!("held out: {w}, {how}"),
                slug: format!("{w}-{how}"),
                options: NodeOptions {
                    seconds,
                    admission,
                    ..options(w, seed + 1)
                },
                offered: Offered::Loads(vec![0.8, 1.2, 2.0]),
                policies: policies(&["sledgescale+", "sledge"]),
            });
        }
    }
    cases
}

fn capacity_case(
    figure: &str,
    workload: &str,
    target: &str,
    seconds: f64,
    policies_: &[&str],
    paper: &[(&str, f64)],
    seed: u64,
) -> CapacityCase {
    CapacityCase {
        title: format!("{figure}: {workload}, capacity at {target}"),
        slug: workload.to_string(),
        options: NodeOptions {
            seconds,
            ..options(workload, seed)
        },
        target: target.to_string(),
        seeds: 3,
        policies: policies(policies_),
        paper: paper.iter().map(|(p, r)| (p.to_string(), *r)).collect(),
    }
}

/// Fig. 9: fixed 10 µs requests, p99.9 latency 200 µs; "SledgeScale can
/// sustain 1.47x more traffic than DARC and Shinjuku" (§4.4). Probes of 1 s
/// (at least 20,000 requests).
pub fn fixed_cases(seed: u64) -> Vec<CapacityCase> {
    vec![capacity_case(
        "Fig. 9",
        "fixed",
        "p99.9-latency=200us",
        1.0,
        &["sledgescale", "sledge", "darc", "shinjuku"],
        &[("darc", 1.47), ("shinjuku", 1.47)],
        seed,
    )]
}

/// Fig. 10: exponential, p99.9 latency 10 ms; SledgeScale 44 K requests/s,
/// "1.7x the throughput of DARC and 1.2x that of Shinjuku" (§4.4), DARC
/// with the paper's 3 + 3 workers (`darc-paper`) and with Perséphone's plan.
pub fn exponential_cases(seed: u64) -> Vec<CapacityCase> {
    vec![capacity_case(
        "Fig. 10",
        "exponential",
        "p99.9-latency=10ms",
        1.0,
        &["sledgescale", "darc", "darc-paper", "shinjuku"],
        &[("darc-paper", 1.7), ("shinjuku", 1.2)],
        seed,
    )]
}

/// Fig. 11: the log-normal, p99.9 slowdown 200; "SledgeScale sustains a
/// load 5.9 times that of DARC and 47 times that of Shinjuku" (§4.4). The
/// paper's DARC is its 3 + 3 split (`darc-paper`); Perséphone's plan
/// (`darc`) beside it.
pub fn lognormal_capacity_cases(seed: u64) -> Vec<CapacityCase> {
    vec![capacity_case(
        "Fig. 11",
        "lognormal",
        "p99.9-slowdown=200",
        1.0,
        &["sledgescale", "darc", "darc-paper", "shinjuku"],
        &[("darc-paper", 5.9), ("shinjuku", 47.0)],
        seed,
    )]
}

/// Fig. 12: high bimodal, p99.9 slowdown 40, the median of the last 256 as
/// estimates; "1.16x more load than DARC and 18.35x more than Shinjuku"
/// (multi-queue) (§4.4); `sledgescale+` beside it.
pub fn bimodal_cases(seed: u64) -> Vec<CapacityCase> {
    let mut case = capacity_case(
        "Fig. 12",
        "bimodal-high",
        "p99.9-slowdown=40",
        1.0,
        &["sledgescale", "sledgescale+", "darc", "shinjuku-mq"],
        &[("darc", 1.16), ("shinjuku-mq", 18.35)],
        seed,
    );
    case.options.estimate = Estimates::Median;
    vec![case]
}

/// Per case and policy: the capacity, its spread over the seeds, and the
/// first policy's capacity over it beside the paper's.
pub fn capacity_table(ran: &[(CapacityCase, super::capacity::Capacities)]) -> Table {
    let mut t = Table::new(
        &[
            "case",
            "policy",
            "capacity_rps",
            "min_rps",
            "max_rps",
            "load",
            "ratio",
            "paper_ratio",
        ],
        2,
    );
    for (case, found) in ran {
        let first = found.policies.first().map(|p| p.capacity_rps);
        for p in &found.policies {
            let paper = case.paper.iter().find(|(name, _)| *name == p.policy);
            let ratio = match first {
                Some(f) if p.capacity_rps > 0.0 => Some(f / p.capacity_rps),
                _ => None,
            };
            t.push(vec![
                case.slug.clone(),
                p.policy.clone(),
                format!("{:.0}", p.capacity_rps),
                format!("{:.0}", p.min_rps),
                format!("{:.0}", p.max_rps),
                format!("{:.3}", p.capacity_rps / found.workers_capacity),
                ratio.map_or_else(|| "-".into(), |r| format!("{r:.2}")),
                paper.map_or_else(|| "-".into(), |(_, r)| format!("{r:.2}")),
            ]);
        }
    }
    t.notes.push(
        "capacity: median over 3 seeds of the highest rate meeting the target with at most 0.1% dropped; load: over the workers' capacity; ratio: the first policy's capacity over this one's".into(),
    );
    t
}
