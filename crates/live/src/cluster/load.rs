//! Clients against a live cluster (`faasched cluster load`): closed-loop
//! ones, CH-RLU's Locust threads ([`run_clients`]), and an open loop that
//! sends a schedule's calls at their times ([`run_schedule`]).
//!
//! Both go through the [load driver](crate::load): a call is `POST
//! /invoke/spin?us={work}` with the function's name in
//! `x-faasched-function`, or, for a function given a real one
//! ([`FunctionCall`]), `POST /invoke/NAME[?QUERY]` with its body and the
//! same name. In the closed loop, each client's next call is
//! due a think time after its last answer came, as the [`Sampler`] draws
//! it; a client stops when the sampler has no call for it or its next
//! call is due at or after [`LoadConfig::duration`].
//!
//! Each answer's `x-faasched-node` and `x-faasched-cold` (the gateway's,
//! docs/CLUSTER.md "Live gateway") are kept in its [`CallRecord`]. Times
//! are ns from the start of the run.

use crate::load::{self, Http, LoadConfig, LoadError, Pacing, Sampler};
use crate::node::load::FunctionCall;
use faasched_model::Time;
use std::sync::Arc;

/// What a client sends next, or the open loop's schedule holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The function's index in its table.
    pub function: u32,
    /// Its name, sent in `x-faasched-function`.
    pub name: Arc<str>,
    /// When to send it.
    pub send: Time,
    /// The work asked for, µs (`?us=`).
    pub work_us: u64,
    /// The real function it is sent to; `None`: `spin` of its work.
    pub call: Option<Arc<FunctionCall>>,
}

impl load::Call for Call {
    fn send(&self) -> Time {
        self.send
    }
}

impl load::HttpCall for Call {
    fn request(&self, target: &str) -> hyper::Request<http_body_util::Full<hyper::body::Bytes>> {
        match &self.call {
            Some(call) => load::invoke_call(
                target,
                call.uri().clone(),
                call.body().clone(),
                &self.name,
                None,
            ),
            None => load::invoke(target, self.work_us, &self.name, None),
        }
    }
}

/// What became of one call: its id in the order the calls were sent (or,
/// in the open loop, due), the client (in the open loop, the connection)
/// that sent it, and the answer's `x-faasched-node` and
/// `x-faasched-cold`.
pub type CallRecord = load::Record<Call>;

/// What a run measured: one record per call sent (and, in the open loop,
/// per call due but not sent when sending stopped), by id.
pub type ClientRun = load::Run<Call>;

/// Runs `config.mode.connections()` clients (give [`Mode::Closed`]) against
/// `target` (`HOST:PORT`) for `config.duration`, their calls from `sampler`; asks
/// `stop` every 10 ms whether to end early, and then still returns what
/// was measured. Fails only before the first call: a bad config or a
/// target that refuses to connect.
///
/// [`Mode::Closed`]: crate::load::Mode::Closed
pub fn run_clients<S: Sampler<Call>>(
    target: &str,
    config: &LoadConfig,
    sampler: S,
    stop: &dyn Fn() -> bool,
) -> Result<ClientRun, LoadError> {
    load::closed(
        config,
        &Http::to(target)?.tls(config.tls.clone()),
        sampler,
        stop,
    )
}

/// The open loop: sends `calls` (in the order of their send times) to
/// `target` over `config.mode.connections()` connections, each at
/// its [`Call::send`], without waiting for the earlier ones' answers. A
/// call waits for its time with tokio's timer ([`Pacing::Timer`]), not a
/// spin: the client shares the machine's few cores with the cluster's
/// nodes, and a spin before each of a thousand calls a second would hold
/// a core.
pub fn run_schedule(
    target: &str,
    config: &LoadConfig,
    calls: impl IntoIterator<Item = Call>,
    stop: &dyn Fn() -> bool,
) -> Result<ClientRun, LoadError> {
    let http = Http::to(target)?.tls(config.tls.clone());
    load::open(config, http, calls, Pacing::Timer, stop)
}

#[cfg(test)]
mod tests;
