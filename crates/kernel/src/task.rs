//! A task as the kernel model keeps it: the invocation's phases, its attributes,
//! and the scheduler state every class needs.

use crate::TaskStats;
use faasched_model::{Attrs, Class, Nanos, Phases, TaskId, Time, nice_to_weight};

/// Linux's `WEIGHT_IDLEPRIO`: the load weight of a SCHED_IDLE task.
pub const IDLE_WEIGHT: u32 = 3;
/// Load weight of nice 0 (`NICE_0_LOAD` without the fixed-point shift).
pub const NICE_0: u32 = 1024;

/// Marks a task started at `now`, once: returns whether this call did.
///
/// An invocation starts when its first phase begins to be served: a CPU
/// phase at its first dispatch (the wait before it is the response time), an
/// I/O phase at once, since the handler that issues the I/O is running (the
/// model gives issuing it no cost). Its billed execution runs from then on.
#[inline(always)]
pub fn started(started: &mut bool, stats: &mut TaskStats, now: Time) -> bool {
    if *started {
        return false;
    }
    *started = true;
    stats.first_run = now;
    true
}

/// Where a task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Waiting in a run queue.
    Queued,
    /// On this core.
    Running(u32),
    /// Blocked in I/O since this instant.
    Blocked(Time),
}

/// One task (invocation in flight).
#[derive(Clone, Debug)]
pub struct Task {
    pub id: TaskId,
    pub phases: Phases,
    pub phase: usize,
    /// Work left in the current CPU phase.
    pub left: Nanos,
    pub attrs: Attrs,
    /// Load weight from nice (or [`IDLE_WEIGHT`]).
    pub weight: u32,
    /// EEVDF request size: the custom slice or the base slice.
    pub slice: Nanos,
    /// Rank in the legacy CFS queue order (rank, then vruntime): 0 for every
    /// task but under [`Discipline::AlpsKernel`](crate::Discipline::AlpsKernel).
    pub rank: u32,
    /// Under [`Discipline::AlpsKernel`](crate::Discipline::AlpsKernel), the CPU
    /// time of a turn before which the task keeps its core; 0 otherwise.
    pub hold: Nanos,
    /// Since when it waits in its run queue (kept while it waits, even if its
    /// attributes change), for [`Config::alps_wait_limit`](crate::Config::alps_wait_limit).
    pub queued_at: Time,
    /// Picked because it waited past
    /// [`Config::alps_wait_limit`](crate::Config::alps_wait_limit): for this
    /// turn no wakeup preempts it by rank.
    pub starved: bool,
    /// Index of the run queue its affinity maps to.
    pub rq: u32,
    pub state: State,
    /// Unique, increasing: the tie-break in every queue order.
    pub seq: u64,
    /// CPU time accounted up to this instant while running.
    pub acct_from: Time,
    /// Work done (CPU time net of switch costs), for SRPT.
    pub done: Nanos,
    /// Predicted total CPU demand, for the SRPT family (0 under the others).
    pub predicted: Nanos,
    pub watch: Option<Nanos>,
    // Fair class state.
    pub vruntime: i64,
    pub deadline: i64,
    pub vlag: i64,
    /// RUN_TO_PARITY: vruntime up to which the running task is protected.
    pub vprot: i64,
    /// CPU time at the start of this turn on a core (CFS `prev_sum_exec_runtime`).
    pub turn_cpu: Nanos,
    /// SCHED_RR quantum left.
    pub rr_left: Nanos,
    pub stats: TaskStats,
    pub started: bool,
}

impl Task {
    /// A task of these attributes, blocked at 0 with one 100 ms CPU phase
    /// and every fair field 0, for the classes' unit tests.
    #[cfg(test)]
    pub fn of(attrs: Attrs, slice: Nanos) -> Task {
        Task {
            id: TaskId(0),
            phases: Phases::from_buf([faasched_model::Phase::Cpu(100 * faasched_model::MS)]),
            phase: 0,
            left: 0,
            weight: Task::weight_of(&attrs),
            slice: attrs.slice.unwrap_or(slice),
            rank: 0,
            hold: 0,
            queued_at: 0,
            starved: false,
            attrs,
            rq: 0,
            state: State::Blocked(0),
            seq: 0,
            acct_from: 0,
            done: 0,
            predicted: 0,
            watch: None,
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            turn_cpu: 0,
            rr_left: 0,
            stats: TaskStats::default(),
            started: false,
        }
    }

    /// The load weight of these attributes.
    pub fn weight_of(attrs: &Attrs) -> u32 {
        match attrs.class {
            Class::Idle => IDLE_WEIGHT,
            _ => nice_to_weight(attrs.nice),
        }
    }

    /// Whether the ALPS hold keeps the running task on its core at `now`: its
    /// turn's CPU time is still below its learned slice.
    pub fn holds(&self, now: Time) -> bool {
        self.stats.cpu + now.saturating_sub(self.acct_from) - self.turn_cpu < self.hold
    }

    /// RT priority, if the task is in a real-time class.
    #[inline]
    pub fn rt_prio(&self) -> Option<u8> {
        match self.attrs.class {
            Class::Fifo(p) | Class::Rr(p) => Some(p.clamp(1, 99)),
            _ => None,
        }
    }

    /// The vruntime of this running task at `now`: it is accounted lazily
    /// (up to `acct_from`), so what ran since is added.
    #[inline]
    pub fn vruntime_at(&self, now: Time) -> i64 {
        self.vruntime + self.vdelta(now - self.acct_from)
    }

    /// Virtual time for `d` of real time at this task's weight
    /// (`calc_delta_fair`). Always inlined: LLVM kept the call in EEVDF's
    /// tick, which issues a new request at most ticks (-0.45% instructions).
    #[inline(always)]
    pub fn vdelta(&self, d: Nanos) -> i64 {
        // Nice 0, the common case, maps d to itself (the general formula gives
        // the same); then u64 arithmetic while d × 1024 fits (d below 208
        // days): 128-bit division is several times slower and this is on the
        // hot path.
        if self.weight == NICE_0 {
            return d as i64;
        }
        match d.checked_mul(NICE_0 as u64) {
            Some(x) => (x / self.weight as u64) as i64,
            None => ((d as u128 * NICE_0 as u128) / self.weight as u128) as i64,
        }
    }

    /// Real time for `dv` of virtual time at this task's weight, rounded up.
    #[inline]
    pub fn rdelta(&self, dv: i64) -> Nanos {
        if self.weight == NICE_0 {
            // As the general formula gives; without a branch on the sign,
            // which is a coin toss where a running task's protection may
            // have ended already (`Eevdf::expiry`).
            return dv.max(0) as Nanos;
        }
        if dv <= 0 {
            return 0;
        }
        match (dv as u64).checked_mul(self.weight as u64) {
            Some(x) => x.div_ceil(NICE_0 as u64),
            None => (dv as u128 * self.weight as u128).div_ceil(NICE_0 as u128) as Nanos,
        }
    }
}
