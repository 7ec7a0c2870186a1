//! What a replay measured beyond the outcomes: the launcher's and
//! steering's costs and promptness, and how the machine's cores were used,
//! gathered by the launch loop and summed over rounds.

use crate::os::steering::SteerStats;
use faasched_model::{MS, Nanos, Time};

/// How many failed invocations' ids [`ReplayStats::failed_ids`] keeps: enough
/// to find a few in the logs, few enough that a run in which every function
/// fails does not carry all of them.
pub const FAILED_IDS_KEPT: usize = 100;

/// What a replay measured beyond the outcomes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayStats {
    /// Invocations that finished.
    pub invocations: u64,
    /// Invocations whose process a signal ended (killed from outside, by
    /// its RLIMIT_RTTIME or by the kernel's OOM killer): not in
    /// `invocations`, without an outcome; the replay went on without them.
    /// Their planned CPU is not in `planned_cpu` nor their used CPU in
    /// `used_cpu`, so what they used counts in `other_work_share`.
    pub failed: u64,
    /// The ids of the first [`FAILED_IDS_KEPT`] failed invocations, in the
    /// order they ended.
    pub failed_ids: Vec<u64>,
    /// First arrival and last finish, on the workload's time line.
    pub start: Time,
    /// Last finish.
    pub end: Time,
    /// Busy time of the steered cores (every process's, from /proc/stat),
    /// read across the whole run, its lead included: see `busy_window`.
    pub busy: Nanos,
    /// The steered cores' time over the same span: cores × span.
    pub capacity: Nanos,
    /// The steered cores' time over the window `busy` is read across, the
    /// whole run with its lead: cores × `wall`.
    pub busy_window: Nanos,
    /// Per launch, in order: start instant − arrival instant (0 if on time).
    pub lateness: Vec<Nanos>,
    /// CPU time the launcher spent starting children.
    pub launch_cpu: Nanos,
    /// Launches that waited (once, up to
    /// [`LAUNCH_SHADOW`](super::LAUNCH_SHADOW)) for a CPU watch or period
    /// due sooner than the launch would end.
    pub launches_held: u64,
    /// CPU time of the launcher's thread over the whole run.
    pub launcher_cpu: Nanos,
    /// Steering's share of the launcher's work.
    pub steering: SteerStats,
    /// Wall time from the start of the run (its lead included) to the end.
    pub wall: Nanos,
    /// CPU time the workload planned for the invocations launched (at the
    /// end of a run, those that finished).
    pub planned_cpu: Nanos,
    /// CPU time those invocations' processes used. Below `planned_cpu`, the
    /// machine did the work faster than calibrated, so it ran at a lower
    /// load than the workload's; the ratio varies from minute to minute on
    /// a shared host and moves turnarounds more than most policies do.
    pub used_cpu: Nanos,
}

impl ReplayStats {
    /// Busy time of the steered cores over their capacity (0 for no span).
    /// The busy time includes each round's lead, when the cores are mostly
    /// idle (100 ms a round), and the capacity does not, so whatever ran in
    /// a lead counts a little for the run: a simplification, small for runs
    /// of seconds.
    pub fn utilisation(&self) -> f64 {
        (self.busy as f64 / self.capacity.max(1) as f64).min(1.0)
    }

    /// The share of the steered cores' time that went to anything but the
    /// invocations: busy (every process's time, and the host's steal) less
    /// the invocations' CPU time, over the cores' time in the same window.
    /// The launcher, the kernel's threads, other processes and the
    /// hypervisor took it, so the invocations ran on that much less machine
    /// than the simulator's. An estimate: /proc/stat samples at the tick,
    /// to 10 ms, while the invocations' CPU time is exact.
    pub fn other_work_share(&self) -> f64 {
        let other = self
            .busy
            .min(self.busy_window)
            .saturating_sub(self.used_cpu);
        other as f64 / self.busy_window.max(1) as f64
    }

    /// Adds what a later run of the same policy measured (`replay
    /// --rounds`): counts, CPU times and capacities add up, samples join.
    pub fn absorb(&mut self, later: ReplayStats) {
        if self.invocations == 0 {
            self.start = later.start;
        }
        self.invocations += later.invocations;
        self.failed += later.failed;
        self.failed_ids.extend(later.failed_ids);
        self.failed_ids.truncate(FAILED_IDS_KEPT);
        self.end = self.end.max(later.end);
        self.busy += later.busy;
        self.capacity += later.capacity;
        self.busy_window += later.busy_window;
        self.lateness.extend(later.lateness);
        self.launch_cpu += later.launch_cpu;
        self.launches_held += later.launches_held;
        self.launcher_cpu += later.launcher_cpu;
        self.steering.absorb(later.steering);
        self.wall += later.wall;
        self.planned_cpu += later.planned_cpu;
        self.used_cpu += later.used_cpu;
    }

    /// Counts invocation `id`, whose process a signal ended, as failed; `planned_cpu` is
    /// the CPU the workload planned for it, counted at its launch.
    pub(crate) fn fail(&mut self, id: u64, planned_cpu: Nanos) {
        self.failed += 1;
        if self.failed_ids.len() < FAILED_IDS_KEPT {
            self.failed_ids.push(id);
        }
        self.planned_cpu = self.planned_cpu.saturating_sub(planned_cpu);
    }

    /// The `live` object of a policy in `summary.json`: launch lateness,
    /// the launcher's and steering's CPU cost, how promptly CPU watches
    /// acted, and the invocations that failed. Times in ms, or µs where the
    /// names say so.
    pub fn to_json(&self) -> serde_json::Value {
        let n = self.invocations.max(1) as f64;
        let us = |v: Nanos| v as f64 / 1e3;
        let s = &self.steering;
        serde_json::json!({
            "launch_lateness_ms": quantiles(&self.lateness, 1e6),
            "late_launches_over_1ms": self.lateness.iter().filter(|&&l| l > MS).count(),
            "launches_held_for_a_look": self.launches_held,
            "launcher_cpu_share_of_one_core": self.launcher_cpu as f64 / self.wall.max(1) as f64,
            "launch_cpu_per_invocation_us": us(self.launch_cpu) / n,
            "steering_cpu_per_invocation_us": us(s.cpu) / n,
            "attribute_changes": s.changes,
            "watch_checks_per_invocation": s.watch_checks as f64 / n,
            "watch_to_change_us": quantiles(&s.watch_lags, 1e3),
            "watch_cpu_overshoot_us": quantiles(&s.watch_overshoots, 1e3),
            "changes_to_exited_processes": s.vanished,
            "exit_events_before_reapable": s.early_exit_events,
            "cpu_over_planned": self.used_cpu as f64 / self.planned_cpu.max(1) as f64,
            "other_work_share_of_cores": self.other_work_share(),
            "failed_invocations": self.failed,
            "failed_invocation_ids": self.failed_ids,
        })
    }
}

/// Count, mean, p50, p99 and max of `values`, divided by `unit`
/// (nearest-rank percentiles).
fn quantiles(values: &[Nanos], unit: f64) -> serde_json::Value {
    let mut v = values.to_vec();
    v.sort_unstable();
    let rank = |q: f64| nearest_rank(&v, q) as f64 / unit;
    if v.is_empty() {
        return serde_json::json!({ "count": 0 });
    }
    serde_json::json!({
        "count": v.len(),
        "mean": v.iter().sum::<Nanos>() as f64 / v.len() as f64 / unit,
        "p50": rank(0.5),
        "p99": rank(0.99),
        "max": rank(1.0),
    })
}

/// The nearest-rank `q` quantile of `sorted` (ascending); 0 if empty.
pub(crate) fn nearest_rank(sorted: &[Nanos], q: f64) -> Nanos {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.clamp(1, sorted.len().max(1)) - 1)
        .copied()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two rounds of one policy: counts, times and capacities add up, the
    /// samples join, and the first round's start stands.
    #[test]
    fn rounds_add_up() {
        let round = |start, end, busy, late: Nanos, lag| ReplayStats {
            invocations: 2,
            start,
            end,
            busy,
            capacity: 2 * (end - start),
            busy_window: 2 * (end - start) + 200,
            lateness: vec![late, late + 1],
            launch_cpu: 10,
            launcher_cpu: 20,
            wall: end - start,
            planned_cpu: 100,
            used_cpu: 90,
            failed: 1,
            failed_ids: vec![late],
            steering: SteerStats {
                cpu: 5,
                watch_lags: vec![lag],
                ..SteerStats::default()
            },
            ..ReplayStats::default()
        };
        let mut all = ReplayStats::default();
        all.absorb(round(1000, 2000, 1500, 3, 7));
        all.absorb(round(5000, 5500, 250, 4, 8));
        assert_eq!((all.invocations, all.start, all.end), (4, 1000, 5500));
        // (1500 + 250) / (2 × 1000 + 2 × 500)
        assert!((all.utilisation() - 1750.0 / 3000.0).abs() < 1e-12);
        assert_eq!(all.lateness, [3, 4, 4, 5]);
        assert_eq!(all.steering.watch_lags, [7, 8]);
        assert_eq!(all.steering.cpu, 10);
        assert_eq!((all.launch_cpu, all.launcher_cpu, all.wall), (20, 40, 1500));
        assert_eq!((all.planned_cpu, all.used_cpu), (200, 180));
        // (1750 busy - 180 the invocations used) / (3000 + 2 × 200)
        assert!((all.other_work_share() - 1570.0 / 3400.0).abs() < 1e-12);
        assert_eq!((all.failed, &all.failed_ids[..]), (2, &[3, 4][..]));
        assert_eq!(ReplayStats::default().utilisation(), 0.0);
        assert_eq!(ReplayStats::default().other_work_share(), 0.0);
    }

    /// Busy beyond the window's time (tick sampling) counts as all of it,
    /// and invocations that used more than the cores' busy time leave no
    /// share.
    #[test]
    fn the_other_work_share_stays_within_the_window() {
        let stats = |busy, used_cpu| ReplayStats {
            busy,
            busy_window: 1000,
            used_cpu,
            ..ReplayStats::default()
        };
        assert!((stats(1100, 900).other_work_share() - 0.1).abs() < 1e-12);
        assert_eq!(stats(800, 900).other_work_share(), 0.0);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<Nanos> = (1..=100).map(|i| i * MS).collect();
        let q = quantiles(&v, 1e6);
        assert_eq!(q["count"], 100);
        assert_eq!(
            (q["p50"].as_f64(), q["p99"].as_f64(), q["max"].as_f64()),
            (Some(50.0), Some(99.0), Some(100.0))
        );
        assert_eq!(q["mean"].as_f64(), Some(50.5));
        assert_eq!(quantiles(&[], 1e6)["count"], 0);
    }

    /// A failed invocation leaves the planned CPU and is counted in the
    /// JSON; past [`FAILED_IDS_KEPT`] only the count goes on.
    #[test]
    fn failed_invocations_are_counted_and_their_ids_capped() {
        let mut stats = ReplayStats {
            planned_cpu: 10 * MS,
            ..ReplayStats::default()
        };
        stats.fail(7, 4 * MS);
        assert_eq!(stats.planned_cpu, 6 * MS);
        let json = stats.to_json();
        assert_eq!(json["failed_invocations"], 1);
        assert_eq!(json["failed_invocation_ids"], serde_json::json!([7]));
        for id in 0..FAILED_IDS_KEPT as u64 {
            stats.fail(id, 0);
        }
        assert_eq!(stats.failed, FAILED_IDS_KEPT as u64 + 1);
        assert_eq!(stats.failed_ids.len(), FAILED_IDS_KEPT);
        assert_eq!(stats.failed_ids[0], 7);
        let mut all = stats.clone();
        all.absorb(stats);
        assert_eq!(all.failed, 2 * (FAILED_IDS_KEPT as u64 + 1));
        assert_eq!(all.failed_ids.len(), FAILED_IDS_KEPT);
    }
}
