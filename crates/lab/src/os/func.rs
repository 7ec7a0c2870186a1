//! `faasched fn`: the live runtime's function suite. Run a function once at
//! a parameter, run a plan (how the launcher runs every invocation, one
//! process each), list the suite, or calibrate it on this machine.

use crate::outln;
use anyhow::{Context, Result, bail};
use faasched_live::os::suite::timed::{self, Job};
use faasched_live::os::unit_cpu::Calibration;
use faasched_model::fmt_ms;
use std::path::PathBuf;

/// A function of the suite, and a plan of its work and waits, as `fn`
/// takes them.
pub use faasched_live::os::suite::{Kind, Plan};
/// How long a calibration measures: `Quick`, about a second, or `Full`,
/// about five.
pub use faasched_live::os::unit_cpu::Effort;

/// One run of a function.
#[derive(Debug, Clone)]
pub struct Run {
    /// The function (`None`: none was named, which is refused).
    pub kind: Option<Kind>,
    /// Its parameter (default: the function's own).
    pub n: Option<u64>,
    /// A plan to run instead of one call at a parameter.
    pub plan: Option<Plan>,
    /// Print the run as JSON (else a line, for a call at a parameter only).
    pub json: bool,
}

/// Runs the function once, or its plan, and prints what it did.
pub fn run(o: Run) -> Result<()> {
    let kind = o.kind.context("name a function (see `faasched fn list`)")?;
    let job = match o.plan {
        Some(plan) => Job::Plan { plan },
        None => {
            let n = o.n.unwrap_or(kind.default_n());
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
    if o.json {
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

/// Prints every function: what it computes, its parameter and default,
/// its unit.
pub fn list() -> Result<()> {
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

/// How to calibrate the suite.
#[derive(Debug, Clone)]
pub struct Calibrate {
    /// Where to save it (default: [`Calibration::default_path`]).
    pub out: Option<PathBuf>,
    /// How long to measure.
    pub effort: Effort,
    /// Measure with the other CPUs idle rather than busy with the suite.
    pub alone: bool,
}

/// Measures each function's CPU time per unit and per parameter, and a
/// process's startup, prints them and saves the calibration.
pub fn calibrate(o: Calibrate) -> Result<()> {
    let path = match o.out {
        Some(path) => path,
        None => Calibration::default_path()?,
    };
    let program = std::env::current_exe().context("finding the faasched binary")?;
    let steps = Kind::ALL.len() + 1;
    let mut step = 0;
    let calibration = Calibration::measure(&program, o.effort, !o.alone, |what| {
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
