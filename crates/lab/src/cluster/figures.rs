//! The cluster experiments' cases and tables: the CH-RLU paper's Figs. 7,
//! 8, 12–13 and 14 (Fuerst, Sharma, HPDC '22).

use super::experiment::{CaseRan, ClusterCase};
use super::run::{
    AZURE_FUNCTIONS, ClusterOptions, FUNCTIONBENCH, FUNCTIONBENCH_BURSTS, FUNCTIONBENCH_RISING,
    Loads,
};
use crate::table::Table;
use crate::table::fixed;
use faasched_workload::cluster::{HEAVY_LOAD_THREADS, LOW_LOAD_THREADS};

/// Seconds of the live figures' closed-loop runs: half an hour of
/// clients' sends (the paper gives no length).
const LIVE_SECONDS: f64 = 1_800.0;

/// The live figures' contenders (§6.1): OpenWhisk with GreedyDual and with
/// its default TTL, least loaded, CH-BL and CH-RLU, all but OW+TTL over
/// GreedyDual.
const LIVE_POLICIES: [&str; 5] = [
    "ch-rlu",
    "ch-bl",
    "least-loaded",
    "openwhisk",
    "openwhisk:ttl",
];

fn policies(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The paper's live cluster (§6.1): 8 invokers of 16 cores and 32 GB,
/// GreedyDual, loads every 5 s; `clients` closed-loop clients over ten
/// copies of each Table 1 function.
fn live(slug: &str, title: &str, clients: u32, seed: u64) -> ClusterCase {
    ClusterCase {
        title: title.to_string(),
        slug: slug.to_string(),
        options: ClusterOptions {
            workload: FUNCTIONBENCH.to_string(),
            clients,
            seconds: LIVE_SECONDS,
            seed,
            ..ClusterOptions::default()
        },
        policies: policies(&LIVE_POLICIES),
    }
}

/// Fig. 7: low load, 20 clients.
pub fn low_cases(seed: u64) -> Vec<ClusterCase> {
    vec![live(
        "low",
        "Fig. 7: FunctionBench, 20 closed-loop clients, 8 x 16 cores",
        LOW_LOAD_THREADS,
        seed,
    )]
}

/// Fig. 8: heavy load, 120 clients.
pub fn heavy_cases(seed: u64) -> Vec<ClusterCase> {
    vec![live(
        "heavy",
        "Fig. 8: FunctionBench, 120 closed-loop clients, 8 x 16 cores",
        HEAVY_LOAD_THREADS,
        seed,
    )]
}

/// Fig. 9: the heavy load's clients, every 30 s two of the ten most
/// weighted functions made ten times as frequent.
pub fn bursts_cases(seed: u64) -> Vec<ClusterCase> {
    let mut case = live(
        "bursts",
        "Fig. 9: FunctionBench, 120 closed-loop clients, two top functions bursting every 30 s",
        HEAVY_LOAD_THREADS,
        seed,
    );
    case.options.workload = FUNCTIONBENCH_BURSTS.to_string();
    vec![case]
}

/// Fig. 10: an open-loop burst rising from 2 to 18 invocations per second
/// over 25 minutes, held to 30.
pub fn rising_cases(seed: u64) -> Vec<ClusterCase> {
    let mut case = live(
        "rising",
        "Fig. 10: FunctionBench, open loop rising to 18 invocations/s at 25 min",
        HEAVY_LOAD_THREADS,
        seed,
    );
    case.options.workload = FUNCTIONBENCH_RISING.to_string();
    vec![case]
}

/// The simulated cluster of Figs. 12–14: "256 CPUs and 512 GB" (§6.3).
const SIM_CPUS: u32 = 256;
/// See [`SIM_CPUS`].
const SIM_MEMORY_GB: u32 = 512;

/// An `azure-functions` population of 1,000 functions at 70% load on
/// `servers` servers sharing [`SIM_CPUS`] and [`SIM_MEMORY_GB`].
fn simulated(servers: u32, invocations: u64, contention: f64, seed: u64) -> ClusterOptions {
    ClusterOptions {
        workload: AZURE_FUNCTIONS.to_string(),
        servers,
        cores: SIM_CPUS / servers,
        memory_gb: f64::from(SIM_MEMORY_GB / servers),
        load: 0.7,
        invocations: Some(invocations),
        contention,
        seed,
        ..ClusterOptions::default()
    }
}

/// Figs. 12 and 13: the paper's simulation, 1,000 Azure-like functions and
/// about a million invocations, on 8 servers of 32 cores.
pub fn sim_cases(seed: u64) -> Vec<ClusterCase> {
    vec![ClusterCase {
        title: "Figs. 12-13: azure-functions, 1,000 functions, 8 x 32 cores, 64 GB each".into(),
        slug: "azure".into(),
        options: simulated(8, 1_000_000, 0.0, seed),
        policies: policies(&["least-loaded", "ch-bl", "ch-rlu", "greedy"]),
    }]
}

/// Server counts of Fig. 14 ("4 servers with 64 CPUs ... 8 servers with 32
/// CPUs, etc.").
const SIZES: [u32; 5] = [4, 8, 16, 32, 64];

/// γ of the contention runs of Fig. 14: each invocation on a server runs
/// 0.2% slower per invocation in flight there (the paper blames "lock and
/// other resource contention" on large servers and gives no number).
pub const SIZE_CONTENTION: f64 = 0.002;

/// Fig. 14: 256 CPUs and 512 GB split over 4 to 64 servers, without and
/// with contention.
pub fn size_cases(seed: u64) -> Vec<ClusterCase> {
    let mut cases = Vec::new();
    for contention in [0.0, SIZE_CONTENTION] {
        for n in SIZES {
            let tag = if contention > 0.0 { "-contention" } else { "" };
            cases.push(ClusterCase {
                title: format!(
                    "Fig. 14: {n} servers of {} cores, contention {contention}",
                    SIM_CPUS / n
                ),
                slug: format!("servers-{n}{tag}"),
                options: simulated(n, 300_000, contention, seed),
                policies: policies(&["least-loaded", "ch-rlu", "greedy"]),
            });
        }
    }
    cases
}

/// What the paper left out: an ablation of CH-RLU's parts, and what stale
/// loads cost each router (loads published every 5 s against exact loads
/// at every change), power-of-two choices among them, on the simulated
/// Azure cluster (300,000 invocations).
pub fn beyond_cases(seed: u64) -> Vec<ClusterCase> {
    let mut cases = vec![ClusterCase {
        title: "Ablation: ch-rlu without each of its parts, azure-functions on 8 x 32 cores".into(),
        slug: "ablation".into(),
        options: simulated(8, 300_000, 0.0, seed),
        policies: policies(&[
            "ch-rlu",
            "ch-rlu-no-noise",
            "ch-rlu-flat-bound",
            "ch-rlu-no-chain",
            "ch-rlu-all-sampled",
            "ch-bl",
        ]),
    }];
    for loads in [Loads::Published, Loads::Exact] {
        let (slug, what) = match loads {
            Loads::Published => ("stale", "loads published every 5 s"),
            Loads::Exact => ("fresh", "exact loads at every change"),
        };
        let mut options = simulated(8, 300_000, 0.0, seed);
        options.loads = loads;
        cases.push(ClusterCase {
            title: format!("Staleness: {what}, azure-functions on 8 x 32 cores"),
            slug: slug.into(),
            options,
            policies: policies(&[
                "ch-rlu",
                "ch-bl",
                "least-loaded",
                "power-of-two",
                "greedy",
                "random",
            ]),
        });
    }
    cases
}

/// One row per (case, policy): what the paper's figures compare, and the
/// paper's number where it gives one (`paper`: case slug, policy, text).
pub fn cluster_table(ran: &[CaseRan], paper: &[(&str, &str, &str)]) -> Table {
    let mut t = Table::new(
        &[
            "case",
            "policy",
            "invocations",
            "dropped",
            "cold_pct",
            "global_increase_pct",
            "fn_slowdown_p50",
            "slowdown_p99",
            "load_variance",
            "paper",
        ],
        2,
    );
    let percent = |v: Option<f64>| fixed(v.map(|v| v * 100.0), 2);
    for r in ran {
        for row in &r.rows {
            let said = paper
                .iter()
                .find(|(case, policy, _)| *case == r.case.slug && *policy == row.policy)
                .map_or("-", |(_, _, text)| text);
            t.push(vec![
                r.case.slug.clone(),
                row.policy.clone(),
                row.invocations.to_string(),
                row.dropped.to_string(),
                percent(row.cold_ratio),
                percent(row.global_increase),
                fixed(row.function_slowdown_p50, 2),
                fixed(row.slowdown_p99, 2),
                format!("{:.4}", row.load_variance),
                said.to_string(),
            ]);
        }
    }
    t.notes.push(
        "global_increase_pct: mean slowdown - 1 (the paper's global latency increase); fn_slowdown_p50: median over functions of their mean slowdown; slowdown = latency / the function's warm time; load_variance: mean variance of the published loads across servers".into(),
    );
    t
}

/// What the paper says of each figure's policies, for the table.
pub const LOW_PAPER: &[(&str, &str, &str)] = &[
    ("low", "ch-rlu", "1-2%, as ch-bl and openwhisk"),
    ("low", "least-loaded", "significantly worse"),
];

/// See [`LOW_PAPER`].
pub const HEAVY_PAPER: &[(&str, &str, &str)] = &[
    ("heavy", "ch-rlu", "+5%"),
    ("heavy", "openwhisk", "+11%"),
    ("heavy", "openwhisk:ttl", "+14%"),
    ("heavy", "ch-bl", "over +40%"),
    ("heavy", "least-loaded", "over +40%"),
];

/// See [`LOW_PAPER`].
pub const BURSTS_PAPER: &[(&str, &str, &str)] = &[(
    "bursts",
    "ch-rlu",
    "17% below openwhisk, 60% below openwhisk:ttl",
)];

/// See [`LOW_PAPER`].
pub const RISING_PAPER: &[(&str, &str, &str)] = &[
    ("rising", "ch-rlu", "+25%, 30% below openwhisk"),
    ("rising", "ch-bl", "over +100%"),
    ("rising", "least-loaded", "over +200%"),
];

/// See [`LOW_PAPER`].
pub const SIM_PAPER: &[(&str, &str, &str)] = &[
    ("azure", "least-loaded", "fn slowdown p50 ~4"),
    ("azure", "ch-bl", "fn slowdown p50 2.4"),
    ("azure", "ch-rlu", "fn slowdown p50 2.4"),
    ("azure", "greedy", "global slowdown ~7"),
];

/// See [`LOW_PAPER`].
pub const SIZE_PAPER: &[(&str, &str, &str)] = &[
    (
        "servers-4-contention",
        "ch-rlu",
        "20% below greedy at every size",
    ),
    (
        "servers-64-contention",
        "least-loaded",
        "worsens with more servers",
    ),
];
