//! `bench watch`: how promptly and at what CPU cost a watcher notices that
//! a real process used a given CPU time, and what one class change costs
//! ([`faasched_live::os::watchbench`] measures; this prints).

use crate::outln;
use anyhow::Result;
use faasched_live::os::{privilege, watchbench};

/// What `faasched bench watch` measures, and how it prints.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Targets watched per method (10 to 14 ms of CPU apart); class changes
    /// are ten times as many.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub trials: u32,
    /// Print the measurements as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Measures (on SCHED_FIFO where this process may) and prints a table.
pub fn run(o: Options) -> Result<()> {
    let realtime = privilege::probe().realtime;
    let m = watchbench::run(o.trials as usize, realtime)?;
    if o.json {
        return outln!("{}", serde_json::to_string_pretty(&m)?);
    }
    outln!(
        "spinning process: {} on the last CPU; targets 10 to 14 ms of its CPU apart",
        if m.realtime {
            "SCHED_FIFO"
        } else {
            "SCHED_OTHER"
        },
    )?;
    outln!(
        "{:<34} {:>7} {:>22} {:>14}",
        "watch method",
        "watches",
        "overshoot µs p50/p99/max",
        "CPU/watch µs"
    )?;
    for w in &m.watching {
        let [p50, p99, max] = w.overshoot_us;
        outln!(
            "{:<34} {:>7} {:>22} {:>14.1}",
            w.method,
            w.watches,
            format!("{p50:.0}/{p99:.0}/{max:.0}"),
            w.watcher_cpu_us
        )?;
    }
    outln!(
        "{:<34} {:>7} {:>22}",
        "class change",
        "changes",
        "median µs"
    )?;
    for c in &m.changing {
        outln!("{:<34} {:>7} {:>22.1}", c.method, c.changes, c.median_us)?;
    }
    Ok(())
}
