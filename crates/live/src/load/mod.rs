//! The one load driver, free of coordinated omission: `node load`,
//! `node replay`, `cluster load` and `cluster replay` send their calls
//! with it.
//!
//! A level says what a call is ([`Call`]: when it is due; [`HttpCall`]:
//! its HTTP request; [`LocalCall`]: its invocation of a runtime in this
//! process); the driver sends it over a [`Transport`] ([`Http`] to a node
//! or a gateway, [`InProcess`] to a node runtime without a network) and
//! measures what became of it ([`Record`]). Either loop:
//!
//! 1. opens every connection before the clock starts (a target that
//!    refuses one is [`LoadError::Connect`]; a runtime in process has
//!    none to open);
//! 2. sends each call, answered or failing with exactly one [`Failure`]: a
//!    connection that breaks is opened again for the next call; an answer
//!    is awaited [`LoadConfig::timeout`] at most;
//! 3. stops sending at [`LoadConfig::duration`] or when `stop` says so
//!    (Ctrl-C); the calls in flight then get until [`LoadConfig::drain`]
//!    past the duration, unless `stop` says so first: those left are
//!    [`Failure::Unfinished`] or [`Failure::Interrupted`].
//!
//! The open loop ([`open`]) fixes each call's time in advance: calls are
//! taken in order, each waits for its time ([`Pacing`]), then for a free
//! connection among [`Mode::Open`]'s; when all are busy it queues, and the
//! queueing counts in its latency, which runs from its time, never from
//! when it went out. Calls due but still waiting when sending stops are
//! [`Failure::Unsent`].
//!
//! The closed loop ([`closed`]) is [`Mode::Closed`]'s clients, each on a
//! connection of its own, asking a [`Sampler`] for its next call once the
//! last is answered: a call is due when its client sends it.
//!
//! Times are ns from the start of the run. A run uses one thread (a tokio
//! current-thread runtime): one thread loses nothing, leaves the other
//! cores to the server when both share the machine, and keeps the order
//! of events on the client simple. The closed loop speaks HTTP only.

mod config;
mod drive;
mod http;
mod local;
mod outcome;
mod transport;

pub use config::{
    DEFAULT_DRAIN, DEFAULT_TIMEOUT, LoadConfig, MAX_CONNECTIONS, Mode, default_connections,
};
pub use drive::{Pacing, closed, open};
pub use http::Http;
pub(crate) use http::{invoke, invoke_call};
pub use local::InProcess;
pub use outcome::{Answer, End, Failure, LoadError};
pub use transport::Transport;

use crate::node::invoke::{Cancel, Completed, Invoke};
use faasched_model::{Nanos, Time};

/// A call the driver sends.
pub trait Call: Send + 'static {
    /// When it is due, ns from the start of the run.
    fn send(&self) -> Time;
}

/// A call that goes over HTTP ([`Http`]).
pub trait HttpCall: Call {
    /// Its HTTP request to `target` (a body of no bytes costs nothing).
    fn request(&self, target: &str) -> hyper::Request<http_body_util::Full<hyper::body::Bytes>>;
}

/// A call handed to a node runtime in this process ([`InProcess`]).
pub trait LocalCall: Call {
    /// Its invocation, received (its latency counting from) `received`,
    /// withdrawn when `cancel` is set.
    fn invoke(&self, received: std::time::Instant, cancel: Cancel) -> Invoke;
}

/// What became of one call. Times are ns from the start of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record<C> {
    /// The call, as its level made it.
    pub call: C,
    /// Its number in the run, from 0: in the order the calls were due
    /// (open loop) or sent (closed loop).
    pub id: u64,
    /// The connection (open loop) or the client (closed loop) that sent
    /// it, from 0.
    pub client: u32,
    /// When it was due, what its latency counts from: in the open loop its
    /// time, however late it went out; in the closed loop when its client
    /// sent it.
    pub intended: Time,
    /// When it was handed to a free connection; `None` if never.
    pub sent: Option<Time>,
    /// When its whole answer had come; `None` without one.
    pub done: Option<Time>,
    /// The answer's HTTP status.
    pub status: Option<u16>,
    /// The answer's `x-faasched-runtime-us`.
    pub runtime_us: Option<u64>,
    /// The answer's `x-faasched-cpu-us`.
    pub cpu_us: Option<u64>,
    /// The answer's `x-faasched-preemptions`.
    pub preemptions: Option<u64>,
    /// The gateway's `x-faasched-node`: the node that answered.
    pub node: Option<String>,
    /// The answer's `x-faasched-cold`.
    pub cold: Option<bool>,
    /// Why it was not answered with a 2xx; `None` if it was.
    pub failure: Option<Failure>,
    /// In process: the runtime's own account of it, in ns.
    pub completed: Option<Completed>,
}

impl<C: Call> Record<C> {
    /// `call`, the run's `id`th, handed at `sent` to connection (or
    /// client) `client`, due at `intended`.
    fn sent(call: C, id: u64, client: u32, intended: Time, sent: Time) -> Record<C> {
        Record {
            call,
            id,
            client,
            intended,
            sent: Some(sent),
            done: None,
            status: None,
            runtime_us: None,
            cpu_us: None,
            preemptions: None,
            node: None,
            cold: None,
            failure: None,
            completed: None,
        }
    }

    /// `call`, the run's `id`th, due at its time but never sent.
    fn unsent(call: C, id: u64) -> Record<C> {
        let intended = call.send();
        Record {
            sent: None,
            failure: Some(Failure::Unsent),
            ..Record::sent(call, id, 0, intended, intended)
        }
    }
}

impl<C> Record<C> {
    /// Puts its answer (or why there is none), come at `done`, into it.
    fn apply(&mut self, outcome: Result<Answer, Failure>, done: Time) {
        match outcome {
            Ok(answer) => {
                self.done = Some(done);
                self.status = Some(answer.status);
                self.runtime_us = answer.runtime_us;
                self.cpu_us = answer.cpu_us;
                self.preemptions = answer.preemptions;
                self.node = answer.node;
                self.cold = answer.cold;
                self.failure = answer.failure;
                self.completed = answer.completed;
            }
            Err(failure) => self.failure = Some(failure),
        }
    }

    /// Whether it was sent and is still waiting for its answer.
    fn pending(&self) -> bool {
        self.sent.is_some() && self.done.is_none() && self.failure.is_none()
    }

    /// Whether it was answered with a 2xx.
    pub fn answered(&self) -> bool {
        self.done.is_some() && self.failure.is_none()
    }

    /// Completion − intended send time, for any answer (2xx or not).
    pub fn latency(&self) -> Option<Nanos> {
        Some(self.done?.saturating_sub(self.intended))
    }
}

/// Where a closed loop's calls come from: shared by every client, asked in
/// the order the clients become free.
pub trait Sampler<C>: Send + 'static {
    /// The next call of `client`, whose last answer came at `finish` (0
    /// when it starts); `None` ends the client.
    fn next(&mut self, client: u32, finish: Time) -> Option<C>;
}

/// What a run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Run<C> {
    /// In the open loop, one per call that was due, in the order they were
    /// due; in the closed loop, one per call sent, in the order they were
    /// sent.
    pub records: Vec<Record<C>>,
    /// How it ended.
    pub end: End,
    /// From the start to the end of the run.
    pub elapsed: Nanos,
}

impl<C> Run<C> {
    /// How late the calls sent were handed to a connection (or the
    /// runtime): from each one's intended time to its sending. A late
    /// call's latency counts from its intended time all the same; this says
    /// how much of it the sender, not the target, caused. In the closed loop
    /// a call is due when it is sent, so it is never late.
    pub fn lateness(&self) -> Lateness {
        let mut late: Vec<Nanos> = self
            .records
            .iter()
            .filter_map(|r| Some(r.sent?.saturating_sub(r.intended)))
            .collect();
        late.sort_unstable();
        let at = |q: f64| match late.len() {
            0 => 0,
            n => late[((n - 1) as f64 * q).round() as usize],
        };
        Lateness {
            p50: at(0.5),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

/// How late a run's calls were sent, ns (nearest rank).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lateness {
    /// Median.
    pub p50: Nanos,
    /// 99th percentile.
    pub p99: Nanos,
    /// Largest.
    pub max: Nanos,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct At(Time);

    impl Call for At {
        fn send(&self) -> Time {
            self.0
        }
    }

    #[test]
    fn lateness_reads_its_percentiles_off_the_sent_calls() {
        // Calls due at 1000 i, sent 101 − i ns late; one never sent.
        let mut records: Vec<Record<At>> = (1..=100)
            .map(|i| Record::sent(At(1_000 * i), i, 0, 1_000 * i, 1_000 * i + 101 - i))
            .collect();
        records.push(Record::unsent(At(200_000), 101));
        let run = Run {
            records,
            end: End::Completed,
            elapsed: 0,
        };
        let l = run.lateness();
        assert_eq!((l.p50, l.p99, l.max), (51, 99, 100));
        let none = Run::<At> {
            records: Vec::new(),
            ..run
        };
        assert_eq!(none.lateness(), Lateness::default());
    }
}
