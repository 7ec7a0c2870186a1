//! `faasched fn`: the live runtime's function suite. Run a function once at a
//! parameter, run a plan (how the launcher runs every invocation, one process
//! each), list the suite, or calibrate it on this machine.

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args as ClapArgs, Subcommand};
use faasched_lab::os::func::{self, Effort, Kind, Plan};
use std::path::PathBuf;

/// `faasched fn NAME [--n N | --plan PLAN]`, `faasched fn list` or
/// `faasched fn calibrate`.
#[derive(ClapArgs, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: Run,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Every function: what it computes, its parameter and default, its unit.
    List,
    /// Measure each function's CPU time per unit of work and per parameter on
    /// this machine, and a process's startup, so that the live runtime's plans
    /// take the CPU time the workload asks for.
    Calibrate(Calibrate),
}

#[derive(ClapArgs, Debug)]
struct Run {
    /// The function to run.
    #[arg(required = true, value_parser = kinds())]
    name: Option<Kind>,
    /// The function's parameter (its meaning and default: `faasched fn list`).
    #[arg(long, short = 'n')]
    n: Option<u64>,
    /// Run a plan instead: steps joined by `;`, each `u<units>` of the
    /// function's work or `i<µs>` of real blocking wait (u123;i40000;u45).
    /// Prints nothing unless --json: the live runtime runs thousands.
    #[arg(long, conflicts_with = "n", allow_hyphen_values = true)]
    plan: Option<Plan>,
    /// Print the run as JSON: function, n or plan, checksum, cpu_ms, wall_ms.
    #[arg(long)]
    json: bool,
}

#[derive(ClapArgs, Debug)]
struct Calibrate {
    /// Write the calibration here instead of the default,
    /// $XDG_CACHE_HOME/faasched/calibration.json (else under ~/.cache).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Fewer, shorter measurements: about a second instead of about five.
    #[arg(long)]
    quick: bool,
    /// Measure with the other CPUs idle. By default each other CPU runs the
    /// suite's work meanwhile, as a replay under load keeps it busy, and
    /// functions take more CPU time then (shared caches, hyperthreads).
    #[arg(long)]
    alone: bool,
}

/// The suite's names, each with its description in `--help`.
fn kinds() -> impl TypedValueParser<Value = Kind> {
    PossibleValuesParser::new(Kind::ALL.map(|k| PossibleValue::new(k.name()).help(k.description())))
        .try_map(|name| name.parse::<Kind>())
}

impl Args {
    pub fn execute(self) -> Result<()> {
        match self.command {
            Some(Command::List) => func::list(),
            Some(Command::Calibrate(c)) => func::calibrate(func::Calibrate {
                out: c.out,
                effort: if c.quick { Effort::Quick } else { Effort::Full },
                alone: c.alone,
            }),
            None => func::run(func::Run {
                kind: self.run.name,
                n: self.run.n,
                plan: self.run.plan,
                json: self.run.json,
            }),
        }
    }
}
