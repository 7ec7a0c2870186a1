//! Clients against a live cluster (`faasched cluster load`): closed-loop
//! ones, CH-RLU's Locust threads ([`run_clients`]), and an open loop that
//! sends a schedule's calls at their times ([`run_schedule`]).
//!
//! The closed loop: each client is one task with one kept-alive
//! connection, sending its next invocation when a [`Sampler`] says, a
//! think time after its last answer came.
//!
//! 1. every connection is opened before the clock starts (a target that
//!    refuses one is [`LoadError::Connect`]);
//! 2. each client asks the sampler for its next call with the time its
//!    last answer came (0 at the start), waits until the call's send time
//!    and sends `POST /invoke/spin?us={work}` with the function's name in
//!    `x-faasched-function`, over the node load generator's client
//!    ([`crate::node::load`]: a broken connection is opened again for the
//!    next call, an answer is awaited [`LoadConfig::timeout`] at most);
//! 3. a client stops when the sampler has no call for it or its next call
//!    is due (not sent: due) at or after [`LoadConfig::duration`]; the calls in flight then
//!    get until [`LoadConfig::drain`] past the duration to be answered:
//!    those left are [`Failure::Unfinished`];
//! 4. `stop` (Ctrl-C) ends sending at once: the calls in flight are
//!    [`Failure::Interrupted`].
//!
//! Each answer's `x-faasched-node` and `x-faasched-cold` (the gateway's,
//! docs/CLUSTER.md "Live gateway") are kept in its [`CallRecord`]. Times
//! are ns from the start of the run. One thread runs every client (a tokio
//! current-thread runtime), leaving the other cores to the cluster when
//! both share the machine.

mod open;

pub use open::run_schedule;

use crate::node::load::{
    Answer, End, Failure, HttpSender, LoadConfig, LoadError, attempt, stopped,
};
use crate::wire::FUNCTION_HEADER;
use faasched_model::{Nanos, Time};
use http_body_util::Empty;
use hyper::Method;
use hyper::body::Bytes;
use hyper::header::{HOST, HeaderValue};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until, timeout};

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

/// Where the clients' calls come from: shared by every client, asked in
/// the order the clients become free.
pub trait Sampler: Send + 'static {
    /// The next call of `client`, whose last answer came at `finish` (0
    /// when it starts); `None` ends the client.
    fn next(&mut self, client: u32, finish: Time) -> Option<Call>;
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

/// What a run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientRun {
    /// One per call sent (and, in the open loop, per call due but not
    /// sent when sending stopped), by id.
    pub records: Vec<CallRecord>,
    /// How it ended.
    pub end: End,
    /// From the start to the end of the run.
    pub elapsed: Nanos,
}

/// What every client task shares.
struct Shared<S> {
    sampler: Mutex<S>,
    ids: AtomicU64,
    target: String,
    addr: SocketAddr,
    start: Instant,
    duration: Time,
    hard_end: Time,
    timeout: Duration,
}

impl<S> Shared<S> {
    fn at(&self, t: Time) -> Instant {
        self.start + Duration::from_nanos(t)
    }

    fn now(&self) -> Time {
        Instant::now()
            .saturating_duration_since(self.start)
            .as_nanos()
            .try_into()
            .unwrap_or(Time::MAX)
    }
}

/// Runs `config.mode.connections()` clients (give [`Mode::Closed`]) against
/// `config.target` for `config.duration`, their calls from `sampler`; asks
/// `stop` every 10 ms whether to end early, and then still returns what
/// was measured. Fails only before the first call: a bad config or a
/// target that refuses to connect.
///
/// [`Mode::Closed`]: crate::node::load::Mode::Closed
pub fn run_clients<S: Sampler>(
    config: &LoadConfig,
    sampler: S,
    stop: &dyn Fn() -> bool,
) -> Result<ClientRun, LoadError> {
    let addr = config.validate()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LoadError::Runtime)?;
    runtime.block_on(drive(config, addr, sampler, stop))
}

async fn drive<S: Sampler>(
    config: &LoadConfig,
    addr: SocketAddr,
    sampler: S,
    stop: &dyn Fn() -> bool,
) -> Result<ClientRun, LoadError> {
    let per_call = Duration::from_nanos(config.timeout);
    let senders = connect_all(config, addr).await?;
    let shared = Arc::new(Shared {
        sampler: Mutex::new(sampler),
        ids: AtomicU64::new(0),
        target: config.target.clone(),
        addr,
        start: Instant::now(),
        duration: config.duration,
        hard_end: config.duration.saturating_add(config.drain),
        timeout: per_call,
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut clients = JoinSet::new();
    for (i, sender) in (0u32..).zip(senders) {
        clients.spawn(client(i, sender, shared.clone(), stop_rx.clone()));
    }
    let mut records = Vec::new();
    let mut interrupted = false;
    loop {
        tokio::select! {
            joined = clients.join_next() => match joined {
                Some(Ok(done)) => records.extend(done),
                Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Some(Err(_)) => {}
                None => break,
            },
            _ = stopped(stop), if !interrupted => {
                interrupted = true;
                let _ = stop_tx.send(true);
            }
        }
    }
    records.sort_by_key(|r: &CallRecord| r.id);
    let end = if interrupted {
        End::Interrupted
    } else if records
        .iter()
        .any(|r| r.failure == Some(Failure::Unfinished))
    {
        End::DrainTimeout
    } else {
        End::Completed
    };
    Ok(ClientRun {
        records,
        end,
        elapsed: shared.now(),
    })
}

/// Opens `config.mode.connections()` connections to `addr`, each given
/// the config's timeout.
async fn connect_all(config: &LoadConfig, addr: SocketAddr) -> Result<Vec<HttpSender>, LoadError> {
    let per_call = Duration::from_nanos(config.timeout);
    let mut senders = Vec::new();
    for _ in 0..config.mode.connections() {
        let sender = match timeout(per_call, crate::node::load::http_connect(addr)).await {
            Ok(connected) => connected,
            Err(_) => Err(std::io::Error::from(std::io::ErrorKind::TimedOut)),
        }
        .map_err(|source| LoadError::Connect {
            target: config.target.clone(),
            source,
        })?;
        senders.push(sender);
    }
    Ok(senders)
}

/// One client: calls until the sampler, the duration or `stop` ends it.
async fn client<S: Sampler>(
    index: u32,
    sender: HttpSender,
    shared: Arc<Shared<S>>,
    mut stop: watch::Receiver<bool>,
) -> Vec<CallRecord> {
    let mut records = Vec::new();
    let mut slot = Some(sender);
    let mut finish = 0;
    loop {
        let next = shared
            .sampler
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next(index, finish);
        let Some(call) = next.filter(|c| c.send < shared.duration) else {
            break;
        };
        tokio::select! {
            _ = sleep_until(shared.at(call.send)) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        let message = request(&shared.target, &call);
        let sent = shared.now();
        let mut record = CallRecord {
            id: shared.ids.fetch_add(1, Ordering::Relaxed),
            client: index,
            ..CallRecord::new(call, sent)
        };
        let outcome = tokio::select! {
            outcome = timeout(shared.timeout, attempt(slot.take(), shared.addr, message)) => {
                outcome.unwrap_or((None, Err(Failure::ResponseTimeout)))
            }
            _ = sleep_until(shared.at(shared.hard_end)) => (None, Err(Failure::Unfinished)),
            _ = stop.wait_for(|s| *s) => (None, Err(Failure::Interrupted)),
        };
        let (kept, result) = outcome;
        slot = kept;
        finish = shared.now();
        apply(&mut record, result, finish);
        let last = matches!(
            record.failure,
            Some(Failure::Unfinished | Failure::Interrupted)
        );
        records.push(record);
        if last {
            break;
        }
    }
    records
}

/// Puts a call's outcome, come at `done`, into its record.
fn apply(record: &mut CallRecord, result: Result<Answer, Failure>, done: Time) {
    match result {
        Ok(answer) => {
            record.done = Some(done);
            record.status = Some(answer.status);
            record.node = answer.node;
            record.cold = answer.cold;
            record.runtime_us = answer.runtime_us;
            record.failure = answer.failure;
        }
        Err(failure) => record.failure = Some(failure),
    }
}

/// The HTTP request of `call`.
fn request(target: &str, call: &Call) -> hyper::Request<Empty<Bytes>> {
    let mut http = hyper::Request::new(Empty::new());
    *http.method_mut() = Method::POST;
    *http.uri_mut() = format!("/invoke/spin?us={}", call.work_us)
        .parse()
        .expect("a path of ASCII digits and letters is a URI");
    let headers = http.headers_mut();
    // The config's check resolved the target, so it is a header value.
    if let Ok(host) = HeaderValue::from_str(target) {
        headers.insert(HOST, host);
    }
    // A name that is no header value is left out rather than sent mangled.
    if let Ok(name) = HeaderValue::from_str(&call.name) {
        headers.insert(FUNCTION_HEADER, name);
    }
    http
}

#[cfg(test)]
mod tests;
