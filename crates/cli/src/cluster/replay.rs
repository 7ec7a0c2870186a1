//! `faasched cluster replay`: each router live, over fresh nodes on this
//! machine, driven by CH-RLU's clients; the outputs of `cluster simulate`.

use super::gateway::router;
use super::load::report_lateness;
use super::publish::publish;
use super::up::NodeArgs;
use anyhow::{Result, bail};
use clap::Args as ClapArgs;
use faasched_lab::cluster::live::GatewaySpec;
use faasched_lab::cluster::load::{LiveLoad, LiveLoadSpec, OpenLoop, open_loop};
use faasched_lab::cluster::replay::{ReplaySpec, replay};
use faasched_lab::interrupt;
use faasched_model::MS;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// Closed-loop clients per run unless --clients says.
const CLIENTS: u32 = 4;

/// Seconds of a closed loop's sending unless --seconds says.
const SECONDS: f64 = 60.0;

/// Run each router live, one after another, each over fresh nodes started
/// here (`cluster up`'s) with CH-RLU's clients against it (`cluster
/// load`'s), and summarise the runs side by side as `cluster simulate`
/// does: the same table and, with --out, summary.json, summary.csv and
/// report.html, one row per router.
///
/// Every router starts from cold nodes and sees the same clients (the same
/// seed draws the same functions and think times, though what the answers'
/// times make of them is the machine's; with functionbench-rising, the same
/// invocations at the same times).
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    run: ReplayArgs,
    /// Write summary.json, summary.csv and report.html into this directory,
    /// together, once all are written.
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    json: bool,
}

/// What a live replay runs, as `cluster replay` and `cluster compare` take
/// it.
#[derive(ClapArgs, Debug)]
pub struct ReplayArgs {
    /// Routers to run, comma-separated, each over fresh nodes.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = "ch-rlu,ch-bl,openwhisk,least-loaded",
        value_parser = router
    )]
    pub policy: Vec<String>,
    #[command(flatten)]
    pub nodes: NodeArgs,
    /// `functionbench`, `functionbench-bursts` (Fig. 9's bursts) or
    /// `functionbench-rising` (Fig. 10's open-loop rising burst, `cluster
    /// load`'s).
    #[arg(long, short = 'w', default_value = "functionbench")]
    workload: String,
    /// The function table's times and the clients' think time multiplied
    /// by this, on the nodes, the gateway and the clients alike.
    #[arg(long, default_value_t = 0.01)]
    time_scale: f64,
    /// How often the nodes publish their loads and the gateway polls
    /// them, ms (the kernel's 5 s scaled by --time-scale by default).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    period_ms: Option<u64>,
    /// Closed-loop clients per run (by default 4); in the open loop, the
    /// connections (by default `cluster load`'s).
    #[arg(long)]
    clients: Option<u32>,
    /// Seconds each router's clients send (by default 60; in the open
    /// loop, the whole burst: its 30 minutes × --time-scale).
    #[arg(long)]
    seconds: Option<f64>,
    /// Seed of the routers' and the clients' draws.
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
}

impl ReplayArgs {
    /// The load period, ms: --period-ms, or the kernel's 5 s scaled.
    fn period_ms(&self) -> u64 {
        self.period_ms
            .unwrap_or(((5_000.0 * self.time_scale).round() as u64).max(1))
    }

    /// The replay, its nodes given `node_extra` beyond the node options.
    /// Errors name the option.
    pub fn spec(&self, node_extra: &[String]) -> Result<ReplaySpec> {
        if !(self.time_scale.is_finite() && self.time_scale > 0.0 && self.time_scale <= 1.0) {
            bail!("--time-scale {}: give a factor in (0, 1]", self.time_scale);
        }
        let period_ms = self.period_ms();
        let drain = Duration::from_secs(10);
        let (clients, seconds) = OpenLoop::sized(
            &self.workload,
            self.time_scale,
            self.clients,
            self.seconds,
            (CLIENTS, SECONDS),
        );
        let mut node_args = self.nodes.serve_args(
            &self.workload,
            self.time_scale,
            period_ms,
            drain.as_secs_f64(),
        )?;
        node_args.extend_from_slice(node_extra);
        Ok(ReplaySpec {
            routers: self.policy.clone(),
            nodes: self.nodes.nodes,
            cores_per_node: self.nodes.cores_per_node,
            workers_per_node: self.nodes.workers(),
            node_args,
            gateway: GatewaySpec {
                nodes: Vec::new(),
                policy: String::new(),
                workload: self.workload.clone(),
                period: Duration::from_millis(period_ms),
                seed: self.seed,
                drain,
                forward_timeout: Duration::from_secs(60),
                time_scale: self.time_scale,
            },
            load: LiveLoadSpec {
                target: String::new(),
                workload: self.workload.clone(),
                clients,
                seconds,
                time_scale: self.time_scale,
                seed: self.seed,
                label: String::new(),
                drain: 10_000 * MS,
                timeout: 60_000 * MS,
            },
        })
    }

    /// Says on stderr what the time scale shrinks and how often loads
    /// are published.
    pub fn announce(&self) {
        eprintln!(
            "time scale {}: the functions' times and the {} are {} of the paper's; \
             loads every {} ms",
            self.time_scale,
            if open_loop(&self.workload, self.time_scale).is_some() {
                "invocations' times"
            } else {
                "think time"
            },
            self.time_scale,
            self.period_ms()
        );
    }

    /// summary.json's settings of the runs `loads`: the first run's, less
    /// what each run has of its own, with the routers, the nodes' shape and
    /// each run's end, errors and per-node counts.
    pub fn settings(&self, loads: &[LiveLoad]) -> Value {
        let mut settings = loads
            .first()
            .map_or_else(|| json!({}), |l| l.settings.clone());
        if let Some(map) = settings.as_object_mut() {
            // One router's run's own: each row has its own.
            for key in [
                "target",
                "nodes",
                "errors",
                "end",
                "elapsed_s",
                "sent_late_us",
            ] {
                map.remove(key);
            }
        }
        settings["routers"] = json!(self.policy);
        settings["nodes"] = json!(self.nodes.nodes);
        settings["cores_per_node"] = json!(self.nodes.cores_per_node);
        settings["workers_per_node"] = json!(self.nodes.workers());
        settings["period_ms"] = json!(self.period_ms());
        settings["per_router"] = loads
            .iter()
            .map(|l| {
                let mut run = json!({
                    "router": l.row.policy,
                    "end": l.settings.get("end"),
                    "elapsed_s": l.settings.get("elapsed_s"),
                    "errors": l.settings.get("errors"),
                    "nodes": l.settings.get("nodes"),
                });
                if let Some(late) = l.settings.get("sent_late_us") {
                    run["sent_late_us"] = late.clone();
                }
                run
            })
            .collect();
        settings
    }
}

/// Tells of each router's run as it ends.
pub fn each_run(load: &LiveLoad) {
    eprintln!("{}: {} calls", load.row.policy, load.run.records.len());
    report_lateness(load);
}

impl Args {
    pub fn execute(self) -> Result<()> {
        let spec = self.run.spec(&[])?;
        self.run.announce();
        interrupt::catch()?;
        let loads = replay(&spec, &interrupt::requested, each_run)?;
        interrupt::check()?;
        let rows: Vec<_> = loads.iter().map(|l| l.row.clone()).collect();
        publish(
            self.out.as_deref(),
            self.json,
            "faasched cluster replay",
            &self.run.settings(&loads),
            &rows,
            None,
        )?;
        Ok(())
    }
}
