//! What `compare` computes from the runs: per policy and group, the
//! simulated and measured turnaround side by side, and the rankings.

use faasched_model::{Group, Invocation, Nanos, Outcome, Phase};
use faasched_report::os::fidelity::{ks_distance, mean};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::HashMap;

/// One line of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The policy.
    pub policy: String,
    /// `all`, or a group (G1..G4).
    pub group: String,
    /// Invocations simulated in the group.
    pub count_sim: usize,
    /// Invocations measured in the group.
    pub count_live: usize,
    /// Mean turnaround simulated.
    pub mean_sim_ms: Option<f64>,
    /// Mean turnaround measured.
    pub mean_live_ms: Option<f64>,
    /// Measured mean / simulated mean.
    pub ratio_of_means: Option<f64>,
    /// Kolmogorov–Smirnov distance between the two turnaround samples.
    pub ks_distance: Option<f64>,
    /// Mean response (arrival to first run), simulated and measured.
    pub response_sim_ms: Option<f64>,
    /// [`Row::response_sim_ms`], measured.
    pub response_live_ms: Option<f64>,
    /// Measured mean CPU per invocation / simulated.
    pub cpu_ratio: Option<f64>,
    /// Mean turnaround simulated with each invocation's measured CPU time.
    pub mean_sim_at_live_cpu_ms: Option<f64>,
    /// Measured mean / that.
    pub ratio_to_sim_at_live_cpu: Option<f64>,
    /// The share of the cores' time the replay measured going to other work
    /// than the invocations (the policy's, the same in each of its rows).
    pub other_work_share: f64,
    /// Mean turnaround simulated with each invocation's measured CPU time,
    /// on cores that lose `other_work_share` of their time.
    pub mean_sim_at_live_capacity_ms: Option<f64>,
    /// Measured mean / that.
    pub ratio_to_sim_at_live_capacity: Option<f64>,
    /// Involuntary switches per invocation measured: how often something
    /// else took an invocation's core.
    pub involuntary_live: Option<f64>,
    /// The same in the simulation at the measured CPU and capacity.
    pub involuntary_sim_at_live_capacity: Option<f64>,
}

/// `compare.json`.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// Per policy, `all` then G1..G4.
    pub rows: Vec<Row>,
    /// Policies by mean turnaround simulated, lowest first.
    pub ranking_sim: Vec<String>,
    /// Policies by mean turnaround measured, lowest first.
    pub ranking_live: Vec<String>,
    /// Whether the two rankings are the same.
    pub rankings_agree: bool,
    /// Policies by mean turnaround simulated with the measured CPU times.
    pub ranking_sim_at_live_cpu: Vec<String>,
    /// Whether that ranking is the measured one.
    pub rankings_agree_at_live_cpu: bool,
    /// Policies by mean turnaround simulated with the measured CPU times
    /// and capacity.
    pub ranking_sim_at_live_capacity: Vec<String>,
    /// Whether that ranking is the measured one.
    pub rankings_agree_at_live_capacity: bool,
}

/// One policy's invocations in one world, per group (index 0 = all, then
/// G1..G4).
#[derive(Debug, Default)]
pub(super) struct Samples {
    /// Turnarounds, ns.
    pub(super) turnaround: [Vec<u64>; 5],
    /// CPU time used in all, ns.
    cpu: [u64; 5],
    /// Responses (arrival to first run) in all, ns.
    response: [u64; 5],
    /// Involuntary switches in all.
    involuntary: [u64; 5],
}

impl Samples {
    pub(super) fn record(&mut self, o: &Outcome) {
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

/// `o` in the group `groups` gives its invocation (by id): every outcome's
/// invocation is there, and mostly in the group it already has.
pub(super) fn in_planned_group<'a>(
    o: &'a Outcome,
    groups: &HashMap<u64, Group>,
) -> Cow<'a, Outcome> {
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
pub(super) fn slowed(cpu: Nanos, speed: f64) -> Nanos {
    if speed <= 0.0 {
        return cpu;
    }
    (cpu as f64 / speed).round() as Nanos
}

/// `inv` with its CPU phases scaled to `cpu` in all (what rounding leaves
/// goes to its last CPU phase), none below 1 ns (a workload has no empty
/// phase); as it is when `cpu` is unknown or it plans no CPU.
pub(super) fn with_cpu(inv: &Invocation, cpu: Option<Nanos>) -> Invocation {
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
pub(super) struct LiveRuns<'a> {
    pub(super) measured: &'a mut [Samples],
    /// [`Row::other_work_share`].
    pub(super) other_work: &'a [f64],
    /// Simulated with the measured CPU times.
    pub(super) at_live_cpu: &'a [Samples],
    /// And on cores that lose `other_work` of their time.
    pub(super) at_live: &'a [Samples],
}

/// The comparison of what `sim` simulated and `live` measured of `policies`.
pub(super) fn compare(policies: &[&str], sim: &mut [Samples], live: LiveRuns) -> Comparison {
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
                policy: name.to_string(),
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
        crate::compare::rank(
            policies
                .iter()
                .zip(runs)
                .map(|(p, t)| (*p, mean(&t.turnaround[0]))),
        )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::compare::render::render;
    use faasched_model::Phases;

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
        let policies = ["a", "b"];
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
        assert!(render(&c).contains("KS = Kolmogorov-Smirnov distance"));
        assert!(render(&c).contains("(a 25.0%, b 0.0%)"));
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
