//! `faasched cluster simulate`'s flags; the lab runs it
//! ([`faasched_lab::cluster::simulate`]).

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::catalog::ROUTERS;
use faasched_lab::cluster::run::ClusterOptions;
use faasched_lab::cluster::simulate;
use faasched_lab::output::Outputs;

/// What `--out` writes.
const FILES: &str = "Write summary.json, summary.csv, functions.csv (each function's latency, \
slowdown and cost per router), report.html and timing.json (the routers' decision times) into \
this directory, together, once all are written";

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
#[command(mut_arg("out", |a| a.help(FILES)))]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterOptions,
    /// Routers, comma-separated, each run on the same invocations (ROUTER:KEEP-ALIVE
    /// for one with its own keep-alive policy)
    #[arg(long, short = 'p', value_delimiter = ',',
          default_value = simulate::DEFAULT_ROUTERS,
          long_help = router_help())]
    policy: Vec<String>,
    #[command(flatten)]
    outputs: Outputs,
}

fn router_help() -> String {
    ROUTERS.help(
        "Routers, comma-separated, each run on the same invocations; \
         ROUTER:KEEP-ALIVE runs one with its own keep-alive policy (openwhisk:ttl):\n",
    )
}

impl Args {
    pub fn execute(self) -> Result<()> {
        simulate::run(simulate::Options {
            cluster: self.cluster,
            policies: self.policy,
            outputs: self.outputs,
        })
    }
}
