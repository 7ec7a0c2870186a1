//! `faasched node compare`: the same node runs simulated and live, side by
//! side, with each world's ranking of the policies.

use super::args::NodeArgs;
use super::functions::FunctionArgs;
use super::host::HostArgs;
use super::simulate::SweepArgs;
use crate::output::{COMPARE_FILES, COMPARE_JSON};
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::calls::CallOptions;
use faasched_lab::node::compare::compare_sweep;
use faasched_lab::output::Outputs;

/// Simulate a node run and replay it live under each policy, and set the
/// two side by side.
///
/// Per policy, over all requests: latency percentiles, the p99.9 slowdown,
/// the miss rate and preemptions per request, simulated and live; then,
/// per rate, the order each world puts the policies in by p99.9 slowdown
/// and whether it is the same. The simulation charges the node's costs of
/// `--costs` (the file `faasched node calibrate` writes from this machine);
/// the replay is `faasched node replay` with the same options, its
/// requests `spin` of their work or, with --function, real functions.
/// Try, on two cores:
///
///   faasched node compare -w bimodal-high --workers 1 --stretch 10 --load 0.7 -p sledgescale,rr,shinjuku
///
/// For real functions, simulate the work they take: the workload.csv of a
/// `node load --out DIR` of them holds each request's sandbox CPU time as
/// its work, and `--workload DIR/workload.csv --function LABEL=CALL
/// --deploy FNS` replays it live on the same functions
/// (docs/RUNTIME.md, "Simulated and live on real functions").
#[derive(ClapArgs, Debug)]
#[command(mut_arg("out", |a| a.help(COMPARE_FILES)), mut_arg("json", |a| a.help(COMPARE_JSON)))]
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
        compare_sweep(
            &self.node.options()?,
            &self.sweep.sweep(),
            self.functions.on(self.host.host()?),
            &self.calls,
            self.functions.deploy.as_deref(),
            self.outputs.dir.as_deref(),
            self.outputs.json,
        )
    }
}
