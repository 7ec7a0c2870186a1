//! SFS (the ALPS paper's comparison point; public code ds2-lab/SFS): every new
//! invocation runs SCHED_FIFO for a credit of CPU time, then drops to the fair
//! class, approximating SRPT from user space. Alone it drops to the kernel's
//! defaults (`sfs`); on top of another policy it drops to what that policy
//! gives the task (`sfs-alps`, `sfs-gittins`): the first-come short slice
//! before a learned rank.
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
//!
//! The policy beneath hears every event as if alone; while a task is in its
//! FIFO phase what beneath gives it is kept, not applied, and is what the
//! task drops to.

use crate::os::baseline::{BASELINE_RT_PRIO, Uniform};
use crate::os::layer::{Layer, Over};
use faasched_model::{Attrs, Class, CpuSet, IdMap, MS, Nanos, Steer, TaskId, TaskInfo, Time};
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
    /// What the policy beneath last gave it: what it drops to.
    beneath: Attrs,
}

/// SFS's FIFO credit, the layer.
#[derive(Debug)]
pub struct Credit {
    name: &'static str,
    /// Inter-arrival times of the last [`WINDOW`] arrivals.
    gaps: VecDeque<Nanos>,
    gap_sum: Nanos,
    last_arrival: Option<Time>,
    cores: usize,
    fifo: IdMap<TaskId, Fifo>,
}

/// The SFS steering policy on top of policy `P`.
pub type Sfs<P = Uniform> = Over<Credit, P>;

impl Default for Sfs {
    /// `sfs`: dropping to the kernel's defaults.
    fn default() -> Self {
        Sfs::new("sfs", Uniform::STOCK)
    }
}

impl<P: Steer> Sfs<P> {
    /// SFS's FIFO credit first, then `beneath`, under `name`.
    pub fn new(name: &'static str, beneath: P) -> Sfs<P> {
        let layer = Credit {
            name,
            gaps: VecDeque::new(),
            gap_sum: 0,
            last_arrival: None,
            cores: 0,
            fifo: IdMap::default(),
        };
        Over { layer, beneath }
    }

    /// The current credit T.
    pub fn credit(&self) -> Nanos {
        self.layer.credit()
    }
}

impl Credit {
    fn credit(&self) -> Nanos {
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
        self.fifo.remove(&task).map(|f| f.beneath)
    }
}

impl Layer for Credit {
    fn name(&self) -> Option<&str> {
        Some(self.name)
    }

    fn on_arrival(&mut self, now: Time, task: &TaskInfo, cpus: CpuSet, given: Attrs) -> Attrs {
        self.cores = cpus.len();
        self.observe_arrival(now);
        let credit = self.credit();
        self.fifo.insert(
            task.task,
            Fifo {
                arrival: now,
                credit,
                beneath: given,
            },
        );
        Attrs::normal(given.cpus).with_class(Class::Fifo(BASELINE_RT_PRIO))
    }

    /// Kept instead while the task is in its FIFO phase.
    fn pass(&mut self, task: TaskId, given: Attrs) -> Option<Attrs> {
        match self.fifo.get_mut(&task) {
            Some(f) => {
                f.beneath = given;
                None
            }
            None => Some(given),
        }
    }

    fn on_start(&mut self, now: Time, task: TaskId, given: Option<Attrs>) -> Option<Attrs> {
        let given = given.and_then(|a| self.pass(task, a));
        let Some(f) = self.fifo.get(&task) else {
            return given;
        };
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

    fn on_cpu_used(
        &mut self,
        _now: Time,
        task: TaskId,
        used: Nanos,
        given: Option<Attrs>,
    ) -> Option<Attrs> {
        let given = given.and_then(|a| self.pass(task, a));
        match self.fifo.get(&task) {
            Some(f) if used >= f.credit => self.demote(task),
            _ => given,
        }
    }

    fn forget(&mut self, task: TaskId) {
        self.fifo.remove(&task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::attained::Attained;
    use crate::os::testkit::{info, outcome};

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

    fn nice(cpus: CpuSet, nice: i8) -> Attrs {
        let mut a = Attrs::normal(cpus);
        a.nice = nice;
        a
    }

    /// Over `las`: FIFO first; the credit's end drops the task to what las
    /// gives it then; las's own steps before the credit ends are kept, not
    /// applied, and the task drops to the last of them.
    #[test]
    fn on_top_of_a_policy_the_task_drops_to_what_it_gives() {
        let cpus = CpuSet::first(4);
        let mut p = Sfs::new("sfs-las", Attained::new("las", Uniform::STOCK));
        let fifo = Attrs::normal(cpus).with_class(Class::Fifo(BASELINE_RT_PRIO));
        // Credit 20 ms, below las's first bound (50 ms).
        assert_eq!(p.on_arrival(0, &info(0, 0, 0), cpus), fifo);
        assert_eq!(p.cpu_watch(TaskId(0)), Some(INITIAL_CREDIT));
        assert_eq!(
            p.on_cpu_used(30 * MS, TaskId(0), INITIAL_CREDIT),
            Some(nice(cpus, 0))
        );
        assert_eq!(p.cpu_watch(TaskId(0)), Some(50 * MS), "las's own");
        assert_eq!(
            p.on_cpu_used(60 * MS, TaskId(0), 50 * MS),
            Some(nice(cpus, 5))
        );
        p.on_exit(70 * MS, TaskId(0), &outcome(0, 0, 55 * MS));

        // 200 gaps of 30 ms on 4 cores: a credit of 120 ms, past las's
        // 50 ms step.
        let mut at = 100 * MS;
        for i in 1..=WINDOW as u64 + 1 {
            assert_eq!(p.on_arrival(at, &info(i, 0, at), cpus), fifo);
            at += 30 * MS;
        }
        let last = TaskId(WINDOW as u64 + 1);
        assert_eq!(p.credit(), 120 * MS);
        assert_eq!(p.cpu_watch(last), Some(50 * MS));
        assert_eq!(p.on_cpu_used(at, last, 50 * MS), None, "kept: still FIFO");
        assert_eq!(p.cpu_watch(last), Some(120 * MS));
        assert_eq!(p.on_cpu_used(at, last, 120 * MS), Some(nice(cpus, 5)));
        assert_eq!(p.cpu_watch(last), Some(400 * MS));
    }
}
