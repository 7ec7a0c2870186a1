//! The driver: the pacing task, the connections and what each request
//! became (the steps are the [module](super)'s).

use super::config::{LoadConfig, Mode};
use super::http::{self, Answer, Sender};
use faasched_model::node::Request;
use faasched_model::{Nanos, Time};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep, sleep_until, timeout};

/// How early the pacing task stops sleeping to spin up to a request's
/// intended time: tokio's timer has a granularity of 1 ms and rounds a
/// deadline up to its next tick, so a sleep ends up to 1 ms after it was
/// due, and the wake-up itself takes a little more. Two ticks early, the
/// spin starts before the intended time unless the machine holds the
/// client back for over 1 ms. (At 1,000 requests/s under SCHED_FIFO, 1 ms
/// early sent a tenth of the requests 0.3 ms or more late; 2 ms early,
/// 99% within 29 µs.)
const SPIN: Duration = Duration::from_millis(2);

/// How often a wait asks `stop` whether to end the run.
const STOP_POLL: Duration = Duration::from_millis(10);

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A field of the [`LoadConfig`] is out of range.
    #[error("{field}: {why}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The target did not accept a connection before the run started.
    #[error("cannot connect to {target}: {source}")]
    Connect {
        /// `HOST:PORT`.
        target: String,
        /// The system's answer.
        source: io::Error,
    },
    /// The runtime the run uses could not start.
    #[error("cannot start the load generator's runtime: {0}")]
    Runtime(#[source] io::Error),
}

impl LoadError {
    pub(super) fn invalid(field: &'static str, why: impl Into<String>) -> LoadError {
        LoadError::Invalid {
            field,
            why: why.into(),
        }
    }
}

/// Why a request was not answered with a 2xx. Each request that is not
/// answered has exactly one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Failure {
    /// A connection for it could not be opened (`connect-failed`).
    ConnectFailed,
    /// Its connection broke before its response was whole: reset, closed
    /// or not HTTP (`connection-lost`).
    ConnectionLost,
    /// Its whole response did not come within [`LoadConfig::timeout`] of
    /// its sending (`response-timeout`).
    ResponseTimeout,
    /// The runtime answered with a status other than 2xx: `kind` is its
    /// `x-faasched-error` (`overloaded`, `trap`, ...), or `http-STATUS`
    /// without one.
    Server {
        /// The error's kind.
        kind: String,
    },
    /// It was due but still waiting for a connection when sending stopped
    /// (`unsent`).
    Unsent,
    /// It was in flight when the drain time ran out (`unfinished`).
    Unfinished,
    /// It was in flight when the run was stopped (`interrupted`).
    Interrupted,
}

impl Failure {
    /// Its kind, as requests.csv and summary.json spell it.
    pub fn kind(&self) -> &str {
        match self {
            Failure::ConnectFailed => "connect-failed",
            Failure::ConnectionLost => "connection-lost",
            Failure::ResponseTimeout => "response-timeout",
            Failure::Server { kind } => kind,
            Failure::Unsent => "unsent",
            Failure::Unfinished => "unfinished",
            Failure::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

/// What became of one request. Times are ns from the start of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The request's id in its stream.
    pub id: u64,
    /// The workload function it stands for.
    pub function: Arc<str>,
    /// The work it asked for.
    pub work: Nanos,
    /// When it was to be sent: its arrival in the stream (open loop), or
    /// when its client was free (closed loop).
    pub intended: Time,
    /// When it was handed to a free connection; `None` if never.
    pub sent: Option<Time>,
    /// When its whole response had come; `None` without a response.
    pub done: Option<Time>,
    /// The response's HTTP status.
    pub status: Option<u16>,
    /// The runtime's `x-faasched-runtime-us`.
    pub runtime_us: Option<u64>,
    /// The runtime's `x-faasched-cpu-us`.
    pub cpu_us: Option<u64>,
    /// The runtime's `x-faasched-preemptions`.
    pub preemptions: Option<u64>,
    /// Why it was not answered with a 2xx; `None` if it was.
    pub failure: Option<Failure>,
}

impl Record {
    fn new(request: &Request, intended: Time, sent: Option<Time>) -> Record {
        Record {
            id: request.id.0,
            function: request.function.name.clone(),
            work: request.work,
            intended,
            sent,
            done: None,
            status: None,
            runtime_us: None,
            cpu_us: None,
            preemptions: None,
            failure: None,
        }
    }

    fn unsent(request: &Request) -> Record {
        Record {
            failure: Some(Failure::Unsent),
            ..Record::new(request, request.arrival, None)
        }
    }

    /// Whether it was answered with a 2xx.
    pub fn answered(&self) -> bool {
        self.done.is_some() && self.failure.is_none()
    }

    /// Completion − intended send time, for any response (2xx or not).
    pub fn latency(&self) -> Option<Nanos> {
        Some(self.done?.saturating_sub(self.intended))
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Every request sent was answered or failed on its own.
    Completed,
    /// `stop` ended it.
    Interrupted,
    /// The drain time ran out with requests still queued or in flight.
    DrainTimeout,
}

impl End {
    /// As summary.json spells it.
    pub fn as_str(&self) -> &'static str {
        match self {
            End::Completed => "completed",
            End::Interrupted => "interrupted",
            End::DrainTimeout => "drain-timeout",
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadRun {
    /// The mode it ran in.
    pub mode: Mode,
    /// One per request that was due, in the order they were due.
    pub records: Vec<Record>,
    /// How it ended.
    pub end: End,
    /// From the start to the end of the run.
    pub elapsed: Nanos,
}

/// Sends `requests` to the target as `config` says, measuring each; asks
/// `stop` (every 10 ms while waiting) whether to end early, as Ctrl-C
/// does, and then still returns what was measured. Fails only before the
/// first request: a bad config or a target that refuses to connect.
pub fn run(
    config: &LoadConfig,
    requests: impl IntoIterator<Item = Request>,
    stop: &dyn Fn() -> bool,
) -> Result<LoadRun, LoadError> {
    let addr = config.validate()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LoadError::Runtime)?;
    // Dropping the runtime at the end cancels what is still in flight.
    runtime.block_on(drive(config, addr, requests.into_iter(), stop))
}

/// What a request's task reports: its record's index, the outcome, and
/// when it came.
type Done = (usize, Result<Answer, Failure>, Time);

async fn drive(
    config: &LoadConfig,
    addr: SocketAddr,
    mut requests: impl Iterator<Item = Request>,
    stop: &dyn Fn() -> bool,
) -> Result<LoadRun, LoadError> {
    let connections = config.mode.connections();
    let per_request = Duration::from_nanos(config.timeout);
    // Free connections; `None` is one to open again. Sized so that giving
    // one back never waits.
    let (free_tx, mut free_rx) = mpsc::channel::<Option<Sender>>(connections);
    for _ in 0..connections {
        let sender = match timeout(per_request, http::connect(addr)).await {
            Ok(connected) => connected,
            Err(_) => Err(io::Error::from(io::ErrorKind::TimedOut)),
        }
        .map_err(|source| LoadError::Connect {
            target: config.target.clone(),
            source,
        })?;
        let _ = free_tx.try_send(Some(sender));
    }
    let start = Instant::now();
    let at = move |t: Time| start + Duration::from_nanos(t);
    let now = move || Instant::now().saturating_duration_since(start).as_nanos() as Time;
    let hard_end = config.duration.saturating_add(config.drain);
    let closed = matches!(config.mode, Mode::Closed { .. });
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    let mut records: Vec<Record> = Vec::new();
    let mut in_flight = 0usize;
    let mut end = End::Completed;
    loop {
        while let Ok(done) = done_rx.try_recv() {
            apply(&mut records, done);
            in_flight -= 1;
        }
        let (request, intended, slot) = if closed {
            let slot = tokio::select! {
                slot = free_rx.recv() => slot.expect("the pacing task keeps a sender"),
                _ = sleep_until(at(config.duration)) => break,
                _ = stopped(stop) => {
                    end = End::Interrupted;
                    break;
                }
            };
            match requests.next() {
                // No schedule: it is due when it is sent.
                Some(request) if now() < config.duration => (request, None, slot),
                _ => {
                    let _ = free_tx.try_send(slot);
                    break;
                }
            }
        } else {
            let request = match requests.next() {
                Some(r) if r.arrival < config.duration => r,
                _ => break,
            };
            if !wait_until(at(request.arrival), stop).await {
                // Not due yet: not part of the run.
                end = End::Interrupted;
                break;
            }
            let slot = tokio::select! {
                slot = free_rx.recv() => slot.expect("the pacing task keeps a sender"),
                _ = sleep_until(at(hard_end)) => {
                    end = End::DrainTimeout;
                    records.push(Record::unsent(&request));
                    break;
                }
                _ = stopped(stop) => {
                    end = End::Interrupted;
                    records.push(Record::unsent(&request));
                    break;
                }
            };
            if now() >= hard_end {
                let _ = free_tx.try_send(slot);
                end = End::DrainTimeout;
                records.push(Record::unsent(&request));
                break;
            }
            let intended = request.arrival;
            (request, Some(intended), slot)
        };
        let message = http::build(&config.target, &request);
        let sent = now();
        records.push(Record::new(&request, intended.unwrap_or(sent), Some(sent)));
        let index = records.len() - 1;
        in_flight += 1;
        let (done_tx, free_tx) = (done_tx.clone(), free_tx.clone());
        tokio::spawn(async move {
            let (slot, result) = match timeout(per_request, attempt(slot, addr, message)).await {
                Ok(outcome) => outcome,
                // The connection is in an unknown state: the next request
                // opens a new one.
                Err(_) => (None, Err(Failure::ResponseTimeout)),
            };
            let _ = done_tx.send((index, result, now()));
            let _ = free_tx.try_send(slot);
        });
    }
    if !closed && end != End::Completed {
        // Those due when sending stopped, queued behind the one it stopped
        // at; the rest were never due.
        let due = now();
        for request in requests.by_ref() {
            if request.arrival >= config.duration || request.arrival > due {
                break;
            }
            records.push(Record::unsent(&request));
        }
    }
    drop(done_tx);
    let end = drain(&mut done_rx, in_flight, at(hard_end), stop, end, |done| {
        apply(&mut records, done)
    })
    .await;
    let left = match end {
        End::Interrupted => Failure::Interrupted,
        _ => Failure::Unfinished,
    };
    for r in &mut records {
        if r.sent.is_some() && r.done.is_none() && r.failure.is_none() {
            r.failure = Some(left.clone());
        }
    }
    Ok(LoadRun {
        mode: config.mode,
        records,
        end,
        elapsed: now(),
    })
}

/// One request on `slot` (opened again if it is `None` or closed): the
/// connection to give back (`None` if it broke) and the outcome.
pub(crate) async fn attempt(
    slot: Option<Sender>,
    addr: SocketAddr,
    message: hyper::Request<http_body_util::Empty<hyper::body::Bytes>>,
) -> (Option<Sender>, Result<Answer, Failure>) {
    let kept = match slot {
        // A connection the server closed after its last response (`Connection:
        // close`) fails `ready` at once and is opened again.
        Some(mut sender) => match sender.ready().await {
            Ok(()) => Some(sender),
            Err(_) => None,
        },
        None => None,
    };
    let mut sender = match kept {
        Some(sender) => sender,
        None => match http::connect(addr).await {
            Ok(sender) => sender,
            Err(_) => return (None, Err(Failure::ConnectFailed)),
        },
    };
    let result = http::exchange(&mut sender, message).await;
    let keep = !matches!(result, Err(Failure::ConnectionLost));
    (keep.then_some(sender), result)
}

/// Puts a request task's outcome into its record.
fn apply(records: &mut [Record], (index, result, done): Done) {
    let r = &mut records[index];
    match result {
        Ok(answer) => {
            r.done = Some(done);
            r.status = Some(answer.status);
            r.runtime_us = answer.runtime_us;
            r.cpu_us = answer.cpu_us;
            r.preemptions = answer.preemptions;
            r.failure = answer.failure;
        }
        Err(failure) => r.failure = Some(failure),
    }
}

/// Waits until `when`, sleeping to [`SPIN`] before it and spinning (yielding
/// to the connections' tasks) the rest; `false` if `stop` said to end first.
async fn wait_until(when: Instant, stop: &dyn Fn() -> bool) -> bool {
    if let Some(early) = when.checked_sub(SPIN)
        && Instant::now() < early
    {
        tokio::select! {
            _ = sleep_until(early) => {}
            _ = stopped(stop) => return false,
        }
    }
    while Instant::now() < when {
        tokio::task::yield_now().await;
    }
    true
}

/// Ends once `stop` says so, asking every [`STOP_POLL`].
/// Gives `apply` each of the `in_flight` answers still out as it comes
/// (unless the run ended `Interrupted`), until all are in, `hard_end`
/// passes or `stop` says so; then whatever had already come. Returns how
/// the run ended: `end`, or `DrainTimeout` or `Interrupted` if the wait
/// was cut short.
pub(crate) async fn drain<D>(
    done: &mut mpsc::UnboundedReceiver<D>,
    mut in_flight: usize,
    hard_end: Instant,
    stop: &dyn Fn() -> bool,
    mut end: End,
    mut apply: impl FnMut(D),
) -> End {
    if end != End::Interrupted {
        while in_flight > 0 {
            tokio::select! {
                came = done.recv() => match came {
                    Some(d) => {
                        apply(d);
                        in_flight -= 1;
                    }
                    None => break,
                },
                _ = sleep_until(hard_end) => {
                    end = End::DrainTimeout;
                    break;
                }
                _ = stopped(stop) => {
                    end = End::Interrupted;
                    break;
                }
            }
        }
    }
    while let Ok(d) = done.try_recv() {
        apply(d);
    }
    end
}

pub(crate) async fn stopped(stop: &dyn Fn() -> bool) {
    while !stop() {
        sleep(STOP_POLL).await;
    }
}
