//! `faasched node`: the node level, a dispatcher over worker threads,
//! simulated and live (a WebAssembly runtime), and the load generator that
//! drives a live one.

mod args;
mod calibrate;
mod capacity;
mod compare;
mod containers;
mod functions;
mod host;
mod load;
mod replay;
mod serve;
mod simulate;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum Command {
    Simulate(simulate::Args),
    Capacity(capacity::Args),
    Serve(Box<serve::Args>),
    Load(load::Args),
    Replay(replay::Args),
    Compare(compare::Args),
    Calibrate(calibrate::Args),
}

impl Command {
    pub fn execute(self) -> Result<()> {
        match self {
            Command::Simulate(a) => a.execute(),
            Command::Capacity(a) => a.execute(),
            Command::Serve(a) => (*a).execute(),
            Command::Load(a) => a.execute(),
            Command::Replay(a) => a.execute(),
            Command::Compare(a) => a.execute(),
            Command::Calibrate(a) => a.execute(),
        }
    }
}
