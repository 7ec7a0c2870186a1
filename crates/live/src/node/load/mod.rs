//! `faasched node load`'s calls: a workload's request stream sent to a
//! node runtime by the [load driver](crate::load), open loop at the
//! stream's arrival times (the one `node simulate` runs for the same
//! workload, rate and seed) or closed loop back to back, and what became
//! of each request.
//!
//! A request is `POST /invoke/spin?us={work in µs}` with its workload
//! function and deadline in headers (docs/RUNTIME.md, "HTTP API"), both
//! times in whole µs, rounded to the nearest. Its latency counts from its arrival in the stream
//! (open loop), however late it went out; in the closed loop from when its
//! client sent it. The open loop spins the last 2 ms to a request's time
//! ([`Pacing::Spin`]): the node's requests are µs long.

mod summary;

use crate::load::{self, End, LoadConfig, LoadError, Mode, Pacing, Sampler};
use faasched_model::node::Request;
use faasched_model::{Nanos, Time, US};

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

/// What became of one request.
pub type Record = load::Record<NodeCall>;

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
            load::open(config, calls, Pacing::Spin, stop)?
        }
        Mode::Closed { .. } => load::closed(config, BackToBack(requests), stop)?,
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
