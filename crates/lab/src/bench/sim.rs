//! `bench sim`: simulated invocations per wall-second, workload generation
//! and engine (metrics aggregation excluded).

use super::instructions::{self, Instructions};
use super::{BUILD, median_wall, peak_rss_mib, release_only};
use crate::os::catalog::{Policy, Tuning};
use crate::os::run::{Kernel, Machine};
use crate::outln;
use anyhow::{Result, bail};
use faasched_workload::{Choice, Source};
use serde::Serialize;

/// One scenario's result.
#[derive(Serialize, Debug)]
pub struct Measured {
    /// Its name: a-alps-window, b-million, c-million.
    pub scenario: &'static str,
    /// The policy run.
    pub policy: &'static str,
    /// Invocations per run.
    pub invocations: u64,
    /// [`BUILD`].
    pub build: &'static str,
    /// Seed of the workload.
    pub seed: u64,
    /// Median wall time of one run.
    pub wall_s: f64,
    /// Invocations over that.
    pub invocations_per_s: f64,
    /// Kernel events the run processed (the same every run).
    pub kernel_events: u64,
    /// Median user-space instructions of one run; `null` where this
    /// machine has no hardware counter.
    pub instructions: Option<u64>,
    /// Runs timed.
    pub runs: u32,
    /// Peak resident memory of this process so far (VmHWM), MiB.
    pub peak_rss_mib: Option<f64>,
}

/// Times the scenarios, `runs` each (ten times as many for (a)), with
/// `invocations` in the large ones, handing each result to `each` as it
/// comes: (a) srpt on a 5,000-invocation Huawei-like window on 1 core, the
/// job of ALPS's own simulator; (b) cfs on `invocations` Huawei-like
/// invocations, 56 cores, 90% load; (c) the same with fifo and srpt.
pub fn measure(
    runs: u32,
    invocations: u64,
    seed: u64,
    mut each: impl FnMut(&Measured) -> Result<()>,
) -> Result<Vec<Measured>> {
    // (scenario, policy, cores, invocations, runs per `runs`): (a) takes a
    // millisecond or two, so one preemption of this process halves a run's
    // rate; the median of ten times as many runs stands.
    let scenarios: [(&str, &str, usize, u64, u32); 4] = [
        ("a-alps-window", "srpt", 1, 5_000, 10),
        ("b-million", "cfs", 56, invocations, 1),
        ("c-million", "fifo", 56, invocations, 1),
        ("c-million", "srpt", 56, invocations, 1),
    ];
    let mut results = Vec::new();
    for (scenario, name, cores, n, per_run) in scenarios {
        let runs = runs * per_run;
        let source = Source::resolve(&Choice {
            workload: "huawei".into(),
            cores,
            load: Some(0.9),
            invocations: Some(n),
            seed,
        })?;
        let policy = Policy::new(name, &Tuning::default())?;
        let machine = Machine {
            kernel: Kernel::default(),
            cores,
            seed,
        };
        let timed = median_wall(runs, Instructions::open().ok(), || {
            let mut steer = policy.steer();
            let stats = machine.run_engine(&policy, steer.as_mut(), source.stream()?, |_| {})?;
            if stats.invocations != n {
                bail!(
                    "{scenario}: {} of {n} invocations finished",
                    stats.invocations
                );
            }
            Ok(stats)
        })?;
        let m = Measured {
            scenario,
            policy: policy.name(),
            invocations: n,
            build: BUILD,
            seed,
            wall_s: timed.wall_s,
            invocations_per_s: n as f64 / timed.wall_s,
            kernel_events: timed.last.events,
            instructions: timed.instructions,
            runs,
            peak_rss_mib: peak_rss_mib(),
        };
        each(&m)?;
        results.push(m);
    }
    Ok(results)
}

/// What `faasched bench sim` times, and how it prints.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Runs per scenario, ten times as many for the millisecond-long (a);
    /// the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Invocations of the large scenarios (b, c).
    #[arg(long, default_value_t = 1_000_000, value_parser = crate::workload::count)]
    pub invocations: u64,
    /// Seed of the scenarios' workloads (and of the kernel's random
    /// disciplines). Recorded results use the default; `scripts/pgo-build`
    /// trains on another, so that the build it makes never saw the workload
    /// it is measured on.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print `[{"scenario", "policy", "invocations", "wall_s", "invocations_per_s",
    /// "kernel_events", "instructions", ...}]` (`instructions` null where no
    /// hardware counter exists).
    #[arg(long)]
    pub json: bool,
}

/// Times the scenarios ([`measure`]) in a release build and prints them.
pub fn run(o: Options) -> Result<()> {
    release_only("sim")?;
    if !o.json {
        let hint = match BUILD {
            "release" => " (scripts/pgo-build makes the faster profile-guided one)",
            _ => "",
        };
        outln!("{BUILD} build{hint}, seed {}", o.seed)?;
        outln!("{}", instructions::note())?;
    }
    let results = measure(o.runs, o.invocations, o.seed, |m| match o.json {
        true => Ok(()),
        false => outln!(
            "{:<14} {:<5} {:>9} invocations  median {:>8.4} s  {:>10.0} invocations/s  {:>5.1} events/invocation{}  peak RSS {:.0} MiB",
            m.scenario,
            m.policy,
            m.invocations,
            m.wall_s,
            m.invocations_per_s,
            m.kernel_events as f64 / m.invocations as f64,
            instructions::per_event(m.instructions, m.kernel_events),
            m.peak_rss_mib.unwrap_or(f64::NAN)
        ),
    })?;
    if o.json {
        outln!("{}", serde_json::to_string_pretty(&results)?)?;
    }
    Ok(())
}
