//! The steering seam: the one interface the simulator and the live runtime share.
//!
//! A steering policy is plain logic. It is fed events with the current time passed
//! in, and answers with the [`Attrs`] a stock kernel understands. It never reads a
//! clock, sleeps, or does I/O (so that the same code runs in the simulator and live).
//!
//! Call order for one task, in either world:
//!
//! ```text
//! on_arrival ──► on_start ──► [cpu_watch? ──► on_cpu_used]* ──► on_exit
//!                 (on_block / on_wake around each I/O wait)
//! ```
//!
//! and, independently, `on_period` every [`Steer::period`] if the policy has
//! one; after `on_exit` and `on_period`, `rewatch`, whose tasks' `cpu_watch`
//! is read again.

use crate::{Attrs, CpuSet, FunctionId, Nanos, Outcome, Time};

/// Identifies a task (one invocation in flight) to a policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u64);

/// What a policy may know about a task when it arrives: never its CPU demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskInfo {
    /// The task.
    pub task: TaskId,
    /// The function it invokes.
    pub function: FunctionId,
    /// Arrival instant.
    pub arrival: Time,
    /// Memory it is billed for, in MB.
    pub memory_mb: u32,
    /// Relative deadline, if the request carries one.
    pub deadline: Option<Nanos>,
}

/// Load measured over the last period, handed to [`Steer::on_period`].
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    /// Busy core-time / available core-time over the period, 0.0..=1.0.
    pub utilisation: f64,
    /// Cores the policy is steering.
    pub cores: usize,
    /// The same, per core (`cores` entries): for policies that split the
    /// cores into groups.
    pub per_core: Vec<f64>,
}

impl Load {
    /// Mean utilisation of the cores in `cpus` (0 if none).
    pub fn of(&self, cpus: &crate::CpuSet) -> f64 {
        let (sum, n) = cpus
            .iter()
            .filter_map(|c| self.per_core.get(c))
            .fold((0.0, 0), |(s, n), u| (s + u, n + 1));
        if n == 0 { 0.0 } else { sum / n as f64 }
    }
}

/// A steering policy: decides the kernel attributes of each task.
pub trait Steer {
    /// Short name, as the CLI spells it (`cfs`, `fifo`, ...).
    fn name(&self) -> &str;

    /// A task arrived; returns the attributes it starts with. `cpus` is every core
    /// the policy may use.
    fn on_arrival(&mut self, now: Time, task: &TaskInfo, cpus: CpuSet) -> Attrs;

    /// CPU time (cumulative, since arrival) at which the policy wants
    /// [`Steer::on_cpu_used`] for this task; `None` if it does not care.
    fn cpu_watch(&self, _task: TaskId) -> Option<Nanos> {
        None
    }

    /// Tasks whose [`Steer::cpu_watch`] changed since the last call, other
    /// than by their own [`Steer::on_cpu_used`] (after which it is read
    /// anyway): the simulator and the live runtime read each one's watch
    /// again. Asked after every [`Steer::on_exit`] and [`Steer::on_period`].
    /// A policy whose watch follows a learned value (hybrid's adaptive time
    /// limit) names its watched tasks when the value moves.
    fn rewatch(&mut self) -> Vec<TaskId> {
        Vec::new()
    }

    /// The task has used `used` of CPU (at least its watch); new attributes, if any.
    fn on_cpu_used(&mut self, _now: Time, _task: TaskId, _used: Nanos) -> Option<Attrs> {
        None
    }

    /// The task got a core for the first time (live: it reached `exec`); new
    /// attributes, if any. The simulator calls it only if
    /// [`Steer::wants_start`].
    fn on_start(&mut self, _now: Time, _task: TaskId) -> Option<Attrs> {
        None
    }

    /// Whether the policy reacts to [`Steer::on_start`]. Off by default: few
    /// policies do, and noticing every task's first run costs the simulator's
    /// kernel model 0.7–2% of its instructions for nothing.
    fn wants_start(&self) -> bool {
        false
    }

    /// The task blocked for I/O.
    fn on_block(&mut self, _now: Time, _task: TaskId) {}

    /// The task woke from I/O; new attributes, if any.
    fn on_wake(&mut self, _now: Time, _task: TaskId) -> Option<Attrs> {
        None
    }

    /// The task finished; its outcome is final.
    fn on_exit(&mut self, _now: Time, _task: TaskId, _outcome: &Outcome) {}

    /// How often the policy wants [`Steer::on_period`]; `None` for never.
    fn period(&self) -> Option<Nanos> {
        None
    }

    /// Periodic work (retrain, resize groups): new attributes for live tasks.
    fn on_period(&mut self, _now: Time, _load: Load) -> Vec<(TaskId, Attrs)> {
        Vec::new()
    }
}
