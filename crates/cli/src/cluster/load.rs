//! `faasched cluster load`'s flags; the lab runs it
//! ([`faasched_lab::cluster::load`]).

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::load;
use faasched_lab::output::Outputs;

/// What `--out` writes.
const FILES: &str = "Write summary.json, summary.csv, report.html and requests.csv (one row \
per call) into this directory, together, once all are written";

/// Run CH-RLU's closed-loop clients (its Locust threads) against a live
/// cluster: `faasched cluster gateway` in front of `faasched node serve
/// --functions functionbench` nodes.
///
/// Each of --clients clients keeps one connection and sends POST
/// /invoke/spin?us={the function's warm time, scaled} with
/// x-faasched-function: NAME, the function drawn as `cluster simulate
/// --workload functionbench` draws it (ten copies of each CH-RLU Table 1
/// function, weighted as the Azure trace's), a think time U(0, 1 s) after
/// its last answer. --time-scale shrinks the table's times and the think
/// time alike (give the nodes' --time-scale), so the run is the paper's
/// sped up uniformly. Sending stops after --seconds; the calls in flight
/// then get --drain-ms to be answered. Each answer counts as an invocation
/// of `cluster simulate`'s summary: its node from x-faasched-node, a cold
/// start from x-faasched-cold: 1; a 503, a 502 or no answer is a drop,
/// counted by kind in summary.json's settings.errors. Ctrl-C stops
/// sending and writes what was measured, then exits with an error.
///
/// --workload functionbench-rising is an open loop instead: the
/// invocations `cluster simulate` replays for it (the same seed, the same
/// functions at the same times), each sent at its time × --time-scale
/// whether or not the earlier ones were answered, over --clients
/// connections; a call's latency counts from its time even when it went
/// out late, and how late the calls went out is printed on stderr.
#[derive(ClapArgs, Debug)]
#[command(mut_arg("out", |a| a.help(FILES)))]
pub struct Args {
    #[command(flatten)]
    run: load::Options,
    #[command(flatten)]
    outputs: Outputs,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        load::run(load::Options {
            outputs: self.outputs,
            ..self.run
        })
    }
}
