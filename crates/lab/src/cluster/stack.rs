//! Not in any of the papers: the three levels composed. The same routers
//! in front of servers that run their work under each discipline the
//! other levels study, to ask whether the router that wins on servers
//! sharing their cores still wins when the servers run FIFO, SFS, ALPS or
//! SledgeScale's EDF, and by how much.
//!
//! One seed's population can decide the answer alone (a heavy function
//! hashed home to one server), so every workload runs on [`SEEDS`]
//! seeds and the table counts, per discipline, the seeds each router won
//! and gives medians over them. Given a day of the Azure Functions 2019
//! trace, the experiment replays it too: the real population, its real
//! minute-by-minute load, where the built-in clusters are fitted shapes.

use super::experiment::{CaseRan, ClusterCase};
use super::run::{AZURE_FUNCTIONS, ClusterOptions, FUNCTIONBENCH};
use crate::level::Settings;
use crate::table::{NONE, Table, fixed};
use anyhow::{Context, Result};
use faasched_workload::cluster::HEAVY_LOAD_THREADS;
use faasched_workload::traces::azure2019;
use std::path::Path;

/// The routers every case runs: CH-RLU, its bounded-load parent, the load
/// balancers that ignore locality, and random placement as the floor.
pub const ROUTERS: [&str; 5] = ["ch-rlu", "ch-bl", "least-loaded", "power-of-two", "random"];

/// What runs each server's work: processor sharing (the cluster papers'
/// model), the kernel model under the stock scheduler, run-to-completion
/// FIFO, SFS and ALPS, and a node engine under SledgeScale and under its
/// SRPT control. Left out: node policies with a quantum of 1 ms or less
/// (rr, shinjuku), whose preemptions on second-long functions make a run
/// hundreds of times slower than the rest.
pub const SERVERS: [&str; 7] = [
    "ps",
    "os:cfs",
    "os:fifo",
    "os:sfs",
    "os:alps",
    "node:sledgescale",
    "node:srpt",
];

/// Seeds each workload runs on: the experiment's seed and the next ones.
pub const SEEDS: u64 = 5;

/// Invocations of the Azure-like cases.
const AZURE_INVOCATIONS: u64 = 100_000;

/// Seconds of the FunctionBench clients' sends: the live figures' half
/// hour.
const FUNCTIONBENCH_SECONDS: f64 = 1_800.0;

/// What the table calls the trace's workload.
const TRACE: &str = "azure-2019-trace";

/// The workloads: the CH-RLU paper's simulated Azure-like cluster (1,000
/// functions at 70% load on 8 servers of 32 cores and 64 GB), its live
/// FunctionBench cluster (120 closed-loop clients on 8 servers of 16 cores
/// and 32 GB) and, given one, `day` of the trace in its folder on the
/// Azure-like cluster's servers (every function invoked at least twice,
/// the whole day).
fn workloads(seed: u64, trace: Option<(&Path, u32)>) -> Vec<(&'static str, ClusterOptions)> {
    let azure = ClusterOptions {
        workload: AZURE_FUNCTIONS.to_string(),
        servers: 8,
        cores: 32,
        memory_gb: 64.0,
        load: 0.7,
        invocations: Some(AZURE_INVOCATIONS),
        seed,
        ..ClusterOptions::default()
    };
    let functionbench = ClusterOptions {
        workload: FUNCTIONBENCH.to_string(),
        clients: HEAVY_LOAD_THREADS,
        seconds: FUNCTIONBENCH_SECONDS,
        seed,
        ..ClusterOptions::default()
    };
    let mut workloads = vec![("azure", azure.clone()), ("functionbench", functionbench)];
    if let Some((dir, day)) = trace {
        let replay = ClusterOptions {
            trace: Some(dir.to_path_buf()),
            day: Some(day),
            invocations: None,
            ..azure
        };
        workloads.push(("trace", replay));
    }
    workloads
}

/// The workload `o` runs, as the table names it.
fn workload(o: &ClusterOptions) -> &str {
    match o.trace {
        Some(_) => TRACE,
        None => &o.workload,
    }
}

/// A case per workload, server discipline and seed (from the settings'
/// seed), each under every router; the trace's first day is found here,
/// so that a folder without one is refused before anything runs.
pub fn cases(settings: &Settings) -> Result<Vec<ClusterCase>> {
    let trace = match &settings.trace {
        Some(dir) => {
            let day = azure2019::first_day(dir).context("--trace")?;
            Some((dir.as_path(), day))
        }
        None => None,
    };
    let seed = settings.seed;
    let mut cases = Vec::new();
    for s in seed..seed + SEEDS {
        for (slug, options) in workloads(s, trace) {
            for server in SERVERS {
                cases.push(ClusterCase {
                    title: format!(
                        "{} on {} servers of {} cores, servers run as {server}, seed {s}",
                        workload(&options),
                        options.servers,
                        options.cores
                    ),
                    slug: format!("{slug}-{}-seed{s}", server.replace(':', "-")),
                    options: ClusterOptions {
                        server: server.parse()?,
                        ..options.clone()
                    },
                    policies: ROUTERS.iter().map(|r| r.to_string()).collect(),
                });
            }
        }
    }
    Ok(cases)
}

/// What one router measured in one case, set beside the case's best.
struct Placing {
    /// 1 for the lowest mean slowdown in the case.
    rank: usize,
    /// Its mean slowdown over the best's.
    vs_best: Option<f64>,
    global_increase: Option<f64>,
    cold: Option<f64>,
    node_miss: Option<f64>,
    os_preemptions: Option<f64>,
    /// Cost per 1,000 finished invocations, USD.
    usd_per_1k: Option<f64>,
}

/// Each row of `r` placed within its case, in the rows' order.
fn placings(r: &CaseRan) -> Vec<Placing> {
    let slowdown = |i: usize| r.rows[i].slowdown_mean;
    let mut order: Vec<usize> = (0..r.rows.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |i| slowdown(i).unwrap_or(f64::INFINITY);
        key(a).total_cmp(&key(b))
    });
    let best = order.first().and_then(|&i| slowdown(i));
    r.rows
        .iter()
        .enumerate()
        .map(|(i, row)| Placing {
            rank: order.iter().position(|&j| j == i).map_or(0, |k| k + 1),
            vs_best: slowdown(i).zip(best).map(|(s, b)| s / b),
            global_increase: row.global_increase,
            cold: row.cold_ratio,
            node_miss: row.node_miss_ratio,
            os_preemptions: row.os_preemptions,
            usd_per_1k: row
                .cost_usd
                .filter(|_| row.finished > 0)
                .map(|usd| usd / row.finished as f64 * 1e3),
        })
        .collect()
}

/// The median of the values present, `None` if none is.
fn median_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().collect();
    (!v.is_empty()).then(|| crate::bench::median(v))
}

/// A row per workload, discipline and router, over the seeds: how many
/// seeds it won (ranked first by mean slowdown), its median rank, its
/// median mean slowdown over the best's, and the median of what every
/// level measured.
pub fn table(ran: &[CaseRan]) -> Table {
    let mut t = Table::new(
        &[
            "case",
            "policy",
            "seeds",
            "wins",
            "rank_p50",
            "vs_best_p50",
            "global_increase_pct_p50",
            "cold_pct_p50",
            "node_miss_pct_p50",
            "os_preempt_p50",
            "usd_per_1k_p50",
        ],
        2,
    );
    // The cases of one workload and discipline, in the order first seen.
    let mut groups: Vec<(String, Vec<&CaseRan>)> = Vec::new();
    for r in ran {
        let key = format!("{}/{}", workload(&r.case.options), r.case.options.server);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    let percent = |v: Option<f64>| fixed(v.map(|v| v * 100.0), 2);
    for (key, runs) in &groups {
        let placed: Vec<(&CaseRan, Vec<Placing>)> =
            runs.iter().map(|&r| (r, placings(r))).collect();
        for policy in runs[0].rows.iter().map(|row| &row.policy) {
            let mine: Vec<&Placing> = placed
                .iter()
                .filter_map(|(r, p)| {
                    r.rows
                        .iter()
                        .position(|row| row.policy == *policy)
                        .map(|i| &p[i])
                })
                .collect();
            let median = |f: fn(&Placing) -> Option<f64>| median_of(mine.iter().map(|p| f(p)));
            t.push(vec![
                key.clone(),
                policy.clone(),
                mine.len().to_string(),
                mine.iter().filter(|p| p.rank == 1).count().to_string(),
                fixed(median(|p| Some(p.rank as f64)), 0),
                median(|p| p.vs_best).map_or_else(|| NONE.to_string(), |v| format!("{v:.2}x")),
                percent(median(|p| p.global_increase)),
                percent(median(|p| p.cold)),
                percent(median(|p| p.node_miss)),
                fixed(median(|p| p.os_preemptions), 2),
                fixed(median(|p| p.usd_per_1k), 5),
            ]);
        }
    }
    t.notes.push(format!(
        "over {SEEDS} seeds per workload; wins: seeds where the router had the lowest mean \
         slowdown of the case; rank_p50, vs_best_p50: its median rank and median mean slowdown \
         over the case's best; global_increase_pct: mean slowdown - 1; cold_pct: cold starts of \
         the finished invocations (what locality saves); node_miss_pct: of the \
         invocations that reached a node server, late or dropped there (deadline 10 x the warm \
         time); os_preempt: the kernel's preemptions per invocation; usd_per_1k: the \
         executions' cost (first run to finish, as AWS Lambda bills) per 1,000 finished \
         invocations; every seed's rows are in the case's summary files"
    ));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_report::cluster::ClusterRow;
    use serde_json::json;

    fn row(policy: &str, slowdown: Option<f64>, finished: u64, usd: f64) -> ClusterRow {
        ClusterRow {
            policy: policy.into(),
            invocations: finished,
            finished,
            slowdown_mean: slowdown,
            global_increase: slowdown.map(|s| s - 1.0),
            cost_usd: Some(usd),
            ..ClusterRow::default()
        }
    }

    /// A case of the plan's first workload and discipline, its rows the
    /// routers' mean slowdowns (`None`: nothing finished) at $2 a run.
    fn ran(case: ClusterCase, slowdowns: &[(&str, Option<f64>)]) -> CaseRan {
        CaseRan {
            case,
            settings: json!({}),
            rows: slowdowns
                .iter()
                .map(|&(policy, s)| row(policy, s, if s.is_some() { 1000 } else { 0 }, 2.0))
                .collect(),
            decisions: Vec::new(),
        }
    }

    #[test]
    fn routers_are_ranked_within_each_seed_and_summed_over_the_seeds() {
        let plan = plan(1);
        let per_seed = 2 * SERVERS.len();
        // azure-ps on three seeds: random wins two, ch-rlu one.
        let runs = [
            ran(
                plan[0].clone(),
                &[("ch-rlu", Some(3.0)), ("random", Some(1.5))],
            ),
            ran(
                plan[per_seed].clone(),
                &[("ch-rlu", Some(1.0)), ("random", Some(2.0))],
            ),
            ran(
                plan[2 * per_seed].clone(),
                &[("ch-rlu", Some(4.0)), ("random", Some(1.0))],
            ),
        ];
        let t = table(&runs);
        let cells: Vec<String> = t.rows.iter().map(|r| r[..8].join(" ")).collect();
        // ch-rlu over the best: 2, 1, 4 (median 2), its increases 2, 0, 3;
        // random: 1, 2, 1 and 0.5, 1, 0.
        assert_eq!(
            cells,
            [
                "azure-functions/ps ch-rlu 3 1 2 2.00x 200.00 -",
                "azure-functions/ps random 3 2 1 1.00x 50.00 -"
            ]
        );
        // $2 over 1,000 finished invocations.
        assert_eq!(t.rows[0][10], "2.00000");
    }

    #[test]
    fn a_router_that_finished_nothing_ranks_last_without_a_ratio() {
        let plan = plan(1);
        let t = table(&[ran(
            plan[1].clone(),
            &[("least-loaded", None), ("ch-rlu", Some(2.0))],
        )]);
        let cells: Vec<String> = t.rows.iter().map(|r| r[..6].join(" ")).collect();
        assert_eq!(
            cells,
            [
                "azure-functions/os:cfs least-loaded 1 0 2 -",
                "azure-functions/os:cfs ch-rlu 1 1 1 1.00x"
            ]
        );
    }

    /// The built-in clusters' cases from `seed`.
    fn plan(seed: u64) -> Vec<ClusterCase> {
        cases(&Settings {
            seed,
            ..Settings::default()
        })
        .unwrap()
    }

    /// The Azure 2019 reader's fixture: a day of five functions.
    fn fixture() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../workload/tests/fixtures/azure2019")
    }

    #[test]
    fn a_trace_adds_its_day_on_the_azure_like_servers_to_every_seed() {
        let with = |trace| Settings {
            seed: 3,
            trace: Some(trace),
            ..Settings::default()
        };
        let planned = cases(&with(fixture())).unwrap();
        let per_seed = 3 * SERVERS.len();
        assert_eq!(planned.len(), per_seed * SEEDS as usize);
        let replay = &planned[2 * SERVERS.len()];
        assert_eq!(replay.slug, "trace-ps-seed3");
        assert_eq!(replay.options.trace.as_deref(), Some(fixture().as_path()));
        assert_eq!(replay.options.day, Some(1));
        assert_eq!(replay.options.invocations, None);
        assert_eq!(
            (
                replay.options.servers,
                replay.options.cores,
                replay.options.memory_gb
            ),
            (8, 32, 64.0)
        );
        assert!(replay.title.starts_with("azure-2019-trace on 8 servers"));
        assert_eq!(planned[per_seed + 2 * SERVERS.len()].slug, "trace-ps-seed4");
        // The table groups its rows apart from the Azure-like cluster's.
        let t = table(&[ran(replay.clone(), &[("random", Some(1.0))])]);
        assert_eq!(t.rows[0][0], "azure-2019-trace/ps");
        // A folder with no day of the trace is refused at the plan.
        let empty = tempfile::tempdir().unwrap();
        let err = format!(
            "{:#}",
            cases(&with(empty.path().to_path_buf())).unwrap_err()
        );
        assert!(err.contains("--trace") && err.contains("no day"), "{err}");
    }

    #[test]
    fn every_workload_meets_every_discipline_on_every_seed() {
        let cases = plan(7);
        assert_eq!(cases.len(), 2 * SERVERS.len() * SEEDS as usize);
        assert!(cases.iter().all(|c| c.policies.len() == ROUTERS.len()));
        assert_eq!(cases[0].slug, "azure-ps-seed7");
        assert_eq!(cases[5].slug, "azure-node-sledgescale-seed7");
        assert_eq!(cases[5].options.server.to_string(), "node:sledgescale");
        assert_eq!(cases[13].options.workload, FUNCTIONBENCH);
        assert_eq!(cases[14].options.seed, 8);
    }
}
