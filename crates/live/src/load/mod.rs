//! The one HTTP load driver of a node runtime or a cluster's gateway, free
//! of coordinated omission: `node load` and `cluster load` (and through
//! it `cluster replay`) send their calls with it.
//!
//! A level says what a call is ([`Call`]: when it is due, and its HTTP
//! request) and what it keeps of one ([`Record`]); the driver sends and
//! measures. Either loop:
//!
//! 1. opens every connection before the clock starts (a target that
//!    refuses one is [`LoadError::Connect`]);
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
//! of events on the client simple.

mod config;
mod drive;
mod http;
mod outcome;

pub use config::{
    DEFAULT_DRAIN, DEFAULT_TIMEOUT, LoadConfig, MAX_CONNECTIONS, Mode, default_connections,
};
pub use drive::{Pacing, closed, open};
pub use http::Answer;
pub(crate) use http::invoke;
pub use outcome::{End, Failure, LoadError};

use faasched_model::{Nanos, Time};

/// A call the driver sends.
pub trait Call: Send + 'static {
    /// When it is due, ns from the start of the run.
    fn send(&self) -> Time;
    /// Its HTTP request to `target`.
    fn request(&self, target: &str) -> hyper::Request<http_body_util::Empty<hyper::body::Bytes>>;
}

/// What a level keeps of a call: made when the call is sent (or found
/// unsent), then given its outcome.
pub trait Record: Sized + Send + 'static {
    /// The calls it records.
    type Call: Call;
    /// `call`, the run's `id`th, handed at `sent` to connection (or
    /// client) `slot`, due at `intended`.
    fn sent(call: Self::Call, id: u64, slot: u32, intended: Time, sent: Time) -> Self;
    /// `call`, the run's `id`th, due at `intended` but never sent
    /// ([`Failure::Unsent`]): sending stopped at `stopped`.
    fn unsent(call: Self::Call, id: u64, intended: Time, stopped: Time) -> Self;
    /// Its answer (or why there is none), come at `done`.
    fn apply(&mut self, outcome: Result<Answer, Failure>, done: Time);
    /// Why it was not answered with a 2xx, if it was not (or not yet).
    fn failure(&self) -> Option<&Failure>;
    /// Gives a call still in flight when the run ended its failure.
    fn fail(&mut self, failure: Failure);
    /// Whether it was sent and is still waiting for its answer.
    fn pending(&self) -> bool;
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
pub struct Run<R> {
    /// In the open loop, one per call that was due, in the order they were
    /// due; in the closed loop, one per call sent, in the order they were
    /// sent.
    pub records: Vec<R>,
    /// How it ended.
    pub end: End,
    /// From the start to the end of the run.
    pub elapsed: Nanos,
}
