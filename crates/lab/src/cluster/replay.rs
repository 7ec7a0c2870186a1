//! A cluster run, live, once per router (`faasched cluster replay`): fresh
//! nodes ([`Nodes`]), a gateway with the router in front
//! ([`RunningGateway`]), CH-RLU's clients against it ([`LiveLoadSpec`]),
//! then everything stopped before the next router's run, so each router
//! starts from cold nodes. Each router's row takes its `load_variance`
//! from its gateway's polls.

use super::calibrate;
use super::catalog::ROUTERS;
use super::live::function_table;
use super::live::{GatewaySpec, RunningGateway};
use super::load::{LiveLoad, LiveLoadSpec, OpenLoop, open_loop, report_failures, report_lateness};
use super::publish::Rows;
use super::up::{ClusterNodes, Nodes, precompile};
use crate::calls::CallOptions;
use crate::interrupt;
use crate::node::serve::ServeOptions;
use crate::output::Outputs;
use anyhow::{Context, Result, bail};
use faasched_model::MS;
use faasched_report::Staged;
use serde_json::{Value, json};
use std::time::Duration;

/// Closed-loop clients per run unless the options say.
const CLIENTS: u32 = 4;

/// Seconds of a closed loop's sending unless the options say.
const SECONDS: f64 = 60.0;

/// What a replay runs: the routers, the nodes and what drives them.
#[derive(Clone, Debug)]
pub struct ReplaySpec {
    /// The routers, one run each, in order.
    pub routers: Vec<String>,
    /// Node processes per run.
    pub nodes: u32,
    /// Cores per node.
    pub cores_per_node: u32,
    /// What each node serves, bar the CPUs it is pinned to.
    pub node: ServeOptions,
    /// The gateway; its nodes and router are set per run.
    pub gateway: GatewaySpec,
    /// The clients; their target and label are set per run.
    pub load: LiveLoadSpec,
}

/// What a live replay runs, as `cluster replay` and `cluster compare` take
/// it.
#[derive(Clone, Debug, clap::Args)]
pub struct ReplayOptions {
    /// Routers to run, comma-separated, each over fresh nodes.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = "ch-rlu,ch-bl,openwhisk,least-loaded",
        value_parser = ROUTERS.parser()
    )]
    pub policy: Vec<String>,
    /// The nodes each router runs over.
    #[command(flatten)]
    pub nodes: ClusterNodes,
    /// `functionbench`, `functionbench-bursts` (Fig. 9's bursts) or
    /// `functionbench-rising` (Fig. 10's open-loop rising burst, `cluster
    /// load`'s).
    #[arg(long, short = 'w', default_value = "functionbench")]
    pub workload: String,
    /// The function table's times and the clients' think time multiplied
    /// by this, on the nodes, the gateway and the clients alike.
    #[arg(long, default_value_t = 0.01)]
    pub time_scale: f64,
    /// How often the nodes publish their loads and the gateway polls
    /// them, ms (the kernel's 5 s scaled by --time-scale by default).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub period_ms: Option<u64>,
    /// Closed-loop clients per run (by default 4); in the open loop, the
    /// connections (by default `cluster load`'s).
    #[arg(long)]
    pub clients: Option<u32>,
    /// Seconds each router's clients send (by default 60; in the open
    /// loop, the whole burst: its 30 minutes × --time-scale).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Seed of the routers' and the clients' draws.
    #[arg(long, short = 's', default_value_t = 1)]
    pub seed: u64,
    /// What the calls are sent as: `spin` of each function's warm time,
    /// or real functions the nodes serve (give --deploy).
    #[command(flatten)]
    pub calls: CallOptions,
}

/// What `faasched cluster replay` runs, and where its results go.
#[derive(Clone, Debug)]
pub struct Options {
    /// The replay.
    pub replay: ReplayOptions,
    /// Where the results go.
    pub outputs: Outputs,
}

impl ReplaySpec {
    /// Compiles the functions the nodes deploy into their cache, once for
    /// every router's nodes ([`precompile`]); with calls to real
    /// functions, then measures what those cost here
    /// ([`calibrate::measure`]), so that each run's slowdowns are over the
    /// real functions' warm times, and says so on stderr. Errs when calls
    /// go to real functions the nodes are not given (no --deploy).
    pub fn prepare(&mut self) -> Result<()> {
        let deployed = precompile(&self.node)?;
        if self.load.calls.is_empty() {
            return Ok(());
        }
        if self.node.deploy.is_none() {
            bail!(
                "--calls and --function send calls to real functions: give --deploy DIR (and \
                 --cache-dir) for the nodes to serve them"
            );
        }
        let table = function_table(&self.load.workload)?
            .scaled(self.load.time_scale)
            .context("--time-scale")?;
        let calls = self.load.calls.calls(table.functions())?;
        let measured = calibrate::measure(&self.node.host, &deployed, &table, &calls)?;
        for (label, call, m) in calibrate::per_label(&calls, &table, &measured) {
            if let Some(m) = m {
                eprintln!(
                    "{label} ({call}): {:.2} ms of CPU warm, its code loaded in {:.2} ms at a \
                     cold start (here, in process)",
                    m.warm as f64 / 1e6,
                    m.load as f64 / 1e6
                );
            }
        }
        self.load.measured = measured;
        Ok(())
    }
}

impl ReplayOptions {
    /// The load period, ms: as given, or the kernel's 5 s scaled.
    fn period_ms(&self) -> u64 {
        self.period_ms
            .unwrap_or(((5_000.0 * self.time_scale).round() as u64).max(1))
    }

    /// The replay; errors name the option.
    pub fn spec(&self) -> Result<ReplaySpec> {
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
        Ok(ReplaySpec {
            routers: self.policy.clone(),
            nodes: self.nodes.nodes,
            cores_per_node: self.nodes.cores_per_node,
            node: self.nodes.serve_options(
                &self.workload,
                self.time_scale,
                period_ms,
                drain.as_secs_f64(),
            )?,
            gateway: GatewaySpec {
                nodes: Vec::new(),
                policy: String::new(),
                workload: self.workload.clone(),
                period: Duration::from_millis(period_ms),
                seed: self.seed,
                drain,
                forward_timeout: Duration::from_secs(60),
                deadline_factor: Some(faasched_live::cluster::DEFAULT_DEADLINE_FACTOR),
                time_scale: self.time_scale,
                // Its nodes are its own children, on loopback.
                front: Default::default(),
                max_response_bytes: faasched_live::cluster::DEFAULT_MAX_RESPONSE_BYTES,
                node_tls: None,
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
                token: None,
                tls: None,
                calls: self.calls.clone(),
                measured: Default::default(),
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

/// Tells of each router's run on stderr as it ends.
pub fn each_run(load: &LiveLoad) {
    eprintln!("{}: {} calls", load.row.policy, load.run.records.len());
    report_lateness(load);
    report_failures(load);
}

/// Replays every router in turn and publishes their rows side by side as
/// `cluster simulate` does; a signal stops it between runs, leaving an
/// earlier run's files.
pub fn run(o: Options) -> Result<()> {
    let mut spec = o.replay.spec()?;
    o.replay.announce();
    spec.prepare()?;
    interrupt::catch()?;
    let loads = replay(&spec, &interrupt::requested, each_run)?;
    interrupt::check()?;
    let rows: Vec<_> = loads.iter().map(|l| l.row.clone()).collect();
    let settings = o.replay.settings(&loads);
    o.outputs.publish(
        &Rows::new(&settings, &rows),
        "faasched cluster replay",
        Staged::new(),
    )
}

/// Runs every router of `spec` in turn, calling `each` with a router's
/// load once its run is over; stops early (returning what was run) when
/// `stop` says so.
pub fn replay(
    spec: &ReplaySpec,
    stop: &dyn Fn() -> bool,
    mut each: impl FnMut(&LiveLoad),
) -> Result<Vec<LiveLoad>> {
    let mut loads = Vec::new();
    for router in &spec.routers {
        if stop() {
            break;
        }
        let nodes = Nodes::start(spec.nodes, spec.cores_per_node, &spec.node)
            .with_context(|| format!("{router}: starting the nodes"))?;
        let gateway = RunningGateway::start(&GatewaySpec {
            nodes: nodes.addrs().iter().map(|a| a.to_string()).collect(),
            policy: router.clone(),
            ..spec.gateway.clone()
        })
        .with_context(|| format!("{router}: starting the gateway"))?;
        let load = LiveLoadSpec {
            target: gateway.addr.to_string(),
            label: router.clone(),
            ..spec.load.clone()
        }
        .run(stop);
        let served = gateway.stop();
        nodes.stop(spec.gateway.drain.max(Duration::from_secs(1)));
        let mut load = load.with_context(|| format!("{router}: the clients"))?;
        let served = served.with_context(|| format!("{router}: the gateway"))?;
        // What the clients cannot measure, the gateway did: the spread of
        // the loads its nodes reported, as the simulator's rows have it.
        load.row.load_variance = served.load_variance;
        each(&load);
        loads.push(load);
    }
    Ok(loads)
}
