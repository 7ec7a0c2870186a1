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

pub(crate) mod engine;

use crate::RUN_LIMIT;
use engine::Engine;
use faasched_model::{Invocation, Nanos, Outcome, Steer, TaskId, Time};

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
    let mut stream = invocations.into_iter();
    let mut next = stream.next().transpose().map_err(RunError::Input)?;
    let start = next.as_ref().map_or(0, |i| i.arrival);
    let mut engine = Engine::new(config, policy, start).map_err(RunError::Config)?;
    let mut now = start;

    loop {
        if sink.interrupted() {
            return Err(RunError::Interrupted {
                finished: engine.stats.invocations,
            });
        }
        let kernel_at = engine.next_kernel();
        let arrival_at = next.as_ref().map(|i| i.arrival.max(now));
        if kernel_at.is_none() && arrival_at.is_none() {
            break;
        }
        // The earliest pending source (one is); plain `min`s, as this runs once
        // per event.
        let pending = |at: Option<Time>| at.unwrap_or(Time::MAX);
        now = pending(kernel_at)
            .min(pending(arrival_at))
            .min(pending(engine.next_period()));
        if now > RUN_LIMIT {
            return Err(RunError::TimeLimit {
                finished: engine.stats.invocations,
            });
        }
        if kernel_at == Some(now) {
            // Every kernel event due by the next arrival and period call (ties
            // go to the kernel), and by the clock's limit, in one call.
            let bound = pending(arrival_at)
                .min(pending(engine.next_period()))
                .min(RUN_LIMIT);
            now = engine.run_kernel(now, bound);
        } else if arrival_at == Some(now) {
            let Some(inv) = next.take() else { break };
            next = stream.next().transpose().map_err(RunError::Input)?;
            engine.spawn(now, inv, policy);
        } else {
            engine.call_period(now, policy);
        }
        engine.settle(now, policy, &mut sink);
    }
    Ok(engine.finish())
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
