//! Replaying a workload for real on this machine under several policies,
//! in turns or in rounds: the live counterpart of [`crate::os::run`], and
//! `faasched replay`, which writes the simulator's outputs marked live.

use crate::os::catalog::{Policy, live_names, policies};
use crate::os::run::WorkloadOptions;
use crate::os::tuning::TuningFlags;
use crate::output::{Outputs, section_title};
use crate::progress;
use anyhow::{Context, Result, bail};
use faasched_live::os::privilege::{self, Pinned, Realtime};
use faasched_live::os::replay::{self, Config};
use faasched_live::os::suite::Kind;
use faasched_live::os::unit_cpu::{Calibration, Effort};
use faasched_model::{CpuSet, Invocation, MS, Outcome, Privileges};
use faasched_report::Staged;
use faasched_report::os::{Collector, PolicySummary, Summary};
use faasched_sys::sched::{affinity, online_cpus};
use faasched_workload::Source;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Default size of a replayed workload, built-in or file: a built-in's is
/// about a minute at 80% load on two cores.
pub const DEFAULT_LIVE_INVOCATIONS: u64 = 1000;

/// The share of the cores' time other work may take before a replay's
/// numbers are worth a warning: beyond it the policies ran on a machine
/// they did not have to themselves.
pub const BUSY_HOST_SHARE: f64 = 0.05;

/// What `faasched replay` runs, and where its results go.
#[derive(Debug, Clone)]
pub struct Options {
    /// The workload, on the cores replayed on unless asked for others.
    pub workload: WorkloadOptions,
    /// The policies' names, replayed one after the other.
    pub policies: Vec<String>,
    /// The learning policies' parameters.
    pub tuning: TuningFlags,
    /// The calibration file (default: the saved one, measured if missing).
    pub calibration: Option<PathBuf>,
    /// Rounds the policies take turns in.
    pub rounds: u32,
    /// Where the results go.
    pub outputs: Outputs,
}

/// Replays the workload under every policy and emits the summary, each
/// policy's marked live.
pub fn run(o: Options) -> Result<()> {
    let policies = policies(&o.policies, &o.tuning.tuning()?)?;
    let (live, source) = prepare(&policies, &o.workload, o.calibration.as_deref())?;
    let mut staged = Staged::new();
    let mut invocations = o.outputs.invocations(&mut staged)?;
    let replayed = replay_policies(
        &policies,
        &source.invocations()?,
        &live,
        o.rounds,
        |i, outcome| match invocations.as_mut() {
            Some(w) => Ok(w.write(policies[i].name(), outcome)?),
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
    o.outputs.emit(summary, "faasched replay", &title, staged)
}

/// Gets ready to replay `policies` on this machine ([`Live::prepare`]),
/// and resolves `workload` with the live defaults: the cores the replay
/// runs on and [`DEFAULT_LIVE_INVOCATIONS`]. `replay` and `compare` start
/// here.
pub fn prepare(
    policies: &[Policy],
    workload: &WorkloadOptions,
    calibration: Option<&Path>,
) -> Result<(Live, Source)> {
    let live = Live::prepare(policies, workload.cores, calibration)?;
    let source = workload.resolve(Some(live.cores()), Some(DEFAULT_LIVE_INVOCATIONS))?;
    Ok((live, source))
}

/// The consecutive parts `all` is replayed in, one per round of `rounds`.
pub fn parts<T>(all: &[T], rounds: u32) -> impl Iterator<Item = &[T]> {
    let n = rounds.max(1) as usize;
    (0..n).map(move |round| &all[round * all.len() / n..(round + 1) * all.len() / n])
}

/// Refuses more rounds than invocations: a round would replay nothing.
pub fn check_rounds(rounds: u32, invocations: usize) -> Result<()> {
    if rounds as usize > invocations {
        bail!("--rounds {rounds} with {invocations} invocations: each round needs one at least");
    }
    Ok(())
}

/// Refuses, before anything runs, policies that exist only in the simulator
/// and policies this process (holding `held`) lacks the privileges for: the
/// one check of `replay`, `compare` and the agent.
pub fn check_policies(policies: &[Policy], held: Privileges) -> Result<()> {
    let mut refused = Vec::new();
    for p in policies {
        let name = p.name();
        if p.spec.sim_only() {
            bail!(
                "`{name}` exists only in the simulator (it needs a patched kernel or an oracle); live policies: {}",
                live_names().join(", ")
            );
        }
        let missing = held.missing(p.spec.privileges());
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
        policies: &[Policy],
        cores: Option<usize>,
        calibration: Option<&Path>,
    ) -> Result<Live> {
        let held = privilege::probe();
        check_policies(policies, held)?;
        let online = online_cpus();
        let cores = cores.unwrap_or(online);
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
                overrun: replay::DEFAULT_OVERRUN,
                max_in_flight: replay::DEFAULT_MAX_IN_FLIGHT,
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

/// Replays `all` under each of `policies`, in `rounds` (the order rotating
/// by one each round, so that the minutes when a shared machine runs
/// slower fall on every policy alike), calling `each` with the policy's
/// index in `policies` on every outcome; a summary per policy, in the order
/// given.
pub fn replay_policies(
    policies: &[Policy],
    all: &[Invocation],
    live: &Live,
    rounds: u32,
    mut each: impl FnMut(usize, &Outcome) -> Result<()>,
) -> Result<Vec<Replayed>> {
    check_rounds(rounds, all.len())?;
    let mut runs: Vec<PolicyRun> = policies.iter().map(PolicyRun::new).collect();
    let n = rounds.max(1);
    for (round, part) in parts(all, n).enumerate() {
        for i in 0..runs.len() {
            let k = (i + round) % runs.len();
            let name = policies[k].name();
            let label = match n {
                1 => name.to_string(),
                _ => format!("{name} {}/{n}", round + 1),
            };
            runs[k].replay(live, part, &label, |o| each(k, o))?;
        }
    }
    Ok(runs.into_iter().map(|r| r.finish(live, n)).collect())
}

/// One policy replayed: its summary, and what the launcher measured over
/// every round.
pub struct Replayed {
    /// As `simulate` summarises a policy, with `live` filled in.
    pub summary: PolicySummary,
    /// What the launcher measured.
    pub stats: replay::ReplayStats,
}

/// One policy of a replay, kept from one round to the next: its steering
/// policy (and so what it learned), its outcomes and what the launcher
/// measured.
struct PolicyRun {
    policy: Policy,
    steer: Box<dyn faasched_model::Steer + Send>,
    /// Every outcome so far. Summarised only at the end: a [`Collector`]'s
    /// histograms take megabytes once filled, and the launcher forks for
    /// every invocation, so each megabyte it holds makes every later fork
    /// dearer. Three collectors held through a run made a fork cost up to
    /// twice the CPU in a measured replay.
    outcomes: Vec<Outcome>,
    stats: replay::ReplayStats,
}

impl PolicyRun {
    /// `policy`, before its first round.
    fn new(policy: &Policy) -> PolicyRun {
        PolicyRun {
            policy: *policy,
            steer: policy.steer(),
            outcomes: Vec::new(),
            stats: replay::ReplayStats::default(),
        }
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
        let bar = progress::bar(label, Some(invocations.len() as u64));
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
            self.steer.as_mut(),
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
        let stats = stats.with_context(|| format!("replaying under {}", self.policy.name()))?;
        if let Some(e) = failed {
            return Err(e);
        }
        for line in part_report(label, &stats) {
            eprintln!("{line}");
        }
        self.stats.absorb(stats);
        Ok(())
    }

    /// What it measured over every round (`rounds` of them).
    fn finish(self, live: &Live, rounds: u32) -> Replayed {
        let mut collector = Collector::new(self.policy.name(), false);
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
        summary.params = self.policy.params_json();
        Replayed {
            summary,
            stats: self.stats,
        }
    }
}

/// What the terminal is told once a part is replayed: that it is done,
/// whether any invocation failed, and a warning if other work took more
/// than [`BUSY_HOST_SHARE`] of the cores' time (its numbers then say as
/// much about the rest of the machine as about the policy). On stderr even
/// when it is not a terminal, where the progress bar is hidden.
fn part_report(label: &str, stats: &replay::ReplayStats) -> Vec<String> {
    let share = stats.other_work_share();
    let mut lines = vec![format!(
        "{label}: {} invocations replayed in {:.1} s; other work took {:.1}% of the cores",
        stats.invocations,
        stats.wall as f64 / 1e9,
        share * 100.0
    )];
    if stats.failed > 0 {
        let ids: Vec<String> = stats.failed_ids.iter().map(u64::to_string).collect();
        lines.push(format!(
            "warning: {label}: {} invocations failed, their processes ended by a signal \
             (left out of the results; ids {})",
            stats.failed,
            ids.join(", ")
        ));
    }
    lines.extend(busy_warning(
        label,
        share,
        "the replayed cores' time (the launcher, the kernel, other processes, the host's steal)",
    ));
    lines
}

/// The warning of a live run `label` during which other work took `share`
/// of `what`, more than [`BUSY_HOST_SHARE`]: its numbers then say as much
/// about the rest of the machine as about the policy.
pub fn busy_warning(label: &str, share: f64, what: &str) -> Option<String> {
    (share > BUSY_HOST_SHARE).then(|| {
        format!(
            "warning: {label}: other work took {:.0}% of {what}: its numbers mean little on \
             this busy machine",
            share * 100.0
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_machine_is_named_past_the_share() {
        assert_eq!(busy_warning("sfs", BUSY_HOST_SHARE, "the cores"), None);
        assert_eq!(
            busy_warning("sfs", 0.5, "the cores").as_deref(),
            Some(
                "warning: sfs: other work took 50% of the cores: its numbers mean little on this busy machine"
            )
        );
    }

    #[test]
    fn a_part_says_it_is_done_and_warns_of_a_busy_host_or_failures() {
        // 1 s of the cores' time, 950 ms of it busy, 900 ms of which the
        // invocations': other work took 5%, not more.
        let mut stats = replay::ReplayStats {
            invocations: 40,
            wall: 2_500 * MS,
            busy: 950 * MS,
            busy_window: 1_000 * MS,
            used_cpu: 900 * MS,
            ..Default::default()
        };
        assert_eq!(
            part_report("cfs", &stats),
            ["cfs: 40 invocations replayed in 2.5 s; other work took 5.0% of the cores"]
        );
        stats.used_cpu = 500 * MS;
        (stats.failed, stats.failed_ids) = (2, vec![3, 9]);
        let lines = part_report("cfs 2/3", &stats);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[1].starts_with("warning: cfs 2/3: 2 invocations failed"),
            "{lines:?}"
        );
        assert!(lines[1].ends_with("ids 3, 9)"), "{lines:?}");
        assert!(
            lines[2].starts_with("warning: cfs 2/3: other work took 45% "),
            "{lines:?}"
        );
    }

    #[test]
    fn no_more_rounds_than_invocations() {
        assert!(check_rounds(2, 2).is_ok());
        let err = check_rounds(5, 2).unwrap_err().to_string();
        assert!(err.contains("--rounds 5 with 2 invocations"), "{err}");
    }

    #[test]
    fn rounds_cover_the_workload_in_consecutive_parts() {
        let all: Vec<u32> = (0..10).collect();
        let three: Vec<&[u32]> = parts(&all, 3).collect();
        assert_eq!(three, [&all[..3], &all[3..6], &all[6..]]);
        assert_eq!(parts(&all, 1).collect::<Vec<_>>(), [&all[..]]);
    }
}
