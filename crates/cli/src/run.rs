//! Running one policy over a workload: the piece `simulate` and `bench` share.

use crate::source::Source;
use anyhow::{Result, anyhow};
use clap::{Args as ClapArgs, ValueEnum};
use faasched_model::{Outcome, US};
use faasched_policy::{Setup, Tuning};
use faasched_report::{Collector, PolicySummary};
use faasched_sim::{Config, FairClass, RunStats};
use serde_json::{Value, json};

/// Default timer frequency of the simulated kernel.
const DEFAULT_HZ: u32 = 250;
/// Default cost of a context switch, µs (ALPS's measurement).
const DEFAULT_CONTEXT_SWITCH_US: f64 = 3.5;

/// The simulated kernel's knobs; [`Default`] gives the flags' defaults.
#[derive(ClapArgs, Debug, Clone)]
pub struct KernelArgs {
    /// Fair class of the simulated kernel: eevdf (Linux ≥ 6.6, the default) or
    /// cfs (legacy, the papers' 5.x kernels).
    #[arg(long, value_enum, default_value_t = Fair::Eevdf)]
    pub fair: Fair,
    /// Timer frequency of the simulated kernel.
    #[arg(long, default_value_t = DEFAULT_HZ, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub hz: u32,
    /// Core time each context switch costs, in µs (ALPS measured 3.5 µs).
    #[arg(long, default_value_t = DEFAULT_CONTEXT_SWITCH_US, value_name = "US")]
    pub context_switch_us: f64,
    /// Hear CPU watches (sfs's and hybrid's demotions) as a live watcher
    /// does on a stock kernel: at the first tick at or after the task's CPU
    /// time reaches the watch, when the kernel accounts it, plus US µs to
    /// act (`faasched replay` measures about 340 µs from the tick to the
    /// demotion, at the median). By default a watch is heard at the instant
    /// it is reached.
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub watch_at_tick_us: Option<u64>,
}

impl Default for KernelArgs {
    fn default() -> KernelArgs {
        KernelArgs {
            fair: Fair::Eevdf,
            hz: DEFAULT_HZ,
            context_switch_us: DEFAULT_CONTEXT_SWITCH_US,
            watch_at_tick_us: None,
        }
    }
}

/// A fair class, as the command line names it.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fair {
    /// Earliest eligible virtual deadline first.
    Eevdf,
    /// The legacy Completely Fair Scheduler.
    Cfs,
}

impl KernelArgs {
    /// The kernel configuration for `cores` and a policy's discipline.
    pub fn config(&self, cores: usize, seed: u64, setup: &Setup) -> Result<Config> {
        if !(0.0..=1e6).contains(&self.context_switch_us) {
            return Err(anyhow!(
                "--context-switch-us must be between 0 and 1e6, got {}",
                self.context_switch_us
            ));
        }
        let mut c = Config::new(cores);
        c.discipline = setup.discipline;
        c.fair = match self.fair {
            Fair::Eevdf => FairClass::Eevdf,
            Fair::Cfs => FairClass::Cfs,
        };
        c.hz = self.hz;
        c.context_switch = (self.context_switch_us * US as f64).round() as u64;
        c.seed = seed;
        c.watch_at_tick = self.watch_at_tick_us.map(|us| us * US);
        Ok(c)
    }

    /// The machine as `summary.json` describes it.
    pub fn describe(&self, cores: usize) -> Value {
        let mut machine = json!({
            "cores": cores, "fair_class": format!("{:?}", self.fair).to_lowercase(),
            "hz": self.hz, "context_switch_us": self.context_switch_us,
            "kernel": "faasched model (simulated)",
        });
        // Only when set: summaries of the default model keep their bytes.
        if let Some(us) = self.watch_at_tick_us {
            machine["watch_at_tick_us"] = json!(us);
        }
        machine
    }
}

/// Runs a policy over `source` in the engine alone, handing each outcome to
/// `sink`.
pub fn run_engine(
    mut setup: Setup,
    source: &Source,
    kernel: &KernelArgs,
    cores: usize,
    seed: u64,
    sink: impl FnMut(Outcome),
) -> Result<RunStats> {
    let config = kernel.config(cores, seed, &setup)?;
    faasched_sim::run(&config, setup.steer.as_mut(), source.stream()?, sink)
        .map_err(|e| anyhow!("{e}"))
}

/// Runs policy `name` over `source` and summarises it, calling `each` on every
/// outcome (to stream it to a file, say).
pub fn run_policy(
    name: &str,
    tuning: &Tuning,
    source: &Source,
    kernel: &KernelArgs,
    cores: usize,
    seed: u64,
    mut each: impl FnMut(&Outcome) -> Result<()>,
) -> Result<PolicySummary> {
    let setup = faasched_policy::setup(name, tuning)?;
    let mut collector = Collector::new(name, setup.sim_only());
    let mut failed = None;
    let stats = run_engine(setup, source, kernel, cores, seed, |o| {
        collector.record(&o);
        if failed.is_none()
            && let Err(e) = each(&o)
        {
            failed = Some(e);
        }
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(collector.finish(stats.utilisation)),
    }
}
