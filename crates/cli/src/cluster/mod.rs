//! `faasched cluster`: the cluster level, a router over servers that keep
//! warm containers.

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
