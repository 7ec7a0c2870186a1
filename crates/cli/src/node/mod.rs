//! `faasched node`: the node level, a dispatcher over worker threads.

mod args;
mod capacity;
mod simulate;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum Command {
    Simulate(simulate::Args),
    Capacity(capacity::Args),
}

impl Command {
    pub fn execute(self) -> Result<()> {
        match self {
            Command::Simulate(a) => a.execute(),
            Command::Capacity(a) => a.execute(),
        }
    }
}
