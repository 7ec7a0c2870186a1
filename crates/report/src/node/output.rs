//! The node level's `summary.json` and `summary.csv`; their layout is in the
//! [`node`](super) module's documentation.

use super::metrics::{PolicySummary, ScopeSummary};
use crate::Result;
use crate::Stats;
use crate::output::{ByPolicy, FAASCHED_VERSION, distinct, write_summary};
use crate::staged::Staged;
use faasched_model::MS;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The version of the node `summary.json`'s layout, its `schema_version` key.
pub const SUMMARY_SCHEMA_VERSION: u32 = 1;

/// Header of the node `summary.csv`.
pub const SUMMARY_CSV_HEADER: &str = "rate_rps,policy,function,requests,finished,dropped,\
missed,miss_rate,throughput_rps,preemptions_per_request,latency_mean_us,latency_p50_us,\
latency_p90_us,latency_p99_us,latency_p999_us,latency_max_us,slowdown_mean,slowdown_p50,slowdown_p99,\
slowdown_p999,slowdown_max";

/// One run of the node level: its settings and what each policy did at each
/// offered rate.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// The run's settings (workload, workers, dispatchers, seconds, seed,
    /// ...), written as given.
    pub settings: serde_json::Value,
    /// One per offered rate, in the order run. Several make a sweep, which
    /// the report draws against the offered load.
    pub loads: Vec<Load>,
}

/// What every policy did at one offered rate.
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    /// Offered requests per second.
    pub rate: f64,
    /// One per policy, in output order; names distinct.
    pub policies: Vec<PolicySummary>,
}

/// One line of the summary: one scope of one policy at one offered rate.
///
/// `None` fields (JSON `null`, an empty CSV cell) have nothing to cover:
/// latency and slowdown when nothing finished, the miss rate without
/// requests, the throughput over a span of 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Offered requests per second.
    pub rate_rps: f64,
    /// Policy name.
    pub policy: String,
    /// `all`, or the function's name.
    pub function: String,
    /// Requests, dropped ones included.
    pub requests: u64,
    /// Requests that finished.
    pub finished: u64,
    /// Requests the dispatcher dropped.
    pub dropped: u64,
    /// Requests finished after their deadline, or dropped.
    pub missed: u64,
    /// missed / requests.
    pub miss_rate: Option<f64>,
    /// Finished requests per second of the run's span.
    pub throughput_rps: Option<f64>,
    /// Preemptions per finished request.
    pub preemptions_per_request: Option<f64>,
    /// Mean latency, µs.
    pub latency_mean_us: Option<f64>,
    /// 50th percentile latency (nearest rank), µs.
    pub latency_p50_us: Option<f64>,
    /// 90th percentile latency (nearest rank), µs.
    pub latency_p90_us: Option<f64>,
    /// 99th percentile latency (nearest rank), µs.
    pub latency_p99_us: Option<f64>,
    /// 99.9th percentile latency (nearest rank), µs.
    pub latency_p999_us: Option<f64>,
    /// Largest latency, µs.
    pub latency_max_us: Option<f64>,
    /// Mean slowdown (latency / work).
    pub slowdown_mean: Option<f64>,
    /// 50th percentile slowdown (nearest rank).
    pub slowdown_p50: Option<f64>,
    /// 99th percentile slowdown (nearest rank).
    pub slowdown_p99: Option<f64>,
    /// 99.9th percentile slowdown (nearest rank).
    pub slowdown_p999: Option<f64>,
    /// Largest slowdown.
    pub slowdown_max: Option<f64>,
}

impl Row {
    fn new(rate: f64, policy: &str, s: &ScopeSummary) -> Row {
        let pick = |stats: Option<Stats>, f: fn(&Stats) -> f64| stats.as_ref().map(f);
        Row {
            rate_rps: rate,
            policy: policy.to_string(),
            function: s.scope.clone(),
            requests: s.requests,
            finished: s.finished,
            dropped: s.dropped,
            missed: s.missed,
            miss_rate: s.miss_rate(),
            throughput_rps: s.throughput,
            preemptions_per_request: s.preemptions_per_request(),
            latency_mean_us: pick(s.latency, |t| t.mean),
            latency_p50_us: pick(s.latency, |t| t.p50),
            latency_p90_us: pick(s.latency, |t| t.p90),
            latency_p99_us: pick(s.latency, |t| t.p99),
            latency_p999_us: pick(s.latency, |t| t.p999),
            latency_max_us: pick(s.latency, |t| t.max),
            slowdown_mean: pick(s.slowdown, |t| t.mean),
            slowdown_p50: pick(s.slowdown, |t| t.p50),
            slowdown_p99: pick(s.slowdown, |t| t.p99),
            slowdown_p999: pick(s.slowdown, |t| t.p999),
            slowdown_max: pick(s.slowdown, |t| t.max),
        }
    }
}

/// The rows of `policy`'s run at `rate`: one per scope (`all`, then each
/// function).
pub fn policy_rows(rate: f64, policy: &PolicySummary) -> impl Iterator<Item = Row> + '_ {
    policy
        .scopes
        .iter()
        .map(move |s| Row::new(rate, &policy.policy, s))
}

impl Summary {
    /// The flat rows: load order, then policy order, then scope (`all`, then
    /// each function).
    pub fn rows(&self) -> impl Iterator<Item = Row> + '_ {
        self.loads
            .iter()
            .flat_map(|load| load.policies.iter().flat_map(|p| policy_rows(load.rate, p)))
    }

    /// The content of `summary.json` (see the module docs).
    pub fn to_json(&self) -> serde_json::Value {
        let file = SummaryFile {
            schema_version: SUMMARY_SCHEMA_VERSION,
            faasched_version: FAASCHED_VERSION,
            settings: &self.settings,
            rows: self.rows().collect(),
            loads: self.loads.iter().map(LoadEntry::from).collect(),
        };
        serde_json::to_value(file).expect("summary fields are plain data and serialize")
    }

    /// [`Error::DuplicatePolicy`](crate::Error::DuplicatePolicy) if a load names a policy twice.
    fn check(&self) -> Result<()> {
        self.loads
            .iter()
            .try_for_each(|load| distinct(load.policies.iter().map(|p| p.policy.as_str())))
    }
}

/// `summary.json` as written.
#[derive(Serialize)]
struct SummaryFile<'a> {
    schema_version: u32,
    faasched_version: &'static str,
    settings: &'a serde_json::Value,
    rows: Vec<Row>,
    loads: Vec<LoadEntry<'a>>,
}

/// One element of `loads`.
#[derive(Serialize)]
struct LoadEntry<'a> {
    rate_rps: f64,
    policies: ByPolicy<'a, PolicySummary, PolicyEntry<'a>>,
}

impl<'a> From<&'a Load> for LoadEntry<'a> {
    fn from(load: &'a Load) -> LoadEntry<'a> {
        LoadEntry {
            rate_rps: load.rate,
            policies: ByPolicy {
                policies: &load.policies,
                entry: |p| (&p.policy, PolicyEntry::from(p)),
            },
        }
    }
}

/// What the engine measured of one policy's run.
#[derive(Serialize)]
struct PolicyEntry<'a> {
    span_ms: f64,
    worker_utilisation: &'a [f64],
    dispatcher_utilisation: &'a [f64],
    mean_worker_utilisation: Option<f64>,
    mean_dispatcher_utilisation: Option<f64>,
}

impl<'a> From<&'a PolicySummary> for PolicyEntry<'a> {
    fn from(p: &'a PolicySummary) -> PolicyEntry<'a> {
        PolicyEntry {
            span_ms: p.usage.span as f64 / MS as f64,
            worker_utilisation: &p.usage.workers,
            dispatcher_utilisation: &p.usage.dispatchers,
            mean_worker_utilisation: p.usage.mean_worker(),
            mean_dispatcher_utilisation: p.usage.mean_dispatcher(),
        }
    }
}

/// Creates `dir` (and its parents, through [`Staged::create_dir`]) and writes
/// `summary.json` and `summary.csv` in it, staged: they take their places at
/// `staged`'s commit.
///
/// Fails with [`Error::DuplicatePolicy`](crate::Error::DuplicatePolicy) before writing anything if a load
/// names a policy twice.
pub fn write_outputs(dir: &Path, summary: &Summary, staged: &mut Staged) -> Result<()> {
    summary.check()?;
    write_summary(dir, &summary.to_json(), summary.rows(), staged)
}
