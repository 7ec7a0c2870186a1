//! `faasched cluster compare`'s flags; the lab runs it
//! ([`faasched_lab::cluster::compare`]).

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::compare;
use faasched_lab::cluster::replay::ReplayOptions;
use faasched_lab::output::Outputs;
use std::path::PathBuf;

/// Run each router live, as `cluster replay` does, then simulate the same
/// run (workload, seed, nodes as servers, their cores, memory and
/// keep-alive, the load period) with the costs measured on this machine,
/// and set the two worlds side by side: per router the invocations, cold
/// starts, global latency increase, median slowdown, p99 latency and load
/// variance, simulated / live, then each world's ranking of the routers by
/// global increase, cold starts and load variance.
///
/// The costs the simulator is given: `spin`'s CPU time over the work
/// asked (warm times), a compile of the function plus the nodes' wait (cold
/// starts), each live call's latency less its node's time (transport; the
/// median over all the runs' calls). The simulator runs the paper's clock
/// (the live run's divided by --time-scale); its latencies are shown on
/// the live clock. Every node spins the steps per ms measured here once.
/// Try, on two cores:
///
///   faasched cluster compare -p ch-rlu,least-loaded --clients 4 --seconds 60
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    run: ReplayOptions,
    /// Write compare.json and compare.csv, and each world's summary.json,
    /// summary.csv and report.html in sim/ and live/, into this directory,
    /// together, once all are written.
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print compare.json to stdout instead of the table.
    #[arg(long)]
    json: bool,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        compare::run(compare::Options {
            replay: self.run,
            outputs: Outputs {
                dir: self.out,
                json: self.json,
            },
        })
    }
}
