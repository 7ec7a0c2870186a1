//! `faasched`: schedule serverless functions. Simulate scheduling policies on
//! production-like traces with a model of the Linux scheduler, and compare them.

mod bench;
mod cluster;
mod experiment;
mod node;
mod os;
mod output;
mod workload;

use os::{agent, compare, exec, func, replay, simulate};

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

/// Schedule serverless functions: simulate scheduling policies on production
/// traces with a model of the Linux scheduler, run them for real on this
/// machine's stock kernel, and compare the two.
///
/// Start with `faasched simulate` (the ALPS paper's Huawei-like workload on 8
/// cores at 90% load under cfs, sfs, alps, gittins and srpt), then `faasched
/// simulate --help`. For real processes: `faasched replay --help`.
#[derive(Parser, Debug)]
#[command(name = "faasched", version, propagate_version = true)]
struct Cli {
    /// Hide the progress bars (shown on stderr only when it is a terminal).
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

/// The commands whose arguments carry a doc comment of their own take their
/// help from it: a doc comment here would replace its long form, and with
/// it `--help`'s list of policies and what each command does.
#[derive(Subcommand, Debug)]
enum Command {
    Simulate(simulate::Args),
    /// Generate synthetic workloads or import production traces as workload CSV.
    #[command(subcommand)]
    Workload(workload::Command),
    /// The node level: dispatchers binding requests to worker threads
    /// (SledgeScale and its baselines), simulated, or live in a
    /// WebAssembly runtime (served over HTTP, or replaying a workload), and
    /// the two compared.
    #[command(subcommand)]
    Node(node::Command),
    /// The cluster level: a router over servers that keep warm containers
    /// (CH-RLU and its baselines), simulated, or live as a gateway in front
    /// of node runtimes (started here or elsewhere), loaded, replayed, and
    /// the two compared.
    #[command(subcommand)]
    Cluster(cluster::Command),
    Experiment(experiment::Args),
    /// Measure the simulator's speed and the live steering's costs.
    #[command(subcommand)]
    Bench(bench::Command),
    /// Run a function of the live runtime's suite (`fn list`), or calibrate the
    /// suite on this machine (`fn calibrate`).
    Fn(func::Args),
    Replay(replay::Args),
    Compare(compare::Args),
    Agent(agent::Args),
    Exec(exec::Args),
}

/// The command line: [`Cli`], where every command takes a negative number as
/// a value, so that `--alps-alpha -1` is refused by the flag's own range
/// check, naming it, rather than as an unknown argument `-1`.
fn command() -> clap::Command {
    fn negatives(c: clap::Command) -> clap::Command {
        c.allow_negative_numbers(true).mut_subcommands(negatives)
    }
    negatives(Cli::command())
}

fn main() -> ExitCode {
    let matches = command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if cli.quiet {
        faasched_lab::progress::quiet();
    }
    let result = match cli.command {
        Command::Simulate(a) => a.execute(),
        Command::Workload(c) => c.execute(),
        Command::Node(c) => c.execute(),
        Command::Cluster(c) => c.execute(),
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
        // Its reader had what it wanted (`faasched fn list | head -1`).
        Err(e) if e.downcast_ref::<faasched_lab::stdout::Closed>().is_some() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", faasched_lab::message::chain(&e));
            ExitCode::FAILURE
        }
    }
}
