//! One dispatcher's group as the live runtime keeps it: the policy, the
//! [`Workers`] it reads, and every request accepted and not yet answered.
//!
//! The dispatcher thread and its workers share one `Group` under a mutex,
//! so the [`Workers`] the policy reads are the workers' queues themselves,
//! not a copy kept from reports that could lag: a worker takes the head of
//! its queue with [`Workers::start_next`], in the policy's local order, the
//! same call the simulator's engine makes. Every method is a short critical
//! section that returns what must happen outside the lock ([`Effects`]):
//! workers to wake, workers to interrupt, answers to send. Nothing here
//! runs WebAssembly or blocks, so the logic is tested without threads.

use super::super::invoke::{Answer, Completed, Failure, Invoke};
use super::{Finished, Ticket};
use faasched_model::node::{
    Dispatch, MedianEstimator, Placement, Queued, Refusal, RequestId, RequestInfo, RequestOutcome,
    WorkerId, Workers,
};
use faasched_model::{FunctionId, Nanos, Time};
use faasched_workload::node::Deadline;
use hdrhistogram::Histogram;
use std::collections::HashMap;
use std::sync::Arc;

/// The longest preemption latency recorded, ns (an hour); longer ones are
/// recorded as this.
pub(crate) const SWITCH_MAX: u64 = 3_600_000_000_000;

/// A request accepted and not yet answered.
struct Pending<J> {
    info: RequestInfo,
    /// Shared with the worker that starts it, which reads it outside the
    /// lock: one allocation, never a copy of its headers and body.
    invoke: Arc<Invoke>,
    reply: Ticket,
    /// Its sandbox once started; `None` before its first run, or while a
    /// worker runs it.
    job: Option<J>,
    worker: Option<WorkerId>,
    /// The policy holds it: it is in no worker's queue.
    held: bool,
    /// Where a request taken back off a worker stood (what it ran, what
    /// is left of its estimate): it joins a queue as it left.
    returned: Option<Queued>,
    first_run: Option<Time>,
    preemptions: u32,
    /// Its CPU time goes to the estimator when it finishes: see
    /// [`Estimator::learns_from`].
    learn: bool,
}

/// What the dispatcher asked a running worker to do at its next check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Signal {
    None,
    /// Re-pick by the local order (SledgeScale's `PreemptWorker`, a local
    /// quantum).
    Repick,
    /// Give the request back to the policy (Shinjuku's quantum).
    TakeBack,
}

/// What a caller must do once it has let go of the group's lock.
pub(crate) struct Effects {
    /// Workers to wake (they sleep when idle).
    pub wake: Vec<WorkerId>,
    /// Workers whose running sandbox must stop at its next check.
    pub preempt: Vec<WorkerId>,
    /// Answers to send.
    pub replies: Vec<(Ticket, Answer)>,
}

impl Effects {
    fn new() -> Effects {
        Effects {
            wake: Vec::new(),
            preempt: Vec::new(),
            replies: Vec::new(),
        }
    }
}

/// What a worker runs next.
pub(crate) enum Next<J> {
    /// A request's first run: start a sandbox for `invoke`.
    Start { id: RequestId, invoke: Arc<Invoke> },
    /// A preempted request's sandbox, to resume.
    Resume { id: RequestId, job: J },
    /// Nothing: sleep until woken.
    Idle,
}

/// How a worker's run ended, as it reports it.
pub(crate) enum Ran<J> {
    /// Finished: the function's value and the CPU it used, or why not.
    Done(Result<Finished, Failure>),
    /// Stopped at a check: its sandbox, to keep or resume.
    Stopped(J),
}

/// What the worker does after reporting a run.
pub(crate) enum After<J> {
    /// Go on running this sandbox (the stop asked for nothing after all).
    Continue(J),
    /// Ask for the next request.
    Next,
}

/// Counts kept for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct GroupStats {
    pub accepted: u64,
    pub completed: u64,
    pub failed: u64,
    pub dropped: u64,
    /// Of the dropped, by reason, in [`Refusal::ALL`]'s order.
    pub refused: [u64; Refusal::ALL.len()],
    pub preemptions: u64,
    pub take_backs: u64,
}

/// One dispatcher's policy, workers and requests.
pub(crate) struct Group<J> {
    index: u32,
    policy: Box<dyn Dispatch + Send>,
    workers: Workers,
    pending: HashMap<RequestId, Pending<J>>,
    signal: Vec<Signal>,
    /// Worker asleep: it found nothing to run and the policy handed it
    /// nothing.
    asleep: Vec<bool>,
    /// The policy's dispatcher quantum (Shinjuku), and the workers' local
    /// one (round robin).
    quantum: Option<Nanos>,
    local_quantum: Option<Nanos>,
    estimator: Estimator,
    /// Each function label's id, in order of first arrival.
    functions: HashMap<String, FunctionId>,
    pull: Vec<RequestId>,
    stats: GroupStats,
    /// Per worker, when the dispatcher last asked it to switch requests.
    switch_asked: Vec<Option<Time>>,
    /// From that ask to the worker starting its next request, ns: the
    /// preemption's latency as the runtime sees it.
    switches: Histogram<u64>,
}

/// How a group estimates a request's work: what the executor knows of it
/// (`spin`'s µs), or, for a request whose work it does not know (a real
/// function's) and for every request when told, the median of its
/// function's recent CPU times here.
pub(crate) struct Estimator {
    /// The recent CPU times of each function's requests; `None`: none are
    /// kept, and an unknown request is estimated at `first`.
    pub(crate) recent: Option<MedianEstimator>,
    /// Every request is estimated by the recent CPU times, not only those
    /// whose work the executor does not know.
    pub(crate) always: bool,
    /// The estimate of a request whose work is unknown and whose function
    /// has no finished run yet.
    pub(crate) first: Nanos,
}

impl Estimator {
    /// `function`'s request, its work `known` to the executor or not.
    fn estimate(&self, function: FunctionId, known: Option<Nanos>) -> Nanos {
        match (known, &self.recent) {
            (Some(k), _) if !self.always => k,
            (k, Some(e)) => e.estimate(function, k.unwrap_or(self.first)),
            (k, None) => k.unwrap_or(self.first),
        }
    }

    /// Whether a request whose work the executor knows as `known` is one
    /// the recent runs learn from: only those they would estimate, so that
    /// a function whose work is always known (`spin`) keeps no runs no one
    /// reads.
    fn learns_from(&self, known: Option<Nanos>) -> bool {
        self.recent.is_some() && (known.is_none() || self.always)
    }

    /// A request of `function` finished after `work` of CPU.
    fn record(&mut self, function: FunctionId, work: Nanos) {
        if let Some(e) = &mut self.recent {
            e.record(function, work);
        }
    }
}

impl<J> Group<J> {
    /// `workers` idle workers under `policy`, estimating requests' work as
    /// `estimator` says; `functions` are the labels with ids 0, 1, ... .
    pub(crate) fn new(
        index: u32,
        policy: Box<dyn Dispatch + Send>,
        workers: usize,
        estimator: Estimator,
        functions: &[String],
    ) -> Group<J> {
        let local = policy.local();
        Group {
            index,
            quantum: policy.quantum(),
            local_quantum: local.quantum,
            policy,
            workers: Workers::new(workers, local),
            pending: HashMap::new(),
            signal: vec![Signal::None; workers],
            asleep: vec![false; workers],
            estimator,
            functions: functions
                .iter()
                .enumerate()
                .map(|(i, f)| (f.clone(), FunctionId(i as u32)))
                .collect(),
            pull: Vec::new(),
            stats: GroupStats::default(),
            switch_asked: vec![None; workers],
            switches: Histogram::new_with_bounds(1, SWITCH_MAX, 3)
                .expect("1 ns to an hour at 3 significant digits is valid"),
        }
    }

    /// The policy's name.
    pub(crate) fn policy(&self) -> &str {
        self.policy.name()
    }

    /// Requests accepted and not answered.
    pub(crate) fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Workers running a request.
    pub(crate) fn busy(&self) -> usize {
        self.workers
            .iter()
            .filter(|(_, s)| s.running().is_some())
            .count()
    }

    pub(crate) fn stats(&self) -> GroupStats {
        self.stats
    }

    /// The shortest quantum the group must be looked at on, if any.
    pub(crate) fn tick(&self) -> Option<Nanos> {
        match (self.quantum, self.local_quantum) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A request reaches the dispatcher at `now`: the policy places it.
    /// `known` is the executor's knowledge of its work, if it has any; the
    /// group's [`Estimator`] makes the estimate of it, and a `deadline`
    /// that is a factor is one of that estimate.
    pub(crate) fn arrive(
        &mut self,
        now: Time,
        id: RequestId,
        deadline: Deadline,
        known: Option<Nanos>,
        invoke: Arc<Invoke>,
        reply: Ticket,
    ) -> Effects {
        let mut fx = Effects::new();
        let next = FunctionId(self.functions.len() as u32);
        let function = match self.functions.get(invoke.label()) {
            Some(&f) => f,
            None => *self
                .functions
                .entry(invoke.label().to_string())
                .or_insert(next),
        };
        let estimate = self.estimator.estimate(function, known);
        let info = RequestInfo {
            id,
            function,
            arrival: now,
            deadline: deadline.of(estimate),
            estimate,
        };
        self.stats.accepted += 1;
        let decision = self.policy.on_request(now, &info, &self.workers);
        let pending = Pending {
            info,
            invoke,
            reply,
            job: None,
            worker: None,
            held: false,
            returned: None,
            first_run: None,
            preemptions: 0,
            learn: self.estimator.learns_from(known),
        };
        match decision.placement {
            Placement::Worker { worker, preempt } if (worker.0 as usize) < self.workers.len() => {
                self.pending.insert(id, pending);
                self.workers.enqueue(worker, Queued::new(info));
                self.wake(worker, &mut fx);
                if preempt && self.workers.get(worker).running().is_some() {
                    self.interrupt(now, worker, Signal::Repick, &mut fx);
                }
            }
            Placement::Worker { worker, .. } => {
                let what = format!(
                    "policy {} placed request {} on worker {} of a group of {}",
                    self.policy.name(),
                    id.0,
                    worker.0,
                    self.workers.len()
                );
                self.refuse(now, pending, Failure::Internal(what), &mut fx);
            }
            Placement::Hold => {
                self.pending.insert(
                    id,
                    Pending {
                        held: true,
                        ..pending
                    },
                );
                self.offer(now, &mut fx);
            }
            Placement::Drop(why) => {
                self.stats.refused[why as usize] += 1;
                let failure = match why {
                    Refusal::Unplaced => Failure::Overloaded,
                    why => Failure::Refused(why),
                };
                self.refuse(now, pending, failure, &mut fx);
            }
        }
        fx
    }

    /// Worker `w` asks what to run at `now`.
    pub(crate) fn next(&mut self, w: WorkerId, now: Time) -> (Next<J>, Effects) {
        let mut fx = Effects::new();
        self.signal[w.0 as usize] = Signal::None;
        if self.workers.get(w).queued() == 0 {
            self.pull.clear();
            self.policy.on_idle(now, w, &self.workers, &mut self.pull);
            self.hand(w, &mut fx);
        }
        let (id, p) = loop {
            let Some(r) = self.workers.start_next(w, now) else {
                self.asleep[w.0 as usize] = true;
                return (Next::Idle, fx);
            };
            let id = r.request.info.id;
            let cancelled = self
                .pending
                .get(&id)
                .expect("a queued request is pending")
                .invoke
                .cancel
                .is_cancelled();
            if !cancelled {
                if let Some(asked) = self.switch_asked[w.0 as usize].take() {
                    self.switches.saturating_record(now.saturating_sub(asked));
                }
                break (id, self.pending.get_mut(&id).expect("pending"));
            }
            // Nobody waits for it: it never starts (or resumes), and a
            // preempted one's sandbox is dropped here.
            self.finish(w, id, now, Err(Failure::Cancelled), &mut fx);
        };
        p.worker = Some(w);
        p.first_run.get_or_insert(now);
        let next = match p.job.take() {
            Some(job) => Next::Resume { id, job },
            None => Next::Start {
                id,
                invoke: Arc::clone(&p.invoke),
            },
        };
        (next, fx)
    }

    /// Worker `w`'s run of request `id` ended at `now`.
    pub(crate) fn ran(
        &mut self,
        w: WorkerId,
        id: RequestId,
        now: Time,
        ran: Ran<J>,
    ) -> (After<J>, Effects) {
        let mut fx = Effects::new();
        let signal = std::mem::replace(&mut self.signal[w.0 as usize], Signal::None);
        let job = match ran {
            Ran::Done(result) => {
                self.finish(w, id, now, result, &mut fx);
                return (After::Next, fx);
            }
            Ran::Stopped(job) => job,
        };
        match signal {
            Signal::None => (After::Continue(job), fx),
            Signal::Repick if !self.workers.head_first(w, now) => {
                // It goes on: no switch to time.
                self.switch_asked[w.0 as usize] = None;
                (After::Continue(job), fx)
            }
            Signal::Repick => {
                self.workers.requeue(w, now);
                self.stopped(id, job);
                (After::Next, fx)
            }
            Signal::TakeBack => {
                let mut q = self.workers.stop(w, now).expect("worker runs a request");
                q.preemptions += 1;
                self.stats.take_backs += 1;
                let info = self.stopped(id, job).info;
                match self.policy.on_returned(now, &info, w) {
                    None => {
                        let p = self.pending.get_mut(&id).expect("pending");
                        p.held = true;
                        p.returned = Some(q);
                        self.offer(now, &mut fx);
                    }
                    Some(to) if (to.0 as usize) < self.workers.len() => {
                        self.workers.enqueue(to, q);
                        self.wake(to, &mut fx);
                    }
                    Some(to) => {
                        let what = format!(
                            "policy {} resumed request {} on worker {} of a group of {}",
                            self.policy.name(),
                            id.0,
                            to.0,
                            self.workers.len()
                        );
                        let p = self.pending.remove(&id).expect("pending");
                        self.refuse(now, p, Failure::Internal(what), &mut fx);
                    }
                }
                (After::Next, fx)
            }
        }
    }

    /// Request `id`, stopped by a preemption, keeps its sandbox `job` until
    /// a worker picks it again.
    fn stopped(&mut self, id: RequestId, job: J) -> &mut Pending<J> {
        self.stats.preemptions += 1;
        let p = self
            .pending
            .get_mut(&id)
            .expect("a running request is pending");
        p.preemptions += 1;
        p.job = Some(job);
        p
    }

    /// Looks at the running workers at `now`: Shinjuku's quantum hands a
    /// worker the next request and takes its request back; a local quantum
    /// makes the worker re-pick.
    pub(crate) fn on_tick(&mut self, now: Time) -> Effects {
        let mut fx = Effects::new();
        for i in 0..self.workers.len() {
            let w = WorkerId(i as u32);
            let Some(since) = self.workers.get(w).running().map(|r| r.since) else {
                continue;
            };
            if self.signal[i] != Signal::None {
                continue;
            }
            let ran = now.saturating_sub(since);
            if self.quantum.is_some_and(|q| ran >= q) {
                self.pull.clear();
                self.policy
                    .on_quantum(now, w, &self.workers, &mut self.pull);
                if !self.pull.is_empty() {
                    self.hand(w, &mut fx);
                    self.interrupt(now, w, Signal::TakeBack, &mut fx);
                    continue;
                }
            }
            if self.local_quantum.is_some_and(|q| ran >= q) && self.workers.get(w).queued() > 0 {
                self.interrupt(now, w, Signal::Repick, &mut fx);
            }
        }
        fx
    }

    /// Queues on `w` the requests the policy just handed it (`pull`); each
    /// must be one it holds.
    fn hand(&mut self, w: WorkerId, fx: &mut Effects) {
        let pull = std::mem::take(&mut self.pull);
        for &id in &pull {
            match self.pending.get_mut(&id).filter(|p| p.held) {
                Some(p) => {
                    p.held = false;
                    let q = p.returned.take().unwrap_or_else(|| Queued::new(p.info));
                    self.workers.enqueue(w, q);
                }
                None => {
                    let what = format!(
                        "policy {} handed worker {} request {}, which it does not hold",
                        self.policy.name(),
                        w.0,
                        id.0
                    );
                    fx.replies.extend(
                        self.pending
                            .remove(&id)
                            .map(|p| (p.reply, Err(Failure::Internal(what)))),
                    );
                }
            }
        }
        self.pull = pull;
        self.wake(w, fx);
    }

    /// Offers every sleeping worker to the policy, which may hand it held
    /// requests.
    fn offer(&mut self, now: Time, fx: &mut Effects) {
        for i in 0..self.asleep.len() {
            if !self.asleep[i] {
                continue;
            }
            let w = WorkerId(i as u32);
            self.pull.clear();
            self.policy.on_idle(now, w, &self.workers, &mut self.pull);
            if !self.pull.is_empty() {
                self.hand(w, fx);
            }
        }
    }

    fn wake(&mut self, w: WorkerId, fx: &mut Effects) {
        if std::mem::take(&mut self.asleep[w.0 as usize]) {
            fx.wake.push(w);
        }
    }

    fn interrupt(&mut self, now: Time, w: WorkerId, signal: Signal, fx: &mut Effects) {
        self.signal[w.0 as usize] = signal;
        self.switch_asked[w.0 as usize] = Some(now);
        fx.preempt.push(w);
    }

    /// Preemption latencies so far: from the dispatcher's ask to the worker
    /// starting its next request, ns.
    pub(crate) fn switches(&self) -> &Histogram<u64> {
        &self.switches
    }

    /// Request `id` ends on worker `w`: the policy learns its outcome and
    /// its answer goes out.
    fn finish(
        &mut self,
        w: WorkerId,
        id: RequestId,
        now: Time,
        result: Result<Finished, Failure>,
        fx: &mut Effects,
    ) {
        self.workers.stop(w, now);
        let Some(p) = self.pending.remove(&id) else {
            return;
        };
        let work = result.as_ref().map_or(0, |f| f.cpu);
        if result.is_ok() && p.learn {
            self.estimator.record(p.info.function, work);
        }
        let outcome = RequestOutcome {
            info: p.info,
            work,
            dispatcher: self.index,
            worker: Some(w),
            first_run: p.first_run,
            finish: Some(now),
            preemptions: p.preemptions,
        };
        self.policy.on_finish(now, &outcome);
        let answer = result.map(
            |Finished {
                 value,
                 written,
                 cpu,
                 cold,
             }| {
                self.stats.completed += 1;
                let runtime = p.invoke.received.elapsed().as_nanos() as Nanos;
                Completed {
                    value,
                    written,
                    cpu,
                    preemptions: p.preemptions,
                    runtime,
                    // The first run, on the runtime's clock, as far before the
                    // finish as it was.
                    started: runtime.saturating_sub(now.saturating_sub(p.first_run.unwrap_or(now))),
                    dispatcher: self.index,
                    worker: w.0,
                    cold,
                }
            },
        );
        if answer.is_err() {
            self.stats.failed += 1;
        }
        fx.replies.push((p.reply, answer));
    }

    /// A request that never runs: the policy learns it was dropped.
    fn refuse(&mut self, now: Time, p: Pending<J>, why: Failure, fx: &mut Effects) {
        self.stats.dropped += 1;
        let outcome = RequestOutcome {
            info: p.info,
            work: 0,
            dispatcher: self.index,
            worker: None,
            first_run: None,
            finish: None,
            preemptions: p.preemptions,
        };
        self.policy.on_finish(now, &outcome);
        fx.replies.push((p.reply, Err(why)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::MS;
    use faasched_model::node::PAPER_WINDOW;

    fn estimator(always: bool) -> Estimator {
        Estimator {
            recent: MedianEstimator::new(PAPER_WINDOW),
            always,
            first: MS,
        }
    }

    #[test]
    fn an_unknown_request_is_estimated_by_its_functions_recent_runs() {
        let (spin, real) = (FunctionId(0), FunctionId(1));
        let mut e = estimator(false);
        // Before any run: what the executor knows, else the first estimate.
        assert_eq!(e.estimate(spin, Some(3 * MS)), 3 * MS);
        assert_eq!(e.estimate(real, None), MS);
        // Only the runs it would estimate teach it.
        assert!(e.learns_from(None) && !e.learns_from(Some(3 * MS)));
        for work in [40, 10, 30] {
            e.record(real, work * MS);
            e.record(spin, 9 * MS);
        }
        // The median of the real function's runs; the executor's own word
        // for a request it knows.
        assert_eq!(e.estimate(real, None), 30 * MS);
        assert_eq!(e.estimate(spin, Some(3 * MS)), 3 * MS);
        // Told to, the medians estimate every request.
        let mut all = estimator(true);
        assert!(all.learns_from(Some(3 * MS)));
        all.record(spin, 9 * MS);
        assert_eq!(all.estimate(spin, Some(3 * MS)), 9 * MS);
        assert_eq!(all.estimate(real, Some(3 * MS)), 3 * MS);
        // Keeping no runs: the executor's word, else the first estimate.
        let none = Estimator {
            recent: None,
            always: false,
            first: MS,
        };
        assert_eq!(
            (none.estimate(real, None), none.estimate(spin, Some(2))),
            (MS, 2)
        );
        assert!(!none.learns_from(None));
    }
}
