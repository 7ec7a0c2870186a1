//! `faasched cluster replay`'s flags; the lab runs it ([`faasched_lab::cluster::replay`]).

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::replay::{self, ReplayOptions};
use faasched_lab::output::Outputs;

/// Run each router live, one after another, each over fresh nodes started
/// here (`cluster up`'s) with CH-RLU's clients against it (`cluster
/// load`'s), and summarise the runs side by side as `cluster simulate`
/// does: the same table and, with --out, summary.json, summary.csv and
/// report.html, one row per router.
///
/// Every router starts from cold nodes and sees the same clients (the same
/// seed draws the same functions and think times, though what the answers'
/// times make of them is the machine's; with functionbench-rising, the same
/// invocations at the same times).
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    run: ReplayOptions,
    #[command(flatten)]
    outputs: Outputs,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        replay::run(replay::Options {
            replay: self.run,
            outputs: self.outputs,
        })
    }
}
