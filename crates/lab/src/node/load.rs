//! `node load`: a live node runtime driven over HTTP with a workload's
//! requests (open loop at the stream's times, or a closed loop of
//! clients), measured from each request's intended send time; a table and
//! requests.csv and summary.json.

use crate::node::serve::read_token;
use crate::output::write_staged;
use crate::{interrupt, out, outln};
use anyhow::{Context, Result, bail};
use faasched_live::load::{End, LoadConfig, Mode};
use faasched_live::node::load::{self, LoadRun, LoadSummary, ScopeSummary};
use faasched_model::Functions;
use faasched_model::{MS, SEC, TIME_LIMIT};
use faasched_report::Staged;
use faasched_report::node::{Collector, PolicySummary, Usage, policy_rows};
use faasched_workload::node::{
    Deadlines, Estimate, Length, MAX_RATE_PER_S, Params, Requests, Workload,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub use faasched_live::load::MAX_CONNECTIONS;

/// The version of summary.json's layout, its `schema_version` key.
const SUMMARY_SCHEMA_VERSION: u32 = 1;

/// The `policy` of summary.json's `metrics` rows: the node runs its own
/// policy, which a load does not ask.
const POLICY_LABEL: &str = "live";

/// A load run as a user asks for it.
#[derive(Clone, Debug, clap::Args)]
pub struct LoadOptions {
    /// The node runtime to load, as HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub target: String,
    /// A built-in node workload: fixed, bimodal-high, bimodal-extreme,
    /// sd-vbs, exponential, lognormal (SledgeScale's Table 3), colocated
    /// (its Fig. 1).
    #[arg(long, short = 'w', value_name = "NAME", default_value = "exponential")]
    pub workload: String,
    /// Offered requests per second (open loop).
    #[arg(long, required_unless_present = "closed", conflicts_with = "closed")]
    pub rate: Option<f64>,
    /// Seconds of sending (open loop: the stream's arrivals in that time).
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Connections kept alive for the open loop [default: one per 10 ms of
    /// requests at --rate, at least 16, at most 512].
    #[arg(long, value_name = "C", value_parser = connections, conflicts_with = "closed")]
    pub connections: Option<usize>,
    /// Closed loop with N clients, each on its own connection, sending back
    /// to back.
    #[arg(long, value_name = "N", value_parser = connections)]
    pub closed: Option<usize>,
    /// Seed of the request stream (arrivals, functions, work).
    #[arg(long, short = 's', default_value_t = 1)]
    pub seed: u64,
    /// Relative deadlines sent with each request, as `node simulate` takes
    /// them: `10x` of the work (the default), a time (`500us`), per function
    /// (`sift=1.13ms,*=10x`).
    #[arg(long, value_name = "SPEC")]
    pub deadline: Option<Deadlines>,
    /// How long a request waits for its whole response once sent, ms.
    #[arg(long, value_name = "MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub timeout_ms: u64,
    /// How long the requests in flight get to finish after --seconds, ms.
    #[arg(long, value_name = "MS", default_value_t = 5_000,
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub drain_ms: u64,
    /// A file holding the token every request presents as `Authorization:
    /// Bearer TOKEN`, for a target given an --invoke-token-file.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Call the target under TLS, trusting the CA certificates in this
    /// PEM file (the target's --tls-cert must chain to one and name the
    /// host of --target).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Write requests.csv (one row per request), workload.csv (the run as
    /// a workload CSV, each request's work the CPU time the node said it
    /// took: `node simulate -w DIR/workload.csv` runs the same requests
    /// with the real functions' work) and summary.json into this
    /// directory, put in place together once all are written.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// What the requests are sent as: `spin`, or real functions.
    #[command(flatten)]
    pub calls: crate::calls::CallOptions,
}

/// `--connections` and `--closed`: 1 to [`MAX_CONNECTIONS`].
pub fn connections(s: &str) -> Result<usize> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_CONNECTIONS).contains(&n) => Ok(n),
        _ => bail!("give a number from 1 to {MAX_CONNECTIONS}"),
    }
}

impl LoadOptions {
    /// Drives the node, prints what was measured and writes the files;
    /// an error after the output if a signal cut the run short.
    pub fn run(&self) -> Result<()> {
        let workload = Workload::builtin(&self.workload).context("--workload")?;
        let functions = workload.function_table();
        let calls = self.calls.calls(&functions)?;
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 86_400.0) {
            bail!(
                "--seconds {}: give a duration above 0 and at most a day",
                self.seconds
            );
        }
        let duration = (self.seconds * SEC as f64).round() as u64;
        let deadlines = self.deadline.clone().unwrap_or_default();
        let (mode, requests) = match (self.closed, self.rate) {
            (Some(clients), _) => {
                // The arrivals are not used: the densest stream that does
                // not end before the run does. Functions and work are drawn
                // as at any rate, so they are those of `node simulate`'s
                // stream with the same seed.
                let params = self.params(MAX_RATE_PER_S, Length::Duration(TIME_LIMIT), deadlines);
                (Mode::Closed { clients }, self.stream(&workload, &params)?)
            }
            (None, Some(rate)) => {
                if !(rate.is_finite() && rate > 0.0 && rate <= MAX_RATE_PER_S) {
                    bail!("--rate {rate}: give requests per second above 0");
                }
                let connections = self
                    .connections
                    .unwrap_or_else(|| faasched_live::load::default_connections(rate));
                let params = self.params(rate, Length::Duration(duration), deadlines);
                (Mode::Open { connections }, self.stream(&workload, &params)?)
            }
            (None, None) => bail!("give --rate (open loop) or --closed N"),
        };
        let config = LoadConfig {
            drain: self.drain_ms * MS,
            timeout: self.timeout_ms * MS,
            token: read_token(self.token_file.as_deref())?,
            tls: crate::tls::client(self.tls_ca.as_deref())?,
            ..LoadConfig::new(mode, duration)
        };
        interrupt::catch()?;
        let run = load::run(
            &self.target,
            &config,
            requests,
            &calls,
            &interrupt::requested,
        )?;
        let summary = run.summary();
        let metrics = metrics(&run, &functions);
        let rate = self.rate.or(summary.achieved_rps).unwrap_or(0.0);
        let mut file = self.summary_json(&config, &summary, &metrics, rate);
        if !calls.is_empty() {
            file["settings"]["calls"] = crate::calls::describe(&calls).into();
        }
        if let Some(dir) = &self.out {
            write_outputs(dir, &run, &file)?;
        }
        if self.json {
            out!("{}\n", serde_json::to_string_pretty(&file)?)?;
        } else {
            out!("{}", render_table(&summary))?;
            if let Some(dir) = &self.out {
                outln!(
                    "wrote requests.csv, workload.csv, summary.json to {}",
                    dir.display()
                )?;
            }
        }
        let errors = summary.all.errors.iter().map(|(k, &n)| (k.as_str(), n));
        if let Some(report) = crate::failures::report(summary.all.requests, errors) {
            eprint!("{report}");
        }
        if self.rate.is_some() {
            let offered = summary.all.requests as f64 / self.seconds;
            if let Some(warning) = overload(&self.workload, &workload, offered, &summary) {
                eprintln!("{warning}");
            }
        }
        // What was measured is out; the status tells a script (a sweep's
        // loop) that the run did not go its whole length.
        if run.end == End::Interrupted {
            let signal = interrupt::requested_by().unwrap_or(0);
            bail!(
                "interrupted by signal {signal} after {} requests were due; what was \
                 measured is {}",
                summary.all.requests,
                match &self.out {
                    Some(dir) => format!("in {}", dir.display()),
                    None => "printed above".to_string(),
                }
            );
        }
        Ok(())
    }

    fn params(&self, rate_per_s: f64, length: Length, deadlines: Deadlines) -> Params {
        Params {
            rate_per_s,
            length,
            seed: self.seed,
            deadlines,
            // Not sent: the runtime estimates for itself.
            estimate: Estimate::Exact,
        }
    }

    fn stream(&self, workload: &Workload, params: &Params) -> Result<Requests> {
        workload
            .requests(params)
            .with_context(|| format!("--workload {}", self.workload))
    }

    /// summary.json: its layout's version, the settings, what was measured
    /// (and, under `metrics`, the simulator's metrics of it at `rate`).
    fn summary_json(
        &self,
        config: &LoadConfig,
        summary: &LoadSummary,
        metrics: &PolicySummary,
        rate: f64,
    ) -> Value {
        let mut file = json!({
            "schema_version": SUMMARY_SCHEMA_VERSION,
            "faasched_version": env!("CARGO_PKG_VERSION"),
            "settings": {
                "target": self.target,
                "workload": self.workload,
                "rate_rps": self.rate,
                "seconds": self.seconds,
                "closed_clients": self.closed,
                "connections": config.mode.connections(),
                "seed": self.seed,
                "deadlines": self.deadline.as_ref().map_or("10x".to_string(), Deadlines::to_string),
                "timeout_ms": self.timeout_ms,
                "drain_ms": self.drain_ms,
            },
        });
        let measured = serde_json::to_value(summary).expect("a summary is plain data");
        if let (Value::Object(file), Value::Object(measured)) = (&mut file, measured) {
            file.extend(measured);
        }
        file["metrics"] = policy_rows(rate, metrics)
            .map(|row| serde_json::to_value(row).expect("a row is plain data"))
            .collect();
        file
    }
}

/// The warning of an open loop whose target answered well under the
/// `rate` offered (the requests due over the seconds of sending), or left
/// requests unsent: what that rate of workload `name` asks of the node,
/// and what one worker serves.
fn overload(name: &str, workload: &Workload, rate: f64, s: &LoadSummary) -> Option<String> {
    let answered = s.achieved_rps.unwrap_or(0.0);
    let unsent = s.all.errors.get("unsent").copied().unwrap_or(0);
    // A target that keeps up answers the last request just after it is
    // due, so at the offered rate or above; the margin is for a client
    // held back on a busy machine.
    if unsent == 0 && answered >= 0.75 * rate {
        return None;
    }
    let mean_us = workload.mean_work() / 1e3;
    Some(format!(
        "warning: offered {rate:.0} requests/s, answered {answered:.0}/s: the load is above what \
         the target serves, so its latencies are mostly queueing. {} asks {mean_us:.0} µs \
         of work a request on average: {:.2} cores at this rate, and one worker serves at most \
         {:.0} requests/s of it. Lower --rate, or serve with more --workers",
        name,
        rate * mean_us / 1e6,
        1e6 / mean_us,
    ))
}

/// The run's outcomes through the simulator's [`Collector`], so that its
/// numbers read as `node simulate`'s and `node replay`'s: a request not
/// answered with a 2xx is dropped; the span runs from the start to the last
/// answer; the workers' busy time is the node's, not seen from here.
fn metrics(run: &LoadRun, functions: &Functions) -> PolicySummary {
    let mut collector = Collector::new(POLICY_LABEL);
    let mut span = 0;
    for record in &run.records {
        let outcome = record.outcome();
        span = span.max(outcome.finish.unwrap_or(0));
        collector.record(&outcome);
    }
    collector.finish(
        functions,
        Usage {
            span,
            ..Usage::default()
        },
    )
}

/// Writes requests.csv, workload.csv and summary.json into `dir`, staged:
/// an earlier run's files are replaced only once all are written.
fn write_outputs(dir: &Path, run: &LoadRun, file: &Value) -> Result<()> {
    let mut staged = Staged::new();
    staged.create_dir(dir)?;
    write_staged(&dir.join("requests.csv"), &mut staged, |w| run.write_csv(w))?;
    write_staged(&dir.join("workload.csv"), &mut staged, |w| {
        run.write_workload_csv(w)
    })?;
    faasched_report::write_json(&dir.join("summary.json"), file, &mut staged)?;
    staged.commit()?;
    Ok(())
}

/// The legend printed above the table.
const LEGEND: &str = "\
p50/p90/p99/p999/max: latency in µs (completion − intended send) over answered requests;
sd_p99: p99 slowdown (latency / work); errors: requests not answered with a 2xx
";

/// The table: one line for all requests and one per function, then what
/// was sent, how fast it was answered, and the errors by kind.
fn render_table(s: &LoadSummary) -> String {
    const HEADER: [&str; 10] = [
        "function", "requests", "answered", "errors", "p50_us", "p90_us", "p99_us", "p999_us",
        "max_us", "sd_p99",
    ];
    let cells = |name: &str, scope: &ScopeSummary| -> [String; 10] {
        let l = scope.latency_us.as_ref();
        let us = |f: fn(&load::LatencySummary) -> u64| l.map_or("-".into(), |l| f(l).to_string());
        [
            name.to_string(),
            scope.requests.to_string(),
            scope.answered.to_string(),
            scope.errors.values().sum::<u64>().to_string(),
            us(|l| l.p50),
            us(|l| l.p90),
            us(|l| l.p99),
            us(|l| l.p999),
            us(|l| l.max),
            scope
                .slowdown
                .as_ref()
                .map_or("-".into(), |sd| format!("{:.2}", sd.p99)),
        ]
    };
    let mut rows = vec![HEADER.map(String::from), cells("all", &s.all)];
    rows.extend(s.functions.iter().map(|(name, scope)| cells(name, scope)));
    let mut widths = [0; 10];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::from(LEGEND);
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (cell, w))| match i {
                0 => format!("{cell:<w$}"),
                _ => format!("{cell:>w$}"),
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "{} loop over {} connections: sent {} of {} due ({} late by over 1 ms); {} in {:.3} s; ended: {}\n",
        s.mode,
        s.connections,
        s.sent,
        s.all.requests,
        s.late_sends,
        s.achieved_rps
            .map_or("nothing answered".into(), |r| format!("{r:.1} answered/s")),
        s.elapsed_s,
        s.end,
    ));
    if !s.all.errors.is_empty() {
        let kinds: Vec<String> = s
            .all
            .errors
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        out.push_str(&format!("errors: {}\n", kinds.join(", ")));
    }
    out
}
