//! SFS (the ALPS paper's comparison point; public code ds2-lab/SFS): every new
//! invocation runs SCHED_FIFO for a credit of CPU time, then drops to the fair
//! class, approximating SRPT from user space.
//!
//! What the public code does and how it maps here (SFS's public code):
//! - credit T = the mean of the last 200 inter-arrival gaps × cores, 20 ms
//!   until 200 gaps (201 arrivals) are seen, never below 6 ms; SFS recomputes it in
//!   a loop, here at every arrival;
//! - SFS counts the credit in wall-clock time by polling each job every 1 ms;
//!   here it is CPU time, reported the moment it is used (a CPU-time timer
//!   live), which is SFS's intent without its polling error;
//! - a job that waited more than 3T before its FIFO start goes to the fair
//!   class at once (checked when it first gets a core);
//! - a job that blocks keeps its remaining credit (the credit is cumulative
//!   CPU time, so a wait spends none of it).
//!
//! SFS keeps its own FIFO queue and pins each job to a worker's core; here the
//! kernel's global FIFO run queue plays that part (one queue per mask is the
//! model's ideal balance).

use crate::os::baseline::BASELINE_RT_PRIO;
use faasched_model::{
    Attrs, Class, CpuSet, IdMap, MS, Nanos, Outcome, Steer, TaskId, TaskInfo, Time,
};
use std::collections::VecDeque;

/// Credit before [`WINDOW`] gaps between arrivals are seen.
pub const INITIAL_CREDIT: Nanos = 20 * MS;
/// Smallest credit.
pub const MIN_CREDIT: Nanos = 6 * MS;
/// Inter-arrival gaps the credit averages over.
pub const WINDOW: usize = 200;

/// A task still in its FIFO phase.
#[derive(Clone, Copy, Debug)]
struct Fifo {
    arrival: Time,
    credit: Nanos,
    cpus: CpuSet,
}

/// The SFS steering policy.
#[derive(Debug, Default)]
pub struct Sfs {
    /// Inter-arrival times of the last [`WINDOW`] arrivals.
    gaps: VecDeque<Nanos>,
    gap_sum: Nanos,
    last_arrival: Option<Time>,
    cores: usize,
    fifo: IdMap<TaskId, Fifo>,
}

impl Sfs {
    /// The current credit T.
    pub fn credit(&self) -> Nanos {
        if self.gaps.len() < WINDOW {
            return INITIAL_CREDIT;
        }
        (self.gap_sum / WINDOW as u64 * self.cores as u64).max(MIN_CREDIT)
    }

    fn observe_arrival(&mut self, now: Time) {
        if let Some(last) = self.last_arrival {
            let gap = now - last;
            self.gaps.push_back(gap);
            self.gap_sum += gap;
            if self.gaps.len() > WINDOW {
                self.gap_sum -= self.gaps.pop_front().unwrap_or(0);
            }
        }
        self.last_arrival = Some(now);
    }

    fn demote(&mut self, task: TaskId) -> Option<Attrs> {
        self.fifo.remove(&task).map(|f| Attrs::normal(f.cpus))
    }
}

impl Steer for Sfs {
    fn name(&self) -> &str {
        "sfs"
    }

    fn on_arrival(&mut self, now: Time, task: &TaskInfo, cpus: CpuSet) -> Attrs {
        self.cores = cpus.len();
        self.observe_arrival(now);
        let credit = self.credit();
        self.fifo.insert(
            task.task,
            Fifo {
                arrival: now,
                credit,
                cpus,
            },
        );
        Attrs::normal(cpus).with_class(Class::Fifo(BASELINE_RT_PRIO))
    }

    fn on_start(&mut self, now: Time, task: TaskId) -> Option<Attrs> {
        let f = *self.fifo.get(&task)?;
        (now - f.arrival > 3 * f.credit)
            .then(|| self.demote(task))
            .flatten()
    }

    fn wants_start(&self) -> bool {
        true // a job that waited more than 3T drops to the fair class
    }

    fn cpu_watch(&self, task: TaskId) -> Option<Nanos> {
        self.fifo.get(&task).map(|f| f.credit)
    }

    fn on_cpu_used(&mut self, _now: Time, task: TaskId, _used: Nanos) -> Option<Attrs> {
        self.demote(task)
    }

    fn on_exit(&mut self, _now: Time, task: TaskId, _outcome: &Outcome) {
        self.fifo.remove(&task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::testkit::info;

    #[test]
    fn credit_tracks_the_mean_gap_times_cores_with_a_floor() {
        let cpus = CpuSet::first(4);
        let mut sfs = Sfs::default();
        let mut at = 0;
        for i in 0..=WINDOW as u64 {
            assert_eq!(sfs.credit(), INITIAL_CREDIT);
            let a = sfs.on_arrival(at, &info(i, 0, 0), cpus);
            assert_eq!(a.class, Class::Fifo(BASELINE_RT_PRIO));
            at += 5 * MS;
        }
        // 200 gaps of 5 ms on 4 cores.
        assert_eq!(sfs.credit(), 20 * MS);
        for i in 0..WINDOW as u64 {
            sfs.on_arrival(at, &info(1000 + i, 0, 0), cpus);
            at += MS;
        }
        // 1 ms gaps × 4 = 4 ms, floored at 6.
        assert_eq!(sfs.credit(), MIN_CREDIT);
    }

    #[test]
    fn demotes_at_the_credit_or_after_waiting_three_credits() {
        let cpus = CpuSet::first(1);
        let mut sfs = Sfs::default();
        sfs.on_arrival(0, &info(0, 0, 0), cpus);
        assert_eq!(sfs.cpu_watch(TaskId(0)), Some(INITIAL_CREDIT));
        assert_eq!(sfs.on_start(3 * INITIAL_CREDIT, TaskId(0)), None);
        let demoted = sfs.on_cpu_used(90 * MS, TaskId(0), INITIAL_CREDIT);
        assert_eq!(demoted, Some(Attrs::normal(cpus)));
        assert_eq!(sfs.cpu_watch(TaskId(0)), None);

        sfs.on_arrival(0, &info(1, 0, 0), cpus);
        let late = sfs.on_start(3 * INITIAL_CREDIT + 1, TaskId(1));
        assert_eq!(late, Some(Attrs::normal(cpus)));
        assert_eq!(sfs.cpu_watch(TaskId(1)), None);
    }
}
