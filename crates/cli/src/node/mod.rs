//! `faasched node`: the node level, a dispatcher over worker threads.

mod args;
mod simulate;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum Command {
    Simulate(simulate::Args),
}

impl Command {
    pub fn execute(self) -> Result<()> {
        match self {
            Command::Simulate(a) => a.execute(),
        }
    }
}
