//! `faasched cluster`: the cluster level, a router over servers that keep
//! warm containers, simulated, and the live gateway in front of node
//! runtimes, with the closed-loop clients that load it.

mod compare;
mod gateway;
mod load;
mod replay;
mod simulate;
mod up;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum Command {
    Simulate(simulate::Args),
    Gateway(gateway::Args),
    Up(up::Args),
    Load(load::Args),
    Replay(replay::Args),
    Compare(compare::Args),
}

impl Command {
    pub fn execute(self) -> Result<()> {
        match self {
            Command::Simulate(a) => a.execute(),
            Command::Gateway(a) => a.execute(),
            Command::Up(a) => a.execute(),
            Command::Load(a) => a.execute(),
            Command::Replay(a) => a.execute(),
            Command::Compare(a) => a.execute(),
        }
    }
}
