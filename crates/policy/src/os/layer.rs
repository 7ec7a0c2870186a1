//! A policy on top of another. The policy beneath hears every event as if it
//! ran alone; a [`Layer`] sees what it answered and decides what the task
//! gets. `sfs`'s FIFO credit, `las`'s attained-service demotion and the
//! first-run wait guard are layers: [`Over`] forwards the events for all of
//! them, so each says only what it adds.

use faasched_model::{Attrs, CpuSet, Load, Nanos, Outcome, Steer, TaskId, TaskInfo, Time};

/// What a policy adds on top of the one beneath it.
pub trait Layer {
    /// The policy's name; `None` keeps the name of the policy beneath.
    fn name(&self) -> Option<&str>;

    /// `task` arrived and beneath gave it `given`; what it starts with.
    fn on_arrival(&mut self, now: Time, task: &TaskInfo, cpus: CpuSet, given: Attrs) -> Attrs;

    /// Beneath gave `task` new attributes, `given`; what the task gets now
    /// (`None`: no change).
    fn pass(&mut self, task: TaskId, given: Attrs) -> Option<Attrs>;

    /// `task` first got a core and beneath answered `given`.
    fn on_start(&mut self, _now: Time, task: TaskId, given: Option<Attrs>) -> Option<Attrs> {
        self.pass(task, given?)
    }

    /// Whether the layer itself reacts to a first run (beneath's wish holds
    /// either way).
    fn wants_start(&self) -> bool {
        false
    }

    /// The layer's own CPU watch on `task`; the task is watched at the
    /// earlier of it and beneath's.
    fn cpu_watch(&self, _task: TaskId) -> Option<Nanos> {
        None
    }

    /// `task` has used `used` of CPU, at least one of the two watches;
    /// `given` is beneath's answer, asked only if its own watch was reached.
    fn on_cpu_used(
        &mut self,
        _now: Time,
        task: TaskId,
        _used: Nanos,
        given: Option<Attrs>,
    ) -> Option<Attrs> {
        self.pass(task, given?)
    }

    /// `task` finished: forget it.
    fn forget(&mut self, task: TaskId);

    /// How often the policy wants its periodic call, given beneath's wish.
    fn period(&self, beneath: Option<Nanos>) -> Option<Nanos> {
        beneath
    }

    /// The periodic call: by default beneath's, its answers passed.
    fn on_period<P: Steer>(
        &mut self,
        now: Time,
        load: Load,
        beneath: &mut P,
    ) -> Vec<(TaskId, Attrs)> {
        let given = beneath.on_period(now, load);
        given
            .into_iter()
            .filter_map(|(task, a)| Some((task, self.pass(task, a)?)))
            .collect()
    }
}

/// Layer `L` over policy `P`.
#[derive(Debug)]
pub struct Over<L, P> {
    pub(crate) layer: L,
    pub(crate) beneath: P,
}

impl<L, P> Over<L, P> {
    /// The policy beneath.
    pub fn beneath(&self) -> &P {
        &self.beneath
    }
}

impl<L: Layer, P: Steer> Steer for Over<L, P> {
    fn name(&self) -> &str {
        self.layer.name().unwrap_or_else(|| self.beneath.name())
    }

    fn on_arrival(&mut self, now: Time, task: &TaskInfo, cpus: CpuSet) -> Attrs {
        let given = self.beneath.on_arrival(now, task, cpus);
        self.layer.on_arrival(now, task, cpus, given)
    }

    fn cpu_watch(&self, task: TaskId) -> Option<Nanos> {
        match (self.beneath.cpu_watch(task), self.layer.cpu_watch(task)) {
            (Some(b), Some(l)) => Some(b.min(l)),
            (b, l) => b.or(l),
        }
    }

    fn rewatch(&mut self) -> Vec<TaskId> {
        self.beneath.rewatch()
    }

    fn on_cpu_used(&mut self, now: Time, task: TaskId, used: Nanos) -> Option<Attrs> {
        // Beneath hears only of the watch it set.
        let reached = self.beneath.cpu_watch(task).is_some_and(|w| used >= w);
        let given = reached
            .then(|| self.beneath.on_cpu_used(now, task, used))
            .flatten();
        self.layer.on_cpu_used(now, task, used, given)
    }

    fn on_start(&mut self, now: Time, task: TaskId) -> Option<Attrs> {
        let given = self.beneath.on_start(now, task);
        self.layer.on_start(now, task, given)
    }

    fn wants_start(&self) -> bool {
        self.layer.wants_start() || self.beneath.wants_start()
    }

    fn on_block(&mut self, now: Time, task: TaskId) {
        self.beneath.on_block(now, task);
    }

    fn on_wake(&mut self, now: Time, task: TaskId) -> Option<Attrs> {
        let given = self.beneath.on_wake(now, task)?;
        self.layer.pass(task, given)
    }

    fn on_exit(&mut self, now: Time, task: TaskId, outcome: &Outcome) {
        self.layer.forget(task);
        self.beneath.on_exit(now, task, outcome);
    }

    fn period(&self) -> Option<Nanos> {
        self.layer.period(self.beneath.period())
    }

    fn on_period(&mut self, now: Time, load: Load) -> Vec<(TaskId, Attrs)> {
        self.layer.on_period(now, load, &mut self.beneath)
    }
}
