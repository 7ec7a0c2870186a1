//! The node level's vocabulary and its seam, [`Dispatch`]: requests reach a
//! dispatcher, which binds each to one of its workers at once (early
//! binding), holds it until a worker is free (late binding), or drops it.
//! Each worker runs one request at a time from its local queue, in the
//! order the policy names ([`Local`]).
//!
//! The simulator's node engine and the live WebAssembly runtime both keep
//! their workers in [`Workers`] and call a [`Dispatch`] the same way, so a
//! policy is written once. Terms (SledgeScale, sledgescale-sec25 §3):
//! **slack** = relative deadline − estimate − time waited (frozen while the
//! request runs); a worker's **earlier work** for a request (W, Eq. 1) is
//! the remaining estimated work queued there with an earlier deadline; its
//! **queued work** (C, Eq. 2) is all the remaining estimated work queued.

mod estimate;
mod workers;

pub use estimate::{Estimate, MedianEstimator, PAPER_WINDOW};
pub use workers::{Queued, Running, WorkerState, Workers};

use crate::{Function, FunctionId, Nanos, Time};

/// A request's id, unique in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// A worker's index in its dispatcher's group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkerId(pub u32);

/// A request as a policy sees it: its work is hidden, its estimate is what
/// the node predicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestInfo {
    /// Unique in a run, in arrival order.
    pub id: RequestId,
    /// The function it invokes.
    pub function: FunctionId,
    /// When it reached the node.
    pub arrival: Time,
    /// Relative deadline.
    pub deadline: Nanos,
    /// Predicted work.
    pub estimate: Nanos,
}

impl RequestInfo {
    /// The absolute deadline: arrival plus the relative deadline.
    pub fn due(&self) -> Time {
        self.arrival.saturating_add(self.deadline)
    }

    /// Slack when it has waited `waited` in all: relative deadline − estimate
    /// − waited (negative once it cannot meet its deadline by the estimate).
    pub fn slack(&self, waited: Nanos) -> i64 {
        self.deadline as i64 - self.estimate as i64 - waited as i64
    }
}

/// A request as the node receives it: what a policy sees, and the work it
/// hides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Unique in a run; requests come in arrival order.
    pub id: RequestId,
    /// The function it invokes.
    pub function: Function,
    /// When it reaches the node.
    pub arrival: Time,
    /// The CPU it needs.
    pub work: Nanos,
    /// Relative deadline.
    pub deadline: Nanos,
    /// What the workload predicts of its work (exact, or with an error);
    /// an engine may predict otherwise (the median of the function's
    /// recent requests).
    pub estimate: Nanos,
}

impl Request {
    /// What a policy sees of it, with `estimate` as the prediction.
    pub fn info(&self, estimate: Nanos) -> RequestInfo {
        RequestInfo {
            id: self.id,
            function: self.function.id,
            arrival: self.arrival,
            deadline: self.deadline,
            estimate,
        }
    }
}

/// The order in which a worker runs its local queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Earliest absolute deadline first; ties in arrival order.
    Edf,
    /// First come, first served (with a quantum: round robin).
    Fifo,
    /// Least remaining estimated work first; ties in arrival order.
    Srpt,
}

impl Order {
    /// The key a queued request sorts by, before its arrival sequence.
    pub fn key(self, req: &RequestInfo, remaining: Nanos) -> u64 {
        match self {
            Order::Edf => req.due(),
            Order::Fifo => 0,
            Order::Srpt => remaining,
        }
    }
}

/// How every worker of a policy runs its queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Local {
    /// Which queued request runs next.
    pub order: Order,
    /// A worker-local timer: when it fires and something is queued, the
    /// worker re-picks by `order`, the running request going back into its
    /// queue (under FIFO, to the tail: round robin). `None`: a request runs
    /// until it finishes or the dispatcher preempts it.
    pub quantum: Option<Nanos>,
}

/// Where a dispatcher puts a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Into this worker's queue (early binding); with `preempt`, the worker
    /// is told to re-pick at once (SledgeScale's `PreemptWorker`).
    Worker {
        /// The worker.
        worker: WorkerId,
        /// Tell it to re-pick now.
        preempt: bool,
    },
    /// Held by the policy until a worker asks ([`Dispatch::on_idle`]).
    Hold,
    /// Refused: it never runs.
    Drop(Refusal),
}

/// Why a dispatcher refused a request. A live node answers each with a 503
/// whose `x-faasched-error` is [`Refusal::kind`]; the admission reasons
/// also carry `Retry-After`, since the node will have room again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Refusal {
    /// The policy had nowhere to put it (no worker, no group that takes
    /// its kind).
    Unplaced,
    /// The group holds its most requests admitted and unfinished.
    QueueFull,
    /// Its estimate would take the work admitted and unfinished past the
    /// group's bound.
    BacklogFull,
    /// Its function holds its share of what is left of the bounds, so that
    /// one function cannot take the room every other needs.
    OverShare,
    /// The work that runs ahead of it on the best worker would make it
    /// miss its deadline, by the estimates.
    Late,
}

impl Refusal {
    /// Every reason, in the order outputs list them.
    pub const ALL: [Refusal; 5] = [
        Refusal::Unplaced,
        Refusal::QueueFull,
        Refusal::BacklogFull,
        Refusal::OverShare,
        Refusal::Late,
    ];

    /// The short name outputs and clients read.
    pub fn kind(self) -> &'static str {
        match self {
            Refusal::Unplaced => "unplaced",
            Refusal::QueueFull => "queue-full",
            Refusal::BacklogFull => "backlog-full",
            Refusal::OverShare => "over-share",
            Refusal::Late => "deadline-infeasible",
        }
    }

    /// Whether admission control refused it (the node has room again
    /// later), rather than the policy.
    pub fn admission(self) -> bool {
        self != Refusal::Unplaced
    }
}

/// A dispatcher's decision and what it cost to reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Where the request goes.
    pub placement: Placement,
    /// Workers examined: the engine charges the dispatcher a fixed cost per
    /// decision plus one per worker examined.
    pub scanned: u32,
}

/// The dispatch policy of one dispatcher over its group of workers.
///
/// ```text
/// on_request ─► Worker | Hold | Drop
///   held: on_idle(worker) ─► requests for it ─► [on_quantum ─► on_returned]* ─► on_finish
/// ```
pub trait Dispatch {
    /// Short name, as the CLI spells it.
    fn name(&self) -> &str;

    /// How the workers run their queues.
    fn local(&self) -> Local;

    /// A request reached this dispatcher.
    fn on_request(&mut self, now: Time, req: &RequestInfo, workers: &Workers) -> Decision;

    /// `worker` has nothing left to run: append to `out` the held requests
    /// it should queue, in order (late binding; Sledge pulls a batch).
    fn on_idle(
        &mut self,
        _now: Time,
        _worker: WorkerId,
        _workers: &Workers,
        _out: &mut Vec<RequestId>,
    ) {
    }

    /// A dispatcher-driven preemption quantum (Shinjuku): once a request
    /// has run this long without a break, [`Dispatch::on_quantum`].
    fn quantum(&self) -> Option<Nanos> {
        None
    }

    /// The quantum expired on `worker`: to take its request back, append to
    /// `out` the held requests it runs instead (queued on it before the
    /// signal lands, as Shinjuku's dispatcher hands over the next request
    /// with the interrupt); leaving `out` empty lets the request go on. The
    /// request taken back returns through [`Dispatch::on_returned`].
    fn on_quantum(
        &mut self,
        _now: Time,
        _worker: WorkerId,
        _workers: &Workers,
        _out: &mut Vec<RequestId>,
    ) {
    }

    /// A request taken back from `worker`: `None` if the policy holds it
    /// again, or the worker whose queue it joins at once (the SledgeScale
    /// paper's Shinjuku resumes a request on the worker it left).
    fn on_returned(
        &mut self,
        _now: Time,
        _req: &RequestInfo,
        _worker: WorkerId,
    ) -> Option<WorkerId> {
        None
    }

    /// A request finished or was dropped; its outcome is final.
    fn on_finish(&mut self, _now: Time, _outcome: &RequestOutcome) {}
}

/// A boxed policy is a policy: decorators (a policy's quanta stretched)
/// wrap what the catalogue builds.
impl<D: Dispatch + ?Sized> Dispatch for Box<D> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn local(&self) -> Local {
        (**self).local()
    }

    fn on_request(&mut self, now: Time, req: &RequestInfo, workers: &Workers) -> Decision {
        (**self).on_request(now, req, workers)
    }

    fn on_idle(
        &mut self,
        now: Time,
        worker: WorkerId,
        workers: &Workers,
        out: &mut Vec<RequestId>,
    ) {
        (**self).on_idle(now, worker, workers, out);
    }

    fn quantum(&self) -> Option<Nanos> {
        (**self).quantum()
    }

    fn on_quantum(
        &mut self,
        now: Time,
        worker: WorkerId,
        workers: &Workers,
        out: &mut Vec<RequestId>,
    ) {
        (**self).on_quantum(now, worker, workers, out);
    }

    fn on_returned(&mut self, now: Time, req: &RequestInfo, worker: WorkerId) -> Option<WorkerId> {
        (**self).on_returned(now, req, worker)
    }

    fn on_finish(&mut self, now: Time, outcome: &RequestOutcome) {
        (**self).on_finish(now, outcome);
    }
}

/// What became of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestOutcome {
    /// The request as the policy saw it.
    pub info: RequestInfo,
    /// The CPU it needed.
    pub work: Nanos,
    /// Its dispatcher.
    pub dispatcher: u32,
    /// Its worker (in the dispatcher's group), if it ran.
    pub worker: Option<WorkerId>,
    /// When it first ran; `None` if dropped, or where the engine does not
    /// see it (a node answering over HTTP says only when it finished).
    pub first_run: Option<Time>,
    /// When its response left; `None` if dropped.
    pub finish: Option<Time>,
    /// Times it was taken off a worker before it finished.
    pub preemptions: u32,
}

impl RequestOutcome {
    /// Whether it was dropped.
    pub fn dropped(&self) -> bool {
        self.finish.is_none()
    }

    /// Latency: response sent − request received; `None` if dropped. A
    /// finish before the arrival (an engine fault) reads as 0 rather than
    /// overflowing, so a report over a faulty run still renders.
    pub fn latency(&self) -> Option<Nanos> {
        self.finish.map(|f| f.saturating_sub(self.info.arrival))
    }

    /// Latency over work.
    pub fn slowdown(&self) -> Option<f64> {
        self.latency().map(|l| l as f64 / self.work.max(1) as f64)
    }

    /// Finished after its absolute deadline, or dropped.
    pub fn missed(&self) -> bool {
        self.finish.is_none_or(|f| f > self.info.due())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(arrival: Time, work: Nanos, finish: Option<Time>) -> RequestOutcome {
        RequestOutcome {
            info: RequestInfo {
                id: RequestId(0),
                function: FunctionId(0),
                arrival,
                deadline: 100,
                estimate: work,
            },
            work,
            dispatcher: 0,
            worker: None,
            first_run: finish.map(|_| arrival),
            finish,
            preemptions: 0,
        }
    }

    #[test]
    fn latency_is_finish_minus_arrival_and_none_when_dropped() {
        let done = outcome(1_000, 40, Some(1_250));
        assert_eq!(done.latency(), Some(250));
        assert_eq!(done.slowdown(), Some(250.0 / 40.0));
        assert!(done.missed());
        let dropped = outcome(1_000, 40, None);
        assert_eq!((dropped.latency(), dropped.slowdown()), (None, None));
        assert!(dropped.missed() && dropped.dropped());
    }

    #[test]
    fn a_finish_before_the_arrival_reads_as_zero_latency() {
        let faulty = outcome(1_000, 40, Some(900));
        assert_eq!(faulty.latency(), Some(0));
        assert_eq!(faulty.slowdown(), Some(0.0));
    }
}
