//! CH-RLU's Locust clients against a live cluster (`faasched cluster
//! load`): the simulator's [`ClosedLoop`] sampler drives
//! [`faasched_live::cluster::load`]'s clients, and each answer becomes an
//! [`InvocationOutcome`] for the simulator's [`Collector`], so a live run
//! has the same summary as `cluster simulate`'s.
//!
//! The run is the paper's sped up uniformly by the time scale: the function
//! table's warm and cold times (as `node serve --time-scale` scales them)
//! and the clients' think time shrink alike, and so do the bursts of
//! `functionbench-bursts` (every 30 s of the paper's time). Each call asks
//! for its function's scaled warm time of work.

use super::run::{ClusterOptions, ClusterWorkload, FUNCTIONBENCH, FUNCTIONBENCH_BURSTS};
use anyhow::{Context, Result, bail};
use faasched_live::cluster::load::{Call, CallRecord, ClientRun, Sampler, run_clients};
use faasched_live::node::load::{LoadConfig, LoadError, MAX_CONNECTIONS, Mode};
use faasched_model::cluster::{
    FunctionProfile, InvocationId, InvocationInfo, InvocationOutcome, ServerId,
};
use faasched_model::{FunctionId, Nanos, SEC, Time, US};
use faasched_report::cluster::{ClusterRow, ClusterUsage, Collector};
use faasched_workload::cluster::{ClosedLoop, FunctionTable};
use rand::SeedableRng;
use rand_pcg::Pcg64;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

/// requests.csv's header.
pub const REQUESTS_CSV_HEADER: &str =
    "id,client,function,sent_us,done_us,status,node,cold,runtime_us,error";

/// A live load run as the user gives it.
#[derive(Clone, Debug)]
pub struct LiveLoadSpec {
    /// The gateway (or a node), `HOST:PORT`.
    pub target: String,
    /// `functionbench` or `functionbench-bursts`.
    pub workload: String,
    /// Closed-loop clients, one connection each.
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
}

impl LiveLoadSpec {
    /// Checks the options (errors name the option), then runs the clients
    /// until `seconds` have passed or `stop` says so, and summarises them.
    pub fn run(&self, stop: &dyn Fn() -> bool) -> Result<LiveLoad> {
        if ![FUNCTIONBENCH, FUNCTIONBENCH_BURSTS].contains(&self.workload.as_str()) {
            bail!(
                "--workload {}: give {FUNCTIONBENCH} or {FUNCTIONBENCH_BURSTS} (closed-loop \
                 clients)",
                self.workload
            );
        }
        if !(1..=MAX_CONNECTIONS).contains(&(self.clients as usize)) {
            bail!(
                "--clients {}: give a number from 1 to {MAX_CONNECTIONS}",
                self.clients
            );
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 86_400.0) {
            bail!(
                "--seconds {}: give a duration above 0 and at most a day",
                self.seconds
            );
        }
        if !(self.time_scale.is_finite() && self.time_scale > 0.0 && self.time_scale <= 1.0) {
            bail!(
                "--time-scale {}: give a factor above 0 and at most 1",
                self.time_scale
            );
        }
        let options = ClusterOptions {
            workload: self.workload.clone(),
            clients: self.clients,
            seconds: self.seconds,
            seed: self.seed,
            ..ClusterOptions::default()
        };
        let ClusterWorkload::Closed { table, clients, .. } = options.setup()?.workload else {
            bail!("--workload {}: not closed-loop clients", self.workload);
        };
        let scaled = table.scaled(self.time_scale).context("--time-scale")?;
        let sampler = Locust::new(clients.clone(), &scaled, self.time_scale, self.seed);
        let config = LoadConfig {
            drain: self.drain,
            timeout: self.timeout,
            ..LoadConfig::new(
                self.target.clone(),
                Mode::Closed {
                    clients: self.clients as usize,
                },
                (self.seconds * SEC as f64).round() as Nanos,
            )
        };
        let run = run_clients(&config, sampler, stop).map_err(|e| match e {
            LoadError::Invalid { field, why } => anyhow::anyhow!("--{field}: {why}"),
            e => anyhow::anyhow!("--target: {e}"),
        })?;
        let (collector, nodes) =
            outcomes(&run.records, scaled.profiles(), &self.label, &self.target);
        let summary = collector.finish();
        let row = ClusterRow::new(&summary, &ClusterUsage::default());
        let settings = self.settings(&clients, &table, &run, &nodes);
        Ok(LiveLoad {
            run,
            nodes,
            row,
            settings,
        })
    }

    /// summary.json's settings: the run's options, how it ended, its
    /// failures by kind and each node's counts.
    fn settings(
        &self,
        clients: &ClosedLoop,
        table: &FunctionTable,
        run: &ClientRun,
        nodes: &[String],
    ) -> Value {
        let mut errors = BTreeMap::<&str, u64>::new();
        for r in &run.records {
            if let Some(f) = &r.failure {
                *errors.entry(f.kind()).or_default() += 1;
            }
        }
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
        json!({
            "live": true,
            "target": self.target,
            "workload": {
                "name": self.workload,
                "functions": table.len(),
                "clients": clients.threads(),
                "think_max_s": clients.think() as f64 / SEC as f64,
            },
            "time_scale": self.time_scale,
            "clients": self.clients,
            "seconds": self.seconds,
            "seed": self.seed,
            "drain_s": self.drain as f64 / SEC as f64,
            "timeout_s": self.timeout as f64 / SEC as f64,
            "end": run.end.as_str(),
            "elapsed_s": run.elapsed as f64 / SEC as f64,
            "errors": errors,
            "nodes": per_node,
        })
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
        let Some(profile) = profiles.get(r.function as usize) else {
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
                arrival: r.sent,
                profile: *profile,
            },
            work: profile.warm,
            server,
            cold: r.answered() && r.cold == Some(true),
            finish: r.answered().then_some(r.done).flatten(),
        });
    }
    (collector, nodes)
}

/// [`ClosedLoop`] on the run's clock: times go to the paper's clock (÷
/// scale) for the sampler and back (× scale), so think time and bursts
/// shrink with the table.
struct Locust {
    clients: ClosedLoop,
    names: Vec<Arc<str>>,
    work_us: Vec<u64>,
    scale: f64,
    rng: Pcg64,
}

impl Locust {
    fn new(clients: ClosedLoop, scaled: &FunctionTable, scale: f64, seed: u64) -> Locust {
        let (names, work_us) = scaled
            .iter()
            .map(|(f, p)| (Arc::from(&*f.name), (p.warm + US / 2) / US))
            .map(|(n, us): (Arc<str>, u64)| (n, us.max(1)))
            .unzip();
        Locust {
            clients,
            names,
            work_us,
            scale,
            rng: Pcg64::seed_from_u64(seed),
        }
    }
}

impl Sampler for Locust {
    fn next(&mut self, _client: u32, finish: Time) -> Option<Call> {
        let paper = (finish as f64 / self.scale).min(Time::MAX as f64) as Time;
        let (FunctionId(function), send) = self.clients.next_after(paper, &mut self.rng);
        Some(Call {
            function,
            name: self.names.get(function as usize)?.clone(),
            send: (send as f64 * self.scale).min(Time::MAX as f64) as Time,
            work_us: *self.work_us.get(function as usize)?,
        })
    }
}

impl LiveLoad {
    /// requests.csv: [`REQUESTS_CSV_HEADER`], then one row per call in the
    /// order sent; times in µs from the start, empty cells for what is not
    /// known.
    pub fn write_csv(&self, out: &mut dyn Write) -> csv::Result<()> {
        let mut csv = csv::Writer::from_writer(out);
        csv.write_record(REQUESTS_CSV_HEADER.split(','))?;
        let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        for r in &self.run.records {
            csv.write_record([
                r.id.to_string(),
                r.client.to_string(),
                r.name.to_string(),
                (r.sent / US).to_string(),
                opt(r.done.map(|d| d / US)),
                opt(r.status.map(u64::from)),
                r.node.clone().unwrap_or_default(),
                opt(r.cold.map(u64::from)),
                opt(r.runtime_us),
                r.failure
                    .as_ref()
                    .map(|f| f.kind().to_string())
                    .unwrap_or_default(),
            ])?;
        }
        csv.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_live::node::load::Failure;
    use faasched_model::MS;

    fn record(id: u64, function: u32, node: Option<&str>, cold: bool, status: u16) -> CallRecord {
        CallRecord {
            id,
            client: 0,
            function,
            name: format!("f-{function}").into(),
            work_us: 1,
            sent: id * MS,
            done: Some(id * MS + 3 * MS),
            status: Some(status),
            node: node.map(String::from),
            cold: node.map(|_| cold),
            runtime_us: Some(1),
            failure: (status != 200).then(|| Failure::Server {
                kind: "overloaded".into(),
            }),
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
        let mut locust = Locust::new(clients, &scaled, 0.01, 1);
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
        ] {
            let e = e(bad);
            assert!(e.starts_with(option), "{option}: {e}");
        }
    }
}
