//! `faasched cluster compare`'s flags; the lab runs it
//! ([`faasched_lab::cluster::compare`]).

use crate::output::{COMPARE_FILES, COMPARE_JSON};
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::compare;
use faasched_lab::cluster::replay::ReplayOptions;
use faasched_lab::output::Outputs;

/// Run each router live, as `cluster replay` does, then simulate the same
/// run (workload, seed, nodes as servers, their cores, memory and
/// keep-alive, the load period; nodes of one worker per core as node
/// servers under the same --node-policy, others as processor sharing)
/// with the costs measured on this machine,
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
#[command(mut_arg("out", |a| a.help(COMPARE_FILES)), mut_arg("json", |a| a.help(COMPARE_JSON)))]
pub struct Args {
    #[command(flatten)]
    run: ReplayOptions,
    #[command(flatten)]
    outputs: Outputs,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        compare::run(compare::Options {
            replay: self.run,
            outputs: self.outputs,
        })
    }
}
