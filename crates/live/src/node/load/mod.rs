//! `faasched node load`'s calls: a workload's request stream sent to a
//! node runtime by the [load driver](crate::load), open loop at the
//! stream's arrival times (the one `node simulate` runs for the same
//! workload, rate and seed) or closed loop back to back, and what became
//! of each request.
//!
//! A request is `POST /invoke/spin?us={work in µs}` with its workload
//! function and deadline in headers (docs/RUNTIME.md, "HTTP API"); see
//! [`invoke_path`]. Its latency counts from its arrival in the stream
//! (open loop), however late it went out; in the closed loop from when its
//! client sent it. The open loop spins the last 2 ms to a request's time
//! ([`Pacing::Spin`]): the node's requests are µs long.

mod summary;

use crate::load::{self, Answer, End, Failure, LoadConfig, LoadError, Mode, Pacing, Sampler};
use faasched_model::node::Request;
use faasched_model::{Nanos, Time, US};
use std::sync::Arc;

pub use summary::{
    LatencySummary, LoadSummary, REQUESTS_CSV_HEADER, ScopeSummary, SlowdownSummary,
};

/// The path a workload request is sent to: `/invoke/spin?us={work}`, the
/// work in whole µs, rounded to the nearest.
pub fn invoke_path(request: &Request) -> String {
    format!("/invoke/spin?us={}", round_us(request.work))
}

fn round_us(ns: Nanos) -> u64 {
    ns / US + u64::from(ns % US >= US / 2)
}

/// A workload request as the driver sends it: due at its arrival (open
/// loop) or when its client was free (closed loop).
pub struct NodeCall {
    request: Request,
    send: Time,
}

impl load::Call for NodeCall {
    fn send(&self) -> Time {
        self.send
    }

    fn request(&self, target: &str) -> hyper::Request<http_body_util::Empty<hyper::body::Bytes>> {
        let r = &self.request;
        let work = round_us(r.work);
        load::invoke(target, work, &r.function.name, Some(round_us(r.deadline)))
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

impl load::Record for Record {
    type Call = NodeCall;

    fn sent(call: NodeCall, _id: u64, _slot: u32, intended: Time, sent: Time) -> Record {
        Record::new(&call.request, intended, Some(sent))
    }

    fn unsent(call: NodeCall, _id: u64, _intended: Time, _stopped: Time) -> Record {
        Record::unsent(&call.request)
    }

    fn apply(&mut self, outcome: Result<Answer, Failure>, done: Time) {
        match outcome {
            Ok(answer) => {
                self.done = Some(done);
                self.status = Some(answer.status);
                self.runtime_us = answer.runtime_us;
                self.cpu_us = answer.cpu_us;
                self.preemptions = answer.preemptions;
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
        self.sent.is_some() && self.done.is_none() && self.failure.is_none()
    }
}

/// What a run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadRun {
    /// The mode it ran in.
    pub mode: Mode,
    /// One per request that was due (open loop) or sent (closed loop), in
    /// that order.
    pub records: Vec<Record>,
    /// How it ended.
    pub end: End,
    /// From the start to the end of the run.
    pub elapsed: Nanos,
}

/// The closed loop's requests: the stream's, in its order, each due when
/// the client that takes it is free.
struct BackToBack<I>(I);

impl<I: Iterator<Item = Request> + Send + 'static> Sampler<NodeCall> for BackToBack<I> {
    fn next(&mut self, _client: u32, finish: Time) -> Option<NodeCall> {
        let request = self.0.next()?;
        Some(NodeCall {
            request,
            send: finish,
        })
    }
}

/// Sends `requests` to the node as `config` says, measuring each; asks
/// `stop` (every 10 ms while waiting) whether to end early, as Ctrl-C
/// does, and then still returns what was measured. Fails only before the
/// first request: a bad config or a target that refuses to connect.
pub fn run(
    config: &LoadConfig,
    requests: impl IntoIterator<Item = Request, IntoIter: Send + 'static>,
    stop: &dyn Fn() -> bool,
) -> Result<LoadRun, LoadError> {
    let requests = requests.into_iter();
    let run = match config.mode {
        Mode::Open { .. } => {
            let calls = requests.map(|request| NodeCall {
                send: request.arrival,
                request,
            });
            load::open::<Record>(config, calls, Pacing::Spin, stop)?
        }
        Mode::Closed { .. } => load::closed::<Record, _>(config, BackToBack(requests), stop)?,
    };
    Ok(LoadRun {
        mode: config.mode,
        records: run.records,
        end: run.end,
        elapsed: run.elapsed,
    })
}

#[cfg(test)]
mod tests;
