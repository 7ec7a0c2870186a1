//! CH-RLU's load against a live cluster (`faasched cluster load`): the
//! simulator's [`ClosedLoop`] sampler drives
//! [`faasched_live::cluster::load`]'s closed-loop clients, or the
//! simulator's open-loop stream (Fig. 10's rising burst) its open loop;
//! each answer becomes an [`InvocationOutcome`] for the simulator's
//! [`Collector`], so a live run has the same summary as `cluster
//! simulate`'s.
//!
//! The run is the paper's sped up uniformly by the time scale: the function
//! table's warm and cold times (as `node serve --time-scale` scales them)
//! and the clients' think time shrink alike, and so do the bursts of
//! `functionbench-bursts` (every 30 s of the paper's time) and the arrival
//! times of `functionbench-rising` (its 30 minutes). Each call asks for its
//! function's scaled warm time of work.

use super::calibrate::{Measured, per_label};
use super::publish::Rows;
use super::run::{
    ClusterOptions, ClusterWorkload, FUNCTIONBENCH, FUNCTIONBENCH_BURSTS, FUNCTIONBENCH_RISING,
};
use crate::calls::CallOptions;
use crate::interrupt;
use crate::node::serve::read_token;
use crate::output::{Outputs, write_staged};
use anyhow::{Context, Result, bail};
use faasched_live::auth::Token;
use faasched_live::cluster::load::{Call, CallRecord, ClientRun, run_clients, run_schedule};
use faasched_live::load::{End, Lateness, LoadConfig, LoadError, MAX_CONNECTIONS, Mode, Sampler};
use faasched_live::node::containers::ColdStart;
use faasched_live::node::load::{Calls as RealCalls, FunctionCall};
use faasched_live::tls::ClientTls;
use faasched_model::cluster::{
    FunctionProfile, Invocation, InvocationId, InvocationInfo, InvocationOutcome, ServerId,
};
use faasched_model::{FunctionId, MS, Nanos, SEC, Time, US};
use faasched_report::Staged;
use faasched_report::cluster::{ClusterRow, ClusterUsage, Collector};
use faasched_workload::cluster::{ClosedLoop, FunctionTable, RateProfile};
use rand::SeedableRng;
use rand_pcg::Pcg64;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

/// requests.csv's header.
pub const REQUESTS_CSV_HEADER: &str =
    "id,client,function,sent_us,done_us,status,node,cold,runtime_us,error";

/// requests.csv's header in the open loop: the closed loop's, `client` the
/// connection, and each call's time in the schedule after it.
pub const OPEN_REQUESTS_CSV_HEADER: &str =
    "id,client,function,sent_us,done_us,status,node,cold,runtime_us,error,intended_us";

/// An open-loop call is given this long, at the stream's peak rate, before
/// the connections run out: the connections by default are the calls sent
/// in this time (the functions' warm times scaled by 0.01 are 0.3 to
/// 20 ms, so a tenth of a second leaves room for queueing on the nodes).
const OPEN_LOOP_CALL_BUDGET: f64 = 0.1;

/// The defaults of an open-loop workload, on the run's clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpenLoop {
    /// Connections: one per [`OPEN_LOOP_CALL_BUDGET`] of calls at the
    /// peak rate, from 16 to [`MAX_CONNECTIONS`].
    pub connections: u32,
    /// Seconds of sending: the whole stream (the rising burst's 30 minutes
    /// times the time scale).
    pub seconds: f64,
}

/// `workload`'s open-loop defaults at `time_scale`; `None` for a
/// closed-loop workload (or one the live load does not know).
pub fn open_loop(workload: &str, time_scale: f64) -> Option<OpenLoop> {
    (workload == FUNCTIONBENCH_RISING).then(|| {
        let profile = RateProfile::fig10();
        let peak = profile.peak() / time_scale;
        let wanted = (peak * OPEN_LOOP_CALL_BUDGET).ceil();
        let connections = if wanted.is_nan() {
            16
        } else {
            (wanted.min(MAX_CONNECTIONS as f64) as u32).clamp(16, MAX_CONNECTIONS as u32)
        };
        OpenLoop {
            connections,
            seconds: profile.end() as f64 / SEC as f64 * time_scale,
        }
    })
}

impl OpenLoop {
    /// The clients (connections, in an open loop) and seconds of a run of
    /// `workload` at `time_scale`: as given, else the open loop's defaults,
    /// else `closed`'s.
    pub fn sized(
        workload: &str,
        time_scale: f64,
        clients: Option<u32>,
        seconds: Option<f64>,
        closed: (u32, f64),
    ) -> (u32, f64) {
        let open = open_loop(workload, time_scale);
        (
            clients.or(open.map(|o| o.connections)).unwrap_or(closed.0),
            seconds.or(open.map(|o| o.seconds)).unwrap_or(closed.1),
        )
    }
}

/// A live load run as the user gives it.
#[derive(Clone, Debug)]
pub struct LiveLoadSpec {
    /// The gateway (or a node), `HOST:PORT`.
    pub target: String,
    /// `functionbench`, `functionbench-bursts` (closed loop) or
    /// `functionbench-rising` (open loop).
    pub workload: String,
    /// Closed-loop clients, one connection each; in the open loop, the
    /// connections the calls share ([`open_loop`] has its default).
    pub clients: u32,
    /// Seconds of sending, on the run's (the wall) clock.
    pub seconds: f64,
    /// What the table's times and the think time are multiplied by.
    pub time_scale: f64,
    /// Seed of the weights, bursts and clients' draws.
    pub seed: u64,
    /// The row's name in the outputs.
    pub label: String,
    /// How long the calls in flight at the end get to be answered.
    pub drain: Nanos,
    /// How long a call's answer is awaited at most.
    pub timeout: Nanos,
    /// What every call presents, if the target asks for a token.
    pub token: Option<Token>,
    /// The target is called under TLS, checked against this CA.
    pub tls: Option<ClientTls>,
    /// What each function's calls are sent as, if not `spin` (mappings
    /// over the table's functions, or the copies they share a name with).
    pub calls: CallOptions,
    /// What the real functions cost here, by the table's name: a call's
    /// slowdown is over its function's measured warm time, not the
    /// table's; empty: the table's for every function.
    pub measured: BTreeMap<String, Measured>,
}

/// What a live load run measured.
#[derive(Clone, Debug)]
pub struct LiveLoad {
    /// Every call sent.
    pub run: ClientRun,
    /// The nodes that answered, in the order first seen: `ServerId(i)` is
    /// the i-th.
    pub nodes: Vec<String>,
    /// The summary's row.
    pub row: ClusterRow,
    /// The settings and counts summary.json records.
    pub settings: Value,
    /// In the open loop, how late the calls were sent (of those sent).
    pub late: Option<Lateness>,
}

impl LiveLoadSpec {
    /// Checks the options (errors name the option), then runs the clients
    /// until `seconds` have passed or `stop` says so, and summarises them.
    pub fn run(&self, stop: &dyn Fn() -> bool) -> Result<LiveLoad> {
        if ![FUNCTIONBENCH, FUNCTIONBENCH_BURSTS, FUNCTIONBENCH_RISING]
            .contains(&self.workload.as_str())
        {
            bail!(
                "--workload {}: give {FUNCTIONBENCH} or {FUNCTIONBENCH_BURSTS} (closed-loop \
                 clients), or {FUNCTIONBENCH_RISING} (open loop)",
                self.workload
            );
        }
        if !(1..=MAX_CONNECTIONS).contains(&(self.clients as usize)) {
            bail!(
                "--clients {}: give a number from 1 to {MAX_CONNECTIONS}",
                self.clients
            );
        }
        if !(self.time_scale.is_finite() && self.time_scale > 0.0 && self.time_scale <= 1.0) {
            bail!(
                "--time-scale {}: give a factor above 0 and at most 1",
                self.time_scale
            );
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 86_400.0) {
            bail!(
                "--seconds {}: give a duration above 0 and at most a day",
                self.seconds
            );
        }
        let options = ClusterOptions {
            workload: self.workload.clone(),
            clients: self.clients,
            seconds: self.seconds,
            seed: self.seed,
            ..ClusterOptions::default()
        };
        let setup = options.setup()?;
        let scaled = setup
            .table()
            .scaled(self.time_scale)
            .context("--time-scale")?;
        let real = self.calls.calls(scaled.functions())?;
        let duration = (self.seconds * SEC as f64).round() as Nanos;
        let config = |mode| LoadConfig {
            drain: self.drain,
            timeout: self.timeout,
            token: self.token.clone(),
            tls: self.tls.clone(),
            ..LoadConfig::new(mode, duration)
        };
        let (run, workload, late) = match &setup.workload {
            ClusterWorkload::Closed { clients, .. } => {
                let sampler = Locust::new(
                    clients.clone(),
                    Calls::new(&scaled, self.time_scale, real.clone()),
                    self.seed,
                );
                let mode = Mode::Closed {
                    clients: self.clients as usize,
                };
                let run = run_clients(&self.target, &config(mode), sampler, stop)
                    .map_err(option_error)?;
                let workload = json!({
                    "name": self.workload,
                    "functions": scaled.len(),
                    "clients": clients.threads(),
                    "think_max_s": clients.think() as f64 / SEC as f64,
                });
                (run, workload, None)
            }
            _ => {
                let mut schedule = Schedule::new(
                    setup.invocations()?,
                    Calls::new(&scaled, self.time_scale, real.clone()),
                );
                let mode = Mode::Open {
                    connections: self.clients as usize,
                };
                let run = run_schedule(&self.target, &config(mode), &mut schedule, stop)
                    .map_err(option_error)?;
                if let Some(e) = schedule.error {
                    return Err(e).context(format!("--workload {}", self.workload));
                }
                let late = run.lateness();
                (run, setup.describe()["workload"].take(), Some(late))
            }
        };
        // The nodes' wait after a cold start is not known here; a slowdown
        // is over the warm time alone.
        let profiles: Vec<FunctionProfile> = scaled
            .iter()
            .map(|(f, p)| match self.measured.get(&*f.name) {
                Some(m) => m.profile(p, ColdStart::default()),
                None => *p,
            })
            .collect();
        let (collector, nodes) = outcomes(&run.records, &profiles, &self.label, &self.target);
        let summary = collector.finish();
        let row = ClusterRow::new(&summary, &ClusterUsage::default());
        let mut settings = self.settings(workload, &run, &nodes, late);
        if !real.is_empty() {
            let mut calls = crate::calls::describe(&real);
            for (label, _, measured) in per_label(&real, &scaled, &self.measured) {
                if let (Some(m), Some(entry)) = (measured, calls.get_mut(label)) {
                    entry["warm_ms"] = json!(m.warm as f64 / 1e6);
                    entry["load_ms"] = json!(m.load as f64 / 1e6);
                }
            }
            settings["calls"] = calls.into();
        }
        Ok(LiveLoad {
            run,
            nodes,
            row,
            settings,
            late,
        })
    }

    /// summary.json's settings: the run's options, how it ended, its
    /// failures by kind and each node's counts.
    fn settings(
        &self,
        workload: Value,
        run: &ClientRun,
        nodes: &[String],
        late: Option<Lateness>,
    ) -> Value {
        let errors = errors(run);
        let per_node: Vec<Value> = nodes
            .iter()
            .enumerate()
            .map(|(i, node)| {
                let answered = run
                    .records
                    .iter()
                    .filter(|r| r.answered() && node_of(r, &self.target) == node);
                let (mut invocations, mut cold) = (0u64, 0u64);
                for r in answered {
                    invocations += 1;
                    cold += u64::from(r.cold == Some(true));
                }
                json!({"server": i, "node": node, "invocations": invocations, "cold_starts": cold})
            })
            .collect();
        // The open loop's clients are connections.
        let clients = if late.is_some() {
            "connections"
        } else {
            "clients"
        };
        let mut settings = json!({
            "live": true,
            "target": self.target,
            "workload": workload,
            "time_scale": self.time_scale,
            clients: self.clients,
            "seconds": self.seconds,
            "seed": self.seed,
            "drain_s": self.drain as f64 / SEC as f64,
            "timeout_s": self.timeout as f64 / SEC as f64,
            "end": run.end.as_str(),
            "elapsed_s": run.elapsed as f64 / SEC as f64,
            "errors": errors,
            "nodes": per_node,
        });
        if let Some(late) = late {
            // How late the open loop sent says how much of the latency is
            // the sender's.
            let us = |ns: Nanos| ns as f64 / US as f64;
            settings["sent_late_us"] =
                json!({"p50": us(late.p50), "p99": us(late.p99), "max": us(late.max)});
        }
        settings
    }
}

/// A live run's error as the user reads it: a bad field as the option that
/// gave it, anything else as the target's.
fn option_error(e: LoadError) -> anyhow::Error {
    match e {
        LoadError::Invalid { field, why } => anyhow::anyhow!("--{field}: {why}"),
        e => anyhow::anyhow!("--target: {e}"),
    }
}

/// The node that answered `r`: its `x-faasched-node`, or the target
/// itself when it is a node answering directly.
fn node_of<'a>(r: &'a CallRecord, target: &'a str) -> &'a str {
    r.node.as_deref().unwrap_or(target)
}

/// Each record as an outcome, into a collector named `label`; and the
/// nodes, first seen first. An answer other than a 2xx, or none, is a
/// dropped invocation.
fn outcomes(
    records: &[CallRecord],
    profiles: &[FunctionProfile],
    label: &str,
    target: &str,
) -> (Collector, Vec<String>) {
    let mut collector = Collector::new(label);
    let mut nodes: Vec<String> = Vec::new();
    for r in records {
        let Some(profile) = profiles.get(r.call.function as usize) else {
            continue;
        };
        let server = r.answered().then(|| {
            let node = node_of(r, target);
            let i = match nodes.iter().position(|n| n == node) {
                Some(i) => i,
                None => {
                    nodes.push(node.to_string());
                    nodes.len() - 1
                }
            };
            ServerId(i as u32)
        });
        collector.record(&InvocationOutcome {
            info: InvocationInfo {
                id: InvocationId(r.id),
                arrival: r.intended,
                profile: *profile,
            },
            work: profile.warm,
            server,
            cold: r.answered() && r.cold == Some(true),
            // A node's answer does not say when its work first ran.
            first_run: None,
            finish: r.answered().then_some(r.done).flatten(),
            inside: None,
        });
    }
    (collector, nodes)
}

/// The calls of a scaled function table on the run's clock: each
/// function's name and scaled warm time (whole µs, at least 1), the real
/// function it is sent to if any, and the time scale between the paper's
/// clock and the run's.
struct Calls {
    names: Vec<Arc<str>>,
    work_us: Vec<u64>,
    real: Vec<Option<Arc<FunctionCall>>>,
    scale: f64,
}

impl Calls {
    fn new(scaled: &FunctionTable, scale: f64, real: RealCalls) -> Calls {
        let (names, work_us): (Vec<Arc<str>>, Vec<u64>) = scaled
            .iter()
            .map(|(f, p)| (Arc::from(&*f.name), (p.warm + US / 2) / US))
            .map(|(n, us): (Arc<str>, u64)| (n, us.max(1)))
            .unzip();
        Calls {
            real: names.iter().map(|n| real.of(n).cloned()).collect(),
            names,
            work_us,
            scale,
        }
    }

    /// A time of the paper's clock on the run's.
    fn to_run(&self, paper: Time) -> Time {
        (paper as f64 * self.scale).min(Time::MAX as f64) as Time
    }

    /// A time of the run's clock on the paper's.
    fn to_paper(&self, run: Time) -> Time {
        (run as f64 / self.scale).min(Time::MAX as f64) as Time
    }

    /// A call of `function` at `paper` on the paper's clock; `None` for a
    /// function not in the table.
    fn call(&self, FunctionId(function): FunctionId, paper: Time) -> Option<Call> {
        Some(Call {
            function,
            name: self.names.get(function as usize)?.clone(),
            send: self.to_run(paper),
            work_us: *self.work_us.get(function as usize)?,
            call: self.real.get(function as usize)?.clone(),
        })
    }
}

/// [`ClosedLoop`] on the run's clock: times go to the paper's clock (÷
/// scale) for the sampler and back (× scale), so think time and bursts
/// shrink with the table.
struct Locust {
    clients: ClosedLoop,
    calls: Calls,
    rng: Pcg64,
}

impl Locust {
    fn new(clients: ClosedLoop, calls: Calls, seed: u64) -> Locust {
        Locust {
            clients,
            calls,
            rng: Pcg64::seed_from_u64(seed),
        }
    }
}

impl Sampler<Call> for Locust {
    fn next(&mut self, _client: u32, finish: Time) -> Option<Call> {
        let paper = self.calls.to_paper(finish);
        let (function, send) = self.clients.next_after(paper, &mut self.rng);
        self.calls.call(function, send)
    }
}

/// The simulator's open-loop stream on the run's clock: each invocation
/// becomes a call at its arrival × scale, of its function's scaled warm
/// time (the stream's own work is the unscaled warm time). It ends at the
/// stream's end or its first error, kept in `error`.
struct Schedule<I> {
    invocations: I,
    calls: Calls,
    error: Option<faasched_workload::Error>,
}

impl<I> Schedule<I> {
    fn new(invocations: I, calls: Calls) -> Schedule<I> {
        Schedule {
            invocations,
            calls,
            error: None,
        }
    }
}

impl<I> Iterator for Schedule<I>
where
    I: Iterator<Item = faasched_workload::Result<Invocation>>,
{
    type Item = Call;

    fn next(&mut self) -> Option<Call> {
        if self.error.is_some() {
            return None;
        }
        match self.invocations.next()? {
            Ok(inv) => self.calls.call(inv.function, inv.arrival),
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }
}

impl LiveLoad {
    /// requests.csv: [`REQUESTS_CSV_HEADER`] (in the open loop
    /// [`OPEN_REQUESTS_CSV_HEADER`]), then one row per call in the order
    /// sent; times in µs from the start, empty cells for what is not known.
    pub fn write_csv(&self, out: &mut dyn Write) -> csv::Result<()> {
        let mut csv = csv::Writer::from_writer(out);
        let open = self.late.is_some();
        let header = if open {
            OPEN_REQUESTS_CSV_HEADER
        } else {
            REQUESTS_CSV_HEADER
        };
        csv.write_record(header.split(','))?;
        let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        for r in &self.run.records {
            let intended = open.then(|| (r.intended / US).to_string());
            csv.write_record(
                [
                    r.id.to_string(),
                    r.client.to_string(),
                    r.call.name.to_string(),
                    opt(r.sent.map(|s| s / US)),
                    opt(r.done.map(|d| d / US)),
                    opt(r.status.map(u64::from)),
                    r.node.clone().unwrap_or_default(),
                    opt(r.cold.map(u64::from)),
                    opt(r.runtime_us),
                    r.failure
                        .as_ref()
                        .map(|f| f.kind().to_string())
                        .unwrap_or_default(),
                ]
                .into_iter()
                .chain(intended),
            )?;
        }
        csv.flush()?;
        Ok(())
    }
}

/// What `faasched cluster load` runs, and where its results go.
#[derive(Clone, Debug, clap::Args)]
pub struct Options {
    /// The gateway (or a single node), HOST:PORT
    #[arg(long, value_name = "HOST:PORT")]
    pub target: String,
    /// functionbench, functionbench-bursts (two of the ten most weighted
    /// functions ten times as frequent every 30 s of the paper's time: its
    /// Fig. 9), or functionbench-rising (open loop, 2 to 18 invocations/s
    /// of the paper's time over 25 minutes, held to 30: its Fig. 10)
    #[arg(long, short = 'w', default_value = "functionbench")]
    pub workload: String,
    /// Closed-loop clients, one connection each (the paper: 20 for low
    /// load, 120 for heavy; by default 20); in the open loop, the
    /// connections the calls share (by default one per 100 ms of calls at
    /// the peak rate: 180 at --time-scale 0.01)
    #[arg(long)]
    pub clients: Option<u32>,
    /// Seconds of sending, on the wall clock (by default 60; in the open
    /// loop, the whole burst: its 30 minutes × --time-scale)
    #[arg(long)]
    pub seconds: Option<f64>,
    /// What the function table's times and the think time are multiplied
    /// by (the nodes' --time-scale)
    #[arg(long, default_value_t = 0.01)]
    pub time_scale: f64,
    /// Seed of the functions' weights, the bursts and the clients' draws
    #[arg(long, short = 's', default_value_t = 1)]
    pub seed: u64,
    /// The run's name in the outputs' policy column, e.g. the gateway's
    /// router
    #[arg(long, default_value = "live")]
    pub label: String,
    /// How long the calls in flight when sending stops get to be answered,
    /// ms
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub drain_ms: u64,
    /// How long a call's answer is awaited at most, ms
    #[arg(long, default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub timeout_ms: u64,
    /// A file holding the token every request presents as `Authorization:
    /// Bearer TOKEN`, for a target given an --invoke-token-file.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Call the target under TLS, trusting the CA certificates in this
    /// PEM file (the target's --tls-cert must chain to one and name the
    /// host of --target).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// What the calls are sent as: `spin` of each function's warm time,
    /// or real functions (a gateway whose nodes serve them: `cluster up
    /// --deploy DIR`).
    #[command(flatten)]
    pub calls: CallOptions,
    /// Where the results go; with a directory, requests.csv too. The
    /// command's own --out and --json give it (their help is its own).
    #[arg(skip)]
    pub outputs: Outputs,
}

/// Closed-loop clients unless the options say.
pub const CLIENTS: u32 = 20;

/// Seconds of a closed loop's sending unless the options say.
pub const SECONDS: f64 = 60.0;

/// Runs the clients against the target and publishes the run as `cluster
/// simulate` does, with requests.csv; a signal stops the sending, and what
/// was measured is published before the error that says so.
pub fn run(o: Options) -> Result<()> {
    let (clients, seconds) = OpenLoop::sized(
        &o.workload,
        o.time_scale,
        o.clients,
        o.seconds,
        (CLIENTS, SECONDS),
    );
    let spec = LiveLoadSpec {
        target: o.target.clone(),
        workload: o.workload.clone(),
        clients,
        seconds,
        time_scale: o.time_scale,
        seed: o.seed,
        label: o.label.clone(),
        drain: o.drain_ms * MS,
        timeout: o.timeout_ms * MS,
        token: read_token(o.token_file.as_deref())?,
        tls: crate::tls::client(o.tls_ca.as_deref())?,
        calls: o.calls.clone(),
        measured: BTreeMap::new(),
    };
    match open_loop(&o.workload, o.time_scale) {
        None => eprintln!(
            "time scale {}: the functions' times and the think time are {} of the paper's",
            o.time_scale, o.time_scale
        ),
        Some(_) => eprintln!(
            "time scale {}: the functions' times and the invocations' times are {} of the \
             paper's; {} s of sending over {} connections",
            o.time_scale, o.time_scale, spec.seconds, spec.clients
        ),
    }
    interrupt::catch()?;
    let load = spec.run(&interrupt::requested)?;
    report_lateness(&load);
    report_failures(&load);
    let rows = Rows {
        extra: Some(("requests.csv", &|dir, staged| {
            write_requests(dir, &load, staged)
        })),
        ..Rows::new(&load.settings, std::slice::from_ref(&load.row))
    };
    o.outputs
        .publish_measured(&rows, "faasched cluster load", Staged::new())?;
    if load.run.end == End::Interrupted {
        let signal = interrupt::requested_by().unwrap_or(0);
        bail!(
            "interrupted by signal {signal} after {} calls were sent; what was measured is {}",
            load.run.records.len(),
            match &o.outputs.dir {
                Some(dir) => format!("in {}", dir.display()),
                None => "printed above".to_string(),
            }
        );
    }
    Ok(())
}

/// Says on stderr how late an open loop's calls were sent (a late call's
/// latency counts from its time all the same: this is the sender's share).
pub fn report_lateness(load: &LiveLoad) {
    if let Some(late) = load.late {
        eprintln!(
            "{}: calls sent late by p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            load.row.policy,
            late.p50 as f64 / 1e3,
            late.p99 as f64 / 1e3,
            late.max as f64 / 1e3,
        );
    }
}

/// Says on stderr how many calls failed, of which kinds, and why.
pub fn report_failures(load: &LiveLoad) {
    let calls = load.run.records.len() as u64;
    if let Some(report) = crate::failures::report(calls, errors(&load.run)) {
        eprint!("{report}");
    }
}

/// A run's calls not answered with a 2xx, by kind.
fn errors(run: &ClientRun) -> BTreeMap<&str, u64> {
    let mut errors = BTreeMap::<&str, u64>::new();
    for r in &run.records {
        if let Some(f) = &r.failure {
            *errors.entry(f.kind()).or_default() += 1;
        }
    }
    errors
}

/// Writes requests.csv into `dir`, staged with the other files.
fn write_requests(dir: &Path, load: &LiveLoad, staged: &mut Staged) -> Result<()> {
    write_staged(&dir.join("requests.csv"), staged, |w| load.write_csv(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::MS;

    fn record(id: u64, function: u32, node: Option<&str>, cold: bool, status: u16) -> CallRecord {
        CallRecord {
            call: Call {
                function,
                name: format!("f-{function}").into(),
                send: id * MS,
                work_us: 1,
                call: None,
            },
            id,
            client: 0,
            intended: id * MS,
            sent: Some(id * MS),
            cpu_us: None,
            preemptions: None,
            done: Some(id * MS + 3 * MS),
            status: Some(status),
            node: node.map(String::from),
            cold: node.map(|_| cold),
            runtime_us: Some(1),
            failure: (status != 200).then(|| faasched_live::load::Failure::Server {
                kind: "overloaded".into(),
            }),
            completed: None,
        }
    }

    #[test]
    fn answers_become_outcomes_by_node_cold_and_drop() {
        let profiles: Vec<FunctionProfile> = (0..2)
            .map(|f| FunctionProfile {
                function: FunctionId(f),
                memory_mb: 128,
                warm: MS,
                cold: 2 * MS,
            })
            .collect();
        let records = [
            record(0, 0, Some("b:2"), true, 200),
            record(1, 1, Some("a:1"), true, 200),
            record(2, 0, Some("b:2"), false, 200),
            record(3, 1, None, false, 503),
            record(4, 1, None, false, 200),
        ];
        let (collector, nodes) = outcomes(&records, &profiles, "ch-rlu", "gw:9");
        assert_eq!(nodes, ["b:2", "a:1", "gw:9"]);
        let s = collector.finish();
        assert_eq!(s.policy, "ch-rlu");
        assert_eq!((s.invocations, s.finished, s.dropped, s.cold), (5, 4, 1, 2));
        // Each finished one took 3 ms of a 1 ms warm time.
        assert_eq!(s.slowdown.unwrap().max, 3.0);
    }

    #[test]
    fn the_sampler_shrinks_think_time_and_work_by_the_scale() {
        let options = ClusterOptions {
            workload: FUNCTIONBENCH.into(),
            clients: 3,
            seconds: 10.0,
            ..ClusterOptions::default()
        };
        let ClusterWorkload::Closed { table, clients, .. } = options.setup().unwrap().workload
        else {
            panic!("functionbench is closed-loop");
        };
        let scaled = table.scaled(0.01).unwrap();
        let mut locust = Locust::new(clients, Calls::new(&scaled, 0.01, RealCalls::default()), 1);
        let mut finish = 0;
        for _ in 0..1_000 {
            let call = locust.next(0, finish).unwrap();
            let (f, p) = scaled.iter().nth(call.function as usize).unwrap();
            assert_eq!(&*call.name, &*f.name);
            assert_eq!(call.work_us, (p.warm + US / 2) / US);
            // Think U(0, 1 s) of the paper's time is U(0, 10 ms) here, up
            // to a nanosecond of each conversion's rounding.
            assert!(
                call.send + 2 >= finish && call.send <= finish + 10 * MS + 2,
                "{call:?}"
            );
            finish = call.send + 3 * MS;
        }
    }

    #[test]
    fn the_schedule_is_the_simulators_rising_stream_scaled() {
        let options = ClusterOptions {
            workload: FUNCTIONBENCH_RISING.into(),
            seed: 7,
            ..ClusterOptions::default()
        };
        let setup = options.setup().unwrap();
        let table = setup.table();
        let scaled = table.scaled(0.01).unwrap();
        let stream: Vec<Invocation> = setup
            .invocations()
            .unwrap()
            .take(200)
            .map(Result::unwrap)
            .collect();
        let calls: Vec<Call> = Schedule::new(
            setup.invocations().unwrap(),
            Calls::new(&scaled, 0.01, RealCalls::default()),
        )
        .take(200)
        .collect();
        assert_eq!(calls.len(), 200);
        for (inv, call) in stream.iter().zip(&calls) {
            let (f, p) = table.iter().nth(inv.function.0 as usize).unwrap();
            assert_eq!((call.function, &*call.name), (inv.function.0, &*f.name));
            // A hundredth of the paper's arrival and of the warm time
            // the stream asks (whole µs), up to a ns of rounding.
            assert!(
                call.send.abs_diff(inv.arrival / 100) <= 1,
                "{call:?} {inv:?}"
            );
            assert_eq!(inv.work, p.warm);
            assert_eq!(call.work_us, (inv.work + 50 * US) / (100 * US));
        }
        // The first three, by hand: the paper's 0.278 s, 0.293 s and
        // 1.788 s, a hundredth of each (truncated to the ns); matrix-multiply's
        // 117 ms, sklearn-regression's 53.57 s and disk-bench-dd's 1.068 s
        // of warm time, a hundredth of each.
        let first: Vec<(&str, Time, u64)> = calls[..3]
            .iter()
            .map(|c| (&*c.name, c.send, c.work_us))
            .collect();
        assert_eq!(
            first,
            [
                ("matrix-multiply-8", 2_782_794, 1_170),
                ("sklearn-regression-6", 2_929_144, 535_700),
                ("disk-bench-dd-7", 17_877_495, 10_680),
            ]
        );
        assert_eq!(
            stream[..3].iter().map(|i| i.arrival).collect::<Vec<_>>(),
            [278_279_464, 292_914_493, 1_787_749_510]
        );
    }

    #[test]
    fn the_rising_burst_by_default_runs_whole_over_a_connection_per_100_ms_at_its_peak() {
        let o = open_loop(FUNCTIONBENCH_RISING, 0.01).unwrap();
        // 18 invocations/s of the paper's is 1,800/s here.
        assert_eq!(o.connections, 180);
        assert!((o.seconds - 18.0).abs() < 1e-9, "{o:?}");
        assert_eq!(
            open_loop(FUNCTIONBENCH_RISING, 1.0).unwrap().connections,
            16
        );
        assert_eq!(
            open_loop(FUNCTIONBENCH_RISING, 1e-6).unwrap().connections,
            MAX_CONNECTIONS as u32
        );
        assert_eq!(open_loop(FUNCTIONBENCH, 0.01), None);
        assert_eq!(open_loop(FUNCTIONBENCH_BURSTS, 0.01), None);
    }

    #[test]
    fn bad_options_are_named() {
        let spec = LiveLoadSpec {
            target: "127.0.0.1:1".into(),
            workload: "functionbench".into(),
            clients: 2,
            seconds: 1.0,
            time_scale: 0.01,
            seed: 1,
            label: "live".into(),
            drain: SEC,
            timeout: SEC,
            token: None,
            tls: None,
            calls: CallOptions::default(),
            measured: BTreeMap::new(),
        };
        let e = |spec: LiveLoadSpec| spec.run(&|| false).unwrap_err().to_string();
        for (bad, option) in [
            (
                LiveLoadSpec {
                    workload: "azure-functions".into(),
                    ..spec.clone()
                },
                "--workload",
            ),
            (
                LiveLoadSpec {
                    clients: 0,
                    ..spec.clone()
                },
                "--clients",
            ),
            (
                LiveLoadSpec {
                    seconds: -1.0,
                    ..spec.clone()
                },
                "--seconds",
            ),
            (
                LiveLoadSpec {
                    time_scale: 0.0,
                    ..spec.clone()
                },
                "--time-scale",
            ),
            (
                LiveLoadSpec {
                    target: "nowhere".into(),
                    ..spec.clone()
                },
                "--target",
            ),
            (
                LiveLoadSpec {
                    workload: FUNCTIONBENCH_RISING.into(),
                    clients: 513,
                    ..spec.clone()
                },
                "--clients",
            ),
            (
                LiveLoadSpec {
                    workload: FUNCTIONBENCH_RISING.into(),
                    target: "nowhere".into(),
                    ..spec.clone()
                },
                "--target",
            ),
        ] {
            let e = e(bad);
            assert!(e.starts_with(option), "{option}: {e}");
        }
    }
}
