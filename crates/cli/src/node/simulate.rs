//! `faasched node simulate`: one request workload through the simulated
//! node under several dispatch policies; a table and (with `--out`)
//! summary.json, summary.csv and report.html.

use super::args::{NodeArgs, policies_help};
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::node::sweep::{Sweep, simulate};
use faasched_lab::output::Outputs;

/// Run requests through a simulated node (dispatchers binding requests to
/// worker threads) under one or more dispatch policies.
///
/// With no options: SledgeScale's exponential workload (mean 100 us) at 80%
/// of the capacity of 1 dispatcher and 6 workers, for 10 s of arrivals,
/// under sledgescale and its baselines, as a table of latency, slowdown and
/// deadline misses per policy. Every policy is listed under `--policy`.
/// Ctrl-C stops a run and leaves an earlier run's files in `--out` as they
/// were.
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    node: NodeArgs,
    #[command(flatten)]
    sweep: SweepArgs,
    #[command(flatten)]
    outputs: Outputs,
}

/// The rates and the policies of a node run, simulated or live.
#[derive(ClapArgs, Debug)]
pub struct SweepArgs {
    /// Offered requests per second of a built-in; several, comma-separated,
    /// make a sweep (the report draws each metric against them)
    /// [default: --load 0.8].
    #[arg(long, value_delimiter = ',', conflicts_with = "load")]
    rate: Vec<f64>,
    /// Offered load as a fraction of the workers' capacity (workers / mean
    /// work, overheads left out); several, comma-separated, make a sweep
    /// [default: 0.8].
    #[arg(long, value_delimiter = ',', value_parser = faasched_lab::workload::load)]
    load: Vec<f64>,
    /// Node policies to compare, comma-separated, each run on the same
    /// requests.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = faasched_lab::node::sweep::DEFAULT_NODE_POLICIES,
        long_help = policies_help()
    )]
    policy: Vec<String>,
}

impl SweepArgs {
    /// The sweep as the lab takes it.
    pub fn sweep(&self) -> Sweep {
        Sweep {
            rates: self.rate.clone(),
            loads: self.load.clone(),
            policies: self.policy.clone(),
        }
    }
}

impl Args {
    pub fn execute(self) -> Result<()> {
        simulate(&self.node.options()?, &self.sweep.sweep(), &self.outputs)
    }
}
