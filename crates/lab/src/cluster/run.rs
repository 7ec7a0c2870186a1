//! One cluster run: an invocation workload through the simulated cluster
//! under a router, every server keeping containers by one keep-alive
//! policy, summarised.

use super::catalog::{Contender, KEEP_ALIVES, KeepAliveSpec, keep_alive};
use crate::interrupt;
use crate::node::admission::{Admit, AdmitArgs};
use crate::node::catalog::{Knowledge, NODE_CATALOG, NodePolicy, node_policies};
use crate::os::catalog::{CATALOG as OS_CATALOG, Policy as OsPolicy, Tuning};
use crate::os::run::Kernel;
use anyhow::{Context, Result, anyhow, bail};
use faasched_model::cluster::{
    Choice, FunctionProfile, Invocation, InvocationInfo, InvocationOutcome, KeepAlive, Route,
    ServerId, Servers,
};
use faasched_model::node::Dispatch;
use faasched_model::{FunctionId, MS, SEC, Time};
use faasched_policy::node::PreemptTest;
use faasched_report::cluster::{
    ClusterRow, ClusterSummary, ClusterUsage, Collector, DecisionTimes, LoadPoint,
};
use faasched_sim::cluster::{
    self, ClientCall, Clients, ClusterConfig, ClusterError, ClusterSink, ClusterStats,
    MAX_DEADLINE_FACTOR, NodeServers, OsServers, Shared,
};
pub use faasched_sim::cluster::{ColdStart, Loads};
use faasched_sim::node::NodeConfig;
use faasched_workload::cluster::{
    AzureFunctions, AzureOptions, AzureParams, AzureTrace, BoostSpec, Boosts, ClosedLoop,
    FileInvocations, FunctionTable, Ramp, RateProfile, Weights, fitted_rates_per_minute,
};
use faasched_workload::node::{DEFAULT_DEADLINE_FACTOR, Length};
use rand::SeedableRng;
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

/// The synthetic Azure-like population, open loop.
pub const AZURE_FUNCTIONS: &str = "azure-functions";

/// CH-RLU's live workload: closed-loop clients over ten copies of each
/// FunctionBench function (§6.1).
pub const FUNCTIONBENCH: &str = "functionbench";

/// `functionbench` with the paper's Fig. 9 bursts: every 30 s two of the
/// ten most weighted functions are invoked ten times as often (§6.2.1).
pub const FUNCTIONBENCH_BURSTS: &str = "functionbench-bursts";

/// The paper's Fig. 10 rising burst over the `functionbench` functions:
/// open loop, from 2 to 18 invocations per second over 25 minutes, held to
/// 30 (§6.2.1).
pub const FUNCTIONBENCH_RISING: &str = "functionbench-rising";

/// Copies of each FunctionBench function in the `functionbench` workload:
/// the paper's 120 functions are "10 copies" of each (§6.1).
pub const FUNCTIONBENCH_COPIES: u32 = 10;

/// A cluster run's settings as a user gives them: what
/// [`ClusterOptions::setup`] checks and turns into a [`ClusterSetup`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(clap::Args)]
pub struct ClusterOptions {
    /// `azure-functions` (a synthetic Azure-like population, open loop,
    /// scaled to --load), `functionbench` (the CH-RLU paper's live runs:
    /// --clients closed-loop clients over ten copies of each of its Table 1
    /// functions, thinking 0-1 s), `functionbench-bursts` (the same, two of
    /// the top functions ten times as frequent every 30 s: its Fig. 9),
    /// `functionbench-rising` (open loop, 2 to 18 invocations/s over 25
    /// minutes, held to 30: its Fig. 10), or a workload CSV (rows are
    /// invocations, their function in --table)
    #[arg(long, short = 'w', default_value = "azure-functions")]
    pub workload: String,
    /// Replay a day of the Azure Functions 2019 trace from this directory
    /// instead (its functions invoked at least twice, the --functions most
    /// invoked)
    #[arg(long, value_name = "DIR")]
    pub trace: Option<PathBuf>,
    /// The trace's day [default: its first]
    #[arg(long)]
    pub day: Option<u32>,
    /// Functions: the population's size (1,000 by default), or the
    /// trace's most invoked
    #[arg(long)]
    pub functions: Option<u32>,
    /// The function table of a workload CSV (`name,memory_mb,warm_ms,cold_ms`)
    /// [default: the CH-RLU paper's Table 1]
    #[arg(long, value_name = "FILE")]
    pub table: Option<PathBuf>,
    /// Servers
    #[arg(long, default_value_t = 8)]
    pub servers: u32,
    /// Cores per server, shared by the invocations, each capped at one (a
    /// node server's workers)
    #[arg(long, default_value_t = 16)]
    pub cores: u32,
    /// Memory per server for containers, GB
    #[arg(long, default_value_t = 32.0)]
    pub memory_gb: f64,
    /// Offered CPU of `azure-functions` over the cluster's cores
    #[arg(long, default_value_t = 0.7, value_parser = crate::workload::load)]
    pub load: f64,
    /// Closed-loop clients of `functionbench` (the paper: 20 for low load,
    /// 120 for heavy)
    #[arg(long, default_value_t = 120)]
    pub clients: u32,
    /// Seconds of arrivals (or of the clients' sends)
    #[arg(long, default_value_t = 600.0)]
    pub seconds: f64,
    /// Invocations of `azure-functions`, instead of --seconds
    #[arg(long, short = 'n', value_parser = crate::workload::count)]
    pub invocations: Option<u64>,
    /// Seed of the workload and of the routers' random draws
    #[arg(long, short = 's', default_value_t = 1)]
    pub seed: u64,
    /// Every server's keep-alive policy
    #[arg(long, default_value = "greedy-dual", long_help = KEEP_ALIVES.help("Every server's keep-alive policy:\n"))]
    pub keep_alive: String,
    /// Seconds between the servers' load publications (the router reads
    /// the last one)
    #[arg(long = "publish", value_name = "PUBLISH", default_value_t = 5.0)]
    pub publish_s: f64,
    /// Publish each server's exact load at every change instead: what
    /// stale loads cost, measured
    #[arg(
        long = "fresh-loads",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::TypedValueParser::map(clap::builder::BoolValueParser::new(), loads_of_flag)
    )]
    #[serde(rename = "fresh", with = "loads_as_flag")]
    pub loads: Loads,
    /// γ of a contention penalty: with n invocations on a server each runs
    /// 1 + γ·n times slower [default: 0, none]
    #[arg(long, default_value_t = 0.0)]
    pub contention: f64,
    /// What a cold start's extra time (cold - warm) is: CPU shared with
    /// the server's other work, or a wait that takes no core
    #[arg(long, default_value = "cpu", value_parser = crate::text::choice::<ColdStart>(&["cpu", "wall"]))]
    pub cold_start: ColdStart,
    /// Seconds an invocation whose container does not fit waits on its
    /// server for memory (containers ending, idle ones evicted) before it
    /// is dropped; 0 drops it at once
    #[arg(
        long = "memory-wait",
        value_name = "MEMORY_WAIT",
        default_value_t = 300.0
    )]
    pub memory_wait_s: f64,
    /// Milliseconds after its end (or drop) each invocation's client has
    /// its answer: the platform's way in and out (gateway, network), which
    /// takes no core and counts in the latency; `cluster compare` measures
    /// a live cluster's
    #[arg(long, default_value_t = 0.0)]
    #[serde(default)]
    pub transport_ms: f64,
    /// What runs each server's invocations: `ps` (its cores shared by
    /// processor sharing, each invocation capped at one core),
    /// `node:POLICY` (a node simulator's dispatchers and workers under a
    /// node policy, paying its mechanisms' costs: --node-costs) or
    /// `os:POLICY` (the kernel model's cores under an OS policy, each
    /// invocation a process, the kernel as its flags say)
    #[arg(long, default_value = "ps", long_help = server_help())]
    #[serde(
        default,
        with = "crate::text",
        skip_serializing_if = "ServerModel::is_ps"
    )]
    pub server: ServerModel,
    /// Dispatchers of each node server (with --server node:POLICY), each
    /// with --cores / --node-dispatchers workers
    #[arg(long, default_value_t = 1)]
    #[serde(default = "one_dispatcher", skip_serializing_if = "is_one_dispatcher")]
    pub node_dispatchers: u32,
    /// Each invocation's deadline on a node server (with --server
    /// node:POLICY), as a multiple of its function's warm time: what an
    /// EDF worker orders by and a miss is counted against
    #[arg(long, default_value_t = DEFAULT_DEADLINE_FACTOR)]
    #[serde(
        default = "default_deadline_factor",
        skip_serializing_if = "is_default_deadline_factor"
    )]
    pub deadline_factor: f64,
    /// A file of each node server's mechanism costs in ns (with --server
    /// node:POLICY), TOML or JSON as `faasched node calibrate` writes them
    /// and `faasched node simulate --costs` reads them; keys left out keep
    /// the node simulator's defaults (docs/NODE.md)
    #[arg(long, value_name = "FILE")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_costs: Option<PathBuf>,
    /// Each node server's admission bounds, per dispatcher (with --server
    /// node:POLICY; none by default, as `node simulate`'s): a request
    /// refused counts as dropped by its node
    #[command(flatten)]
    #[serde(default, skip_serializing_if = "AdmitArgs::is_unset")]
    pub node_admit: AdmitArgs,
    /// Each OS server's simulated kernel (with --server os:POLICY): the
    /// knobs of `faasched simulate`, with its defaults.
    // No help heading of their own: clap would keep it for every flag
    // after them, --policy and --out included.
    #[command(flatten)]
    #[serde(default, skip_serializing_if = "is_default_kernel")]
    pub kernel: Kernel,
}

fn is_default_kernel(k: &Kernel) -> bool {
    *k == Kernel::default()
}

fn default_deadline_factor() -> f64 {
    DEFAULT_DEADLINE_FACTOR
}

fn is_default_deadline_factor(f: &f64) -> bool {
    *f == DEFAULT_DEADLINE_FACTOR
}

fn server_help() -> String {
    let mut help = String::from(
        "What runs each server's invocations: `ps`, its cores shared by processor sharing (each \
         invocation capped at one core), or `node:POLICY`, a node simulator's dispatchers \
         (--node-dispatchers) and workers (one per core) under a node policy, paying its \
         mechanisms' costs (--node-costs, by default the node simulator's: docs/NODE.md); an \
         invocation reaches the node when it starts, its deadline --deadline-factor (10) times \
         its function's warm time; or `os:POLICY`, the kernel model's cores under an OS policy \
         (docs/POLICIES.md), its kernel as --fair, --hz, --context-switch-us, --watch-at-tick-us \
         and --base-slice-us say (by default `faasched simulate`'s; only OS servers take them): \
         an invocation is spawned as a process of one CPU burst when it starts. Node policies:\n",
    );
    for p in NODE_CATALOG
        .entries
        .iter()
        .filter(|p| p.needs_a_profile().is_none())
    {
        help.push_str(&format!("\n  node:{}: {}", p.name, p.about));
    }
    help.push_str("\n\nOS policies:\n");
    for p in OS_CATALOG.entries {
        help.push_str(&format!("\n  os:{}: {}", p.name, p.about));
    }
    help
}

fn one_dispatcher() -> u32 {
    1
}

fn is_one_dispatcher(n: &u32) -> bool {
    *n == 1
}

/// What runs each server's invocations (`--server`).
#[derive(Clone, Copy, Debug, Default)]
pub enum ServerModel {
    /// Its cores shared by processor sharing.
    #[default]
    Ps,
    /// A node engine under this node policy.
    Node(NodePolicy),
    /// The kernel model under this OS policy, with its default parameters.
    Os(OsPolicy),
}

impl ServerModel {
    /// Whether it is processor sharing.
    pub fn is_ps(&self) -> bool {
        matches!(self, ServerModel::Ps)
    }
}

impl PartialEq for ServerModel {
    fn eq(&self, other: &ServerModel) -> bool {
        match (self, other) {
            (ServerModel::Ps, ServerModel::Ps) => true,
            (ServerModel::Node(a), ServerModel::Node(b)) => a.name() == b.name(),
            (ServerModel::Os(a), ServerModel::Os(b)) => a.name() == b.name(),
            _ => false,
        }
    }
}

impl FromStr for ServerModel {
    type Err = anyhow::Error;

    /// `ps`, `node:POLICY` or `os:POLICY`.
    fn from_str(s: &str) -> Result<ServerModel> {
        if s == "ps" {
            return Ok(ServerModel::Ps);
        }
        if let Some(name) = s.strip_prefix("os:") {
            let policy =
                OsPolicy::new(name, &Tuning::default()).map_err(|e| anyhow!("{s}: {e}"))?;
            return Ok(ServerModel::Os(policy));
        }
        let Some(name) = s.strip_prefix("node:") else {
            bail!("{s}: give ps, node:POLICY (node:sledgescale, say) or os:POLICY (os:cfs, say)");
        };
        let [policy] = node_policies(&[name.to_string()])?[..] else {
            bail!("{s}: give one node policy");
        };
        if let Some(why) = policy.spec.needs_a_profile() {
            bail!("{s}: {why}");
        }
        Ok(ServerModel::Node(policy))
    }
}

impl fmt::Display for ServerModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerModel::Ps => f.write_str("ps"),
            ServerModel::Node(p) => write!(f, "node:{}", p.name()),
            ServerModel::Os(p) => write!(f, "os:{}", p.name()),
        }
    }
}

impl Default for ClusterOptions {
    /// `azure-functions` on the paper's 8 invokers of 16 cores and 32 GB at
    /// 70% load, 10 minutes, GreedyDual keep-alive, loads every 5 s.
    fn default() -> ClusterOptions {
        let c = ClusterConfig::default();
        ClusterOptions {
            workload: AZURE_FUNCTIONS.to_string(),
            trace: None,
            day: None,
            functions: None,
            table: None,
            servers: c.servers as u32,
            cores: c.cores,
            memory_gb: f64::from(c.memory_mb) / 1024.0,
            load: 0.7,
            clients: faasched_workload::cluster::HEAVY_LOAD_THREADS,
            seconds: 600.0,
            invocations: None,
            seed: 1,
            keep_alive: "greedy-dual".to_string(),
            publish_s: c.publish as f64 / SEC as f64,
            loads: Loads::Published,
            contention: 0.0,
            cold_start: ColdStart::Cpu,
            memory_wait_s: c.memory_wait.unwrap_or(0) as f64 / SEC as f64,
            transport_ms: 0.0,
            server: ServerModel::Ps,
            node_dispatchers: one_dispatcher(),
            deadline_factor: DEFAULT_DEADLINE_FACTOR,
            node_costs: None,
            node_admit: AdmitArgs::default(),
            kernel: Kernel::default(),
        }
    }
}

/// `--fresh-loads` given or not.
fn loads_of_flag(fresh: bool) -> Loads {
    match fresh {
        true => Loads::Exact,
        false => Loads::Published,
    }
}

/// [`Loads`] as plan files have always spelled it: `fresh`, true for
/// [`Loads::Exact`].
mod loads_as_flag {
    use super::{Loads, loads_of_flag};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(loads: &Loads, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(*loads == Loads::Exact)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Loads, D::Error> {
        Ok(loads_of_flag(bool::deserialize(d)?))
    }
}

/// Where the invocations come from.
#[derive(Debug)]
pub enum ClusterWorkload {
    /// The synthetic population, until `length`.
    Azure {
        /// The population.
        functions: Box<AzureFunctions>,
        /// Where its stream ends.
        length: Length,
    },
    /// An Azure 2019 day, replayed.
    Trace(Box<AzureTrace>),
    /// A workload CSV over a function table.
    File {
        /// The CSV.
        path: PathBuf,
        /// Its functions.
        table: FunctionTable,
    },
    /// An open-loop rising rate over a table, drawn by weight.
    Rising {
        /// The functions.
        table: FunctionTable,
        /// Their weights.
        weights: Weights,
    },
    /// Closed-loop clients over a table, until `until`.
    Closed {
        /// The functions.
        table: FunctionTable,
        /// The clients.
        clients: ClosedLoop,
        /// No client sends after this.
        until: Time,
    },
}

/// Everything that fixes a cluster run but the router.
#[derive(Debug)]
pub struct ClusterSetup {
    /// The invocations.
    pub workload: ClusterWorkload,
    /// The cluster.
    pub config: ClusterConfig,
    /// Every server's keep-alive policy.
    pub keep_alive: &'static KeepAliveSpec,
    /// Seed of the routers' draws (and the clients').
    pub seed: u64,
    /// What runs each server's invocations.
    pub server: ServerModel,
    /// Each node server's shape (with node servers).
    pub node: NodeConfig,
    /// Each invocation's deadline on a node server, in warm times.
    pub deadline_factor: f64,
    /// Each node server's admission bounds, per dispatcher (with node
    /// servers).
    pub node_admit: Admit,
    /// Each OS server's kernel (with OS servers).
    pub kernel: Kernel,
}

impl ClusterOptions {
    /// The run's setup; errors name the option.
    pub fn setup(&self) -> Result<ClusterSetup> {
        let config = self.config()?;
        let keep_alive = keep_alive(&self.keep_alive).context("--keep-alive")?;
        let workload = match (&self.trace, self.workload.as_str()) {
            (Some(dir), _) => ClusterWorkload::Trace(Box::new(self.trace(dir)?)),
            (None, AZURE_FUNCTIONS) => {
                let params = AzureParams {
                    functions: self
                        .functions
                        .unwrap_or(faasched_workload::cluster::DEFAULT_FUNCTIONS),
                    seed: self.seed,
                    ..AzureParams::new(self.servers, self.cores, self.load)
                };
                ClusterWorkload::Azure {
                    functions: Box::new(AzureFunctions::new(&params)?),
                    length: self.length()?,
                }
            }
            (None, FUNCTIONBENCH | FUNCTIONBENCH_BURSTS) => {
                if self.invocations.is_some() {
                    bail!("--invocations: closed-loop clients run for --seconds");
                }
                let (table, weights) = self.functionbench()?;
                let mut clients =
                    ClosedLoop::new(self.clients, weights.clone()).context("--clients")?;
                if self.workload == FUNCTIONBENCH_BURSTS {
                    clients = clients.with_boosts(Boosts::new(
                        BoostSpec::default(),
                        &weights,
                        self.seed,
                    )?);
                }
                ClusterWorkload::Closed {
                    table,
                    clients,
                    until: self.duration()?,
                }
            }
            (None, FUNCTIONBENCH_RISING) => {
                if self.invocations.is_some() {
                    bail!("--invocations: the rising burst lasts its 30 minutes");
                }
                let (table, weights) = self.functionbench()?;
                ClusterWorkload::Rising { table, weights }
            }
            (None, path) if Path::new(path).exists() => {
                let table = match &self.table {
                    Some(t) => FunctionTable::read_csv(t)?,
                    None => FunctionTable::functionbench(),
                };
                ClusterWorkload::File {
                    path: PathBuf::from(path),
                    table,
                }
            }
            (None, other) => bail!(
                "--workload {other}: give {AZURE_FUNCTIONS}, {FUNCTIONBENCH}, \
                 {FUNCTIONBENCH_BURSTS}, {FUNCTIONBENCH_RISING}, or a workload CSV that exists \
                 (or --trace DIR)"
            ),
        };
        Ok(ClusterSetup {
            workload,
            node: self.node_config(&config)?,
            deadline_factor: self.deadline_factor,
            kernel: self.kernel()?,
            node_admit: self.node_admit()?,
            config,
            keep_alive,
            seed: self.seed,
            server: self.server,
        })
    }

    /// Each OS server's kernel: --fair, --hz and the other kernel knobs,
    /// which only OS servers have.
    fn kernel(&self) -> Result<Kernel> {
        if !matches!(self.server, ServerModel::Os(_)) && !is_default_kernel(&self.kernel) {
            bail!(
                "--fair, --hz, --context-switch-us, --watch-at-tick-us, --base-slice-us: only OS \
                 servers have a kernel; give --server os:POLICY"
            );
        }
        self.kernel.validate()?;
        Ok(self.kernel.clone())
    }

    /// Each node server's admission bounds: --max-queued, --max-backlog-ms,
    /// --fair-share and --refuse-late, which only node servers take.
    fn node_admit(&self) -> Result<Admit> {
        let admit = self.node_admit.admit(Admit::default());
        if !matches!(self.server, ServerModel::Node(_)) && admit != Admit::default() {
            bail!(
                "--max-queued, --max-backlog-ms, --fair-share, --refuse-late: only node servers \
                 admit; give --server node:POLICY"
            );
        }
        admit.rules()?;
        Ok(admit)
    }

    /// Each node server's shape: --node-dispatchers groups splitting the
    /// cores, paying --node-costs' costs (the node simulator's defaults
    /// without it).
    fn node_config(&self, config: &ClusterConfig) -> Result<NodeConfig> {
        let d = self.node_dispatchers;
        if d == 0 || !config.cores.is_multiple_of(d) {
            bail!(
                "--node-dispatchers {d}: give a number that divides the {} cores of a server",
                config.cores
            );
        }
        if !self.server.is_ps() && config.contention != 0.0 {
            bail!(
                "--contention {}: node and OS servers charge their mechanisms' costs instead; \
                 give 0 with --server {}",
                config.contention,
                self.server
            );
        }
        let f = self.deadline_factor;
        if !cluster::deadline_factor_fits(f) {
            bail!(
                "--deadline-factor {f}: give a multiple above 0 and at most {MAX_DEADLINE_FACTOR}"
            );
        }
        if !matches!(self.server, ServerModel::Node(_)) && f != DEFAULT_DEADLINE_FACTOR {
            bail!(
                "--deadline-factor {f}: only node servers have deadlines; give --server \
                 node:POLICY"
            );
        }
        let mut node = NodeConfig::new(d as usize, (config.cores / d) as usize);
        if let Some(path) = &self.node_costs {
            if !matches!(self.server, ServerModel::Node(_)) {
                bail!("--node-costs: only node servers pay them; give --server node:POLICY");
            }
            node.costs = crate::node::read_costs(path).context("--node-costs")?;
        }
        Ok(node)
    }

    fn config(&self) -> Result<ClusterConfig> {
        if !(self.memory_gb.is_finite() && self.memory_gb > 0.0 && self.memory_gb <= 1e6) {
            bail!("--memory-gb {}: give a size above 0", self.memory_gb);
        }
        if !(self.publish_s.is_finite() && self.publish_s > 0.0) {
            bail!("--publish {}: give seconds above 0", self.publish_s);
        }
        if !(self.memory_wait_s.is_finite() && (0.0..=86_400.0).contains(&self.memory_wait_s)) {
            bail!(
                "--memory-wait {}: give seconds from 0 to a day",
                self.memory_wait_s
            );
        }
        if !(self.transport_ms.is_finite() && self.transport_ms >= 0.0) {
            bail!(
                "--transport-ms {}: give milliseconds from 0",
                self.transport_ms
            );
        }
        let config = ClusterConfig {
            servers: self.servers as usize,
            cores: self.cores,
            memory_mb: (self.memory_gb * 1024.0).round() as u32,
            publish: (self.publish_s * SEC as f64).round() as u64,
            loads: self.loads,
            contention: self.contention,
            cold_start: self.cold_start,
            memory_wait: Some((self.memory_wait_s * SEC as f64).round() as u64),
            transport: (self.transport_ms * MS as f64).round().min(u64::MAX as f64) as u64,
        };
        config.validate().map_err(|e| anyhow!("{e}"))?;
        Ok(config)
    }

    /// Ten copies of each FunctionBench function, weighted like the
    /// trace's functions (the paper's 120 functions, §6.1).
    fn functionbench(&self) -> Result<(FunctionTable, Weights)> {
        let table = FunctionTable::functionbench().copies(FUNCTIONBENCH_COPIES)?;
        let weights = Weights::new(&fitted_rates_per_minute(table.len(), self.seed))?;
        Ok((table, weights))
    }

    fn duration(&self) -> Result<Time> {
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 30.0 * 86_400.0) {
            bail!(
                "--seconds {}: give a duration above 0 and at most 30 days",
                self.seconds
            );
        }
        Ok((self.seconds * SEC as f64).round() as Time)
    }

    fn length(&self) -> Result<Length> {
        Ok(match self.invocations {
            Some(n) => Length::Count(n),
            None => Length::Duration(self.duration()?),
        })
    }

    fn trace(&self, dir: &Path) -> Result<AzureTrace> {
        if self.invocations.is_some() {
            bail!("--invocations: a trace replays its day's invocations");
        }
        let day = match self.day {
            Some(d) => d,
            None => faasched_workload::traces::azure2019::first_day(dir).context("--trace")?,
        };
        let options = AzureOptions {
            top: self.functions.map(|n| n as usize),
            seed: self.seed,
            ..AzureOptions::new(dir, day)
        };
        let reading = format!("reading day {day} of {}", dir.display());
        Ok(crate::progress::during("trace", &reading, || {
            AzureTrace::read(&options)
        })?)
    }
}

impl ClusterSetup {
    /// The functions, by id.
    pub fn table(&self) -> &FunctionTable {
        match &self.workload {
            ClusterWorkload::Azure { functions, .. } => functions.table(),
            ClusterWorkload::Trace(t) => t.table(),
            ClusterWorkload::File { table, .. }
            | ClusterWorkload::Rising { table, .. }
            | ClusterWorkload::Closed { table, .. } => table,
        }
    }

    /// The run's settings, as summary.json records them.
    pub fn describe(&self) -> Value {
        let workload = match &self.workload {
            ClusterWorkload::Azure { functions, length } => {
                let s = functions.summary();
                json!({
                    "name": AZURE_FUNCTIONS,
                    "functions": s.functions,
                    "load": functions.params().load,
                    "rate_per_s": s.rate_per_s,
                    "mean_work_s": s.mean_work_s,
                    "top20_invocation_share": s.top20_invocation_share,
                    "length": length_json(length),
                })
            }
            ClusterWorkload::Trace(t) => json!({
                "trace": true,
                "functions": t.table().len(),
                "minutes": [t.window().start(), t.window().end()],
                "invocations": t.counts().iter().sum::<u64>(),
            }),
            ClusterWorkload::File { path, table } => json!({
                "file": path.display().to_string(),
                "functions": table.len(),
            }),
            ClusterWorkload::Rising { table, .. } => json!({
                "name": FUNCTIONBENCH_RISING,
                "functions": table.len(),
                "rate_per_s": RateProfile::fig10()
                    .points()
                    .iter()
                    .map(|&(t, r)| json!([t as f64 / SEC as f64, r]))
                    .collect::<Vec<_>>(),
            }),
            ClusterWorkload::Closed {
                table,
                clients,
                until,
            } => json!({
                "name": if clients.boosts().is_some() { FUNCTIONBENCH_BURSTS } else { FUNCTIONBENCH },
                "functions": table.len(),
                "clients": clients.threads(),
                "think_max_s": clients.think() as f64 / SEC as f64,
                "seconds": *until as f64 / SEC as f64,
            }),
        };
        let c = &self.config;
        let mut settings = json!({
            "workload": workload,
            "seed": self.seed,
            "servers": c.servers,
            "cores": c.cores,
            "memory_mb": c.memory_mb,
            "keep_alive": self.keep_alive.name,
            "publish_s": c.publish as f64 / SEC as f64,
            "fresh_loads": c.loads == Loads::Exact,
            "contention": c.contention,
            "cold_start": c.cold_start,
            "memory_wait_s": c.memory_wait.map(|w| w as f64 / SEC as f64),
        });
        // Only where set: runs without a transport, or on processor-sharing
        // servers, describe themselves as before either existed.
        if c.transport > 0 {
            settings["transport_ms"] = json!(c.transport as f64 / MS as f64);
        }
        if let ServerModel::Node(_) = self.server {
            settings["server"] = json!(self.server.to_string());
            settings["node"] = json!({
                "dispatchers": self.node.dispatchers,
                "workers": self.node.workers,
                "deadline_factor": self.deadline_factor,
                "costs": self.node.costs,
            });
            // Only where set: unbounded runs describe themselves as before.
            if self.node_admit != Admit::default() {
                settings["node"]["admission"] = json!(self.node_admit);
            }
        }
        if let ServerModel::Os(policy) = self.server {
            settings["server"] = json!(self.server.to_string());
            let mut kernel = self.kernel.describe(c.cores as usize, self.seed);
            if let Some(params) = policy.params_json() {
                kernel["params"] = params;
            }
            settings["kernel"] = kernel;
        }
        settings
    }

    /// Node servers handing server `s` the policies `built[s]`.
    fn node_servers<'a>(
        &self,
        built: &'a mut [NodePolicies],
    ) -> NodeServers<impl FnMut(ServerId) -> NodePolicies + 'a> {
        NodeServers {
            config: self.node.clone(),
            deadline_factor: self.deadline_factor,
            policies: |s: ServerId| {
                built
                    .get_mut(s.0 as usize)
                    .map(std::mem::take)
                    .unwrap_or_default()
            },
        }
    }

    /// Every server's node policies, one per dispatcher, under `policy`.
    fn node_policies(&self, policy: NodePolicy) -> Result<Vec<NodePolicies>> {
        let k = Knowledge {
            workers: self.node.workers as u32,
            preempt_test: PreemptTest::Paper,
            darc_types: Vec::new(),
            darc_paper: None,
            stretch: 1,
            admission: self.node_admit.rules()?,
        };
        (0..self.config.servers)
            .map(|_| {
                (0..self.node.dispatchers)
                    .map(|_| policy.build(&k))
                    .collect()
            })
            .collect()
    }

    /// An open-loop workload's invocations, from their start (a closed
    /// loop's come from its clients, as each one's last ends).
    pub(crate) fn invocations(
        &self,
    ) -> Result<Box<dyn Iterator<Item = faasched_workload::Result<Invocation>> + '_>> {
        Ok(match &self.workload {
            ClusterWorkload::Azure { functions, length } => {
                Box::new(functions.invocations(*length)?.map(Ok))
            }
            ClusterWorkload::Trace(t) => Box::new(t.replay()?.map(Ok)),
            ClusterWorkload::File { path, table } => Box::new(FileInvocations::open(path, table)?),
            ClusterWorkload::Rising { table, weights } => Box::new(
                Ramp::new(table, weights.clone(), RateProfile::fig10(), self.seed)?.map(Ok),
            ),
            ClusterWorkload::Closed { .. } => bail!("closed-loop clients have no stream"),
        })
    }

    /// Runs `contender` over the invocations and summarises it, handing
    /// `each` every outcome as it comes (a progress bar counts them).
    pub fn run(
        &self,
        contender: &Contender,
        each: impl FnMut(&InvocationOutcome),
    ) -> Result<ClusterRan> {
        let mut route = contender.router.build(self.seed)?;
        let keep_alive = contender.keep_alive.unwrap_or(self.keep_alive);
        let keep = |_| keep_alive.build();
        let name = contender.name();
        let name = name.as_str();
        let mut sink = Recording {
            collector: Collector::new(name),
            each,
        };
        let mut route = Timed {
            route: &mut *route,
            times: DecisionTimes::new(),
        };
        let stats = self.serve(name, &mut route, keep, &mut sink)?;
        Ok(ClusterRan {
            summary: sink.collector.finish(),
            stats,
            decisions: route.times,
        })
    }
}

impl ClusterSetup {
    /// Runs the workload through the cluster behind `route`, every
    /// server's work run as [`ClusterOptions::server`] says, the outcomes
    /// handed to `sink`. Errors go under the router's `name`.
    pub(crate) fn serve<R: Route + ?Sized, K: KeepAlive + ?Sized>(
        &self,
        name: &str,
        route: &mut R,
        keep: impl FnMut(ServerId) -> Box<K>,
        sink: impl ClusterSink,
    ) -> Result<ClusterStats> {
        match self.server {
            ServerModel::Ps => self.drive(name, Shared, route, keep, sink),
            ServerModel::Node(policy) => {
                let mut built = self.node_policies(policy)?;
                let servers = self.node_servers(&mut built);
                self.drive(name, servers, route, keep, sink)
            }
            ServerModel::Os(policy) => {
                let cores = self.config.cores as usize;
                let servers = OsServers {
                    config: self.kernel.config(cores, self.seed, &policy)?,
                    policies: |_| policy.steer(),
                };
                self.drive(name, servers, route, keep, sink)
            }
        }
    }

    /// Runs the workload through the cluster, every server's work run as
    /// `servers` say.
    /// Errors go under the router's `name`.
    fn drive<V: cluster::Servers, R: Route + ?Sized, K: KeepAlive + ?Sized>(
        &self,
        name: &str,
        servers: V,
        route: &mut R,
        keep: impl FnMut(ServerId) -> Box<K>,
        sink: impl ClusterSink,
    ) -> Result<ClusterStats> {
        let profiles = self.table().profiles();
        let config = &self.config;
        match &self.workload {
            ClusterWorkload::Closed { clients, until, .. } => {
                let mut clients = Locust {
                    clients,
                    profiles,
                    until: *until,
                    rng: Pcg64::seed_from_u64(self.seed),
                };
                cluster::run_closed_on(config, route, keep, servers, profiles, &mut clients, sink)
                    .map_err(|e| failed(name, e))
            }
            _ => {
                let stream = self.invocations()?;
                cluster::run_on(config, route, keep, servers, profiles, stream, sink)
                    .map_err(|e| failed(name, e))
            }
        }
    }
}

/// One node server's policies, one per dispatcher.
type NodePolicies = Vec<Box<dyn Dispatch + Send>>;

/// A run's error as the user reads it: an interruption as the process's,
/// anything else under the router's name.
fn failed<E: std::fmt::Display>(router: &str, e: ClusterError<E>) -> anyhow::Error {
    match e {
        ClusterError::Interrupted { .. } => {
            interrupt::check().err().unwrap_or_else(|| anyhow!("{e}"))
        }
        e => anyhow!("{router}: {e}"),
    }
}

fn length_json(length: &Length) -> Value {
    match length {
        Length::Duration(ns) => json!({"seconds": *ns as f64 / SEC as f64}),
        Length::Count(n) => json!({"invocations": n}),
    }
}

/// What one router's run measured: the outcomes' metrics and the engine's.
#[derive(Clone, Debug)]
pub struct ClusterRan {
    /// From the outcomes.
    pub summary: ClusterSummary,
    /// From the engine: per server, and the loads over time.
    pub stats: ClusterStats,
    /// The router's decision times on this machine's clock.
    pub decisions: DecisionTimes,
}

impl ClusterRan {
    /// Its line of every output, on servers of `cores` cores.
    pub fn row(&self, cores: u32) -> ClusterRow {
        let span = self.stats.span as f64 * f64::from(cores);
        let usage = ClusterUsage {
            dropped_for_memory: self.stats.dropped_for_memory,
            evictions: self.stats.servers.iter().map(|s| s.evictions).sum(),
            memory_waits: self.stats.servers.iter().map(|s| s.waits).sum(),
            memory_wait_s: self
                .stats
                .servers
                .iter()
                .map(|s| s.wait_time as f64 / SEC as f64)
                .sum(),
            load_variance: self.stats.loads.mean_variance,
            utilisation: self
                .stats
                .servers
                .iter()
                .map(|s| {
                    if span > 0.0 {
                        s.busy as f64 / span
                    } else {
                        0.0
                    }
                })
                .collect(),
            load_series: self
                .stats
                .loads
                .samples
                .iter()
                .map(|s| LoadPoint {
                    at_s: s.at as f64 / SEC as f64,
                    mean: s.mean,
                    variance: s.variance,
                })
                .collect(),
        };
        ClusterRow::new(&self.summary, &usage)
    }
}

/// A router whose decisions are timed (one in
/// [`TIMED_EVERY`](faasched_report::cluster::TIMED_EVERY)), for a run's
/// decision time; it decides exactly as the router it wraps.
struct Timed<'a> {
    route: &'a mut dyn Route,
    times: DecisionTimes,
}

impl Route for Timed<'_> {
    fn name(&self) -> &str {
        self.route.name()
    }

    fn route(&mut self, now: Time, inv: &InvocationInfo, servers: &Servers) -> Choice {
        if !self.times.count() {
            return self.route.route(now, inv, servers);
        }
        let start = Instant::now();
        let choice = self.route.route(now, inv, servers);
        let ns = start.elapsed().as_nanos();
        self.times.record(u64::try_from(ns).unwrap_or(u64::MAX));
        choice
    }

    fn on_loads(&mut self, now: Time, servers: &Servers) {
        self.route.on_loads(now, servers);
    }

    fn on_finish(&mut self, now: Time, outcome: &InvocationOutcome) {
        self.route.on_finish(now, outcome);
    }
}

/// The sink of [`ClusterSetup::run`]: records each outcome and hands it
/// to `each`; stops the run when the process is asked to.
struct Recording<F> {
    collector: Collector,
    each: F,
}

impl<F: FnMut(&InvocationOutcome)> ClusterSink for &mut Recording<F> {
    fn outcome(&mut self, o: InvocationOutcome) {
        self.collector.record(&o);
        (self.each)(&o);
    }

    fn interrupted(&mut self) -> bool {
        interrupt::requested()
    }
}

/// [`ClosedLoop`]'s threads as the engine's [`Clients`]: each sends its
/// next invocation a think time after its last one ended, until `until`.
struct Locust<'a> {
    clients: &'a ClosedLoop,
    profiles: &'a [FunctionProfile],
    until: Time,
    rng: Pcg64,
}

impl Clients for Locust<'_> {
    fn clients(&self) -> u32 {
        self.clients.threads()
    }

    fn next(&mut self, _client: u32, now: Time) -> Option<ClientCall> {
        let (function, send): (FunctionId, Time) = self.clients.next_after(now, &mut self.rng);
        let work = self.profiles.get(function.0 as usize)?.warm;
        (send < self.until).then_some(ClientCall {
            function,
            send,
            work,
        })
    }
}
