//! `faasched node load`'s calls: a workload's request stream sent to a
//! node runtime by the [load driver](crate::load), open loop at the
//! stream's arrival times (the one `node simulate` runs for the same
//! workload, rate and seed) or closed loop back to back, and what became
//! of each request.
//!
//! A request is `POST /invoke/spin?us={work in µs}` with its workload
//! function and deadline in headers (docs/RUNTIME.md, "HTTP API"), both
//! times in whole µs, rounded to the nearest; a function given a real
//! function instead ([`Calls`]) is `POST /invoke/{its call}` with its body,
//! labelled and with its deadline alike. Its latency counts from its
//! arrival in the stream (open loop), however late it went out; in the
//! closed loop from when its client sent it. The open loop spins the last 2 ms to a request's time
//! ([`Pacing::Spin`]): the node's requests are µs long.

mod calls;
mod summary;

use crate::load::{self, End, Http, LoadConfig, LoadError, Mode, Pacing, Sampler};
use crate::node::invoke::{Cancel, Invoke};
use faasched_model::node::{Request, RequestInfo, RequestOutcome, WorkerId};
use faasched_model::{Nanos, Time, US};
use http_body_util::Full;
use hyper::body::Bytes;
use std::sync::Arc;

pub use calls::{BodyFile, Calls, CallsError, FunctionCall, MAX_BODY, Mapping, read_body};
pub use summary::{
    LatencySummary, LoadSummary, REQUESTS_CSV_HEADER, ScopeSummary, SlowdownSummary,
};

/// `ns` in whole µs, rounded to the nearest.
fn round_us(ns: Nanos) -> u64 {
    ns / US + u64::from(ns % US >= US / 2)
}

/// A workload request as the driver sends it: due at its arrival (open
/// loop) or when its client was free (closed loop).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeCall {
    /// The request.
    pub request: Request,
    /// When it is due.
    pub send: Time,
    /// The real function it is sent to; `None`: `spin` of its work.
    pub call: Option<Arc<FunctionCall>>,
}

impl NodeCall {
    /// `request`, due at `send`, sent as `calls` says.
    pub fn new(request: Request, send: Time, calls: &Calls) -> NodeCall {
        NodeCall {
            call: calls.of(&request.function.name).cloned(),
            request,
            send,
        }
    }
}

/// `spin`'s argument for `work` in process: whole µs, rounded to the
/// nearest, at least 1.
pub fn spin_us(work: Nanos) -> u64 {
    round_us(work).max(1)
}

impl load::Call for NodeCall {
    fn send(&self) -> Time {
        self.send
    }
}

/// In process, the request is its call with its body, or `spin?us=W` (W
/// as [`spin_us`] rounds it), labelled with its function, its deadline in
/// ns.
impl load::LocalCall for NodeCall {
    fn invoke(&self, received: std::time::Instant, cancel: Cancel) -> Invoke {
        let r = &self.request;
        let (function, query, body) = match &self.call {
            Some(call) => (
                call.function().to_string(),
                call.query().map(str::to_string),
                call.body().clone(),
            ),
            None => (
                "spin".to_string(),
                Some(format!("us={}", spin_us(r.work))),
                Bytes::new(),
            ),
        };
        Invoke {
            function,
            query,
            headers: Default::default(),
            body,
            label: Some(r.function.name.to_string()),
            deadline: Some(r.deadline),
            received,
            cancel,
        }
    }
}

impl load::HttpCall for NodeCall {
    fn request(&self, target: &str) -> hyper::Request<Full<Bytes>> {
        let r = &self.request;
        // A node takes no deadline of 0 µs (one under half a µs rounds so).
        let deadline = round_us(r.deadline).max(1);
        match &self.call {
            Some(call) => load::invoke_call(
                target,
                call.uri().clone(),
                call.body().clone(),
                &r.function.name,
                Some(deadline),
            ),
            None => load::invoke(target, round_us(r.work), &r.function.name, Some(deadline)),
        }
    }
}

/// What became of one request.
pub type Record = load::Record<NodeCall>;

impl Record {
    /// What became of the request, as the simulator says it, on the run's
    /// clock: it arrived when it was due; a 2xx finished it (when the
    /// runtime says, in process; when its answer came, over HTTP, where
    /// its first run and its worker are not seen); anything else dropped
    /// it.
    pub fn outcome(&self) -> RequestOutcome {
        let r = &self.call.request;
        let dropped = RequestOutcome {
            info: RequestInfo {
                id: r.id,
                function: r.function.id,
                arrival: self.intended,
                deadline: r.deadline,
                estimate: r.estimate,
            },
            work: r.work,
            dispatcher: 0,
            worker: None,
            first_run: None,
            finish: None,
            preemptions: 0,
        };
        if !self.answered() {
            return dropped;
        }
        match &self.completed {
            Some(done) => RequestOutcome {
                dispatcher: done.dispatcher,
                worker: Some(WorkerId(done.worker)),
                first_run: Some(self.intended + done.started),
                finish: Some(self.intended + done.runtime),
                preemptions: done.preemptions,
                ..dropped
            },
            None => RequestOutcome {
                finish: self.done,
                preemptions: self
                    .preemptions
                    .map_or(0, |p| u32::try_from(p).unwrap_or(u32::MAX)),
                ..dropped
            },
        }
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
/// the client that takes it is free, sent as the calls say.
struct BackToBack<I>(I, Calls);

impl<I: Iterator<Item = Request> + Send + 'static> Sampler<NodeCall> for BackToBack<I> {
    fn next(&mut self, _client: u32, finish: Time) -> Option<NodeCall> {
        let request = self.0.next()?;
        Some(NodeCall::new(request, finish, &self.1))
    }
}

/// Sends `requests` to the node at `target` as `config` says (each as
/// `calls` says: its real function, or `spin`), measuring each; asks
/// `stop` (every 10 ms while waiting) whether to end early, as Ctrl-C
/// does, and then still returns what was measured. Fails only before the
/// first request: a bad config or a target that refuses to connect.
pub fn run(
    target: &str,
    config: &LoadConfig,
    requests: impl IntoIterator<Item = Request, IntoIter: Send + 'static>,
    calls: &Calls,
    stop: &dyn Fn() -> bool,
) -> Result<LoadRun, LoadError> {
    let requests = requests.into_iter();
    let http = Http::to(target)?.tls(config.tls.clone());
    let calls = calls.clone();
    let run = match config.mode {
        Mode::Open { .. } => {
            let sent = requests.map(move |request| {
                let send = request.arrival;
                NodeCall::new(request, send, &calls)
            });
            load::open(config, http, sent, Pacing::Spin, stop)?
        }
        Mode::Closed { .. } => load::closed(config, &http, BackToBack(requests, calls), stop)?,
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
