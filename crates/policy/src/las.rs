//! `las`: least attained service (multi-level feedback) on a stock kernel.
//! Every invocation starts at nice 0; each time its CPU time passes the next
//! of [`LEVELS`]' bounds it drops to that level's nice value, so the cores
//! go first to the invocations that have had least of them.
//!
//! Why: with heavy-tailed CPU demands (a function's invocations spread over
//! orders of magnitude, as in production traces), an invocation that has run
//! long is likely to run much longer, so running the least-served first
//! approaches SRPT without knowing any demand in advance, and without
//! learning per function. The bounds are fixed, a decade apart around the
//! groups' edges (50 ms and 400 ms are G1's and G3's); nice values are
//! weights, never a ban, so a long invocation keeps a share (nice 19 weighs
//! 15 against nice 0's 1,024) and nothing starves. Raising nice needs no
//! privilege: it runs live as any user.

use faasched_model::{Attrs, CpuSet, IdMap, MS, Nanos, Outcome, Steer, TaskId, TaskInfo, Time};

/// (CPU time used, nice from then on), in order.
pub const LEVELS: [(Nanos, i8); 4] = [
    (50 * MS, 5),
    (400 * MS, 10),
    (2_000 * MS, 15),
    (10_000 * MS, 19),
];

/// A task, with the cores it may use and the levels it has passed.
#[derive(Clone, Copy, Debug)]
struct Task {
    cpus: CpuSet,
    passed: usize,
}

/// The `las` steering policy.
#[derive(Debug, Default)]
pub struct Las {
    tasks: IdMap<TaskId, Task>,
}

impl Steer for Las {
    fn name(&self) -> &str {
        "las"
    }

    fn on_arrival(&mut self, _now: Time, task: &TaskInfo, cpus: CpuSet) -> Attrs {
        self.tasks.insert(task.task, Task { cpus, passed: 0 });
        Attrs::normal(cpus)
    }

    fn cpu_watch(&self, task: TaskId) -> Option<Nanos> {
        let t = self.tasks.get(&task)?;
        LEVELS.get(t.passed).map(|&(at, _)| at)
    }

    fn on_cpu_used(&mut self, _now: Time, task: TaskId, used: Nanos) -> Option<Attrs> {
        let t = self.tasks.get_mut(&task)?;
        while LEVELS.get(t.passed).is_some_and(|&(at, _)| used >= at) {
            t.passed += 1;
        }
        let nice = LEVELS[t.passed.checked_sub(1)?].1;
        Some(Attrs {
            nice,
            ..Attrs::normal(t.cpus)
        })
    }

    fn on_exit(&mut self, _now: Time, task: TaskId, _outcome: &Outcome) {
        self.tasks.remove(&task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::info;

    #[test]
    fn an_invocation_steps_down_a_level_at_each_bound_it_passes() {
        let cpus = CpuSet::first(2);
        let mut p = Las::default();
        let t = TaskId(1);
        assert_eq!(p.on_arrival(0, &info(1, 0, 0), cpus), Attrs::normal(cpus));
        assert_eq!(p.cpu_watch(t), Some(50 * MS));
        assert_eq!(p.on_cpu_used(0, t, 50 * MS).map(|a| a.nice), Some(5));
        assert_eq!(p.cpu_watch(t), Some(400 * MS));
        // Heard late, past two bounds: the level of the last one.
        assert_eq!(p.on_cpu_used(0, t, 2_500 * MS).map(|a| a.nice), Some(15));
        assert_eq!(p.cpu_watch(t), Some(10_000 * MS));
        let last = p.on_cpu_used(0, t, 10_000 * MS).unwrap();
        assert_eq!((last.nice, last.cpus), (19, cpus));
        assert_eq!(p.cpu_watch(t), None);
        p.on_exit(0, t, &crate::testkit::outcome(0, 0, 10_000 * MS));
        assert_eq!(p.cpu_watch(t), None);
        assert_eq!(p.on_cpu_used(0, t, 20_000 * MS), None);
    }
}
