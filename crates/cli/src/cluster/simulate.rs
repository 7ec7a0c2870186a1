//! `faasched cluster simulate`'s flags; the lab runs it
//! ([`faasched_lab::cluster::simulate`]).

use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use faasched_lab::cluster::catalog::{KEEP_ALIVES, ROUTERS};
use faasched_lab::cluster::run::{ClusterOptions, ColdStart};
use faasched_lab::cluster::simulate;
use faasched_lab::output::Outputs;
use std::path::PathBuf;

/// Run invocations through a simulated cluster (a router in front of
/// servers that keep warm containers) under one or more routers.
///
/// With no options: a synthetic Azure-like population of 1,000 functions at
/// 70% of the CPU of 8 servers of 16 cores and 32 GB (the CH-RLU paper's
/// invokers), 10 minutes of arrivals, GreedyDual keep-alive, loads
/// published every 5 s, under ch-rlu and its baselines: a table of the
/// global latency increase, slowdowns, cold starts and load evenness per
/// router. How long each router took to decide, timed on this machine,
/// goes to stderr and timing.json (the one output that differs between
/// runs of the same seed). Ctrl-C stops a run and leaves an earlier run's
/// files in `--out` as they were.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// `azure-functions` (a synthetic Azure-like population, open loop,
    /// scaled to --load), `functionbench` (the CH-RLU paper's live runs:
    /// --clients closed-loop clients over ten copies of each of its Table 1
    /// functions, thinking 0-1 s), `functionbench-bursts` (the same, two of
    /// the top functions ten times as frequent every 30 s: its Fig. 9),
    /// `functionbench-rising` (open loop, 2 to 18 invocations/s over 25
    /// minutes, held to 30: its Fig. 10), or a workload CSV (rows are
    /// invocations, their function in --table)
    #[arg(long, short = 'w', default_value = "azure-functions")]
    workload: String,
    /// Replay a day of the Azure Functions 2019 trace from this directory
    /// instead (its functions invoked at least twice, the --functions most
    /// invoked)
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
    /// The trace's day [default: its first]
    #[arg(long)]
    day: Option<u32>,
    /// Functions: the population's size (1,000 by default), or the
    /// trace's most invoked
    #[arg(long)]
    functions: Option<u32>,
    /// The function table of a workload CSV (`name,memory_mb,warm_ms,cold_ms`)
    /// [default: the CH-RLU paper's Table 1]
    #[arg(long, value_name = "FILE")]
    table: Option<PathBuf>,
    /// Servers
    #[arg(long, default_value_t = 8)]
    servers: u32,
    /// Cores per server, shared by the invocations, each capped at one
    #[arg(long, default_value_t = 16)]
    cores: u32,
    /// Memory per server for containers, GB
    #[arg(long, default_value_t = 32.0)]
    memory_gb: f64,
    /// Offered CPU of `azure-functions` over the cluster's cores
    #[arg(long, default_value_t = 0.7)]
    load: f64,
    /// Closed-loop clients of `functionbench` (the paper: 20 for low load,
    /// 120 for heavy)
    #[arg(long, default_value_t = 120)]
    clients: u32,
    /// Seconds of arrivals (or of the clients' sends)
    #[arg(long, default_value_t = 600.0)]
    seconds: f64,
    /// Invocations of `azure-functions`, instead of --seconds
    #[arg(long, short = 'n', value_parser = crate::os::args::count)]
    invocations: Option<u64>,
    /// Seed of the workload and of the routers' random draws
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
    /// Routers, comma-separated, each run on the same invocations (ROUTER:KEEP-ALIVE
    /// for one with its own keep-alive policy)
    #[arg(long, short = 'p', value_delimiter = ',',
          default_value = "ch-rlu,ch-bl,openwhisk,least-loaded,random,round-robin,greedy",
          long_help = router_help())]
    policy: Vec<String>,
    /// Every server's keep-alive policy
    #[arg(long, default_value = "greedy-dual", long_help = keep_alive_help())]
    keep_alive: String,
    /// Seconds between the servers' load publications (the router reads
    /// the last one)
    #[arg(long, default_value_t = 5.0)]
    publish: f64,
    /// Publish each server's exact load at every change instead: what
    /// stale loads cost, measured
    #[arg(long)]
    fresh_loads: bool,
    /// γ of a contention penalty: with n invocations on a server each runs
    /// 1 + γ·n times slower [default: 0, none]
    #[arg(long, default_value_t = 0.0)]
    contention: f64,
    /// What a cold start's extra time (cold - warm) is: CPU shared with
    /// the server's other work, or a wait that takes no core
    #[arg(long, value_enum, default_value = "cpu")]
    cold_start: ColdStartArg,
    /// Seconds an invocation whose container does not fit waits on its
    /// server for memory (containers ending, idle ones evicted) before it
    /// is dropped; 0 drops it at once
    #[arg(long, default_value_t = 300.0)]
    memory_wait: f64,
    /// Milliseconds after its end (or drop) each invocation's client has
    /// its answer: the platform's way in and out (gateway, network), which
    /// takes no core and counts in the latency; `cluster compare` measures
    /// a live cluster's
    #[arg(long, default_value_t = 0.0)]
    transport_ms: f64,
    /// Write summary.json, summary.csv, report.html and timing.json (the
    /// routers' decision times) into this directory, together, once all
    /// are written
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table
    #[arg(long)]
    json: bool,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
enum ColdStartArg {
    Cpu,
    Wall,
}

fn router_help() -> String {
    ROUTERS.help(
        "Routers, comma-separated, each run on the same invocations; \
         ROUTER:KEEP-ALIVE runs one with its own keep-alive policy (openwhisk:ttl):\n",
    )
}

fn keep_alive_help() -> String {
    KEEP_ALIVES.help("Every server's keep-alive policy:\n")
}

impl Args {
    pub fn execute(self) -> Result<()> {
        simulate::run(simulate::Options {
            cluster: ClusterOptions {
                workload: self.workload,
                trace: self.trace,
                day: self.day,
                functions: self.functions,
                table: self.table,
                servers: self.servers,
                cores: self.cores,
                memory_gb: self.memory_gb,
                load: self.load,
                clients: self.clients,
                seconds: self.seconds,
                invocations: self.invocations,
                seed: self.seed,
                keep_alive: self.keep_alive,
                publish_s: self.publish,
                fresh: self.fresh_loads,
                contention: self.contention,
                cold_start: match self.cold_start {
                    ColdStartArg::Cpu => ColdStart::Cpu,
                    ColdStartArg::Wall => ColdStart::Wall,
                },
                memory_wait_s: self.memory_wait,
                transport_ms: self.transport_ms,
            },
            policies: self.policy,
            outputs: Outputs {
                dir: self.out,
                json: self.json,
            },
        })
    }
}
