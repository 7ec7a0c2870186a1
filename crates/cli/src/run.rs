//! Running one policy over a workload: the piece `simulate` and `bench` share.

use crate::source::Source;
use anyhow::{Result, anyhow, bail};
use clap::{Args as ClapArgs, ValueEnum};
use faasched_model::{Invocation, Nanos, Outcome, US};
use faasched_policy::{Setup, Tuning};
use faasched_report::{Collector, PolicySummary};
use faasched_sim::{Config, FairClass, RunStats};
use serde_json::{Value, json};
use std::cell::Cell;

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
    /// Timer frequency of the simulated kernel, in Hz (ticks per second),
    /// 1 to 10000.
    #[arg(long, default_value_t = DEFAULT_HZ, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub hz: u32,
    /// Core time each context switch costs, in µs (ALPS measured 3.5 µs); at
    /// least 0 and shorter than a tick.
    #[arg(
        long,
        default_value_t = DEFAULT_CONTEXT_SWITCH_US,
        value_name = "US"
    )]
    pub context_switch_us: f64,
    /// Hear CPU watches (sfs's and hybrid's demotions) as a live watcher
    /// does on a stock kernel: at the first tick at or after the task's CPU
    /// time reaches the watch, when the kernel accounts it, plus US µs to
    /// act (`faasched replay` measures about 340 µs from the tick to the
    /// demotion, at the median). By default a watch is heard at the instant
    /// it is reached.
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub watch_at_tick_us: Option<u64>,
    /// EEVDF's base slice, in µs. By default Linux's: 700 µs × (1 +
    /// log2 of the cores, up to 8), so 1,400 on 2 cores and 2,800 on 8 or
    /// more. (`compare` takes the live kernel's, which it scales by the CPUs
    /// online, not by the cores a replay uses.)
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub base_slice_us: Option<u64>,
}

impl Default for KernelArgs {
    fn default() -> KernelArgs {
        KernelArgs {
            fair: Fair::Eevdf,
            hz: DEFAULT_HZ,
            context_switch_us: DEFAULT_CONTEXT_SWITCH_US,
            watch_at_tick_us: None,
            base_slice_us: None,
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
        c.context_switch = self.context_switch();
        c.seed = seed;
        c.watch_at_tick = self.watch_at_tick_us.map(|us| us * US);
        if let Some(us) = self.base_slice_us {
            c.base_slice = us * US;
        }
        Ok(c)
    }

    /// The context switch's cost, in the model's whole ns.
    fn context_switch(&self) -> Nanos {
        (self.context_switch_us * US as f64).round() as Nanos
    }

    /// The machine as `summary.json` describes it, with the run's `seed`:
    /// a file workload's description has none, and the seed still draws the
    /// random disciplines' predictions.
    pub fn describe(&self, cores: usize, seed: u64) -> Value {
        let mut machine = json!({
            "cores": cores, "fair_class": format!("{:?}", self.fair).to_lowercase(), "seed": seed,
            // As applied: whole ns.
            "hz": self.hz, "context_switch_us": self.context_switch() as f64 / US as f64,
            "kernel": "faasched model (simulated)",
        });
        // Only when set: summaries of the default model keep their bytes.
        if let Some(us) = self.watch_at_tick_us {
            machine["watch_at_tick_us"] = json!(us);
        }
        if let Some(us) = self.base_slice_us {
            machine["base_slice_us"] = json!(us);
        }
        machine
    }
}

/// Runs a policy's `setup` over `stream` in the engine alone, on a fresh
/// machine, handing each outcome to `sink`. The policy keeps what it learns,
/// so a later call goes on from there.
pub fn run_engine(
    setup: &mut Setup,
    stream: impl IntoIterator<Item = faasched_workload::Result<Invocation>>,
    kernel: &KernelArgs,
    cores: usize,
    seed: u64,
    sink: impl FnMut(Outcome),
) -> Result<RunStats> {
    let config = kernel.config(cores, seed, setup)?;
    faasched_sim::run(&config, setup.steer.as_mut(), stream, sink).map_err(|e| anyhow!("{e}"))
}

/// Refuses a policy named twice in one `--policy` list: its runs would be
/// the same, and the summaries, keyed by policy, would keep only one.
pub fn refuse_repeated(policies: &[String]) -> Result<()> {
    for (i, name) in policies.iter().enumerate() {
        if policies[..i].contains(name) {
            bail!("--policy names {name} twice");
        }
    }
    Ok(())
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
    each: impl FnMut(&Outcome) -> Result<()>,
) -> Result<PolicySummary> {
    run_policy_in_parts(name, tuning, [source.stream()?], kernel, cores, seed, each)
}

/// Runs policy `name` over each of `parts` in turn, each on a fresh machine
/// (no task left from the part before) while the policy keeps what it
/// learned, as `replay --rounds` runs them; one summary of them all, whose
/// utilisation is their busy core-time over their core-time.
pub fn run_policy_in_parts(
    name: &str,
    tuning: &Tuning,
    parts: impl IntoIterator<Item = impl IntoIterator<Item = faasched_workload::Result<Invocation>>>,
    kernel: &KernelArgs,
    cores: usize,
    seed: u64,
    mut each: impl FnMut(&Outcome) -> Result<()>,
) -> Result<PolicySummary> {
    let mut setup = faasched_policy::setup(name, tuning)?;
    let mut collector = Collector::new(name, setup.sim_only());
    let mut failed = None;
    // Set once `each` fails: no invocation arrives after it (those in flight
    // still finish, as the engine ends a run), so a failed write or an
    // interrupt ends the run in moments instead of at its end.
    let stop = Cell::new(false);
    let (mut busy, mut span) = (0, 0);
    for part in parts {
        let part = part.into_iter().take_while(|_| !stop.get());
        let stats = run_engine(&mut setup, part, kernel, cores, seed, |o| {
            collector.record(&o);
            if failed.is_none()
                && let Err(e) = each(&o)
            {
                failed = Some(e);
                stop.set(true);
            }
        })?;
        busy += stats.busy;
        span += stats.end.saturating_sub(stats.start);
        if stop.get() {
            break;
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    // As the engine computes one run's, so that one part gives its bytes.
    let utilisation = match span {
        0 => 0.0,
        _ => busy as f64 / (span as f64 * cores as f64),
    };
    let mut summary = collector.finish(utilisation);
    summary.params = params_json(name, tuning);
    Ok(summary)
}

/// The parameters policy `name` runs with under `tuning`, as its summary
/// records them (`None` for a policy without parameters).
pub fn params_json(name: &str, tuning: &Tuning) -> Option<serde_json::Value> {
    faasched_policy::parameters(name, tuning)
        .map(|p| serde_json::to_value(p).expect("parameters are plain numbers, flags and names"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::{Functions, MS, Phase, Phases};

    /// `--base-slice-us` replaces Linux's scaling by the cores, and only a
    /// machine given one says so (a default summary keeps its bytes).
    #[test]
    fn a_base_slice_given_is_the_models_and_is_described() {
        let setup = faasched_policy::setup("cfs", &Tuning::default()).unwrap();
        let given = KernelArgs {
            base_slice_us: Some(700),
            ..KernelArgs::default()
        };
        assert_eq!(given.config(2, 1, &setup).unwrap().base_slice, 700 * US);
        assert_eq!(given.describe(2, 1)["base_slice_us"], 700);
        let default = KernelArgs::default();
        assert_eq!(default.config(2, 1, &setup).unwrap().base_slice, 1_400 * US);
        assert!(default.describe(2, 1).get("base_slice_us").is_none());
    }

    /// A 10 ms invocation at 0 and a 1 ms one at 1 ms, on one core without
    /// switch costs, first come first served: together the second waits
    /// for the first (10 ms in all); in parts, each on an empty machine, it
    /// does not (1 ms).
    #[test]
    fn parts_run_on_empty_machines() {
        let f = Functions::new().intern("f");
        let inv = |id, arrival, cpu| Invocation {
            id,
            function: f.clone(),
            arrival,
            phases: Phases::from_buf([Phase::Cpu(cpu)]),
            memory_mb: 128,
            deadline: None,
        };
        let all = [inv(0, 0, 10 * MS), inv(1, MS, MS)];
        let kernel = KernelArgs {
            context_switch_us: 0.0,
            ..KernelArgs::default()
        };
        let turnarounds = |parts: &[&[Invocation]]| {
            let mut t = Vec::new();
            let streams = parts.iter().map(|p| p.iter().cloned().map(Ok));
            let tuning = Tuning::default();
            run_policy_in_parts("fifo-np", &tuning, streams, &kernel, 1, 1, |o| {
                t.push((o.id, o.turnaround()));
                Ok(())
            })
            .unwrap();
            t.sort();
            t
        };
        assert_eq!(turnarounds(&[&all]), [(0, 10 * MS), (1, 10 * MS)]);
        assert_eq!(
            turnarounds(&[&all[..1], &all[1..]]),
            [(0, 10 * MS), (1, MS)]
        );
    }
}
