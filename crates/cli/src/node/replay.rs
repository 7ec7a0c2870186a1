//! `faasched node replay`: the requests `node simulate` runs, sent to a
//! live node runtime under each policy; the same table and files.

use super::args::NodeArgs;
use super::functions::FunctionArgs;
use super::host::HostArgs;
use super::simulate::SweepArgs;
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::calls::CallOptions;
use faasched_lab::node::replay::replay_sweep;
use faasched_lab::output::Outputs;

/// Run requests through a live node under one or more dispatch policies,
/// as `node simulate` runs them through a simulated one.
///
/// The requests `node simulate` runs with the same options are sent at
/// their arrival times to a node runtime started for each policy (a
/// dispatcher thread per group, worker threads running each request as
/// `spin` of its work in a fresh WebAssembly sandbox, or as --function
/// gives its workload function: a built-in, or a function --deploy
/// registers), measured, and
/// summarised as `node simulate` summarises (the same table, summary.json,
/// summary.csv and report.html).
///
/// Requests are sent in process, without HTTP, so what is measured is the
/// scheduling; a request's latency counts from its arrival time even when
/// the sender was late. A workload of µs asks more of threads than they
/// keep: `--stretch 10` runs the same experiment ten times slower. The
/// node's CPUs are shared with the sender; on a small machine, give the
/// node few workers. Estimates are `exact` (a spin's own µs) or `median`.
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    node: NodeArgs,
    #[command(flatten)]
    sweep: SweepArgs,
    #[command(flatten)]
    host: HostArgs,
    #[command(flatten)]
    calls: CallOptions,
    #[command(flatten)]
    functions: FunctionArgs,
    #[command(flatten)]
    outputs: Outputs,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        replay_sweep(
            &self.node.options()?,
            self.node.costs.is_some(),
            &self.sweep.sweep(),
            self.functions.on(self.host.host()?),
            &self.calls,
            self.functions.deploy.as_deref(),
            &self.outputs,
        )
    }
}
