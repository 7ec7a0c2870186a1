//! `faasched node calibrate`: the node simulator's costs measured on this
//! machine, as a table and (with `--out`) the `--costs` file.

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::node::calibrate::{DEFAULT_SAMPLES, Settings, calibrate};
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
        let settings = Settings {
            samples: usize::try_from(self.samples)?,
            poll: self.poll,
        };
        calibrate(self.out.as_deref(), self.json, settings)
    }
}
