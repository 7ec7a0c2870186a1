//! `faasched bench`: the simulator's speed, as medians of repeated runs.

use crate::run::{KernelArgs, run_engine};
use crate::source::{Source, WorkloadArgs};
use crate::stdout::outln;
use anyhow::{Result, bail};
use clap::{Args as ClapArgs, Subcommand};
use faasched_model::{Phase, Phases};
use serde::Serialize;
use std::time::Instant;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Simulated invocations per wall-second (workload generation and engine;
    /// metrics aggregation is excluded): (a) srpt on a 5,000-invocation
    /// Huawei-like window on 1 core, the job of ALPS's own simulator; (b) cfs on
    /// 1,000,000 Huawei-like invocations, 56 cores, 90% load; (c) the same with
    /// fifo and srpt.
    Sim(Sim),
    /// The ALPS learner's time per window (SRPT simulation plus training) for
    /// windows of 100, 500, 1,000 and 5,000 finished invocations of the
    /// Huawei-like workload on 56 cores, to set beside ALPS Table 2.
    Learn(Learn),
    /// Live: how promptly and at what CPU cost a watcher notices that a real
    /// process used a given CPU time (faasched's sleep-then-check, a POSIX
    /// CPU-time timer, SFS's 1 ms polling), and what one class change costs
    /// (sched_setattr against a fork+exec of chrt, as SFS runs schedtool).
    /// Spins one process (SCHED_FIFO on the last CPU when privileged) for a
    /// few seconds.
    Watch(Watch),
    /// The agent's CPU per invocation and share of one core while it is
    /// handed 100 short processes a second (`faasched agent`).
    Agent(crate::agent::Bench),
}

impl Command {
    pub fn execute(self) -> Result<()> {
        match self {
            Command::Sim(s) => s.execute(),
            Command::Learn(l) => l.execute(),
            Command::Watch(w) => w.execute(),
            Command::Agent(a) => a.execute(),
        }
    }
}

#[derive(ClapArgs, Debug)]
pub struct Watch {
    /// Targets watched per method (10 to 14 ms of CPU apart); class changes
    /// are ten times as many.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    trials: u32,
    /// Print the measurements as JSON.
    #[arg(long)]
    json: bool,
}

impl Watch {
    fn execute(self) -> Result<()> {
        let realtime = faasched_live::privilege::probe().realtime;
        let m = faasched_live::watchbench::run(self.trials as usize, realtime)?;
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&m)?)?;
            return Ok(());
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
}

#[derive(ClapArgs, Debug)]
pub struct Learn {
    /// Runs per window size; the median is reported.
    #[arg(long, default_value_t = 21, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Print `[{"records", "median_s"}]`.
    #[arg(long)]
    json: bool,
}

/// One window size's result.
#[derive(Serialize, Debug)]
struct Learned {
    records: usize,
    median_s: f64,
    functions: usize,
    runs: u32,
}

impl Learn {
    fn execute(self) -> Result<()> {
        release_only("learn")?;
        let params = faasched_policy::alps::Params::default();
        let mut results = Vec::new();
        for records in [100, 500, 1_000, 5_000] {
            let source = Source::resolve(&WorkloadArgs {
                workload: "huawei".into(),
                cores: Some(56),
                load: Some(0.9),
                invocations: Some(records as u64),
                seed: 1,
            })?;
            // A window as ALPS sees it: each finished invocation's function,
            // arrival and CPU time.
            let window = source
                .stream()?
                .map(|i| {
                    let i = i?;
                    Ok(faasched_policy::alps::Record {
                        function: i.function.id,
                        arrival: i.arrival,
                        phases: Phases::from_buf([Phase::Cpu(i.cpu_demand())]),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let (median_s, lesson) = median_wall(self.runs, || {
                Ok(faasched_policy::alps::learn(&window, 56, 0.9, &params))
            })?;
            let m = Learned {
                records,
                median_s,
                functions: lesson.len(),
                runs: self.runs,
            };
            if !self.json {
                outln!(
                    "window {:>5} records  {:>3} functions  median {:>10.6} s per lesson",
                    m.records,
                    m.functions,
                    m.median_s
                )?;
            }
            results.push(m);
        }
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&results)?)?;
        }
        Ok(())
    }
}

#[derive(ClapArgs, Debug)]
pub struct Sim {
    /// Runs per scenario, ten times as many for the millisecond-long (a);
    /// the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Invocations of the large scenarios (b, c).
    #[arg(long, default_value_t = 1_000_000, value_parser = crate::source::count)]
    invocations: u64,
    /// Seed of the scenarios' workloads (and of the kernel's random
    /// disciplines). Recorded results use the default; `scripts/pgo-build`
    /// trains on another, so that the build it makes never saw the workload
    /// it is measured on.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print `[{"scenario", "policy", "invocations", "wall_s", "invocations_per_s"}]`.
    #[arg(long)]
    json: bool,
}

/// How this binary was built, as `bench sim` reports it: `release`, or
/// `release+pgo` for the profile-guided build of `scripts/pgo-build` (which
/// sets `FAASCHED_PGO` when it compiles; a build that sets no such variable
/// is a plain one).
const BUILD: &str = match option_env!("FAASCHED_PGO") {
    Some(_) => "release+pgo",
    None => "release",
};

/// One scenario's result.
#[derive(Serialize, Debug)]
struct Measured {
    scenario: &'static str,
    policy: &'static str,
    invocations: u64,
    /// [`BUILD`].
    build: &'static str,
    seed: u64,
    /// Median wall time of one run.
    wall_s: f64,
    invocations_per_s: f64,
    /// Kernel events the run processed (the same every run).
    kernel_events: u64,
    runs: u32,
    /// Peak resident memory of this process so far (VmHWM), MiB.
    peak_rss_mib: Option<f64>,
}

impl Sim {
    fn execute(self) -> Result<()> {
        release_only("sim")?;
        // (scenario, policy, cores, invocations, runs per `--runs`): (a)
        // takes a millisecond or two, so one preemption of this process
        // halves a run's rate; the median of ten times as many runs stands.
        let scenarios: [(&str, &str, u16, u64, u32); 4] = [
            ("a-alps-window", "srpt", 1, 5_000, 10),
            ("b-million", "cfs", 56, self.invocations, 1),
            ("c-million", "fifo", 56, self.invocations, 1),
            ("c-million", "srpt", 56, self.invocations, 1),
        ];
        let kernel = KernelArgs::default();
        if !self.json {
            let hint = match BUILD {
                "release" => " (scripts/pgo-build makes the faster profile-guided one)",
                _ => "",
            };
            outln!("{BUILD} build{hint}, seed {}", self.seed)?;
        }
        let mut results = Vec::new();
        for (scenario, policy, cores, n, per_run) in scenarios {
            let runs = self.runs * per_run;
            let source = Source::resolve(&WorkloadArgs {
                workload: "huawei".into(),
                cores: Some(cores),
                load: Some(0.9),
                invocations: Some(n),
                seed: self.seed,
            })?;
            let (wall_s, stats) = median_wall(runs, || {
                let mut setup = faasched_policy::setup(policy, &Default::default())?;
                let stream = source.stream()?;
                let stats = run_engine(
                    &mut setup,
                    stream,
                    &kernel,
                    cores as usize,
                    self.seed,
                    |_| {},
                )?;
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
                policy,
                invocations: n,
                build: BUILD,
                seed: self.seed,
                wall_s,
                invocations_per_s: n as f64 / wall_s,
                kernel_events: stats.events,
                runs,
                peak_rss_mib: peak_rss_mib(),
            };
            if !self.json {
                outln!(
                    "{:<14} {:<5} {:>9} invocations  median {:>8.4} s  {:>10.0} invocations/s  {:>5.1} events/invocation  peak RSS {:.0} MiB",
                    m.scenario,
                    m.policy,
                    m.invocations,
                    m.wall_s,
                    m.invocations_per_s,
                    m.kernel_events as f64 / m.invocations as f64,
                    m.peak_rss_mib.unwrap_or(f64::NAN)
                )?;
            }
            results.push(m);
        }
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&results)?)?;
        }
        Ok(())
    }
}

/// Refuses to time a debug build, whose numbers would mislead.
pub(crate) fn release_only(bench: &str) -> Result<()> {
    if cfg!(debug_assertions) {
        bail!("bench needs a release build: cargo run --release -- bench {bench}");
    }
    Ok(())
}

/// Runs `f` `runs` times (at least once); the median wall time of one run,
/// and the last run's result.
fn median_wall<T>(runs: u32, mut f: impl FnMut() -> Result<T>) -> Result<(f64, T)> {
    let mut timed = || -> Result<(f64, T)> {
        let t = Instant::now();
        let r = f()?;
        Ok((t.elapsed().as_secs_f64(), r))
    };
    let (wall, mut last) = timed()?;
    let mut walls = vec![wall];
    for _ in 1..runs {
        let (wall, r) = timed()?;
        walls.push(wall);
        last = r;
    }
    walls.sort_by(f64::total_cmp);
    Ok((walls[walls.len() / 2], last))
}

/// VmHWM of this process from /proc/self/status, in MiB (Linux only).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
