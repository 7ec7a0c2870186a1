//! `faasched`: schedule serverless functions. Simulate scheduling policies on
//! production-like traces with a model of the Linux scheduler, and compare them.

mod agent;
mod bench;
mod compare;
mod experiment;
mod func;
mod output;
mod replay;
mod run;
mod simulate;
mod source;
mod tuning;
mod workload;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Schedule serverless functions: simulate scheduling policies on production
/// traces with a model of the Linux scheduler, run them for real on this
/// machine's stock kernel, and compare the two.
///
/// Start with `faasched simulate` (a Huawei-like workload on 56 cores at 90% load
/// under cfs, fifo, rr and srpt), then `faasched simulate --help`. For real
/// processes: `faasched replay --help`.
#[derive(Parser, Debug)]
#[command(name = "faasched", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a workload through the simulated kernel under one or more policies.
    Simulate(simulate::Args),
    /// Generate synthetic workloads or import production traces as workload CSV.
    #[command(subcommand)]
    Workload(workload::Command),
    /// Reproduce a paper's experiment: canned, seeded runs and their table.
    Experiment(experiment::Args),
    /// Measure the simulator's speed.
    #[command(subcommand)]
    Bench(bench::Command),
    /// Run a function of the live runtime's suite (`fn list`), or calibrate the
    /// suite on this machine (`fn calibrate`).
    Fn(func::Args),
    /// Run a workload for real on this machine: every invocation a process,
    /// steered by the policy on the stock kernel.
    Replay(replay::Args),
    /// Simulate and replay the same workload, and measure how far apart they are.
    Compare(compare::Args),
    /// Steer processes that a platform hands over on a Unix socket (agent
    /// mode); `agent status` shows what it steers.
    Agent(agent::Args),
    /// Run a command as a function's invocation, steered by the agent.
    Exec(agent::ExecArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Simulate(a) => a.execute(),
        Command::Workload(c) => c.execute(),
        Command::Experiment(a) => a.execute(),
        Command::Bench(c) => c.execute(),
        Command::Fn(a) => a.execute(),
        Command::Replay(a) => a.execute(),
        Command::Compare(a) => a.execute(),
        Command::Agent(a) => a.execute(),
        Command::Exec(a) => a.execute(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
