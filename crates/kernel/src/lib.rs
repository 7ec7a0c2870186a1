//! A model of the Linux scheduler, plus the sim-only disciplines the papers
//! compare against.
//!
//! The model answers one question: given tasks (invocations with CPU bursts and
//! I/O waits) and the attributes a steering policy put on them, when does each
//! run? It is driven by the engine in `faasched-sim`:
//!
//! 1. [`Kernel::spawn`] a task at its arrival with its [`Attrs`];
//! 2. repeatedly [`Kernel::next_event`] / [`Kernel::step`], which report
//!    [`Notice`]s (blocked, woke, CPU watch reached, exited);
//! 3. between steps, [`Kernel::set_attrs`] and [`Kernel::set_watch`] as the policy
//!    answers the notices.
//!
//! # The model and its approximations
//!
//! - **Run queues**: one per distinct affinity mask, served by every core in the
//!   mask: an ideal, work-conserving version of Linux's per-CPU queues plus load
//!   balancing. A core never idles while a task it may run is runnable.
//! - **Classes**: RT (FIFO, RR; priority 1–99) > fair. A runnable RT task
//!   preempts a lower one at once. SCHED_IDLE is, as in Linux, a fair task of
//!   weight 3 that any non-idle wakeup preempts; SCHED_BATCH never
//!   wakeup-preempts.
//! - **EEVDF** (default): lag-preserving placement, eligibility against the
//!   weighted average vruntime of the queue, earliest eligible virtual deadline,
//!   custom slices, RUN_TO_PARITY and PREEMPT_SHORT at wakeup. Not modelled:
//!   DELAY_DEQUEUE (a blocking task leaves at once, keeping its lag).
//! - **CFS** (legacy): vruntime order, `sched_slice` from latency and
//!   granularity, START_DEBIT for new tasks, GENTLE_FAIR_SLEEPERS for wakeups,
//!   wakeup granularity.
//! - **Tick**: slice expiry is noticed only at ticks (no HRTICK), but the model
//!   jumps straight to the tick that matters instead of visiting each one.
//! - **Context switch**: every dispatch costs [`Config::context_switch`] of core
//!   time, accounted to the incoming task's CPU time as Linux accounts it.
//! - **Fair server** (6.12+): when RT work keeps a core from fair tasks for
//!   `period − runtime`, the core serves the fair queue for `runtime`.
//! - **Sim only**: SRPT with exact, error-bounded or random predictions; ideal
//!   processor sharing; non-preemptive global FIFO.

mod config;
mod cores;
mod deadlines;
mod events;
mod fair;
mod oracle;
mod ps;
mod rt;
mod slab;
mod task;
mod ticks;
mod tournament;
mod treap;

pub use config::{
    Config, ConfigError, DEFAULT_ALPS_WAIT_LIMIT, Discipline, FairClass, MAX_ALPS_WAIT_LIMIT,
    MAX_FAIR_SERVER_PERIOD, Prediction, RANDOM_PREDICTION_RANGE,
};
pub use events::RUN_LIMIT;
use faasched_model::{Attrs, Nanos, Phases, TaskId, Time};

/// Something the kernel tells the engine (and through it, the policy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// The task got a core for the first time. Only with
    /// [`Config::report_starts`].
    Started(TaskId),
    /// The task blocked for I/O.
    Blocked(TaskId),
    /// The task woke from I/O and is runnable again.
    Woke(TaskId),
    /// The task's CPU time reached the watch the policy set.
    Watch(TaskId, Nanos),
    /// The task finished; its accounting is final. Its [`Slot`] is free
    /// for the next spawn once this is handed out.
    Exited(TaskId, Slot, TaskStats),
    /// The task's turn on a core ended after this much CPU time (switch-in cost
    /// included): it was preempted, blocked or finished, or its attributes
    /// changed (a new turn starts, as after `sched_setattr`). Only with
    /// [`Config::report_turns`]; comes before the notice of what ended the turn.
    Turn(TaskId, Nanos),
}

/// Where the kernel keeps a live task: a dense index, reused once the task
/// has exited. [`Kernel::spawn`] returns it and [`Notice::Exited`] repeats
/// it, so that the engine keeps what it knows of each invocation in flight
/// in a `Vec` by slot, where a map by task id cost a hash insert and remove
/// per invocation (-1.2% instructions in (b), -3.5% in (c)).
pub type Slot = u32;

/// The kernel's accounting of one task, as `/proc/PID/schedstat` and rusage would
/// report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TaskStats {
    /// When it started: its first dispatch onto a core, or its arrival if
    /// its first phase is I/O (see `task::started`).
    pub first_run: Time,
    /// CPU time, including the switch-in cost charged to it.
    pub cpu: Nanos,
    /// Time blocked in I/O.
    pub io: Nanos,
    /// Switches away because it blocked or exited.
    pub voluntary: u64,
    /// Switches away because another task took its core.
    pub involuntary: u64,
}

/// The simulated kernel. Which model runs depends on [`Config::discipline`].
pub struct Kernel(Model);

enum Model {
    Cores(Box<cores::Cores>),
    Ps(Box<ps::Ps>),
}

impl Kernel {
    /// A kernel with this configuration.
    pub fn new(config: &Config) -> Result<Kernel, ConfigError> {
        config.validate()?;
        Ok(Kernel(match config.discipline {
            Discipline::Ps => Model::Ps(Box::new(ps::Ps::new(config))),
            _ => Model::Cores(Box::new(cores::Cores::new(config))),
        }))
    }

    /// A task arrives at `now` with these phases, attributes and CPU watch;
    /// returns its slot. Phases must be non-empty, each of positive length.
    pub fn spawn(
        &mut self,
        now: Time,
        id: TaskId,
        phases: Phases,
        attrs: Attrs,
        watch: Option<Nanos>,
        out: &mut Vec<Notice>,
    ) -> Slot {
        match &mut self.0 {
            Model::Cores(k) => k.spawn(now, id, phases, attrs, watch, out),
            Model::Ps(k) => k.spawn(now, id, phases, out),
        }
    }

    /// When the next internal event happens, if any. (This and [`Kernel::step`]
    /// are `#[inline]`: the engine calls them once per event, from another crate.)
    #[inline]
    pub fn next_event(&mut self) -> Option<Time> {
        match &mut self.0 {
            Model::Cores(k) => k.next_event(),
            Model::Ps(k) => k.next_event(),
        }
    }

    /// Processes the next internal event, appending what happened to `out`;
    /// returns its time.
    #[inline]
    pub fn step(&mut self, out: &mut Vec<Notice>) -> Option<Time> {
        match &mut self.0 {
            Model::Cores(k) => k.step(out),
            Model::Ps(k) => k.step(out),
        }
    }

    /// Processes the internal events due by `bound`, in order, until one
    /// appends a notice to `out` (which must be empty), none is left by
    /// then, or `budget` were processed (so that a caller can look up
    /// between batches); returns how many it processed and the time of the
    /// last. Checks
    /// the invariants after each in debug builds, as a caller stepping one by
    /// one would. The engine uses this between arrivals: one call instead of
    /// a turn of its loop per event (most events notify nothing).
    /// Always inlined: once phases were held inline ([`Phases`]), LLVM left
    /// it out of line in the engine's loop, a call per batch of events
    /// (+0.3% instructions in `bench sim`'s (b), +1.7% in (c) fifo).
    #[inline(always)]
    pub fn run_until(
        &mut self,
        bound: Time,
        budget: u64,
        out: &mut Vec<Notice>,
    ) -> (u64, Option<Time>) {
        let (mut events, mut last) = (0, None);
        while out.is_empty() && events < budget {
            let done = match &mut self.0 {
                Model::Cores(k) => k.step_until(bound, out),
                Model::Ps(k) => match k.next_event() {
                    Some(at) if at <= bound => k.step(out),
                    _ => None,
                },
            };
            let Some(at) = done else { break };
            events += 1;
            last = Some(at);
            self.check_invariants();
        }
        (events, last)
    }

    /// Changes a live task's attributes at `now` (ignored by sim-only disciplines).
    pub fn set_attrs(&mut self, now: Time, id: TaskId, attrs: Attrs, out: &mut Vec<Notice>) {
        if let Model::Cores(k) = &mut self.0 {
            k.set_attrs(now, id, attrs, out);
        }
    }

    /// Sets (or clears) the cumulative CPU time at which to report
    /// [`Notice::Watch`] for a live task.
    pub fn set_watch(&mut self, now: Time, id: TaskId, watch: Option<Nanos>) {
        match &mut self.0 {
            Model::Cores(k) => k.set_watch(now, id, watch),
            Model::Ps(k) => k.set_watch(now, id, watch),
        }
    }

    /// Core-time spent busy (running tasks or switching) up to `now`.
    pub fn busy(&self, now: Time) -> Nanos {
        match &self.0 {
            Model::Cores(k) => k.busy(now),
            Model::Ps(k) => k.busy(now),
        }
    }

    /// Each core's busy time up to `now`, in core order. Processor sharing has
    /// no cores of its own: its busy time is spread evenly.
    pub fn busy_by_core(&self, now: Time) -> Vec<Nanos> {
        match &self.0 {
            Model::Cores(k) => k.busy_by_core(now).collect(),
            Model::Ps(k) => {
                let n = k.cores() as u64;
                vec![k.busy(now) / n; n as usize]
            }
        }
    }

    /// Panics if the model's invariants do not hold (debug builds only; a no-op
    /// in release). Tests call it after every step.
    pub fn check_invariants(&self) {
        if let Model::Cores(k) = &self.0 {
            k.check();
        }
    }

    /// Tasks spawned and not yet exited.
    pub fn in_flight(&self) -> usize {
        match &self.0 {
            Model::Cores(k) => k.in_flight(),
            Model::Ps(k) => k.in_flight(),
        }
    }
}
