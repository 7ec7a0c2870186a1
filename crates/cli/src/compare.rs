//! `faasched compare`: simulate and replay the same workload under the same
//! policies, and report per policy and group how far the simulated
//! turnaround distribution is from the measured one.

use crate::output::invocations_in;
use crate::replay;
use crate::run::{KernelArgs, run_policy_in_parts};
use crate::source::WorkloadArgs;
use crate::stdout::{out, outln};
use crate::tuning::TuningArgs;
use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use faasched_model::{Group, Invocation, Nanos, Outcome, Phase, US};
use faasched_policy::Tuning;
use faasched_report::fidelity::{ks_distance, mean};
use faasched_report::{InvocationsWriter, PolicySummary, Staged, Summary, write_outputs};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Simulate and replay the same workload and policies, and compare.
///
/// For each policy and group (all, G1..G4): the mean turnaround simulated and
/// measured, their ratio (measured / simulated), the Kolmogorov–Smirnov
/// distance between the two turnaround distributions (0: the same empirical
/// CDF, 1: every value of one below every value of the other), the mean
/// response (arrival to first run) in both worlds, which
/// tells a wait in a queue from a slower run, and the ratio of the CPU time
/// the invocations used (measured / simulated: below 1, the machine did less
/// work than the workload asks, so it ran at a lower load). Then the same
/// simulation again with each invocation given the CPU time it used live
/// (its CPU phases scaled to it): what the model makes of the work the
/// machine really did, so that a policy's turnaround is compared at the
/// load it ran at (at 80% load a few percent more CPU time moves a mean
/// turnaround by tens of percent). Then once more on a machine with the
/// capacity the replay had: the share of the cores' time that went to
/// anything but the invocations (the launcher, the kernel's threads, other
/// processes, the host's steal; from /proc/stat) is taken from every core,
/// each invocation's CPU time divided by what is left. Then whether the
/// policies rank the same by mean turnaround in each. `invol l:m` is how
/// often something else took an invocation's core, measured and in that
/// last simulation (involuntary switches per invocation). This is how we
/// find where the kernel model is wrong (docs/FIDELITY.md).
///
/// The simulated machine has the replay's cores, the live kernel's EEVDF
/// base slice (which Linux scales by the CPUs online, not by the cores the
/// replay uses) and otherwise the simulator's default kernel (EEVDF, HZ
/// 250, 3.5 µs per switch), unless told otherwise. With `--rounds`, the
/// simulation runs the same parts as the replay, each on an empty machine
/// with the policy keeping what it learned, so that both worlds start each
/// part without the backlog of the one before.
///
/// Policies: those `replay` runs (cfs, fifo, rr, sfs, hybrid and its
/// variants, alps, alps-io), with the same privileges. The workload and
/// cores are the replay's: 1,000 invocations unless `-n` says otherwise
/// (of a file too), on all this machine's CPUs or the first `--cores`.
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Policies to compare, comma-separated (live-capable ones only).
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = "cfs,sfs,alps"
    )]
    policy: Vec<String>,
    #[command(flatten)]
    kernel: KernelArgs,
    #[command(flatten)]
    tuning: TuningArgs,
    /// Calibration file (as for `replay`).
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
    #[command(flatten)]
    rounds: replay::Rounds,
    /// Write compare.json, compare.csv, sim/ and live/ with each world's
    /// summary.json, summary.csv and invocations.csv, and
    /// sim-at-live-cpu/ and sim-at-live-capacity/ with the invocations.csv
    /// of the second and third simulations, into this directory: the
    /// invocations of all four pair by id. (In sim-at-live-capacity/, `cpu_us`
    /// is the core time each invocation held, its measured CPU time divided
    /// by the share of the cores left to it.)
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print compare.json to stdout instead of the table.
    #[arg(long)]
    json: bool,
}

/// One line of the comparison.
#[derive(Clone, Debug, Serialize)]
struct Row {
    policy: String,
    group: String,
    count_sim: usize,
    count_live: usize,
    mean_sim_ms: Option<f64>,
    mean_live_ms: Option<f64>,
    /// Measured mean / simulated mean.
    ratio_of_means: Option<f64>,
    ks_distance: Option<f64>,
    /// Mean response (arrival to first run), simulated and measured.
    response_sim_ms: Option<f64>,
    response_live_ms: Option<f64>,
    /// Measured mean CPU per invocation / simulated.
    cpu_ratio: Option<f64>,
    /// Mean turnaround simulated with each invocation's measured CPU time.
    mean_sim_at_live_cpu_ms: Option<f64>,
    /// Measured mean / that.
    ratio_to_sim_at_live_cpu: Option<f64>,
    /// The share of the cores' time the replay measured going to other work
    /// than the invocations (the policy's, the same in each of its rows).
    other_work_share: f64,
    /// Mean turnaround simulated with each invocation's measured CPU time,
    /// on cores that lose `other_work_share` of their time.
    mean_sim_at_live_capacity_ms: Option<f64>,
    /// Measured mean / that.
    ratio_to_sim_at_live_capacity: Option<f64>,
    /// Involuntary switches per invocation measured: how often something
    /// else took an invocation's core.
    involuntary_live: Option<f64>,
    /// The same in the simulation at the measured CPU and capacity.
    involuntary_sim_at_live_capacity: Option<f64>,
}

/// `compare.json`.
#[derive(Debug, Serialize)]
struct Comparison {
    rows: Vec<Row>,
    /// Policies by mean turnaround, lowest first.
    ranking_sim: Vec<String>,
    ranking_live: Vec<String>,
    rankings_agree: bool,
    /// Policies by mean turnaround simulated with the measured CPU times.
    ranking_sim_at_live_cpu: Vec<String>,
    /// Whether that ranking is the measured one.
    rankings_agree_at_live_cpu: bool,
    /// Policies by mean turnaround simulated with the measured CPU times
    /// and capacity.
    ranking_sim_at_live_capacity: Vec<String>,
    /// Whether that ranking is the measured one.
    rankings_agree_at_live_capacity: bool,
}

/// One policy's invocations in one world, per group (index 0 = all, then
/// G1..G4).
#[derive(Debug, Default)]
struct Samples {
    /// Turnarounds, ns.
    turnaround: [Vec<u64>; 5],
    /// CPU time used in all, ns.
    cpu: [u64; 5],
    /// Responses (arrival to first run) in all, ns.
    response: [u64; 5],
    /// Involuntary switches in all.
    involuntary: [u64; 5],
}

impl Samples {
    fn record(&mut self, o: &Outcome) {
        for i in [0, 1 + o.group.index()] {
            self.turnaround[i].push(o.turnaround());
            self.cpu[i] += o.cpu;
            self.response[i] += o.response();
            self.involuntary[i] += o.involuntary_switches;
        }
    }

    /// Mean CPU per invocation of group `i`, ns.
    fn mean_cpu(&self, i: usize) -> Option<f64> {
        self.per_invocation(self.cpu[i], i)
    }

    /// Mean involuntary switches per invocation of group `i`.
    fn mean_involuntary(&self, i: usize) -> Option<f64> {
        self.per_invocation(self.involuntary[i], i)
    }

    /// Mean response of group `i`, ms.
    fn mean_response_ms(&self, i: usize) -> Option<f64> {
        self.per_invocation(self.response[i], i).map(|r| r / 1e6)
    }

    /// `total` over group `i`'s invocations.
    fn per_invocation(&self, total: u64, i: usize) -> Option<f64> {
        let n = self.turnaround[i].len();
        (n > 0).then(|| total as f64 / n as f64)
    }
}

impl Args {
    pub fn execute(mut self) -> Result<()> {
        let tuning = self.tuning.tuning()?;
        let (live, source) = replay::prepare(
            &self.policy,
            &tuning,
            &mut self.workload,
            self.calibration.as_deref(),
        )?;
        let cores = live.cores();
        if self.kernel.base_slice_us.is_none() {
            self.kernel.base_slice_us = faasched_sys::sched::base_slice().map(|s| s / US);
        }
        let all = source.invocations()?;
        // Each invocation's group as the workload plans it: the simulations
        // at the measured CPU move some across a group's bound (by CPU time),
        // and a group must hold the same invocations in every world.
        let groups: HashMap<u64, Group> = all.iter().map(|inv| (inv.id, inv.group())).collect();
        let mut staged = Staged::new();
        let (mut sim_out, mut live_out, mut at_live_cpu_out, mut at_live_out) = (
            self.invocations("sim", &mut staged)?,
            self.invocations("live", &mut staged)?,
            self.invocations("sim-at-live-cpu", &mut staged)?,
            self.invocations("sim-at-live-capacity", &mut staged)?,
        );
        let (mut sim, mut sim_summaries) = (Vec::new(), Vec::new());
        for name in &self.policy {
            let (t, s) = self.simulate(name, &tuning, &all, &groups, cores, sim_out.as_mut())?;
            sim.push(t);
            sim_summaries.push(s);
        }
        let mut measured: Vec<Samples> = self.policy.iter().map(|_| Samples::default()).collect();
        let mut used: Vec<HashMap<u64, Nanos>> =
            self.policy.iter().map(|_| HashMap::new()).collect();
        let replayed =
            replay::replay_policies(&self.policy, &tuning, &all, &live, self.rounds, |i, o| {
                measured[i].record(o);
                used[i].insert(o.id, o.cpu);
                if let Some(w) = live_out.as_mut() {
                    w.write(&self.policy[i], o)?;
                }
                Ok(())
            })?;
        let (live_summaries, other_work): (Vec<_>, Vec<_>) = replayed
            .into_iter()
            .map(|r| (r.summary, r.stats.other_work_share()))
            .unzip();
        let (mut at_live_cpu, mut at_live) = (Vec::new(), Vec::new());
        for ((name, used), &other) in self.policy.iter().zip(&used).zip(&other_work) {
            let as_measured = |speed: f64, out: Option<&mut InvocationsWriter>| {
                let work: Vec<Invocation> = all
                    .iter()
                    .map(|inv| with_cpu(inv, used.get(&inv.id).map(|&c| slowed(c, speed))))
                    .collect();
                self.simulate(name, &tuning, &work, &groups, cores, out)
                    .map(|(t, _)| t)
            };
            at_live_cpu.push(as_measured(1.0, at_live_cpu_out.as_mut())?);
            at_live.push(as_measured(1.0 - other, at_live_out.as_mut())?);
        }
        for w in [sim_out, live_out, at_live_cpu_out, at_live_out]
            .into_iter()
            .flatten()
        {
            w.finish()?;
        }
        let live_runs = LiveRuns {
            measured: &mut measured,
            other_work: &other_work,
            at_live_cpu: &at_live_cpu,
            at_live: &at_live,
        };
        let comparison = compare(&self.policy, &mut sim, live_runs);
        if let Some(dir) = &self.out {
            let sim_summary = Summary {
                policies: sim_summaries,
                workload: source.describe(),
                machine: self.kernel.describe(cores, self.workload.seed),
            };
            let live_summary = Summary {
                policies: live_summaries,
                workload: source.describe(),
                machine: live.machine(),
            };
            write_outputs(&dir.join("sim"), &sim_summary, &mut staged)?;
            write_outputs(&dir.join("live"), &live_summary, &mut staged)?;
            let json = serde_json::to_string_pretty(&comparison)?;
            staged.write(&dir.join("compare.json"), (json + "\n").as_bytes())?;
            let path = dir.join("compare.csv");
            let mut w = csv::Writer::from_writer(staged.create(&path)?);
            for r in &comparison.rows {
                w.serialize(r)?;
            }
            w.flush()
                .with_context(|| format!("writing {}", path.display()))?;
            staged.commit()?;
        }
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&comparison)?)?;
        } else {
            out!("{}", render(&comparison))?;
            if let Some(dir) = &self.out {
                outln!(
                    "wrote compare.json, compare.csv, sim/, live/, sim-at-live-cpu/, \
                     sim-at-live-capacity/ to {}",
                    dir.display()
                )?;
            }
        }
        Ok(())
    }

    /// With `--out`, an invocations.csv in its subdirectory `sub`, staged in
    /// `staged`.
    fn invocations(&self, sub: &str, staged: &mut Staged) -> Result<Option<InvocationsWriter>> {
        self.out
            .as_ref()
            .map(|dir| invocations_in(&dir.join(sub), staged))
            .transpose()
    }

    /// Policy `name` simulated over `all` in the replay's parts, each
    /// outcome in its group of `groups` (by id) and written to `out` if
    /// given.
    fn simulate(
        &self,
        name: &str,
        tuning: &Tuning,
        all: &[Invocation],
        groups: &HashMap<u64, Group>,
        cores: usize,
        mut out: Option<&mut InvocationsWriter>,
    ) -> Result<(Samples, PolicySummary)> {
        let mut t = Samples::default();
        let parts = self
            .rounds
            .parts(all)
            .map(|part| part.iter().cloned().map(Ok));
        let s = run_policy_in_parts(
            name,
            tuning,
            parts,
            &self.kernel,
            cores,
            self.workload.seed,
            |o| {
                let o = &*in_planned_group(o, groups);
                t.record(o);
                if let Some(w) = out.as_deref_mut() {
                    w.write(name, o)?;
                }
                Ok(())
            },
        )?;
        Ok((t, s))
    }
}

/// `o` in the group `groups` gives its invocation (by id): every outcome's
/// invocation is there, and mostly in the group it already has.
fn in_planned_group<'a>(o: &'a Outcome, groups: &HashMap<u64, Group>) -> Cow<'a, Outcome> {
    let planned = groups.get(&o.id).copied();
    debug_assert!(planned.is_some(), "outcome {} of no invocation", o.id);
    match planned {
        Some(group) if group != o.group => Cow::Owned(Outcome { group, ..o.clone() }),
        _ => Cow::Borrowed(o),
    }
}

/// `cpu` ns of work on a core that runs at `speed` (0 to 1] of its own: the
/// time it holds the core. A speed of 0 or less, where other work took all
/// the cores' time (and so no invocation ran), leaves it as it is.
fn slowed(cpu: Nanos, speed: f64) -> Nanos {
    if speed <= 0.0 {
        return cpu;
    }
    (cpu as f64 / speed).round() as Nanos
}

/// `inv` with its CPU phases scaled to `cpu` in all (what rounding leaves
/// goes to its last CPU phase), none below 1 ns (a workload has no empty
/// phase); as it is when `cpu` is unknown or it plans no CPU.
fn with_cpu(inv: &Invocation, cpu: Option<Nanos>) -> Invocation {
    let mut inv = inv.clone();
    let planned = inv.cpu_demand();
    let Some(cpu) = cpu.filter(|_| planned > 0) else {
        return inv;
    };
    let scaled = |d: Nanos| (u128::from(d) * u128::from(cpu) / u128::from(planned)) as Nanos;
    let last = inv.phases.iter().rposition(|p| matches!(p, Phase::Cpu(_)));
    let mut left = cpu;
    for (i, p) in inv.phases.iter_mut().enumerate() {
        if let Phase::Cpu(d) = p {
            *d = match Some(i) == last {
                true => left,
                false => scaled(*d),
            }
            .max(1);
            left = left.saturating_sub(*d);
        }
    }
    inv
}

/// What the replay measured of each policy, and the simulations given it.
struct LiveRuns<'a> {
    measured: &'a mut [Samples],
    /// [`Row::other_work_share`].
    other_work: &'a [f64],
    /// Simulated with the measured CPU times.
    at_live_cpu: &'a [Samples],
    /// And on cores that lose `other_work` of their time.
    at_live: &'a [Samples],
}

fn compare(policies: &[String], sim: &mut [Samples], live: LiveRuns) -> Comparison {
    let ratio =
        |s: Option<f64>, l: Option<f64>| s.zip(l).filter(|(s, _)| *s > 0.0).map(|(s, l)| l / s);
    let mut rows = Vec::new();
    for (k, ((name, s), l)) in policies
        .iter()
        .zip(sim.iter_mut())
        .zip(live.measured.iter_mut())
        .enumerate()
    {
        for i in 0..5 {
            let mean_at_live_cpu = mean(&live.at_live_cpu[k].turnaround[i]);
            let mean_at_live = mean(&live.at_live[k].turnaround[i]);
            let involuntary_live = l.mean_involuntary(i);
            let cpu_ratio = ratio(s.mean_cpu(i), l.mean_cpu(i));
            let (response_sim_ms, response_live_ms) =
                (s.mean_response_ms(i), l.mean_response_ms(i));
            let (a, b) = (&mut s.turnaround[i], &mut l.turnaround[i]);
            a.sort_unstable();
            b.sort_unstable();
            let (ms, ml) = (mean(a), mean(b));
            rows.push(Row {
                policy: name.clone(),
                group: if i == 0 {
                    "all".into()
                } else {
                    Group::ALL[i - 1].to_string()
                },
                count_sim: a.len(),
                count_live: b.len(),
                mean_sim_ms: ms.map(|m| m / 1e6),
                mean_live_ms: ml.map(|m| m / 1e6),
                ratio_of_means: ratio(ms, ml),
                mean_sim_at_live_cpu_ms: mean_at_live_cpu.map(|m| m / 1e6),
                ratio_to_sim_at_live_cpu: ratio(mean_at_live_cpu, ml),
                other_work_share: live.other_work[k],
                mean_sim_at_live_capacity_ms: mean_at_live.map(|m| m / 1e6),
                ratio_to_sim_at_live_capacity: ratio(mean_at_live, ml),
                involuntary_live,
                involuntary_sim_at_live_capacity: live.at_live[k].mean_involuntary(i),
                ks_distance: ks_distance(a, b),
                response_sim_ms,
                response_live_ms,
                cpu_ratio,
            });
        }
    }
    let ranking = |runs: &[Samples]| {
        let mut r: Vec<(f64, String)> = policies
            .iter()
            .zip(runs)
            .map(|(p, t)| (mean(&t.turnaround[0]).unwrap_or(f64::INFINITY), p.clone()))
            .collect();
        r.sort_by(|a, b| a.0.total_cmp(&b.0));
        r.into_iter().map(|(_, p)| p).collect::<Vec<_>>()
    };
    let (ranking_sim, ranking_live) = (ranking(sim), ranking(live.measured));
    let ranking_sim_at_live_cpu = ranking(live.at_live_cpu);
    let ranking_sim_at_live_capacity = ranking(live.at_live);
    Comparison {
        rankings_agree: ranking_sim == ranking_live,
        rankings_agree_at_live_cpu: ranking_sim_at_live_cpu == ranking_live,
        rankings_agree_at_live_capacity: ranking_sim_at_live_capacity == ranking_live,
        rows,
        ranking_sim,
        ranking_live,
        ranking_sim_at_live_cpu,
        ranking_sim_at_live_capacity,
    }
}

/// The table's columns, heading and width; the first two are
/// left-aligned, the others right-aligned. The heading line and every row
/// are laid out from it.
const COLUMNS: [(&str, usize); 15] = [
    ("policy", 12),
    ("group", 5),
    ("count", 6),
    ("sim mean ms", 12),
    ("live mean ms", 12),
    ("live/sim", 8),
    ("KS", 6),
    ("sim resp ms", 12),
    ("live resp ms", 12),
    ("CPU l/s", 8),
    ("sim@live CPU", 14),
    ("live/that", 9),
    ("+capacity", 10),
    ("live/that", 9),
    ("invol l:m", 11),
];

/// One line of the table: `cells` laid out under [`COLUMNS`].
fn push_line(out: &mut String, cells: &[String; COLUMNS.len()]) {
    for (k, (text, (_, width))) in cells.iter().zip(COLUMNS).enumerate() {
        if k > 0 {
            out.push(' ');
        }
        let _ = if k < 2 {
            write!(out, "{text:<width$}")
        } else {
            write!(out, "{text:>width$}")
        };
    }
    out.push('\n');
}

fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let cell =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    push_line(&mut out, &COLUMNS.map(|(heading, _)| heading.to_string()));
    for r in &c.rows {
        let cells = [
            r.policy.clone(),
            r.group.clone(),
            r.count_live.to_string(),
            cell(r.mean_sim_ms, 2),
            cell(r.mean_live_ms, 2),
            cell(r.ratio_of_means, 3),
            cell(r.ks_distance, 3),
            cell(r.response_sim_ms, 2),
            cell(r.response_live_ms, 2),
            cell(r.cpu_ratio, 3),
            cell(r.mean_sim_at_live_cpu_ms, 2),
            cell(r.ratio_to_sim_at_live_cpu, 3),
            cell(r.mean_sim_at_live_capacity_ms, 2),
            cell(r.ratio_to_sim_at_live_capacity, 3),
            format!(
                "{}:{}",
                cell(r.involuntary_live, 1),
                cell(r.involuntary_sim_at_live_capacity, 1)
            ),
        ];
        push_line(&mut out, &cells);
    }
    let verdict = |agree| if agree { "agree" } else { "DISAGREE" };
    let _ = writeln!(
        out,
        "ranking by mean turnaround: simulated {}; measured {} ({})",
        c.ranking_sim.join(" < "),
        c.ranking_live.join(" < "),
        verdict(c.rankings_agree)
    );
    let _ = writeln!(
        out,
        "simulated with the CPU times measured: {} ({} with the measured ranking)",
        c.ranking_sim_at_live_cpu.join(" < "),
        verdict(c.rankings_agree_at_live_cpu)
    );
    let lost: Vec<String> = c
        .rows
        .iter()
        .filter(|r| r.group == "all")
        .map(|r| format!("{} {:.1}%", r.policy, 100.0 * r.other_work_share))
        .collect();
    let _ = writeln!(
        out,
        "and on cores that lose to other work what the replay measured ({}): {} ({} with the \
         measured ranking)",
        lost.join(", "),
        c.ranking_sim_at_live_capacity.join(" < "),
        verdict(c.rankings_agree_at_live_capacity)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::{MS, Phases};

    #[test]
    fn compares_per_group_and_ranks_by_mean() {
        // All in G1; each invocation used `cpu` ns and waited a tenth of its
        // turnaround for its first run; `invol` involuntary switches in all.
        let ti = |all: Vec<u64>, cpu: u64, invol: u64| -> Samples {
            let total = cpu * all.len() as u64;
            let waited = all.iter().sum::<u64>() / 10;
            Samples {
                turnaround: [all.clone(), all, vec![], vec![], vec![]],
                cpu: [total, total, 0, 0, 0],
                response: [waited, waited, 0, 0, 0],
                involuntary: [invol, invol, 0, 0, 0],
            }
        };
        let t = |all: Vec<u64>, cpu: u64| ti(all, cpu, 3);
        let policies = vec!["a".to_string(), "b".to_string()];
        let mut sim = vec![
            t(vec![1_000_000, 3_000_000], 800_000),
            t(vec![2_000_000, 4_000_000], 800_000),
        ];
        let mut live = vec![
            t(vec![4_000_000, 6_000_000], 600_000),
            t(vec![2_000_000, 4_000_000], 800_000),
        ];
        // With the CPU times measured, the model agrees with the measurement.
        let at_live_cpu = [
            t(vec![4_000_000, 6_000_000], 600_000),
            t(vec![1_000_000, 2_000_000], 800_000),
        ];
        // With the capacity too, the ranking turns again (to tell the two
        // simulations apart), and "a" is preempted less.
        let at_live = [
            ti(vec![1_000_000, 2_000_000], 600_000, 1),
            t(vec![5_000_000, 7_000_000], 800_000),
        ];
        let runs = LiveRuns {
            measured: &mut live,
            other_work: &[0.25, 0.0],
            at_live_cpu: &at_live_cpu,
            at_live: &at_live,
        };
        let c = compare(&policies, &mut sim, runs);
        assert_eq!(c.rows.len(), 10);
        let a = &c.rows[0];
        assert_eq!(
            (a.mean_sim_ms, a.mean_live_ms, a.ratio_of_means),
            (Some(2.0), Some(5.0), Some(2.5))
        );
        // {1, 3} against {4, 6} ms: disjoint.
        assert_eq!(a.ks_distance, Some(1.0));
        assert_eq!(c.rows[2].ks_distance, None);
        assert_eq!(c.rows[5].ks_distance, Some(0.0));
        // 0.6 ms of CPU each, measured, against 0.8 simulated.
        assert_eq!(a.cpu_ratio, Some(0.75));
        assert_eq!(c.rows[5].cpu_ratio, Some(1.0));
        assert_eq!(c.rows[2].cpu_ratio, None);
        assert_eq!(
            (a.response_sim_ms, a.response_live_ms),
            (Some(0.2), Some(0.5))
        );
        assert_eq!(c.rows[2].response_live_ms, None);
        assert_eq!(
            (c.ranking_sim.clone(), c.ranking_live.clone()),
            (
                vec!["a".to_string(), "b".into()],
                vec!["b".to_string(), "a".into()]
            )
        );
        assert!(!c.rankings_agree);
        assert!(render(&c).contains("DISAGREE"));
        assert_eq!(
            (a.mean_sim_at_live_cpu_ms, a.ratio_to_sim_at_live_cpu),
            (Some(5.0), Some(1.0))
        );
        assert_eq!(c.rows[5].ratio_to_sim_at_live_cpu, Some(2.0));
        assert_eq!(c.ranking_sim_at_live_cpu, ["b", "a"]);
        assert!(c.rankings_agree_at_live_cpu);
        assert!(render(&c).contains("(agree with the measured ranking)"));
        assert_eq!(
            (
                a.other_work_share,
                a.mean_sim_at_live_capacity_ms,
                a.ratio_to_sim_at_live_capacity
            ),
            (0.25, Some(1.5), Some(5.0 / 1.5))
        );
        assert_eq!(c.rows[4].other_work_share, 0.25);
        assert_eq!(c.rows[5].other_work_share, 0.0);
        assert_eq!(c.ranking_sim_at_live_capacity, ["a", "b"]);
        assert!(!c.rankings_agree_at_live_capacity);
        assert!(render(&c).contains("a < b (DISAGREE with the measured ranking)"));
        // 3 involuntary switches over 2 invocations live, 1 simulated.
        assert_eq!(
            (a.involuntary_live, a.involuntary_sim_at_live_capacity),
            (Some(1.5), Some(0.5))
        );
        assert_eq!(c.rows[2].involuntary_live, None);
        assert!(render(&c).contains(" 1.5:0.5\n"));
        assert!(render(&c).contains("(a 25.0%, b 0.0%)"));
    }

    /// An invocation of 49 ms of CPU that used 51 ms live is simulated in
    /// G2, and compared in G1, where the replay and the first simulation
    /// count it.
    #[test]
    fn an_invocation_stays_in_its_planned_group() {
        let f = faasched_model::Functions::new().intern("f");
        let inv = Invocation {
            id: 3,
            function: f.clone(),
            arrival: 0,
            phases: Phases::from_buf([Phase::Cpu(49 * MS)]),
            memory_mb: 128,
            deadline: None,
        };
        let used = with_cpu(&inv, Some(51 * MS));
        assert_eq!((inv.group(), used.group()), (Group::G1, Group::G2));
        let o = Outcome {
            id: 3,
            function: f,
            group: used.group(),
            arrival: 0,
            first_run: 0,
            finish: 51 * MS,
            cpu: 51 * MS,
            io: 0,
            voluntary_switches: 1,
            involuntary_switches: 0,
            memory_mb: 128,
        };
        let groups = HashMap::from([(3, inv.group())]);
        assert_eq!(in_planned_group(&o, &groups).group, Group::G1);
        // And so the simulation records it.
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            args: Args,
        }
        let args = <Command as clap::Parser>::try_parse_from(["compare"])
            .unwrap()
            .args;
        let (t, _) = args
            .simulate("cfs", &Tuning::default(), &[used], &groups, 1, None)
            .unwrap();
        assert_eq!((t.turnaround[1].len(), t.turnaround[2].len()), (1, 0));
    }

    /// Work on a core that keeps `speed` of its time holds it `1 / speed`
    /// times as long; no capacity measured leaves it as it is.
    #[test]
    fn slowed_work_holds_the_core_longer() {
        assert_eq!(slowed(1_000_000, 1.0), 1_000_000);
        assert_eq!(slowed(1_000_000, 0.8), 1_250_000);
        assert_eq!(slowed(1_000, 0.75), 1_333);
        assert_eq!(slowed(1_000, 0.0), 1_000);
    }

    /// CPU phases scaled to the time used, the rounding's remainder in the
    /// last one; I/O untouched; unknown or no CPU leaves it as it was.
    #[test]
    fn scales_an_invocations_cpu_phases_to_the_cpu_it_used() {
        let f = faasched_model::Functions::new().intern("f");
        let inv = Invocation {
            id: 0,
            function: f,
            arrival: 0,
            phases: Phases::from_slice(&[Phase::Cpu(1_000), Phase::Io(5_000), Phase::Cpu(2_000)]),
            memory_mb: 128,
            deadline: None,
        };
        // 3,001 / 3,000: the first 1,000.33 -> 1,000, the last takes 2,001.
        assert_eq!(
            with_cpu(&inv, Some(3_001)).phases[..],
            [Phase::Cpu(1_000), Phase::Io(5_000), Phase::Cpu(2_001)]
        );
        assert_eq!(
            with_cpu(&inv, Some(1_500)).phases[..],
            [Phase::Cpu(500), Phase::Io(5_000), Phase::Cpu(1_000)]
        );
        assert_eq!(with_cpu(&inv, None).phases, inv.phases);
        // 1 ns of 1,001 scaled to 500 would be 0.
        let tiny = Invocation {
            phases: Phases::from_slice(&[Phase::Cpu(1), Phase::Cpu(1_000)]),
            ..inv.clone()
        };
        assert_eq!(
            with_cpu(&tiny, Some(500)).phases[..],
            [Phase::Cpu(1), Phase::Cpu(499)]
        );
        let io_only = Invocation {
            phases: Phases::from_buf([Phase::Io(5_000)]),
            ..inv
        };
        assert_eq!(with_cpu(&io_only, Some(7)).phases, io_only.phases);
    }
}
