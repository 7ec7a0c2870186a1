//! `faasched experiment NAME`: the papers' experiments as canned, seeded runs.

use anyhow::Result;
use clap::Args as ClapArgs;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use faasched_lab::experiment::Name;
use faasched_lab::experiment::command::{self, Action, Options};
use faasched_lab::level::Settings;
use faasched_lab::workload::count;
use std::path::PathBuf;

/// Reproduce a paper's experiment: canned, seeded runs and their table.
///
/// A fixed set of workloads, machines and policies, seeded, printing its
/// table.
///
/// Every experiment is deterministic: the same seed gives the same bytes. Each
/// runs its simulations on all of this machine's cores (the results do not
/// depend on how many). docs/EXPERIMENTS.md sets each table beside the paper's
/// numbers.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Which experiment.
    #[arg(value_parser = names())]
    name: Name,
    /// Write table.txt, table.csv, report.html and a summary per case here. Files are written as hidden .NAME.faasched-partial.PID and renamed into
    /// place together once all are written; what a killed run leaves is removed
    /// by the next run writing into DIR.
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Invocations per run instead of the experiment's own (the paper's)
    /// number; smaller is faster and noisier.
    #[arg(long, short = 'n', value_parser = count)]
    invocations: Option<u64>,
    /// Seed of every workload and random choice.
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
    /// Print the experiment's cases (workloads, machines, policies and their
    /// parameters) as JSON instead of running them.
    #[arg(long, conflicts_with_all = ["cases", "out"])]
    plan: bool,
    /// The folder of a day of the Azure Functions 2019 trace (its
    /// invocations, durations and memory files; the day and the minutes
    /// are the ones the files hold): what alps-real runs, and what
    /// stack-disciplines adds to its built-in clusters.
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
    /// Run the cases in this JSON file (as `--plan` prints them, edited)
    /// instead of the experiment's own, and print the experiment's table of
    /// them. The file says every workload's size, seed and trace, so
    /// `--invocations`, `--seed` and `--trace` are refused with it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["invocations", "seed", "trace"])]
    cases: Option<PathBuf>,
    /// Run the cases on a Dask cluster, a task each: ADDR is its
    /// scheduler's address (tcp://HOST:8786), or `local` for a
    /// LocalCluster on this machine. The table and files are a local
    /// run's, byte for byte. Needs Python with faasched's package and
    /// dask.distributed here and on every worker (`pip install ./python
    /// 'dask[distributed]'`); the interpreter is $FAASCHED_PYTHON, else
    /// python3. docs/PYTHON.md says how, and how on Ray.
    #[arg(long, value_name = "ADDR", conflicts_with = "plan")]
    dask: Option<String>,
}

/// The experiments' names, each with what it reproduces.
fn names() -> impl TypedValueParser<Value = Name> {
    let values = Name::ALL.map(|n| PossibleValue::new(n.spelled()).help(n.about()));
    PossibleValuesParser::new(values).map(|s| Name::parse(&s).expect("a possible value is a name"))
}

impl Args {
    pub fn execute(self) -> Result<()> {
        command::run(Options {
            name: self.name,
            settings: Settings {
                invocations: self.invocations,
                seed: self.seed,
                trace: self.trace,
                cache: None,
            },
            cases: self.cases,
            action: match (self.plan, self.dask) {
                (true, _) => Action::Plan,
                (false, Some(scheduler)) => Action::Dask {
                    scheduler,
                    out: self.out,
                },
                (false, None) => Action::Run { out: self.out },
            },
        })
    }
}
