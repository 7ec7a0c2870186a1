//! The output files of an operating-system run: `summary.json`,
//! `summary.csv` and the streamed `invocations.csv`.
//!
//! Output bytes are deterministic: rows and policies keep the order given, JSON
//! objects are written from structs (fixed key order), and floats are formatted by
//! serde_json / csv (shortest round-trip form).
//!
//! `summary.json` is `{"schema_version": 1, "faasched_version": "X.Y.Z", "rows": [...],
//! "policies": {...}, "workload": ..., "machine": ...}`: `schema_version` is
//! [`SUMMARY_SCHEMA_VERSION`], raised when a key changes meaning or goes away
//! (not when one is added), and `faasched_version` the version that wrote the file;
//! `rows` as in `summary.csv` (see [`Row`]); `policies` maps each name, in the order
//! given, to `sim_only`, `cost_usd`, `voluntary_switches_per_invocation`,
//! `involuntary_switches_per_invocation`, `utilisation`, and also `invocations`,
//! `billed_gb_s` and `billing` (the billed duration: always `"execution"`);
//! a live run's policies also carry `live` (launch lateness, steering
//! overhead, the calibration used), and a policy with parameters `params`
//! (the TOML table it ran with, `{"alps": {...}}` or `{"hybrid": {...}}`).
//!
//! A scope with no invocations still has its rows: `count` 0 and every statistic
//! `null` in JSON, an empty cell in CSV (and `null` switches per invocation for a
//! policy with no invocations at all).

use super::metrics::{Metric, PolicySummary, Scope};
use crate::Stats;
use crate::cost::BILLED_DURATION;
use crate::output::{ByPolicy, FAASCHED_VERSION, distinct, write_summary};
use crate::staged::Staged;
use crate::{Error, Result};
use faasched_model::{Group, Outcome, US};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

/// Header of `summary.csv`.
pub const SUMMARY_CSV_HEADER: &str =
    "policy,group,metric,count,mean_ms,p50_ms,p90_ms,p99_ms,p999_ms,max_ms";

/// Header of `invocations.csv`.
pub const INVOCATIONS_CSV_HEADER: &str = "policy,id,function,group,arrival_us,first_run_us,finish_us,cpu_us,io_us,voluntary_switches,involuntary_switches,memory_mb";

/// The version of `summary.json`'s layout, its `schema_version` key: raised
/// when a key is removed or changes meaning, so that a reader can refuse a
/// file it would misread.
pub const SUMMARY_SCHEMA_VERSION: u32 = 1;

/// Everything `summary.json` and `summary.csv` are written from.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// One summary per policy, in output order. Names must be distinct.
    pub policies: Vec<PolicySummary>,
    /// Free-form description of the workload (name, invocations, seed, ...).
    pub workload: serde_json::Value,
    /// Free-form description of the machine (cores, fair class, HZ, ...).
    pub machine: serde_json::Value,
}

impl Summary {
    /// Whether a live run measured it (its policies carry what the live run
    /// measured), rather than the simulator: its times are the machine's.
    pub fn is_live(&self) -> bool {
        self.policies.iter().any(|p| p.live.is_some())
    }

    /// The flat rows: policy order as given, then scope (all, G1..G4), then metric
    /// (turnaround, response, execution, waiting, slowdown).
    pub fn rows(&self) -> impl Iterator<Item = Row> + '_ {
        self.policies.iter().flat_map(|p| {
            p.scopes.iter().flat_map(move |s| {
                Metric::ALL.into_iter().map(move |metric| {
                    Row::new(&p.policy, s.scope, metric, s.count, s.stats(metric))
                })
            })
        })
    }
}

/// One line of the summary: one metric over one scope of one policy.
///
/// The `_ms` fields hold milliseconds, except on `slowdown` rows where they hold the
/// ratio. They are `None` (JSON `null`, an empty CSV cell) when `count` is 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Policy name.
    pub policy: String,
    /// `all` or `G1`..`G4`.
    pub group: Scope,
    /// Which metric.
    pub metric: Metric,
    /// Number of invocations in the scope.
    pub count: u64,
    /// Mean.
    pub mean_ms: Option<f64>,
    /// 50th percentile (nearest rank).
    pub p50_ms: Option<f64>,
    /// 90th percentile (nearest rank).
    pub p90_ms: Option<f64>,
    /// 99th percentile (nearest rank).
    pub p99_ms: Option<f64>,
    /// 99.9th percentile (nearest rank).
    pub p999_ms: Option<f64>,
    /// Maximum.
    pub max_ms: Option<f64>,
}

impl Row {
    fn new(policy: &str, group: Scope, metric: Metric, count: u64, stats: Option<&Stats>) -> Row {
        Row {
            policy: policy.to_string(),
            group,
            metric,
            count,
            mean_ms: stats.map(|s| s.mean),
            p50_ms: stats.map(|s| s.p50),
            p90_ms: stats.map(|s| s.p90),
            p99_ms: stats.map(|s| s.p99),
            p999_ms: stats.map(|s| s.p999),
            max_ms: stats.map(|s| s.max),
        }
    }
}

/// The value of one policy in `summary.json`'s `policies` map.
#[derive(Serialize)]
struct PolicyEntry<'a> {
    sim_only: bool,
    cost_usd: f64,
    voluntary_switches_per_invocation: Option<f64>,
    involuntary_switches_per_invocation: Option<f64>,
    utilisation: f64,
    invocations: u64,
    billed_gb_s: f64,
    billing: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    live: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a serde_json::Value>,
}

impl<'a> From<&'a PolicySummary> for PolicyEntry<'a> {
    fn from(p: &'a PolicySummary) -> PolicyEntry<'a> {
        let all = p.all();
        PolicyEntry {
            sim_only: p.sim_only,
            cost_usd: all.cost.usd(),
            voluntary_switches_per_invocation: all.voluntary_per_invocation(),
            involuntary_switches_per_invocation: all.involuntary_per_invocation(),
            utilisation: p.utilisation,
            invocations: all.count,
            billed_gb_s: all.cost.billed_gb_s(),
            billing: BILLED_DURATION,
            live: p.live.as_ref(),
            params: p.params.as_ref(),
        }
    }
}

/// `summary.json` as written.
#[derive(Serialize)]
struct SummaryFile<'a> {
    schema_version: u32,
    faasched_version: &'static str,
    rows: Vec<Row>,
    policies: ByPolicy<'a, PolicySummary, PolicyEntry<'a>>,
    workload: &'a serde_json::Value,
    machine: &'a serde_json::Value,
}

/// `summary.json` as read back (other keys are ignored).
#[derive(Deserialize)]
struct SummaryRows {
    rows: Vec<Row>,
}

/// Creates `dir` (and its parents, through [`Staged::create_dir`]) and writes
/// `summary.json` and `summary.csv` in it, staged: they take their places at
/// `staged`'s commit.
///
/// Fails with [`Error::DuplicatePolicy`] before writing anything if two policies
/// share a name.
pub fn write_outputs(dir: &Path, summary: &Summary, staged: &mut Staged) -> Result<()> {
    distinct(summary.policies.iter().map(|p| p.policy.as_str()))?;
    write_summary(dir, &summary.to_json(), summary.rows(), staged)
}

impl Summary {
    /// The content of `summary.json`, for printing elsewhere (`--json`).
    pub fn to_json(&self) -> serde_json::Value {
        let file = SummaryFile {
            schema_version: SUMMARY_SCHEMA_VERSION,
            faasched_version: FAASCHED_VERSION,
            rows: self.rows().collect(),
            policies: ByPolicy {
                policies: &self.policies,
                entry: |p| (&p.policy, PolicyEntry::from(p)),
            },
            workload: &self.workload,
            machine: &self.machine,
        };
        serde_json::to_value(file).expect("summary fields are plain data and serialize")
    }
}

/// Reads the rows of a `summary.json` written by [`write_outputs`].
pub fn read_summary_rows(path: &Path) -> Result<Vec<Row>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let summary: SummaryRows =
        serde_json::from_reader(BufReader::new(file)).map_err(|e| Error::json(path, e))?;
    Ok(summary.rows)
}

/// One line of `invocations.csv`. Times are µs = ns / 1000, rounded down.
#[derive(Serialize)]
struct InvocationRow<'a> {
    policy: &'a str,
    id: u64,
    function: &'a str,
    group: Group,
    arrival_us: u64,
    first_run_us: u64,
    finish_us: u64,
    cpu_us: u64,
    io_us: u64,
    voluntary_switches: u64,
    involuntary_switches: u64,
    memory_mb: u32,
}

/// Streams `invocations.csv`: one row per outcome and policy, written as they come,
/// so memory does not grow with the number of invocations.
///
/// The header is [`INVOCATIONS_CSV_HEADER`]. Times (`arrival_us`, `first_run_us`,
/// `finish_us`, `cpu_us`, `io_us`) are microseconds: ns / 1000, rounded down
/// (integer division), so a duration derived from two columns may be off by 1 µs.
///
/// The file is [`Staged`]: it takes its place with the run's other files,
/// once they are all written, so a run that fails part-way (a bad row in
/// its workload, say) leaves an earlier run's file as it was. Errors name
/// `path`, the file the user asked for.
#[derive(Debug)]
pub struct InvocationsWriter {
    out: csv::Writer<BufWriter<File>>,
    path: PathBuf,
}

impl InvocationsWriter {
    /// Starts the file that `staged` puts at `path`, and writes the header.
    pub fn create(path: &Path, staged: &mut Staged) -> Result<InvocationsWriter> {
        let file = staged.create(path)?;
        let mut out = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(BufWriter::new(file));
        out.write_record(INVOCATIONS_CSV_HEADER.split(','))
            .map_err(|e| Error::csv(path, e))?;
        Ok(InvocationsWriter {
            out,
            path: path.to_path_buf(),
        })
    }

    /// Writes the row of one outcome of `policy`.
    pub fn write(&mut self, policy: &str, o: &Outcome) -> Result<()> {
        let row = InvocationRow {
            policy,
            id: o.id,
            function: &o.function.name,
            group: o.group,
            arrival_us: o.arrival / US,
            first_run_us: o.first_run / US,
            finish_us: o.finish / US,
            cpu_us: o.cpu / US,
            io_us: o.io / US,
            voluntary_switches: o.voluntary_switches,
            involuntary_switches: o.involuntary_switches,
            memory_mb: o.memory_mb,
        };
        self.out
            .serialize(row)
            .map_err(|e| Error::csv(&self.path, e))
    }

    /// Flushes everything: the file is complete, ready for `staged`'s
    /// commit.
    pub fn finish(mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }
}
