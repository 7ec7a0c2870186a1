//! `faasched replay`: run a workload for real on this machine, each policy in
//! turn, every invocation a process of the function suite, and write the
//! simulator's outputs marked live.

use crate::output::{OutputArgs, progress, section_title};
use crate::source::{Source, WorkloadArgs};
use crate::tuning::TuningArgs;
use anyhow::{Context, Result, bail};
use clap::Args as ClapArgs;
use faasched_live::calibration::{Calibration, Effort};
use faasched_live::privilege::{self, Pinned, Realtime};
use faasched_live::replay::{self, Config};
use faasched_live::suite::Kind;
use faasched_model::{CpuSet, Invocation, MS, Outcome, Privileges};
use faasched_policy::Tuning;
use faasched_report::{Collector, PolicySummary, Staged, Summary};
use faasched_sys::sched::{affinity, online_cpus};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Default size of a replayed workload, built-in or file: a built-in's is
/// about a minute at 80% load on two cores.
const DEFAULT_LIVE_INVOCATIONS: u64 = 1000;

/// Run a workload for real on this machine under one or more policies.
///
/// Every invocation becomes a process at its arrival time (open loop: a late
/// launch is measured and reported, and counts in the invocation's times),
/// running a function of the suite (`faasched fn list`) for the CPU time and
/// I/O waits the workload gives it, mapped to real work by this machine's
/// calibration (`faasched fn calibrate`; measured once and saved if missing).
/// Each process starts under the attributes its policy gives it, set in the
/// child before exec, and is steered until it exits: demotion at slice
/// expiry (sfs, hybrid), core groups by affinity (hybrid), the ALPS learner
/// retraining from finished invocations (alps, alps-io).
///
/// Policies: cfs, fifo, rr, sfs, hybrid (and its variants), alps, alps-io.
/// fifo, rr, sfs and hybrid need the privilege for SCHED_FIFO/SCHED_RR, alps
/// and alps-io for negative nice values (root, or CAP_SYS_NICE); without it
/// the command says which policies need it and runs none. Sim-only policies
/// (srpt, ps, alps-kernel, ...) are refused.
///
/// Outputs as `simulate`'s, marked live: each policy in summary.json carries
/// `live` (launch lateness, the launcher's and steering's CPU, how promptly
/// CPU watches acted, the calibration used).
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Policies to run, comma-separated, one after the other on the same
    /// invocations.
    #[arg(long, short = 'p', value_delimiter = ',', default_value = "cfs")]
    policy: Vec<String>,
    #[command(flatten)]
    tuning: TuningArgs,
    /// Calibration file to map CPU time to work (default: the one `faasched
    /// fn calibrate` saves; measured now if there is none).
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
    #[command(flatten)]
    rounds: Rounds,
    #[command(flatten)]
    output: OutputArgs,
}

/// How the policies take turns on the machine.
#[derive(ClapArgs, Debug, Clone, Copy)]
pub struct Rounds {
    /// Replay in this many rounds: the invocations are split into as many
    /// consecutive parts, and each part is replayed under every policy in
    /// turn before the next (the order rotating by one each round), so that
    /// the minutes when this shared machine runs slower fall on every policy
    /// alike. A policy keeps its state (ALPS's lessons) from one round to
    /// the next. With 1, each policy replays the whole workload in turn.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
}

impl Rounds {
    /// The consecutive parts `all` is replayed in, one per round.
    pub fn parts<'a, T>(&self, all: &'a [T]) -> impl Iterator<Item = &'a [T]> {
        let n = self.rounds as usize;
        (0..n).map(move |round| &all[round * all.len() / n..(round + 1) * all.len() / n])
    }
}

impl Args {
    pub fn execute(mut self) -> Result<()> {
        let tuning = self.tuning.tuning()?;
        let (live, source) = prepare(
            &self.policy,
            &tuning,
            &mut self.workload,
            self.calibration.as_deref(),
        )?;
        let mut staged = Staged::new();
        let mut invocations = self.output.invocations(&mut staged)?;
        let replayed = replay_policies(
            &self.policy,
            &tuning,
            &source.invocations()?,
            &live,
            self.rounds,
            |i, o| match invocations.as_mut() {
                Some(w) => Ok(w.write(&self.policy[i], o)?),
                None => Ok(()),
            },
        )?;
        if let Some(w) = invocations {
            w.finish()?;
        }
        let summary = Summary {
            policies: replayed.into_iter().map(|r| r.summary).collect(),
            workload: source.describe(),
            machine: live.machine(),
        };
        let title = format!("{} (live)", section_title(&summary));
        self.output.emit(summary, "faasched replay", &title, staged)
    }
}

/// Gets ready to replay `policies` on `workload`, as [`Live::prepare`]
/// does, and resolves the workload with the live defaults: the cores the
/// replay runs on and [`DEFAULT_LIVE_INVOCATIONS`]. `replay` and `compare`
/// start here.
pub fn prepare(
    policies: &[String],
    tuning: &Tuning,
    workload: &mut WorkloadArgs,
    calibration: Option<&Path>,
) -> Result<(Live, Source)> {
    crate::run::refuse_repeated(policies)?;
    let live = Live::prepare(policies, tuning, workload.cores, calibration)?;
    workload.cores = Some(live.cores() as u16);
    workload.invocations.get_or_insert(DEFAULT_LIVE_INVOCATIONS);
    let source = Source::resolve(workload)?;
    Ok((live, source))
}

/// Refuses, before anything runs, policies that exist only in the simulator
/// and policies this process lacks the privileges for.
fn check_policies(names: &[String], tuning: &Tuning, held: Privileges) -> Result<()> {
    let mut refused = Vec::new();
    for name in names {
        let setup = faasched_policy::setup(name, tuning)?;
        if setup.sim_only() {
            bail!(
                "`{name}` exists only in the simulator (it needs a patched kernel or an oracle); live policies: {}",
                live_policies().join(", ")
            );
        }
        let missing = held.missing(setup.privileges());
        if !missing.is_empty() {
            refused.push(format!("{name} needs {}", missing.join(" and ")));
        }
    }
    if !refused.is_empty() {
        bail!(
            "not running anything: {}. Run as root (or with CAP_SYS_NICE), or choose policies that need nothing more (cfs)",
            refused.join("; ")
        );
    }
    Ok(())
}

/// The policies that can run live.
fn live_policies() -> Vec<&'static str> {
    faasched_policy::POLICIES
        .iter()
        .filter(|(n, _)| faasched_policy::setup(n, &Tuning::default()).is_ok_and(|s| !s.sim_only()))
        .map(|(n, _)| *n)
        .collect()
}

/// The calibration at `path`, or the default one, measured now if absent.
fn load_calibration(path: Option<&Path>, program: &Path) -> Result<Calibration> {
    if let Some(p) = path {
        return Calibration::load(p)
            .with_context(|| format!("loading calibration {}", p.display()));
    }
    let default = Calibration::default_path()?;
    if default.is_file() {
        return Calibration::load(&default)
            .with_context(|| format!("loading calibration {}", default.display()));
    }
    eprintln!(
        "no calibration yet: measuring this machine once (saved to {})",
        default.display()
    );
    let c = Calibration::measure(program, Effort::Full, true, |msg| eprintln!("  {msg}"))?;
    c.save(&default)?;
    Ok(c)
}

/// What every replay on this machine shares.
pub struct Live {
    config: Config,
    calibration: Calibration,
    /// Whether the launcher may run SCHED_FIFO.
    realtime: bool,
}

impl Live {
    /// Checks `policies` can run here, and gets ready to replay on the
    /// first `cores` CPUs (default: all) with `calibration` (default: the
    /// saved one, measured now if absent).
    pub fn prepare(
        policies: &[String],
        tuning: &Tuning,
        cores: Option<u16>,
        calibration: Option<&Path>,
    ) -> Result<Live> {
        let held = privilege::probe();
        check_policies(policies, tuning, held)?;
        let online = online_cpus();
        let cores = cores.map_or(online, usize::from);
        if cores > online {
            bail!("--cores {cores}: this machine has {online} online CPUs");
        }
        let program = std::env::current_exe().context("finding this executable")?;
        let calibration = load_calibration(calibration, &program)?;
        let realtime = held.realtime;
        if !realtime {
            eprintln!(
                "note: no privilege for SCHED_FIFO, so the launcher runs as SCHED_OTHER: launches may be late under load"
            );
        }
        Ok(Live {
            config: Config {
                program,
                cpus: CpuSet::first(cores),
                lead: 100 * MS,
                overrun: faasched_live::replay::DEFAULT_OVERRUN,
                max_in_flight: faasched_live::replay::DEFAULT_MAX_IN_FLIGHT,
            },
            calibration,
            realtime,
        })
    }

    /// The CPUs the launcher should keep to: those it may run on that the
    /// replay leaves to the rest of the machine, so that it never takes a
    /// core from a function; `None` if there are none (a replay on every
    /// CPU), or if its CPUs cannot be read.
    fn launcher_cpus(&self) -> Option<CpuSet> {
        let rest = affinity(0).ok()?.without(&self.config.cpus);
        (!rest.is_empty()).then_some(rest)
    }

    /// Cores replayed on.
    pub fn cores(&self) -> usize {
        self.config.cpus.len()
    }

    /// This machine, as `summary.json` describes a live run's.
    pub fn machine(&self) -> Value {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        json!({
            "cores": self.cores(),
            "online_cpus": online_cpus(),
            "kernel": format!("Linux {} (live)", release.trim()),
            "live": true,
            "calibration": self.calibration.id,
        })
    }
}

/// Replays `all` under each of `policies`, in `rounds`, calling `each`
/// with the policy's index in `policies` on every outcome; a summary per
/// policy, in the order given.
pub fn replay_policies(
    policies: &[String],
    tuning: &Tuning,
    all: &[Invocation],
    live: &Live,
    rounds: Rounds,
    mut each: impl FnMut(usize, &Outcome) -> Result<()>,
) -> Result<Vec<Replayed>> {
    let mut runs = policies
        .iter()
        .map(|name| PolicyRun::new(name, tuning))
        .collect::<Result<Vec<_>>>()?;
    let n = rounds.rounds as usize;
    for (round, part) in rounds.parts(all).enumerate() {
        for i in 0..runs.len() {
            let k = (i + round) % runs.len();
            let name = &policies[k];
            let label = match n {
                1 => name.clone(),
                _ => format!("{name} {}/{n}", round + 1),
            };
            runs[k].replay(live, part, &label, |o| each(k, o))?;
        }
    }
    Ok(runs
        .into_iter()
        .map(|r| r.finish(live, rounds.rounds, tuning))
        .collect())
}

/// One policy replayed: its summary, and what the launcher measured over
/// every round.
pub struct Replayed {
    pub summary: PolicySummary,
    pub stats: replay::ReplayStats,
}

/// One policy of a replay, kept from one round to the next: its steering
/// policy (and so what it learned), its outcomes and what the launcher
/// measured.
struct PolicyRun {
    name: String,
    setup: faasched_policy::Setup,
    /// Every outcome so far. Summarised only at the end: a [`Collector`]'s
    /// histograms take megabytes once filled, and the launcher forks for
    /// every invocation, so each megabyte it holds makes every later fork
    /// dearer. Three collectors held through a run made a fork cost up to
    /// twice the CPU (session 6, docs/LIVE.md "Results (session 6)", set C).
    outcomes: Vec<Outcome>,
    stats: replay::ReplayStats,
}

impl PolicyRun {
    /// Policy `name`, before its first round.
    fn new(name: &str, tuning: &Tuning) -> Result<PolicyRun> {
        Ok(PolicyRun {
            name: name.to_string(),
            setup: faasched_policy::setup(name, tuning)?,
            outcomes: Vec::new(),
            stats: replay::ReplayStats::default(),
        })
    }

    /// Replays `invocations` (sorted by arrival) under a progress bar
    /// labelled `label`, calling `each` on every outcome.
    fn replay(
        &mut self,
        live: &Live,
        invocations: &[Invocation],
        label: &str,
        mut each: impl FnMut(&Outcome) -> Result<()>,
    ) -> Result<()> {
        let bar = progress(label, Some(invocations.len() as u64));
        let calibration = &live.calibration;
        let args = |inv: &Invocation| -> Vec<OsString> {
            let kind = Kind::for_function(&inv.function.name);
            let plan = calibration.plan(kind, &inv.phases);
            vec![
                "fn".into(),
                kind.name().into(),
                "--plan".into(),
                plan.to_string().into(),
            ]
        };
        // Pinning needs no privilege, and failing to only costs fidelity.
        let _pinned = live.launcher_cpus().and_then(|cpus| {
            Pinned::to(&cpus)
                .inspect_err(|e| {
                    eprintln!("note: the launcher stays on the functions' CPUs: pinning it: {e}")
                })
                .ok()
        });
        let guard = live
            .realtime
            .then(Realtime::enter)
            .transpose()
            .context("raising the launcher to SCHED_FIFO")?;
        let outcomes = &mut self.outcomes;
        let mut failed = None;
        let stats = replay::run(
            &live.config,
            self.setup.steer.as_mut(),
            invocations.iter().cloned().map(Ok::<_, Infallible>),
            args,
            |o| {
                bar.inc(1);
                if failed.is_none()
                    && let Err(e) = each(&o)
                {
                    failed = Some(e);
                }
                outcomes.push(o);
            },
        );
        drop(guard);
        bar.finish_and_clear();
        let stats = stats.with_context(|| format!("replaying under {}", self.name))?;
        if let Some(e) = failed {
            return Err(e);
        }
        self.stats.absorb(stats);
        Ok(())
    }

    /// What it measured over every round (`rounds` of them), under `tuning`.
    fn finish(self, live: &Live, rounds: u32, tuning: &Tuning) -> Replayed {
        let mut collector = Collector::new(&self.name, false);
        for o in &self.outcomes {
            collector.record(o);
        }
        let mut summary = collector.finish(self.stats.utilisation());
        let mut live_json = self.stats.to_json();
        live_json["calibration"] = json!(live.calibration.id);
        live_json["launcher"] = json!(if live.realtime {
            "SCHED_FIFO"
        } else {
            "SCHED_OTHER"
        });
        live_json["rounds"] = json!(rounds);
        summary.live = Some(live_json);
        summary.params = crate::run::params_json(&self.name, tuning);
        Replayed {
            summary,
            stats: self.stats,
        }
    }
}
