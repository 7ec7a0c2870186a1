//! What a run's records add up to (summary.json's measurements) and its
//! requests.csv.

use super::{LoadRun, Record};
use crate::load::Mode;
use faasched_model::{MS, Nanos, SEC, US};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;

/// Header of requests.csv: one row per request that was due, times in
/// whole µs from the start of the run (rounded down), empty cells where
/// there is nothing to say.
pub const REQUESTS_CSV_HEADER: &str =
    "id,function,intended_us,sent_us,done_us,latency_us,runtime_us,cpu_us,status,error";

/// Header of workload.csv: the run as a node workload CSV
/// (`node simulate --workload FILE` reads it).
pub const WORKLOAD_CSV_HEADER: &str = "id,function,arrival_us,phases,memory_mb,deadline_us";

/// The memory workload.csv gives every request, MB: the node level does
/// not read it.
const WORKLOAD_MEMORY_MB: u32 = 128;

/// A send later than this after its intended time counts as late: about
/// the pacing's own jitter (a sleep, then a spin, on a busy machine).
const LATE_SEND: Nanos = MS;

/// Significant digits the latency histogram keeps (HdrHistogram's usual
/// setting: values within 0.1%).
const SIGNIFICANT_DIGITS: u8 = 3;

/// What a run measured, as summary.json records it beside its settings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadSummary {
    /// `open` or `closed`.
    pub mode: &'static str,
    /// Connections kept alive (closed loop: clients).
    pub connections: usize,
    /// How the run ended: `completed`, `interrupted` or `drain-timeout`.
    pub end: &'static str,
    /// Requests handed to a connection.
    pub sent: u64,
    /// Open loop: requests sent more than 1 ms after their intended time
    /// (the client fell behind, or every connection was busy).
    pub late_sends: u64,
    /// From the start of the run to its end, s.
    pub elapsed_s: f64,
    /// Answered requests per second, from the start to the last answer.
    pub achieved_rps: Option<f64>,
    /// Every request.
    #[serde(flatten)]
    pub all: ScopeSummary,
    /// The requests of each workload function, by name.
    pub functions: BTreeMap<String, ScopeSummary>,
}

/// What became of some of a run's requests (all, or one function's).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScopeSummary {
    /// Requests that were due: answered + every error.
    pub requests: u64,
    /// Requests answered with a 2xx.
    pub answered: u64,
    /// Requests not answered with a 2xx, by kind (see the failures in
    /// docs/RUNTIME.md), in kind order.
    pub errors: BTreeMap<String, u64>,
    /// Latency (completion − intended send) of the answered requests, µs,
    /// from an HDR histogram of 3 significant digits.
    pub latency_us: Option<LatencySummary>,
    /// Slowdown (latency / the work asked for) of the answered requests
    /// whose work is above 0, nearest rank.
    pub slowdown: Option<SlowdownSummary>,
    /// The runtime's own latency (`x-faasched-runtime-us`, arrival at the
    /// runtime to completion) of the answered requests that report it, µs,
    /// as `latency_us`: the difference is the network's and the client's.
    pub runtime_us: Option<LatencySummary>,
}

/// Latency percentiles, µs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Mean.
    pub mean: f64,
    /// 50th percentile.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
}

/// Slowdown percentiles (latency / work).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SlowdownSummary {
    /// 50th percentile.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
}

impl LoadRun {
    /// The run's measurements.
    pub fn summary(&self) -> LoadSummary {
        let mut names: Vec<&str> = self
            .records
            .iter()
            .map(|r| &*r.call.request.function.name)
            .collect();
        names.sort_unstable();
        names.dedup();
        let last_answer = self
            .records
            .iter()
            .filter(|r| r.answered())
            .filter_map(|r| r.done)
            .max()
            .unwrap_or(0);
        let all = scope(self.records.iter());
        LoadSummary {
            mode: match self.mode {
                Mode::Open { .. } => "open",
                Mode::Closed { .. } => "closed",
            },
            connections: self.mode.connections(),
            end: self.end.as_str(),
            sent: self.records.iter().filter(|r| r.sent.is_some()).count() as u64,
            late_sends: match self.mode {
                Mode::Open { .. } => self
                    .records
                    .iter()
                    .filter(|r| r.sent.is_some_and(|s| s > r.intended + LATE_SEND))
                    .count() as u64,
                Mode::Closed { .. } => 0,
            },
            elapsed_s: self.elapsed as f64 / SEC as f64,
            achieved_rps: (last_answer > 0)
                .then(|| all.answered as f64 * SEC as f64 / last_answer as f64),
            all,
            functions: names
                .into_iter()
                .map(|name| {
                    let of = self
                        .records
                        .iter()
                        .filter(|r| &*r.call.request.function.name == name);
                    (name.to_string(), scope(of))
                })
                .collect(),
        }
    }

    /// Writes requests.csv ([`REQUESTS_CSV_HEADER`], one row per record)
    /// to `out`.
    pub fn write_csv(&self, out: impl Write) -> csv::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(REQUESTS_CSV_HEADER.split(','))?;
        for r in &self.records {
            w.write_record(row(r))?;
        }
        w.flush()?;
        Ok(())
    }
}

impl LoadRun {
    /// Writes workload.csv ([`WORKLOAD_CSV_HEADER`]) to `out`: every
    /// request at its intended time (its arrival in the open loop; when
    /// its client was free in the closed one), with its relative deadline,
    /// and as its work the CPU time its sandbox used where the node said
    /// (`x-faasched-cpu-us`, at least 1 µs), else the work it stood for.
    /// So a run of real functions is their calibration: `node simulate`
    /// runs the same requests with the work the real functions took.
    pub fn write_workload_csv(&self, out: impl Write) -> csv::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(WORKLOAD_CSV_HEADER.split(','))?;
        let mut records: Vec<&Record> = self.records.iter().collect();
        records.sort_by_key(|r| r.intended);
        for r in records {
            let request = &r.call.request;
            let work_us = match r.cpu_us {
                Some(us) if r.failure.is_none() => us,
                _ => request.work / US,
            }
            .max(1);
            w.write_record([
                request.id.0.to_string(),
                request.function.name.to_string(),
                (r.intended / US).to_string(),
                format!("c{work_us}"),
                WORKLOAD_MEMORY_MB.to_string(),
                (request.deadline / US).max(1).to_string(),
            ])?;
        }
        w.flush()?;
        Ok(())
    }
}

/// What became of `records`.
fn scope<'a>(records: impl Iterator<Item = &'a Record>) -> ScopeSummary {
    let mut requests = 0;
    let mut errors = BTreeMap::new();
    let histogram =
        || Histogram::<u64>::new(SIGNIFICANT_DIGITS).expect("3 significant digits are valid");
    let mut latency = histogram();
    let mut runtime = histogram();
    let mut slowdowns = Vec::new();
    for r in records {
        requests += 1;
        if let Some(failure) = &r.failure {
            *errors.entry(failure.kind().to_string()).or_insert(0) += 1;
            continue;
        }
        let Some(ns) = r.latency() else {
            continue;
        };
        // Auto-resizing: a value never fails to fit.
        let _ = latency.record(ns / US);
        if let Some(us) = r.runtime_us {
            let _ = runtime.record(us);
        }
        let work = r.call.request.work;
        if work > 0 {
            slowdowns.push(ns as f64 / work as f64);
        }
    }
    let answered = latency.len();
    slowdowns.sort_by(f64::total_cmp);
    let rank = |q: f64| {
        let rank = (q * slowdowns.len() as f64).ceil() as usize;
        slowdowns[rank.clamp(1, slowdowns.len()) - 1]
    };
    ScopeSummary {
        requests,
        answered,
        errors,
        latency_us: percentiles(&latency),
        slowdown: (!slowdowns.is_empty()).then(|| SlowdownSummary {
            p50: rank(0.5),
            p90: rank(0.9),
            p99: rank(0.99),
            p999: rank(0.999),
            max: rank(1.0),
        }),
        runtime_us: percentiles(&runtime),
    }
}

/// The percentiles of `h`; `None` if it holds nothing.
fn percentiles(h: &Histogram<u64>) -> Option<LatencySummary> {
    (!h.is_empty()).then(|| LatencySummary {
        mean: h.mean(),
        p50: h.value_at_quantile(0.5),
        p90: h.value_at_quantile(0.9),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
    })
}

/// A record's cells, in [`REQUESTS_CSV_HEADER`]'s order.
fn row(r: &Record) -> [String; 10] {
    let us = |t: Option<Nanos>| t.map(|t| (t / US).to_string()).unwrap_or_default();
    let n = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    [
        r.call.request.id.0.to_string(),
        r.call.request.function.name.to_string(),
        (r.intended / US).to_string(),
        us(r.sent),
        us(r.done),
        us(r.latency()),
        n(r.runtime_us),
        n(r.cpu_us),
        n(r.status.map(u64::from)),
        r.failure
            .as_ref()
            .map(|f| f.kind().to_string())
            .unwrap_or_default(),
    ]
}
