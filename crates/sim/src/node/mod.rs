//! The node engine: requests reach dispatchers, each dispatcher's policy
//! ([`Dispatch`]) binds them to the workers of its group, and the workers run
//! them, every mechanism charged what it costs ([`Costs`]).
//!
//! One loop merges the arrivals with the pending events by time (events due
//! at an arrival's instant first; events among themselves in the order they
//! were scheduled), so a run is fully determined by its inputs:
//!
//! 1. An arrival goes to a dispatcher ([`Assign`]) with the estimate its
//!    policy sees ([`Estimate`]), and waits for that dispatcher.
//! 2. A dispatcher is a serial resource: arrivals, idle workers and quantum
//!    expiries wait for it in order. A step reads the workers as they are
//!    when it starts and takes effect when it ends: a decision after
//!    `dispatch_base + dispatch_per_worker × scanned` (plus `preempt_signal`
//!    when it preempts), a hand-over to an idle worker after `idle_pull`.
//! 3. A worker that runs nothing and has nothing queued is offered to its
//!    policy ([`Dispatch::on_idle`]); one the policy leaves idle is offered
//!    again after each request the policy holds or gets back. Work reaching
//!    an idle worker waits `wake` unless workers poll.
//! 4. A worker picks the head of its queue by the local order, paying
//!    `sandbox_setup` before a request's first run and `context_switch`
//!    after each preemption before the next request runs. A dispatcher's
//!    preemption reaches it `preempt_latency` after the decision (once any
//!    set-up under way is done): it re-picks if its queue's head comes
//!    first. Its local quantum timer costs `quantum_tick` per firing and
//!    re-picks the same way.
//! 5. A dispatcher quantum ([`Dispatch::quantum`]) is counted from when a
//!    request's work (re)started; when it expires, the dispatcher asks
//!    [`Dispatch::on_quantum`] in turn (again each quantum while the answer
//!    is no, and as soon as the policy holds a new request or gets one
//!    back); a yes hands the worker the requests it runs instead and costs
//!    `preempt_signal` + `idle_pull`, and `preempt_latency` later the
//!    request leaves the worker and goes back to the policy
//!    ([`Dispatch::on_returned`]), a step of `idle_pull`: held again, or
//!    queued on the worker the policy names.
//! 6. Each outcome goes to the sink once final: at its finish, or when the
//!    decision that drops it ends. Memory is proportional to the requests in
//!    flight: the stream is pulled one request ahead.
//!
//! A policy sees a running request's remaining estimate fall from the
//! moment its worker picked it, overheads included; the engine runs its
//! actual work after them. An outcome's `first_run` is that first pick
//! (before the sandbox set-up); its `worker` the last worker that picked it.

mod config;
pub(crate) mod engine;
mod events;
mod flight;
mod outcome;

pub use config::{
    Assign, ConfigError, Costs, Estimate, MAX_COST, MAX_WINDOW, MAX_WORKERS, NodeConfig,
};
pub use outcome::{NodeError, NodeSink, NodeStats, Start};

use engine::Engine;
use faasched_model::node::{Dispatch, Request};
use std::ops::DerefMut;

/// The most events the engine processes without asking
/// [`NodeSink::interrupted`].
pub const POLL_EVENTS: u64 = 1 << 12;

/// Runs `requests` (in arrival order, ids increasing) through a node of
/// `config`'s shape, dispatcher `d` deciding by `policies[d]`; hands each
/// outcome to `sink` as soon as it is final.
///
/// `policies` may be boxes (`Box<dyn Dispatch + Send>`) or references
/// (`&mut dyn Dispatch`). Stops at the first error of the request stream,
/// the first request out of order, or the first breach of the policy
/// contract, and returns it; nothing panics on bad input.
pub fn run<P, R, E, S>(
    config: &NodeConfig,
    policies: &mut [P],
    requests: R,
    mut sink: S,
) -> Result<NodeStats, NodeError<E>>
where
    P: DerefMut,
    P::Target: Dispatch,
    R: IntoIterator<Item = Result<Request, E>>,
    S: NodeSink,
{
    check(config, policies).map_err(NodeError::Config)?;
    let mut engine = Engine::new(config, policies);
    let mut stream = requests.into_iter();
    let mut next = stream.next().transpose().map_err(NodeError::Input)?;
    let mut steps: u64 = 0;
    loop {
        steps += 1;
        if steps.is_multiple_of(POLL_EVENTS) && sink.interrupted() {
            return Err(NodeError::Interrupted {
                finished: engine.stats.finished,
            });
        }
        let event_at = engine.next_event();
        match (&next, event_at) {
            (None, None) => break,
            (Some(req), Some(at)) if at <= req.arrival => {
                engine.handle_next(policies, &mut sink)?
            }
            (None, Some(_)) => engine.handle_next(policies, &mut sink)?,
            (Some(_), _) => {
                let Some(req) = next.take() else { break };
                engine.check(&req)?;
                next = stream.next().transpose().map_err(NodeError::Input)?;
                engine.arrive(req, policies, &mut sink)?;
            }
        }
    }
    engine.drained(policies)?;
    Ok(engine.finish_stats())
}

/// Checks `config` and that `policies` fit it: one per dispatcher, no zero
/// quantum.
pub(crate) fn check<P>(config: &NodeConfig, policies: &[P]) -> Result<(), ConfigError>
where
    P: DerefMut,
    P::Target: Dispatch,
{
    config.validate()?;
    if policies.len() != config.dispatchers {
        return Err(ConfigError::Policies {
            dispatchers: config.dispatchers,
            policies: policies.len(),
        });
    }
    for p in policies {
        let zero = |which| {
            Err(ConfigError::ZeroQuantum {
                policy: p.name().to_owned(),
                which,
            })
        };
        if p.local().quantum == Some(0) {
            return zero("local");
        }
        if p.quantum() == Some(0) {
            return zero("dispatcher");
        }
    }
    Ok(())
}
