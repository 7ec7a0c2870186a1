//! `faasched fn`: the live runtime's function suite. Run a function once at a
//! parameter, run a plan (how the launcher runs every invocation, one process
//! each), list the suite, or calibrate it on this machine.

use anyhow::{Context, Result, bail};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args as ClapArgs, Subcommand};
use faasched_lab::outln;
use faasched_live::os::suite::timed::{self, Job};
use faasched_live::os::suite::{Kind, Plan};
use faasched_live::os::unit_cpu::{Calibration, Effort};
use faasched_model::fmt_ms;
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
            Some(Command::List) => list(),
            Some(Command::Calibrate(c)) => c.execute(),
            None => self.run.execute(),
        }
    }
}

impl Run {
    fn execute(self) -> Result<()> {
        let kind = self
            .name
            .context("name a function (see `faasched fn list`)")?;
        let job = match self.plan {
            Some(plan) => Job::Plan { plan },
            None => {
                let n = self.n.unwrap_or(kind.default_n());
                if n > kind.max_n() {
                    bail!(
                        "--n {n} is too large for {kind} ({}): at most {}",
                        kind.param(),
                        kind.max_n()
                    );
                }
                Job::At { n }
            }
        };
        let ran = timed::run(kind, job);
        if self.json {
            outln!("{}", serde_json::to_string(&ran)?)?;
        } else if let Job::At { n } = ran.job {
            outln!(
                "{} n={n} checksum={} cpu={:.3} ms wall={:.3} ms",
                ran.function,
                ran.checksum,
                ran.cpu_ms,
                ran.wall_ms
            )?;
        }
        Ok(())
    }
}

fn list() -> Result<()> {
    for kind in Kind::ALL {
        outln!("{:<9} {}", kind.name(), kind.description())?;
        outln!(
            "{:<9} n: {} (default {})",
            "",
            kind.param(),
            kind.default_n()
        )?;
        outln!("{:<9} unit: {}", "", kind.unit_about())?;
    }
    Ok(())
}

impl Calibrate {
    fn execute(self) -> Result<()> {
        let path = match self.out {
            Some(path) => path,
            None => Calibration::default_path()?,
        };
        let program = std::env::current_exe().context("finding the faasched binary")?;
        let effort = if self.quick {
            Effort::Quick
        } else {
            Effort::Full
        };
        let steps = Kind::ALL.len() + 1;
        let mut step = 0;
        let calibration = Calibration::measure(&program, effort, !self.alone, |what| {
            step += 1;
            eprintln!("[{step}/{steps}] {what}");
        })?;
        outln!("{:<9} {:>8}  CPU ms at n", "function", "unit µs")?;
        for f in &calibration.functions {
            let points: Vec<String> = f
                .points
                .iter()
                .map(|p| format!("{}: {:.3}", p.n, fmt_ms(p.cpu_ns)))
                .collect();
            outln!(
                "{:<9} {:>8.1}  {}",
                f.kind.name(),
                f.unit_ns as f64 / 1e3,
                points.join("  ")
            )?;
        }
        outln!(
            "startup   {:>8.1}  (CPU µs of a process that does no work)",
            calibration.startup_ns as f64 / 1e3
        )?;
        outln!("measured with {} other CPU(s) busy", calibration.neighbours)?;
        calibration.save(&path)?;
        outln!("calibration {} saved to {}", calibration.id, path.display())?;
        Ok(())
    }
}
