//! The discrete-event engine: runs a stream of invocations through the kernel
//! model under a steering policy, and streams each outcome out as it finishes.
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

use faasched_kernel::{Kernel, Notice, TaskStats};
use faasched_model::{
    CpuSet, Function, Group, IdMap, Invocation, Load, Nanos, Outcome, Steer, TaskId, TaskInfo, Time,
};

pub use faasched_kernel::{Config, ConfigError, Discipline, FairClass, Prediction};

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

/// What the engine remembers of an invocation in flight.
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
pub fn run<I, E, P, F>(
    config: &Config,
    policy: &mut P,
    invocations: I,
    mut sink: F,
) -> Result<RunStats, RunError<E>>
where
    I: IntoIterator<Item = Result<Invocation, E>>,
    P: Steer + ?Sized,
    F: FnMut(Outcome),
{
    let mut kernel = Kernel::new(config).map_err(RunError::Config)?;
    let cpus = CpuSet::first(config.cores);
    let mut stream = invocations.into_iter();
    let mut next = stream.next().transpose().map_err(RunError::Input)?;
    let mut flight: IdMap<TaskId, InFlight> = IdMap::default();
    let mut notices = Vec::new();
    let mut stats = RunStats {
        start: next.as_ref().map_or(0, |i| i.arrival),
        ..RunStats::default()
    };
    let period = policy.period().filter(|&p| p > 0);
    let mut next_period = period.map(|p| stats.start + p);
    let mut busy_at_period = 0;
    let mut now = stats.start;

    loop {
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
        if kernel_at == Some(now) {
            // Every kernel event due by the next arrival and period call (ties
            // go to the kernel) in one call, until one notifies.
            let bound = pending(arrival_at).min(pending(next_period));
            let (events, last) = kernel.run_until(bound, &mut notices);
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
            flight.insert(
                task,
                InFlight {
                    group: inv.group(),
                    function: inv.function,
                    arrival: now,
                    memory_mb: inv.memory_mb,
                },
            );
            kernel.spawn(now, task, inv.phases, attrs, watch, &mut notices);
        } else if let (Some(p), Some(at)) = (period, next_period) {
            let busy = kernel.busy(now);
            let load = Load {
                utilisation: (busy - busy_at_period) as f64 / (p as f64 * config.cores as f64),
                cores: config.cores,
            };
            busy_at_period = busy;
            next_period = Some(at + p);
            for (task, attrs) in policy.on_period(now, load) {
                kernel.set_attrs(now, task, attrs, &mut notices);
            }
        }
        // Most kernel events (a tick, a preemption) notify nothing: skip the call.
        if !notices.is_empty() {
            deliver(
                now,
                &mut kernel,
                policy,
                &mut notices,
                &mut flight,
                &mut |o| {
                    stats.invocations += 1;
                    stats.end = stats.end.max(o.finish);
                    sink(o)
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

/// Hands the kernel's notices to the policy, applies its answers, and turns
/// exits into outcomes. Answers may produce notices of their own; those are
/// delivered too, in order.
fn deliver<P: Steer + ?Sized>(
    now: Time,
    kernel: &mut Kernel,
    policy: &mut P,
    notices: &mut Vec<Notice>,
    flight: &mut IdMap<TaskId, InFlight>,
    sink: &mut dyn FnMut(Outcome),
) {
    let mut i = 0;
    while i < notices.len() {
        let n = notices[i].clone();
        i += 1;
        match n {
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
            Notice::Exited(task, st) => {
                if let Some(f) = flight.remove(&task) {
                    let outcome = outcome(task, f, now, st);
                    policy.on_exit(now, task, &outcome);
                    sink(outcome);
                }
            }
        }
    }
    notices.clear();
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
}

impl<E: std::fmt::Display> std::fmt::Display for RunError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Config(e) => e.fmt(f),
            RunError::Input(e) => e.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for RunError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Config(e) => Some(e),
            RunError::Input(e) => Some(e),
        }
    }
}
