//! Running one policy over a workload in the simulator: once, or in parts.

use crate::interrupt;
use crate::os::catalog::Policy;
use anyhow::{Result, anyhow};
use faasched_model::{Invocation, Nanos, Outcome, US};
use faasched_report::os::{Collector, PolicySummary};
use faasched_sim::os::{Config, FairClass, RunError, RunStats, Sink};
use faasched_workload::{Choice, Source};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Default number of simulated cores: few enough that the policies differ
/// (the ALPS paper's machine has 56, where a Poisson load pools the queue).
pub const DEFAULT_CORES: usize = 8;
/// The most cores a machine has, simulated or replayed on (`--cores`).
pub const MAX_CORES: u16 = 256;
/// Default timer frequency of the simulated kernel.
pub const DEFAULT_HZ: u32 = 250;
/// Highest timer frequency, Hz.
pub const MAX_HZ: u32 = 10_000;
/// Longest watch delay and base slice, µs (1 s).
pub const MAX_KNOB_US: u64 = 1_000_000;
/// Default cost of a context switch, µs (ALPS's measurement).
pub const DEFAULT_CONTEXT_SWITCH_US: f64 = 3.5;

/// The simulated kernel's knobs, as a user sets them; [`Default`] gives the
/// command line's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[derive(clap::Args)]
pub struct Kernel {
    /// Fair class of the simulated kernel: eevdf (Linux ≥ 6.6, the default) or
    /// cfs (legacy, the papers' 5.x kernels).
    #[arg(long, value_enum, default_value_t = Fair::Eevdf)]
    pub fair: Fair,
    /// Timer frequency of the simulated kernel, in Hz (ticks per second),
    /// 1 to 10000.
    #[arg(long, default_value_t = DEFAULT_HZ, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_HZ)))]
    pub hz: u32,
    /// Core time each context switch costs, in µs (ALPS measured 3.5 µs); at
    /// least 0 and shorter than a tick.
    #[arg(
        long,
        default_value_t = DEFAULT_CONTEXT_SWITCH_US,
        value_name = "US"
    )]
    pub context_switch_us: f64,
    /// Hear CPU watches (sfs's and hybrid's demotions, gittins's
    /// re-readings) as a live watcher does on a stock kernel: at the first
    /// tick at or after the task's CPU time reaches the watch, when the
    /// kernel accounts it, plus US µs to act (`faasched replay` measures
    /// about 30 µs from the CPU timer's wake-up at the tick to the
    /// demotion, at the median). By default a watch is heard at the instant
    /// it is reached.
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u64).range(0..=MAX_KNOB_US))]
    pub watch_at_tick_us: Option<u64>,
    /// EEVDF's base slice, in µs. By default Linux's: 700 µs × (1 +
    /// log2 of the cores, up to 8), so 1,400 on 2 cores and 2,800 on 8 or
    /// more. (`compare` takes the live kernel's, which it scales by the CPUs
    /// online, not by the cores a replay uses.)
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u64).range(1..=MAX_KNOB_US))]
    pub base_slice_us: Option<u64>,
}

impl Default for Kernel {
    fn default() -> Kernel {
        Kernel {
            fair: Fair::Eevdf,
            hz: DEFAULT_HZ,
            context_switch_us: DEFAULT_CONTEXT_SWITCH_US,
            watch_at_tick_us: None,
            base_slice_us: None,
        }
    }
}

/// A fair class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(clap::ValueEnum)]
pub enum Fair {
    /// Earliest eligible virtual deadline first.
    Eevdf,
    /// The legacy Completely Fair Scheduler.
    Cfs,
}

impl Kernel {
    /// Checks each knob's range (the flags' own), naming the first out of
    /// it by field and flag: a kernel from an experiment's cases file has
    /// passed no flag's check.
    pub fn validate(&self) -> Result<()> {
        let out = |field: &str, range: &str, got: &dyn std::fmt::Display| {
            anyhow!(
                "kernel `{field}` (--{}) must be {range}, got {got}",
                field.replace('_', "-")
            )
        };
        if !(1..=MAX_HZ).contains(&self.hz) {
            return Err(out("hz", &format!("1 to {MAX_HZ}"), &self.hz));
        }
        if !(0.0..=MAX_KNOB_US as f64).contains(&self.context_switch_us) {
            return Err(out(
                "context_switch_us",
                "between 0 and 1e6",
                &self.context_switch_us,
            ));
        }
        if let Some(us) = self.watch_at_tick_us.filter(|us| *us > MAX_KNOB_US) {
            return Err(out(
                "watch_at_tick_us",
                &format!("at most {MAX_KNOB_US}"),
                &us,
            ));
        }
        if let Some(us) = self
            .base_slice_us
            .filter(|us| !(1..=MAX_KNOB_US).contains(us))
        {
            return Err(out("base_slice_us", &format!("1 to {MAX_KNOB_US}"), &us));
        }
        Ok(())
    }

    /// The kernel configuration for `cores` and a policy's discipline.
    pub fn config(&self, cores: usize, seed: u64, policy: &Policy) -> Result<Config> {
        self.validate()?;
        let mut c = Config::new(cores);
        c.discipline = policy.spec.discipline();
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
        let fair = match self.fair {
            Fair::Eevdf => "eevdf",
            Fair::Cfs => "cfs",
        };
        let mut machine = json!({
            "cores": cores, "fair_class": fair, "seed": seed,
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

/// A warning for a workload that offers more CPU demand than its cores
/// can serve (a load above 1): its queues only grow, and its turnarounds
/// measure the backlog more than the policy.
fn overload_warning(source: &Source) -> Option<String> {
    let load = source.offered_load();
    let cores = source.cores();
    // One invocation, or all at one instant: no span to offer a load over,
    // and nothing the warning would tell.
    if !load.is_finite() {
        return None;
    }
    (load > 1.0).then(|| {
        format!(
            "warning: the workload offers a load of {load:.2} on {cores} core{}: the machine is \
             overloaded, its queues only grow and turnarounds measure the backlog (--load \
             rescales a workload to a load)",
            if cores == 1 { "" } else { "s" }
        )
    })
}

/// The workload an operating-system command asks for: a built-in's name or
/// a workload CSV file, and what its flags say of its cores, load, size and
/// seed (`None`: the command's default).
#[derive(Debug, Clone, clap::Args)]
pub struct WorkloadOptions {
    /// A built-in workload or a workload CSV file. Built-ins: huawei, azure,
    /// lognormal[:scale=F], exponential[:mean-ms=F], fixed[:cpu-ms=F],
    /// bimodal[:p=F,short-us=N,long-us=N], bimodal-high, bimodal-extreme,
    /// mixed-io.
    #[arg(long, short = 'w', default_value = "huawei", value_name = "NAME|FILE")]
    pub workload: String,
    /// Cores, 1 to 256: of the simulated machine (default 8), or for
    /// `replay` and `compare` the first N CPUs of this one (default: all
    /// online CPUs; `compare` simulates as many).
    #[arg(long, short = 'c', value_name = "N", value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=i64::from(MAX_CORES)), usize::from))]
    pub cores: Option<usize>,
    /// Offered load (CPU demand / core-time). Built-ins default to 0.9; a file
    /// is used as it is unless this asks to rescale its arrivals.
    #[arg(long, short = 'l', value_name = "FRACTION", value_parser = crate::workload::load)]
    pub load: Option<f64>,
    /// Invocations to generate (built-ins) or to take from the start of a
    /// file. Default: 15000 of a built-in and all of a file for `simulate`;
    /// 1000 of either for `replay` and `compare`.
    #[arg(long, short = 'n', value_parser = crate::workload::count)]
    pub invocations: Option<u64>,
    /// Seed of every random choice: a simulation with the same seed and
    /// inputs writes the same bytes (a live run draws the same workload).
    #[arg(long, short = 's', default_value_t = 1)]
    pub seed: u64,
}

impl WorkloadOptions {
    /// The workload on `cores`, or on the cores asked for (the simulator's
    /// default if none), taking `invocations` unless asked for a number;
    /// resolved, with a warning on stderr if it overloads its cores.
    pub fn resolve(&self, cores: Option<usize>, invocations: Option<u64>) -> Result<Source> {
        let source = Source::resolve(&Choice {
            workload: self.workload.clone(),
            cores: cores.unwrap_or(self.cores.unwrap_or(DEFAULT_CORES)),
            load: self.load,
            invocations: self.invocations.or(invocations),
            seed: self.seed,
        })?;
        if let Some(warning) = overload_warning(&source) {
            eprintln!("{warning}");
        }
        Ok(source)
    }
}

/// A simulated machine: the kernel's knobs, its cores, and the seed of its
/// random disciplines.
#[derive(Clone, Debug)]
pub struct Machine {
    /// The kernel's knobs.
    pub kernel: Kernel,
    /// Cores.
    pub cores: usize,
    /// Seed of the random disciplines' predictions.
    pub seed: u64,
}

impl Machine {
    /// The machine as `summary.json` describes it.
    pub fn describe(&self) -> Value {
        self.kernel.describe(self.cores, self.seed)
    }

    /// Runs `policy`'s `steer` over `stream` in the engine alone, on a fresh
    /// machine, handing each outcome to `sink`. The policy keeps what it
    /// learns, so a later call goes on from there.
    pub fn run_engine<S: Sink>(
        &self,
        policy: &Policy,
        steer: &mut (dyn faasched_model::Steer + Send),
        stream: impl IntoIterator<Item = faasched_workload::Result<Invocation>>,
        sink: S,
    ) -> Result<RunStats> {
        let config = self.kernel.config(self.cores, self.seed, policy)?;
        faasched_sim::os::run(&config, steer, stream, sink).map_err(|e| match e {
            RunError::Interrupted { .. } => match interrupt::check() {
                Err(signal) => signal,
                // Stopped by the sink's own failure, which the caller has.
                Ok(()) => anyhow!("{e}"),
            },
            e => anyhow!("{e}"),
        })
    }

    /// Runs `policy` over `source` and summarises it, calling `each` on
    /// every outcome (to stream it to a file, say).
    pub fn run(
        &self,
        policy: &Policy,
        source: &Source,
        each: impl FnMut(&Outcome) -> Result<()>,
    ) -> Result<PolicySummary> {
        self.run_in_parts(policy, [source.stream()?], each)
    }

    /// Runs `policy` over each of `parts` in turn, each on a fresh machine
    /// (no task left from the part before) while the policy keeps what it
    /// learned, as `replay --rounds` runs them; one summary of them all,
    /// whose utilisation is their busy core-time over their core-time.
    ///
    /// A run stops early, with an error, when `each` fails (a failed write)
    /// or when [`interrupt`] says the process was asked to stop.
    pub fn run_in_parts(
        &self,
        policy: &Policy,
        parts: impl IntoIterator<Item = impl IntoIterator<Item = faasched_workload::Result<Invocation>>>,
        mut each: impl FnMut(&Outcome) -> Result<()>,
    ) -> Result<PolicySummary> {
        let mut steer = policy.steer();
        let mut collector = Collector::new(policy.name(), policy.spec.sim_only());
        let mut failed = None;
        let (mut busy, mut span) = (0, 0);
        for part in parts {
            let sink = Recording {
                collector: &mut collector,
                each: &mut each,
                failed: &mut failed,
            };
            let stats = self.run_engine(policy, steer.as_mut(), part, sink);
            if let Some(e) = failed {
                return Err(e);
            }
            let stats = stats?;
            busy += stats.busy;
            span += stats.end.saturating_sub(stats.start);
        }
        // As the engine computes one run's, so that one part gives its bytes.
        let utilisation = match span {
            0 => 0.0,
            _ => busy as f64 / (span as f64 * self.cores as f64),
        };
        let mut summary = collector.finish(utilisation);
        summary.params = policy.params_json();
        Ok(summary)
    }
}

/// The sink of [`Machine::run_in_parts`]: records each outcome, hands it to
/// `each`, and stops the run once `each` failed or the process was asked
/// to stop.
struct Recording<'a, F> {
    collector: &'a mut Collector,
    each: &'a mut F,
    failed: &'a mut Option<anyhow::Error>,
}

impl<F: FnMut(&Outcome) -> Result<()>> Sink for Recording<'_, F> {
    fn outcome(&mut self, o: Outcome) {
        self.collector.record(&o);
        if self.failed.is_none()
            && let Err(e) = (self.each)(&o)
        {
            *self.failed = Some(e);
        }
    }

    fn interrupted(&mut self) -> bool {
        self.failed.is_some() || interrupt::requested()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::catalog::Tuning;
    use faasched_model::{Functions, MS, Phase, Phases};

    fn policy(name: &str) -> Policy {
        Policy::new(name, &Tuning::default()).unwrap()
    }

    /// `--base-slice-us` replaces Linux's scaling by the cores, and only a
    /// machine given one says so (a default summary keeps its bytes).
    #[test]
    fn a_base_slice_given_is_the_models_and_is_described() {
        let cfs = policy("cfs");
        let given = Kernel {
            base_slice_us: Some(700),
            ..Kernel::default()
        };
        assert_eq!(given.config(2, 1, &cfs).unwrap().base_slice, 700 * US);
        assert_eq!(given.describe(2, 1)["base_slice_us"], 700);
        let default = Kernel::default();
        assert_eq!(default.config(2, 1, &cfs).unwrap().base_slice, 1_400 * US);
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
        let machine = Machine {
            kernel: Kernel {
                context_switch_us: 0.0,
                ..Kernel::default()
            },
            cores: 1,
            seed: 1,
        };
        let turnarounds = |parts: &[&[Invocation]]| {
            let mut t = Vec::new();
            let streams = parts.iter().map(|p| p.iter().cloned().map(Ok));
            machine
                .run_in_parts(&policy("fifo-np"), streams, |o| {
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

    #[test]
    fn an_overload_is_named() {
        let source = |load| {
            Source::resolve(&faasched_workload::Choice {
                workload: "huawei".into(),
                cores: 1,
                load: Some(load),
                invocations: Some(10),
                seed: 1,
            })
            .unwrap()
        };
        assert_eq!(overload_warning(&source(1.0)), None);
        let w = overload_warning(&source(1e9)).unwrap();
        assert!(w.contains("load of 1000000000.00 on 1 core: "), "{w}");
    }

    /// A failing `each` stops the run at once: no further outcome reaches
    /// it, and its error is the run's.
    #[test]
    fn a_failing_sink_stops_the_run() {
        let f = Functions::new().intern("f");
        let all: Vec<Invocation> = (0..100)
            .map(|id| Invocation {
                id,
                function: f.clone(),
                arrival: id * MS,
                phases: Phases::from_buf([Phase::Cpu(MS / 2)]),
                memory_mb: 128,
                deadline: None,
            })
            .collect();
        let machine = Machine {
            kernel: Kernel::default(),
            cores: 1,
            seed: 1,
        };
        let mut seen = 0;
        let err = machine
            .run_in_parts(&policy("cfs"), [all.into_iter().map(Ok)], |_| {
                seen += 1;
                match seen {
                    3 => Err(anyhow!("disk full")),
                    _ => Ok(()),
                }
            })
            .unwrap_err();
        assert_eq!((seen, err.to_string()), (3, "disk full".to_string()));
    }
}
