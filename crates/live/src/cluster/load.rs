//! Clients against a live cluster (`faasched cluster load`): closed-loop
//! ones, CH-RLU's Locust threads ([`run_clients`]), and an open loop that
//! sends a schedule's calls at their times ([`run_schedule`]).
//!
//! Both go through the [load driver](crate::load): a call is `POST
//! /invoke/spin?us={work}` with the function's name in
//! `x-faasched-function`. In the closed loop, each client's next call is
//! due a think time after its last answer came, as the [`Sampler`] draws
//! it; a client stops when the sampler has no call for it or its next
//! call is due at or after [`LoadConfig::duration`].
//!
//! Each answer's `x-faasched-node` and `x-faasched-cold` (the gateway's,
//! docs/CLUSTER.md "Live gateway") are kept in its [`CallRecord`]. Times
//! are ns from the start of the run.

use crate::load::{self, Answer, Failure, LoadConfig, LoadError, Pacing, Sampler};
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
}

impl load::Call for Call {
    fn send(&self) -> Time {
        self.send
    }

    fn request(&self, target: &str) -> hyper::Request<http_body_util::Empty<hyper::body::Bytes>> {
        load::invoke(target, self.work_us, &self.name, None)
    }
}

/// What became of one call that was sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// Its number, in the order the calls were sent, from 0.
    pub id: u64,
    /// The client that sent it, from 0; in the open loop, the connection.
    pub client: u32,
    /// The function's index in its table.
    pub function: u32,
    /// Its name.
    pub name: Arc<str>,
    /// The work asked for, µs.
    pub work_us: u64,
    /// When it was due, what its latency counts from: in the open loop its
    /// time in the schedule, however late it went out; in the closed loop
    /// when it was sent (a client's call is due when the client sends it).
    pub intended: Time,
    /// When it was sent; one never sent ([`Failure::Unsent`]) has the time
    /// sending stopped.
    pub sent: Time,
    /// When its whole answer had come; `None` without one.
    pub done: Option<Time>,
    /// The answer's HTTP status.
    pub status: Option<u16>,
    /// The answer's `x-faasched-node`.
    pub node: Option<String>,
    /// The answer's `x-faasched-cold`.
    pub cold: Option<bool>,
    /// The answer's `x-faasched-runtime-us`.
    pub runtime_us: Option<u64>,
    /// Why it was not answered with a 2xx; `None` if it was.
    pub failure: Option<Failure>,
}

impl CallRecord {
    /// `call`, due (and sent) at `at`, with no outcome yet; its id and
    /// client 0.
    fn new(call: Call, at: Time) -> CallRecord {
        CallRecord {
            id: 0,
            client: 0,
            function: call.function,
            name: call.name,
            work_us: call.work_us,
            intended: at,
            sent: at,
            done: None,
            status: None,
            node: None,
            cold: None,
            runtime_us: None,
            failure: None,
        }
    }

    /// Whether it was answered with a 2xx.
    pub fn answered(&self) -> bool {
        self.done.is_some() && self.failure.is_none()
    }
}

impl load::Record for CallRecord {
    type Call = Call;

    fn sent(call: Call, id: u64, slot: u32, intended: Time, sent: Time) -> CallRecord {
        CallRecord {
            id,
            client: slot,
            intended,
            ..CallRecord::new(call, sent)
        }
    }

    fn unsent(call: Call, id: u64, intended: Time, stopped: Time) -> CallRecord {
        CallRecord {
            id,
            intended,
            failure: Some(Failure::Unsent),
            ..CallRecord::new(call, stopped)
        }
    }

    fn apply(&mut self, outcome: Result<Answer, Failure>, done: Time) {
        match outcome {
            Ok(answer) => {
                self.done = Some(done);
                self.status = Some(answer.status);
                self.node = answer.node;
                self.cold = answer.cold;
                self.runtime_us = answer.runtime_us;
                self.failure = answer.failure;
            }
            Err(failure) => self.failure = Some(failure),
        }
    }

    fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }

    fn fail(&mut self, failure: Failure) {
        self.failure = Some(failure);
    }

    fn pending(&self) -> bool {
        self.done.is_none() && self.failure.is_none()
    }
}

/// What a run measured: one record per call sent (and, in the open loop,
/// per call due but not sent when sending stopped), by id.
pub type ClientRun = load::Run<CallRecord>;

/// Runs `config.mode.connections()` clients (give [`Mode::Closed`]) against
/// `config.target` for `config.duration`, their calls from `sampler`; asks
/// `stop` every 10 ms whether to end early, and then still returns what
/// was measured. Fails only before the first call: a bad config or a
/// target that refuses to connect.
///
/// [`Mode::Closed`]: crate::load::Mode::Closed
pub fn run_clients<S: Sampler<Call>>(
    config: &LoadConfig,
    sampler: S,
    stop: &dyn Fn() -> bool,
) -> Result<ClientRun, LoadError> {
    load::closed(config, sampler, stop)
}

/// The open loop: sends `calls` (in the order of their send times) to
/// `config.target` over `config.mode.connections()` connections, each at
/// its [`Call::send`], without waiting for the earlier ones' answers. A
/// call waits for its time with tokio's timer ([`Pacing::Timer`]), not a
/// spin: the client shares the machine's few cores with the cluster's
/// nodes, and a spin before each of a thousand calls a second would hold
/// a core.
pub fn run_schedule(
    config: &LoadConfig,
    calls: impl IntoIterator<Item = Call>,
    stop: &dyn Fn() -> bool,
) -> Result<ClientRun, LoadError> {
    load::open(config, calls, Pacing::Timer, stop)
}

#[cfg(test)]
mod tests;
