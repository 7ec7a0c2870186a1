//! Least attained service on a stock kernel, alone or on top of another
//! policy: each time a task's CPU time passes the next of [`LEVELS`]' bounds,
//! its nice value rises by that level's step over what the policy beneath
//! gives it, so the cores go first to the invocations that have had least
//! of them.
//!
//! Why: with heavy-tailed CPU demands (a function's invocations spread over
//! orders of magnitude, as in production traces) an invocation that has run
//! long is likely to run much longer, so serving the least-served first
//! approaches SRPT without knowing any demand in advance. Over `cfs`'s
//! defaults it is `las` (multi-level feedback); over `alps` it is
//! `alps-las`, where the learned rank orders invocations as they arrive and
//! the attained service demotes the long tail that a per-function rank
//! cannot tell apart. The bounds are fixed, a decade or so apart around the
//! groups' edges (50 ms and 400 ms are G1's and G3's). Nice values are
//! weights, never a ban (nice 19 weighs 15 against nice 0's 1,024), so
//! nothing starves; raising nice needs no privilege.

use crate::os::layer::{Layer, Over};
use faasched_model::{Attrs, Class, CpuSet, IdMap, MS, Nanos, Steer, TaskId, TaskInfo, Time};

/// (CPU time used, nice added from then on), in order; the last step sends
/// any fair task to nice 19.
pub const LEVELS: [(Nanos, i8); 4] = [
    (50 * MS, 5),
    (400 * MS, 10),
    (2_000 * MS, 15),
    (10_000 * MS, 39),
];

/// A task: what the policy beneath last gave it, and the levels passed.
#[derive(Clone, Copy, Debug)]
struct Task {
    beneath: Attrs,
    passed: usize,
}

/// Attained-service demotion, the layer.
#[derive(Debug)]
pub struct Levels {
    name: &'static str,
    tasks: IdMap<TaskId, Task>,
}

/// Attained-service demotion on top of policy `P`.
pub type Attained<P> = Over<Levels, P>;

impl<P: Steer> Attained<P> {
    /// `beneath`, demoted by attained service, under `name`.
    pub fn new(name: &'static str, beneath: P) -> Attained<P> {
        let layer = Levels {
            name,
            tasks: IdMap::default(),
        };
        Over { layer, beneath }
    }
}

impl Levels {
    /// What `task` runs under: the attributes from beneath, their nice
    /// raised by the last level passed (only in the fair classes: a
    /// real-time task's nice does nothing).
    fn attrs(&self, task: TaskId) -> Option<Attrs> {
        let t = self.tasks.get(&task)?;
        let step = t.passed.checked_sub(1).map_or(0, |l| LEVELS[l].1);
        let mut a = t.beneath;
        if matches!(a.class, Class::Normal | Class::Batch) {
            a.nice = (i16::from(a.nice) + i16::from(step)).clamp(-20, 19) as i8;
        }
        Some(a)
    }
}

impl Layer for Levels {
    fn name(&self) -> Option<&str> {
        Some(self.name)
    }

    fn on_arrival(&mut self, _now: Time, task: &TaskInfo, _cpus: CpuSet, given: Attrs) -> Attrs {
        self.tasks.insert(
            task.task,
            Task {
                beneath: given,
                passed: 0,
            },
        );
        given
    }

    /// Notes what beneath gave; the task's own.
    fn pass(&mut self, task: TaskId, given: Attrs) -> Option<Attrs> {
        self.tasks.get_mut(&task)?.beneath = given;
        self.attrs(task)
    }

    fn cpu_watch(&self, task: TaskId) -> Option<Nanos> {
        let t = self.tasks.get(&task)?;
        LEVELS.get(t.passed).map(|&(bound, _)| bound)
    }

    fn on_cpu_used(
        &mut self,
        _now: Time,
        task: TaskId,
        used: Nanos,
        given: Option<Attrs>,
    ) -> Option<Attrs> {
        let t = self.tasks.get_mut(&task)?;
        let before = t.passed;
        while LEVELS
            .get(t.passed)
            .is_some_and(|&(bound, _)| used >= bound)
        {
            t.passed += 1;
        }
        let passed = t.passed > before;
        match (given, passed) {
            (Some(a), _) => self.pass(task, a),
            (None, true) => self.attrs(task),
            (None, false) => None,
        }
    }

    fn forget(&mut self, task: TaskId) {
        self.tasks.remove(&task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::Uniform;
    use crate::os::testkit::{info, outcome};

    #[test]
    fn an_invocation_steps_down_a_level_at_each_bound_it_passes() {
        let cpus = CpuSet::first(2);
        let mut p = Attained::new("las", Uniform::STOCK);
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
        p.on_exit(0, t, &outcome(0, 0, 10_000 * MS));
        assert_eq!(p.on_cpu_used(0, t, 20_000 * MS), None);
    }

    /// Beneath: nice -3 at arrival; a watch of its own at 100 ms, which sets
    /// SCHED_FIFO (whose nice the levels leave alone).
    struct Ranked;

    impl Steer for Ranked {
        fn name(&self) -> &str {
            "ranked"
        }
        fn on_arrival(&mut self, _: Time, _: &TaskInfo, cpus: CpuSet) -> Attrs {
            Attrs {
                nice: -3,
                ..Attrs::normal(cpus)
            }
        }
        fn cpu_watch(&self, _: TaskId) -> Option<Nanos> {
            Some(100 * MS)
        }
        fn on_cpu_used(&mut self, _: Time, _: TaskId, used: Nanos) -> Option<Attrs> {
            assert!(used >= 100 * MS, "heard before its watch: {used}");
            Some(Attrs::normal(CpuSet::first(1)).with_class(Class::Fifo(1)))
        }
    }

    #[test]
    fn the_levels_add_to_what_beneath_gives_and_beneath_hears_only_its_watch() {
        let mut p = Attained::new("ranked-las", Ranked);
        let t = TaskId(4);
        assert_eq!(p.on_arrival(0, &info(4, 0, 0), CpuSet::first(2)).nice, -3);
        assert_eq!(p.cpu_watch(t), Some(50 * MS));
        assert_eq!(p.on_cpu_used(0, t, 50 * MS).map(|a| a.nice), Some(2));
        assert_eq!(p.cpu_watch(t), Some(100 * MS));
        let fifo = p.on_cpu_used(0, t, 100 * MS).unwrap();
        assert_eq!((fifo.class, fifo.nice), (Class::Fifo(1), 0));
    }
}
