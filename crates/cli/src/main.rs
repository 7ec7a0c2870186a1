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
            eprintln!("error: {}", chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// `e` and its causes, `: `-joined, as `{:#}` prints them, but leaving out a
/// cause whose message the error wrapping it already ends with (an error
/// type that both shows its source and returns it as `source()`).
fn chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let message = cause.to_string();
        if out.ends_with(&message) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&message);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that shows its source in its message and also returns it
    /// as `source()`, as the workload crate's I/O error does.
    #[derive(Debug)]
    struct Shows(std::io::Error);

    impl std::fmt::Display for Shows {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "x.csv: {}", self.0)
        }
    }

    impl std::error::Error for Shows {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_already_shown_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = anyhow::Error::new(Shows(io)).context("writing the workload");
        assert_eq!(
            format!("{e:#}"),
            "writing the workload: x.csv: no such file: no such file"
        );
        assert_eq!(chain(&e), "writing the workload: x.csv: no such file");
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(chain(&plain), format!("{plain:#}"));
    }
}
