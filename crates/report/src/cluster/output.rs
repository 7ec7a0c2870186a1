//! A cluster run's outputs: a row per policy (its outcomes' metrics and the
//! engine's), the terminal table, `summary.json` and `summary.csv`, and a
//! row per policy and function in `functions.csv`.

use super::metrics::{ClusterSummary, FunctionSummary};
use crate::Result;
use crate::cost::{Cost, usd};
use crate::output::{FAASCHED_VERSION, write_csv, write_summary};
use crate::staged::Staged;
use crate::table;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::Path;

/// The version of `summary.json`'s layout.
pub const CLUSTER_SCHEMA_VERSION: u32 = 1;

/// What the engine measured of a policy's run beyond its outcomes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterUsage {
    /// Invocations dropped because no server memory could be freed for
    /// their container (among the summary's drops).
    pub dropped_for_memory: u64,
    /// Idle containers evicted to make room, over every server.
    pub evictions: u64,
    /// Invocations that waited on their server for memory.
    pub memory_waits: u64,
    /// Their total wait, s.
    pub memory_wait_s: f64,
    /// The mean over the load publications of the variance of the
    /// published loads across servers (the paper's load evenness).
    pub load_variance: f64,
    /// Per server, busy core-time over the span and its cores.
    pub utilisation: Vec<f64>,
    /// The published loads across servers over the run, oldest first:
    /// what `report.html` draws against time (empty by default, and then
    /// the chart says so).
    pub load_series: Vec<LoadPoint>,
}

/// The servers' published loads at one moment of a run (or averaged over
/// consecutive publications): the mean and the variance across servers,
/// the paper's load evenness against time (Figs. 8c, 9b).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadPoint {
    /// Simulated time of the (first) publication, s.
    pub at_s: f64,
    /// Mean load (load average over cores) across servers.
    pub mean: f64,
    /// Population variance of the load across servers.
    pub variance: f64,
}

/// One policy's line of every output. Ratios are shares (0.05 = 5%);
/// latency is in ms; `None` (JSON `null`, an empty CSV cell) where there is
/// nothing to measure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterRow {
    /// The router's name.
    pub policy: String,
    /// Invocations, dropped ones included.
    pub invocations: u64,
    /// Finished invocations.
    pub finished: u64,
    /// Dropped invocations, by the router or for memory.
    pub dropped: u64,
    /// Of those, dropped for memory.
    pub dropped_for_memory: u64,
    /// Finished invocations that started cold.
    pub cold_starts: u64,
    /// cold_starts / finished.
    pub cold_ratio: Option<f64>,
    /// Mean slowdown − 1: the paper's global latency increase.
    pub global_increase: Option<f64>,
    /// Latency, ms.
    pub latency_mean_ms: Option<f64>,
    /// Latency p50, ms.
    pub latency_p50_ms: Option<f64>,
    /// Latency p99, ms.
    pub latency_p99_ms: Option<f64>,
    /// Slowdown (latency / warm time), mean.
    pub slowdown_mean: Option<f64>,
    /// Slowdown p50.
    pub slowdown_p50: Option<f64>,
    /// Slowdown p99.
    pub slowdown_p99: Option<f64>,
    /// Slowdown p99.9.
    pub slowdown_p999: Option<f64>,
    /// The median over functions of each function's mean slowdown.
    pub function_slowdown_p50: Option<f64>,
    /// Their 99th percentile.
    pub function_slowdown_p99: Option<f64>,
    /// The finished invocations' billed GB-seconds (execution × memory),
    /// over those whose first run is known; `None` if none is.
    pub billed_gb_s: Option<f64>,
    /// What they would cost on a FaaS provider, USD.
    pub cost_usd: Option<f64>,
    /// Idle containers evicted.
    pub evictions: u64,
    /// Invocations that waited on their server for memory.
    pub memory_waits: u64,
    /// Their mean wait, s.
    pub memory_wait_mean_s: Option<f64>,
    /// Mean load variance across servers.
    pub load_variance: f64,
    /// Mean server utilisation.
    pub utilisation_mean: Option<f64>,
    /// The busiest server's utilisation.
    pub utilisation_max: Option<f64>,
    /// Of the invocations that started on a node server, the share that
    /// missed their deadline there (finished late or dropped by its
    /// policy); only with node servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_miss_ratio: Option<f64>,
    /// Invocations a node server's policy dropped; only with node servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_dropped: Option<u64>,
    /// Preemptions per invocation that started on a node server; only with
    /// node servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_preemptions: Option<f64>,
    /// Context switches per invocation that ran on an OS server (either
    /// kind); only with OS servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_switches: Option<f64>,
    /// Involuntary switches (the kernel preempted it) per invocation that
    /// ran on an OS server; only with OS servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_preemptions: Option<f64>,
    /// The loads over time, as in [`ClusterUsage::load_series`]: for
    /// `report.html` only, so neither summary.json nor summary.csv has it.
    #[serde(skip)]
    pub load_series: Vec<LoadPoint>,
    /// A row per function: for `functions.csv` only.
    #[serde(skip)]
    pub functions: Vec<FunctionRow>,
}

/// One function's line of `functions.csv` under one policy; `None` (an
/// empty cell) where none of its invocations finished, or no first run is
/// known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionRow {
    /// The router's name.
    pub policy: String,
    /// The function's id.
    pub function: u32,
    /// Its invocations, dropped ones included.
    pub invocations: u64,
    /// Of those, finished.
    pub finished: u64,
    /// Of the finished, started cold.
    pub cold_starts: u64,
    /// Mean end-to-end latency (arrival to finish) of the finished ones, ms.
    pub latency_mean_ms: Option<f64>,
    /// Their mean slowdown (latency / the function's warm time).
    pub slowdown_mean: Option<f64>,
    /// Their billed GB-seconds.
    pub billed_gb_s: Option<f64>,
    /// What they would cost, USD.
    pub cost_usd: Option<f64>,
}

impl FunctionRow {
    fn new(policy: &str, f: &FunctionSummary) -> FunctionRow {
        FunctionRow {
            policy: policy.to_string(),
            function: f.function.0,
            invocations: f.invocations,
            finished: f.finished,
            cold_starts: f.cold,
            latency_mean_ms: f.latency_mean_ms,
            slowdown_mean: f.slowdown_mean,
            billed_gb_s: billed(&f.cost).map(Cost::billed_gb_s),
            cost_usd: billed(&f.cost).map(Cost::usd),
        }
    }
}

/// `cost` if it billed anything.
fn billed(cost: &Cost) -> Option<&Cost> {
    (cost.requests() > 0).then_some(cost)
}

impl ClusterRow {
    /// The row of `summary` and `usage`.
    pub fn new(summary: &ClusterSummary, usage: &ClusterUsage) -> ClusterRow {
        let u = &usage.utilisation;
        ClusterRow {
            policy: summary.policy.clone(),
            invocations: summary.invocations,
            finished: summary.finished,
            dropped: summary.dropped,
            dropped_for_memory: usage.dropped_for_memory,
            cold_starts: summary.cold,
            cold_ratio: summary.cold_ratio(),
            global_increase: summary.global_increase,
            latency_mean_ms: summary.latency.map(|s| s.mean),
            latency_p50_ms: summary.latency.map(|s| s.p50),
            latency_p99_ms: summary.latency.map(|s| s.p99),
            slowdown_mean: summary.slowdown.map(|s| s.mean),
            slowdown_p50: summary.slowdown.map(|s| s.p50),
            slowdown_p99: summary.slowdown.map(|s| s.p99),
            slowdown_p999: summary.slowdown.map(|s| s.p999),
            function_slowdown_p50: summary.function_slowdown.map(|s| s.p50),
            function_slowdown_p99: summary.function_slowdown.map(|s| s.p99),
            billed_gb_s: billed(&summary.cost).map(Cost::billed_gb_s),
            cost_usd: billed(&summary.cost).map(Cost::usd),
            evictions: usage.evictions,
            memory_waits: usage.memory_waits,
            memory_wait_mean_s: (usage.memory_waits > 0)
                .then(|| usage.memory_wait_s / usage.memory_waits as f64),
            load_variance: usage.load_variance,
            utilisation_mean: (!u.is_empty()).then(|| u.iter().sum::<f64>() / u.len() as f64),
            utilisation_max: u.iter().copied().reduce(f64::max),
            node_miss_ratio: summary.node.and_then(|n| n.miss_ratio()),
            node_dropped: summary.node.map(|n| n.dropped),
            node_preemptions: summary.node.and_then(|n| n.preemptions_per_invocation()),
            os_switches: summary.os.and_then(|o| o.switches_per_invocation()),
            os_preemptions: summary.os.and_then(|o| o.preemptions_per_invocation()),
            load_series: usage.load_series.clone(),
            functions: summary
                .functions
                .iter()
                .map(|f| FunctionRow::new(&summary.policy, f))
                .collect(),
        }
    }
}

/// The content of `summary.json`: `schema_version`, `faasched_version`,
/// `settings` and a row per policy.
pub fn cluster_json(settings: &Value, rows: &[ClusterRow]) -> Value {
    json!({
        "schema_version": CLUSTER_SCHEMA_VERSION,
        "faasched_version": FAASCHED_VERSION,
        "settings": settings,
        "policies": rows,
    })
}

/// Writes `summary.json` and `summary.csv` (a row per policy, the JSON
/// rows' fields as columns), and `functions.csv` (a row per policy and
/// function, policies in the rows' order, functions by id) into `dir`
/// (created if missing), staged.
pub fn write_cluster_outputs(
    dir: &Path,
    settings: &Value,
    rows: &[ClusterRow],
    staged: &mut Staged,
) -> Result<()> {
    write_summary(dir, &cluster_json(settings, rows), rows, staged)?;
    write_csv(
        &dir.join("functions.csv"),
        rows.iter().flat_map(|r| &r.functions),
        staged,
    )
}

const COLUMNS: usize = 12;

const HEADER: [&str; COLUMNS] = [
    "policy",
    "invocations",
    "dropped",
    "cold_%",
    "global_+%",
    "sd_p50",
    "sd_p99",
    "fn_sd_p50",
    "p99_ms",
    "load_var",
    "util_%",
    "cost_usd",
];

/// The legend printed above the table.
const LEGEND: &str = "\
global_+%: mean slowdown - 1 (the paper's global latency increase); sd: slowdown = latency / the
function's warm time; fn_sd_p50: median over functions of their mean slowdown; cold_%: cold starts
of finished; load_var: mean variance of the published loads across servers; util_%: mean busy cores;
cost_usd: the finished invocations' executions (first run to finish) priced as AWS Lambda's
";

/// The rows as an aligned text table with a legend.
pub fn render_cluster_table(rows: &[ClusterRow]) -> String {
    let mut lines = vec![HEADER.map(String::from)];
    for r in rows {
        lines.push([
            r.policy.clone(),
            r.invocations.to_string(),
            r.dropped.to_string(),
            percent(r.cold_ratio),
            percent(r.global_increase),
            fixed(r.slowdown_p50, 2),
            fixed(r.slowdown_p99, 2),
            fixed(r.function_slowdown_p50, 2),
            fixed(r.latency_p99_ms, 1),
            format!("{:.4}", r.load_variance),
            percent(r.utilisation_mean),
            r.cost_usd.map_or_else(|| "-".to_string(), usd),
        ]);
    }
    let mut out = format!("{LEGEND}{}", table::render(&lines));
    if rows.iter().any(|r| r.node_dropped.is_some()) {
        out.push_str(&render_node_table(rows));
    }
    if rows.iter().any(|r| r.os_switches.is_some()) {
        out.push_str(&render_os_table(rows));
    }
    out
}

/// The node servers' columns, below the main table.
const NODE_HEADER: [&str; 4] = ["policy", "miss_%", "node_drops", "preempt"];

const NODE_LEGEND: &str = "\
node servers: miss_%: of the invocations that started on a server, finished after their deadline
there or dropped by its node policy; node_drops: dropped by it; preempt: preemptions per invocation
";

/// The rows' node measures as a table with a legend ("-" for a row
/// without node servers).
fn render_node_table(rows: &[ClusterRow]) -> String {
    let mut lines = vec![NODE_HEADER.map(String::from)];
    for r in rows {
        lines.push([
            r.policy.clone(),
            percent(r.node_miss_ratio),
            r.node_dropped
                .map_or_else(|| "-".to_string(), |v| v.to_string()),
            fixed(r.node_preemptions, 3),
        ]);
    }
    format!("\n{NODE_LEGEND}{}", table::render(&lines))
}

/// The OS servers' columns, below the main table.
const OS_HEADER: [&str; 3] = ["policy", "switches", "preempt"];

const OS_LEGEND: &str = "\
OS servers: switches: context switches per invocation (an exit is one); preempt: of them, the
kernel taking its core away
";

/// The rows' OS measures as a table with a legend ("-" for a row without
/// OS servers).
fn render_os_table(rows: &[ClusterRow]) -> String {
    let mut lines = vec![OS_HEADER.map(String::from)];
    for r in rows {
        lines.push([
            r.policy.clone(),
            fixed(r.os_switches, 3),
            fixed(r.os_preemptions, 3),
        ]);
    }
    format!("\n{OS_LEGEND}{}", table::render(&lines))
}

/// `v` with `decimals` decimals, "-" without one.
fn fixed(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

/// `v` as a percentage with two decimals, "-" without one.
fn percent(v: Option<f64>) -> String {
    fixed(v.map(|v| v * 100.0), 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::cluster::Collector;
    use faasched_model::cluster::{
        FunctionProfile, Inside, InvocationId, InvocationInfo, InvocationOutcome, NodePlace,
        OsPlace, ServerId,
    };
    use faasched_model::{FunctionId, MS};

    #[test]
    fn a_row_carries_the_summary_and_the_engines_numbers() {
        let summary = Collector::new("ch-rlu").finish();
        let usage = ClusterUsage {
            dropped_for_memory: 2,
            evictions: 5,
            memory_waits: 4,
            memory_wait_s: 10.0,
            load_variance: 0.25,
            utilisation: vec![0.5, 0.7],
            load_series: Vec::new(),
        };
        let row = ClusterRow::new(&summary, &usage);
        assert_eq!((row.dropped_for_memory, row.evictions), (2, 5));
        assert_eq!((row.memory_waits, row.memory_wait_mean_s), (4, Some(2.5)));
        assert_eq!(row.utilisation_max, Some(0.7));
        assert!((row.utilisation_mean.unwrap() - 0.6).abs() < 1e-12);
        assert_eq!(row.global_increase, None);
        let table = render_cluster_table(std::slice::from_ref(&row));
        let last = table.lines().last().unwrap();
        assert!(
            last.starts_with("ch-rlu") && last.ends_with("60.00         -"),
            "{table}"
        );
        let json = cluster_json(&json!({"servers": 8}), &[row]);
        assert_eq!(json["schema_version"], CLUSTER_SCHEMA_VERSION);
        assert_eq!(json["policies"][0]["global_increase"], Value::Null);
    }

    /// One server's usage: half busy, nothing else.
    fn half_busy() -> ClusterUsage {
        ClusterUsage {
            utilisation: vec![0.5],
            ..ClusterUsage::default()
        }
    }

    /// A warm 1 ms invocation served by server 0, and where it went there.
    fn outcome(id: u64, finish: Option<u64>, inside: Inside) -> InvocationOutcome {
        InvocationOutcome {
            info: InvocationInfo {
                id: InvocationId(id),
                arrival: 0,
                profile: FunctionProfile {
                    function: FunctionId(0),
                    memory_mb: 128,
                    warm: MS,
                    cold: MS,
                },
            },
            work: MS,
            server: Some(ServerId(0)),
            cold: false,
            first_run: finish.map(|_| 0),
            finish,
            inside: Some(inside),
        }
    }

    #[test]
    fn node_measures_get_their_own_table_only_with_node_servers() {
        let node = |id, finish, missed, preemptions| {
            let place = NodePlace {
                dispatcher: 0,
                worker: None,
                preemptions,
                missed,
            };
            outcome(id, finish, Inside::Node(place))
        };
        let mut c = Collector::new("ch-rlu");
        // Four reached the node: one late, one dropped by it; three
        // preemptions in all.
        c.record(&node(0, Some(MS), false, 0));
        c.record(&node(1, Some(20 * MS), true, 2));
        c.record(&node(2, None, true, 0));
        c.record(&node(3, Some(2 * MS), false, 1));
        let row = ClusterRow::new(&c.finish(), &half_busy());
        assert_eq!(row.node_miss_ratio, Some(0.5));
        assert_eq!(row.node_dropped, Some(1));
        assert_eq!(row.node_preemptions, Some(0.75));
        let table = render_cluster_table(std::slice::from_ref(&row));
        let last = table.lines().last().unwrap();
        assert!(table.contains("node servers:"), "{table}");
        assert_eq!(
            last.split_whitespace().collect::<Vec<_>>(),
            ["ch-rlu", "50.00", "1", "0.750"]
        );
        let ps = ClusterRow::new(&Collector::new("random").finish(), &half_busy());
        assert_eq!(ps.node_dropped, None);
        assert!(!render_cluster_table(&[ps]).contains("node servers"));
    }

    #[test]
    fn os_measures_get_their_own_table_only_with_os_servers() {
        let os = |id, involuntary_switches| {
            let place = OsPlace {
                voluntary_switches: 1,
                involuntary_switches,
            };
            outcome(id, Some(2 * MS), Inside::Os(place))
        };
        let mut c = Collector::new("cfs");
        // Two ran, each exiting once; three preemptions in all.
        c.record(&os(0, 0));
        c.record(&os(1, 3));
        let row = ClusterRow::new(&c.finish(), &half_busy());
        assert_eq!(
            (row.os_switches, row.os_preemptions),
            (Some(2.5), Some(1.5))
        );
        assert_eq!(row.node_dropped, None);
        let table = render_cluster_table(std::slice::from_ref(&row));
        assert!(
            table.contains("OS servers:") && !table.contains("node servers"),
            "{table}"
        );
        assert_eq!(
            table
                .lines()
                .last()
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["cfs", "2.500", "1.500"]
        );
        let ps = ClusterRow::new(&Collector::new("random").finish(), &half_busy());
        assert!(!render_cluster_table(&[ps]).contains("OS servers"));
    }

    #[test]
    fn functions_csv_has_a_row_per_policy_and_function() -> Result<()> {
        let place = Inside::Os(OsPlace {
            voluntary_switches: 1,
            involuntary_switches: 0,
        });
        let rows: Vec<ClusterRow> = ["ch-rlu", "random"]
            .iter()
            .map(|policy| {
                let mut c = Collector::new(policy);
                c.record(&outcome(0, Some(MS), place));
                c.record(&outcome(1, None, place));
                ClusterRow::new(&c.finish(), &half_busy())
            })
            .collect();
        // The 1 ms run from 0, at 128 MB, bills 0.000125 GB-s.
        assert_eq!(rows[0].billed_gb_s, Some(0.000_125));
        let dir = tempfile::tempdir().map_err(|e| Error::io(Path::new("tmp"), e))?;
        let mut staged = Staged::new();
        write_cluster_outputs(dir.path(), &json!({}), &rows, &mut staged)?;
        staged.commit()?;
        let path = dir.path().join("functions.csv");
        let csv = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        // Its duration, and one request at $0.20 per million.
        let usd = 0.000_125 * crate::cost::USD_PER_GB_SECOND + 0.2e-6;
        assert!((rows[0].cost_usd.unwrap() - usd).abs() < 1e-18);
        assert_eq!(
            csv,
            "policy,function,invocations,finished,cold_starts,latency_mean_ms,\
             slowdown_mean,billed_gb_s,cost_usd\n\
             ch-rlu,0,2,1,0,1.0,1.0,0.000125,2.0208333750000003e-7\n\
             random,0,2,1,0,1.0,1.0,0.000125,2.0208333750000003e-7\n"
        );
        Ok(())
    }

    #[test]
    fn the_load_series_stays_out_of_summary_json_and_csv() -> Result<()> {
        let summary = Collector::new("ch-rlu").finish();
        let mut usage = ClusterUsage::default();
        let bare = ClusterRow::new(&summary, &usage);
        usage.load_series = vec![LoadPoint {
            at_s: 5.0,
            mean: 0.5,
            variance: 0.25,
        }];
        let with = ClusterRow::new(&summary, &usage);
        assert_eq!(with.load_series, usage.load_series);
        let files = |row: ClusterRow| -> Result<(Vec<u8>, Vec<u8>)> {
            let dir = tempfile::tempdir().map_err(|e| Error::io(Path::new("tmp"), e))?;
            let mut staged = Staged::new();
            write_cluster_outputs(dir.path(), &json!({}), &[row], &mut staged)?;
            staged.commit()?;
            let read = |name: &str| {
                let path = dir.path().join(name);
                std::fs::read(&path).map_err(|e| Error::io(&path, e))
            };
            Ok((read("summary.json")?, read("summary.csv")?))
        };
        assert_eq!(files(with)?, files(bare)?);
        Ok(())
    }
}
