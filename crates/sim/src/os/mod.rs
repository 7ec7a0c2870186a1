//! The operating-system level's engine: runs a stream of invocations
//! through the kernel model under a steering policy, and streams each
//! outcome out as it finishes.
//!
//! One loop, three sources of events, merged by time (ties in this order, so a
//! run is fully determined by its inputs):
//!
//! 1. the kernel model's next internal event (phase ends, slice expiries, I/O);
//! 2. the next arrival of the (time-sorted) invocation stream;
//! 3. the policy's next periodic call, while anything is left to run.
//!
//! Memory is proportional to the invocations in flight: the stream is pulled one
//! invocation ahead, and outcomes are handed to the sink and forgotten.

use crate::RUN_LIMIT;
use faasched_kernel::{Kernel, Notice, TaskStats};
use faasched_model::{
    CpuSet, Function, Group, Invocation, Load, Nanos, Outcome, Steer, TaskId, TaskInfo, Time,
};

pub use faasched_kernel::{
    Config, ConfigError, DEFAULT_ALPS_WAIT_LIMIT, Discipline, FairClass, Prediction,
};

/// What a whole run measured, beyond the per-invocation outcomes.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct RunStats {
    /// Invocations that finished.
    pub invocations: u64,
    /// First arrival.
    pub start: Time,
    /// Last finish.
    pub end: Time,
    /// Busy core-time (running or switching).
    pub busy: Nanos,
    /// busy / (cores × (end − start)).
    pub utilisation: f64,
    /// Kernel events processed.
    pub events: u64,
}

/// Where a run's results go: every outcome, and (with
/// [`Config::report_turns`]) every turn a task had on a core. Any
/// `FnMut(Outcome)` is a sink that ignores turns.
pub trait Sink {
    /// An invocation finished.
    fn outcome(&mut self, outcome: Outcome);
    /// A task's turn on a core ended after `cpu` of CPU time.
    fn turn(&mut self, _task: TaskId, _cpu: Nanos) {}
    /// Whether the run should stop now ([`RunError::Interrupted`]): asked
    /// between events, at least every [`POLL_EVENTS`] kernel events, so that a run of a few long invocations (whose outcomes come seldom)
    /// stops within milliseconds of being asked to. Never, by default.
    fn interrupted(&mut self) -> bool {
        false
    }
}

/// The most kernel events the engine processes without asking
/// [`Sink::interrupted`]: a few milliseconds of work (a tick costs about
/// 100 ns), where a lone long invocation's ticks can run for seconds
/// without an outcome.
pub const POLL_EVENTS: u64 = 1 << 16;

impl<F: FnMut(Outcome)> Sink for F {
    fn outcome(&mut self, outcome: Outcome) {
        self(outcome)
    }
}

/// What the engine remembers of an invocation in flight, by its kernel
/// [`Slot`](faasched_kernel::Slot).
struct InFlight {
    function: Function,
    arrival: Time,
    group: Group,
    memory_mb: u32,
}

/// Runs `invocations` (sorted by arrival) on a kernel built from `config`, steered
/// by `policy`; hands each outcome to `sink` as the invocation finishes.
///
/// Stops at the first error of the invocation stream and returns it.
pub fn run<I, E, P, S>(
    config: &Config,
    policy: &mut P,
    invocations: I,
    mut sink: S,
) -> Result<RunStats, RunError<E>>
where
    I: IntoIterator<Item = Result<Invocation, E>>,
    P: Steer + ?Sized,
    S: Sink,
{
    // First runs are noticed only for a policy that reacts to them.
    let mut kernel = Kernel::new(&Config {
        report_starts: config.report_starts || policy.wants_start(),
        ..config.clone()
    })
    .map_err(RunError::Config)?;
    let cpus = CpuSet::first(config.cores);
    let mut stream = invocations.into_iter();
    let mut next = stream.next().transpose().map_err(RunError::Input)?;
    let mut flight: Vec<Option<InFlight>> = Vec::new();
    let mut notices = Vec::new();
    let mut stats = RunStats {
        start: next.as_ref().map_or(0, |i| i.arrival),
        ..RunStats::default()
    };
    let period = policy.period().filter(|&p| p > 0);
    let mut next_period = period.map(|p| stats.start + p);
    let mut busy_at_period = vec![0; config.cores];
    let mut now = stats.start;

    loop {
        if sink.interrupted() {
            return Err(RunError::Interrupted {
                finished: stats.invocations,
            });
        }
        let kernel_at = kernel.next_event();
        let arrival_at = next.as_ref().map(|i| i.arrival.max(now));
        if kernel_at.is_none() && arrival_at.is_none() {
            break;
        }
        // The earliest pending source (one is); plain `min`s, as this runs once
        // per event.
        let pending = |at: Option<Time>| at.unwrap_or(Time::MAX);
        now = pending(kernel_at)
            .min(pending(arrival_at))
            .min(pending(next_period));
        if now > RUN_LIMIT {
            return Err(RunError::TimeLimit {
                finished: stats.invocations,
            });
        }
        if kernel_at == Some(now) {
            // Every kernel event due by the next arrival and period call (ties
            // go to the kernel), and by the clock's limit, in one call, until
            // one notifies, or [`POLL_EVENTS`] were processed (a batch cut
            // short changes nothing of what its events do).
            let bound = pending(arrival_at).min(pending(next_period)).min(RUN_LIMIT);
            let (events, last) = kernel.run_until(bound, POLL_EVENTS, &mut notices);
            stats.events += events;
            now = last.unwrap_or(now);
        } else if arrival_at == Some(now) {
            let Some(inv) = next.take() else { break };
            next = stream.next().transpose().map_err(RunError::Input)?;
            let task = TaskId(inv.id);
            let info = TaskInfo {
                task,
                function: inv.function.id,
                arrival: now,
                memory_mb: inv.memory_mb,
                deadline: inv.deadline,
            };
            let attrs = policy.on_arrival(now, &info, cpus);
            let watch = policy.cpu_watch(task);
            let f = InFlight {
                group: inv.group(),
                function: inv.function,
                arrival: now,
                memory_mb: inv.memory_mb,
            };
            let slot = kernel.spawn(now, task, inv.phases, attrs, watch, &mut notices) as usize;
            if slot == flight.len() {
                flight.push(Some(f));
            } else {
                flight[slot] = Some(f);
            }
        } else if let (Some(p), Some(at)) = (period, next_period) {
            let busy = kernel.busy_by_core(now);
            let per_core: Vec<f64> = busy
                .iter()
                .zip(&busy_at_period)
                .map(|(b, before)| (b - before) as f64 / p as f64)
                .collect();
            let load = Load {
                utilisation: per_core.iter().sum::<f64>() / config.cores as f64,
                cores: config.cores,
                per_core,
            };
            busy_at_period = busy;
            next_period = Some(at + p);
            for (task, attrs) in policy.on_period(now, load) {
                kernel.set_attrs(now, task, attrs, &mut notices);
            }
            rewatch(now, &mut kernel, policy);
        }
        // Most kernel events (a tick, a preemption) notify nothing: skip the call.
        if !notices.is_empty() {
            deliver(
                now,
                &mut kernel,
                policy,
                &mut notices,
                &mut flight,
                &mut Counted {
                    sink: &mut sink,
                    stats: &mut stats,
                },
            );
        }
        if cfg!(debug_assertions) {
            kernel.check_invariants();
        }
    }
    stats.busy = kernel.busy(stats.end);
    let span = stats.end.saturating_sub(stats.start);
    if span > 0 {
        stats.utilisation = stats.busy as f64 / (span as f64 * config.cores as f64);
    }
    Ok(stats)
}

/// A sink that also counts the outcomes into the run's stats.
struct Counted<'a, S> {
    sink: &'a mut S,
    stats: &'a mut RunStats,
}

impl<S: Sink> Sink for Counted<'_, S> {
    fn outcome(&mut self, o: Outcome) {
        self.stats.invocations += 1;
        self.stats.end = self.stats.end.max(o.finish);
        self.sink.outcome(o);
    }
    fn turn(&mut self, task: TaskId, cpu: Nanos) {
        self.sink.turn(task, cpu);
    }
    fn interrupted(&mut self) -> bool {
        self.sink.interrupted()
    }
}

/// Hands the kernel's notices to the policy, applies its answers, and turns
/// exits into outcomes. Answers may produce notices of their own; those are
/// delivered too, in order.
fn deliver<P: Steer + ?Sized>(
    now: Time,
    kernel: &mut Kernel,
    policy: &mut P,
    notices: &mut Vec<Notice>,
    flight: &mut [Option<InFlight>],
    sink: &mut impl Sink,
) {
    let mut i = 0;
    while i < notices.len() {
        let n = notices[i].clone();
        i += 1;
        match n {
            Notice::Started(task) => {
                if let Some(a) = policy.on_start(now, task) {
                    kernel.set_attrs(now, task, a, notices);
                }
            }
            Notice::Blocked(task) => policy.on_block(now, task),
            Notice::Woke(task) => {
                if let Some(a) = policy.on_wake(now, task) {
                    kernel.set_attrs(now, task, a, notices);
                }
            }
            Notice::Watch(task, used) => {
                if let Some(a) = policy.on_cpu_used(now, task, used) {
                    kernel.set_attrs(now, task, a, notices);
                }
                kernel.set_watch(now, task, policy.cpu_watch(task));
            }
            Notice::Exited(task, slot, st) => {
                if let Some(f) = flight[slot as usize].take() {
                    let outcome = outcome(task, f, now, st);
                    policy.on_exit(now, task, &outcome);
                    rewatch(now, kernel, policy);
                    sink.outcome(outcome);
                }
            }
            Notice::Turn(task, cpu) => sink.turn(task, cpu),
        }
    }
    notices.clear();
}

/// Re-reads the watch of every task the policy names ([`Steer::rewatch`]).
fn rewatch<P: Steer + ?Sized>(now: Time, kernel: &mut Kernel, policy: &mut P) {
    for task in policy.rewatch() {
        kernel.set_watch(now, task, policy.cpu_watch(task));
    }
}

fn outcome(task: TaskId, f: InFlight, finish: Time, st: TaskStats) -> Outcome {
    Outcome {
        id: task.0,
        function: f.function,
        group: f.group,
        arrival: f.arrival,
        first_run: st.first_run,
        finish,
        cpu: st.cpu,
        io: st.io,
        voluntary_switches: st.voluntary,
        involuntary_switches: st.involuntary,
        memory_mb: f.memory_mb,
    }
}

/// Why a run stopped.
#[derive(Debug)]
pub enum RunError<E> {
    /// The kernel configuration is invalid.
    Config(ConfigError),
    /// The invocation stream failed (bad input file, say).
    Input(E),
    /// The next event falls after [`RUN_LIMIT`](crate::RUN_LIMIT): the workload overloads the
    /// machine so much that its backlog would not drain within the
    /// simulator's clock.
    TimeLimit {
        /// Invocations that had finished.
        finished: u64,
    },
    /// The sink asked the run to stop ([`Sink::interrupted`]).
    Interrupted {
        /// Invocations that had finished.
        finished: u64,
    },
}

impl<E: std::fmt::Display> std::fmt::Display for RunError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Config(e) => e.fmt(f),
            RunError::Input(e) => e.fmt(f),
            RunError::TimeLimit { finished } => write!(
                f,
                "the simulated clock reached its limit ({} days) with {finished} invocations \
                 finished: the workload overloads the machine so much that its backlog does \
                 not drain; lower --load or add --cores",
                RUN_LIMIT / (86_400 * faasched_model::SEC)
            ),
            RunError::Interrupted { finished } => {
                write!(f, "interrupted with {finished} invocations finished")
            }
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for RunError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Config(e) => Some(e),
            RunError::Input(e) => Some(e),
            RunError::TimeLimit { .. } | RunError::Interrupted { .. } => None,
        }
    }
}
