//! `faasched node calibrate`: the node simulator's costs measured on this
//! machine, as a table and (with `--out`) the `--costs` file.

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::node::calibrate::{self, CostsFile, DEFAULT_SAMPLES, Settings};
use faasched_lab::outln;
use std::path::PathBuf;

/// Measure the node simulator's costs on this machine and write the file
/// `node simulate --costs` reads.
///
/// Each cost is what the simulator charges a mechanism for, measured
/// on the live runtime's own pieces: sledgescale's decisions through
/// a dispatcher's group on 1 to 16 busy workers (fitted to a base and a
/// cost per worker examined), a held request handed to an idle worker, a
/// preemption's flag, its latency to a sandbox spinning on another thread,
/// a sandbox's stop and resume with the worker's re-pick, a fresh sandbox
/// from the pool, a parked worker woken. Each value is the median of
/// --samples samples; a table shows it beside the simulator's default.
/// Last, a check: the runtime's own preemption latency (sledgescale
/// preempting a 20 ms spin for a no-op, up to 30 times) beside what the
/// costs make of it.
/// A release build gives the numbers to use (a debug build's own code runs
/// several times slower).
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Write the costs to this file: TOML (with a header naming the
    /// machine) for a `.toml` name, JSON for `.json`.
    #[arg(long, short = 'o', value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print everything measured as JSON instead of the table: `{"machine",
    /// "build", "settings", "clock_ns", "decisions": [{"workers",
    /// "scanned", "ns"}], "rows": [{"cost", "measured_ns", "default_ns",
    /// "how"}], "polled_wake_ns", "costs"}`.
    #[arg(long)]
    json: bool,
    /// Samples per cost; each value is their median.
    #[arg(long, default_value_t = DEFAULT_SAMPLES as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    samples: u64,
    /// Idle workers poll instead of sleeping: the file sets `poll = true`
    /// (no wake-up cost), and the polling hand-off is measured too.
    #[arg(long)]
    poll: bool,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        let file = self.out.as_deref().map(CostsFile::create).transpose()?;
        if cfg!(debug_assertions) {
            eprintln!(
                "debug build: its own code runs several times slower; calibrate with cargo run --release -- node calibrate"
            );
        }
        let c = calibrate::measure(Settings {
            samples: usize::try_from(self.samples)?,
            poll: self.poll,
        })?;
        if let Some(file) = file {
            file.write(&c)?;
        }
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&c)?)?;
            return Ok(());
        }
        let m = &c.machine;
        outln!(
            "{} build, {} samples per cost (medians); {}, {} cores, kernel {}",
            c.build,
            c.settings.samples,
            m.cpu_model,
            m.cores,
            m.kernel
        )?;
        outln!(
            "{:<20} {:>11} {:>10}  how measured",
            "cost",
            "measured",
            "default"
        )?;
        for row in &c.rows {
            outln!(
                "{:<20} {:>8} ns {:>7} ns  {}",
                row.cost,
                row.measured_ns,
                row.default_ns,
                row.how
            )?;
            if row.cost == "wake" {
                let how = match c.costs.poll {
                    true => "idle workers spin (--poll)",
                    false => "idle workers sleep (--poll: they spin)",
                };
                outln!("{:<20} {:>11} {:>10}  {how}", "poll", c.costs.poll, false)?;
            }
        }
        let fit: Vec<String> = c
            .decisions
            .iter()
            .map(|p| format!("{} workers {} ns", p.workers, p.ns))
            .collect();
        outln!("decisions: {}", fit.join(", "))?;
        outln!(
            "check: the runtime's own switch (ask to the next request's start) p50 {} ns over {} preemptions; preempt_latency + the re-pick {} ns",
            c.check.runtime_p50_ns,
            c.check.preemptions,
            c.check.costs_ns
        )?;
        if let Some(path) = &self.out {
            outln!("wrote {}", path.display())?;
        }
        Ok(())
    }
}
