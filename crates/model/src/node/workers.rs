//! The workers of one dispatcher's group: what each runs and holds, kept by
//! the engine that runs them (simulated or live) and read by the policy.

use super::{Local, Order, RequestInfo, WorkerId};
use crate::{Nanos, Time};
use std::collections::{BTreeMap, VecDeque};

/// A request in a worker's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    /// The request.
    pub info: RequestInfo,
    /// Its estimate less what it has run (never below 0).
    pub remaining: Nanos,
    /// Time it has run so far (it waited the rest since it arrived).
    pub ran: Nanos,
    /// Times it was taken off a worker.
    pub preemptions: u32,
    /// Tie-break within EDF and SRPT: arrival order.
    seq: u64,
}

impl Queued {
    /// A request that has not run yet.
    pub fn new(info: RequestInfo) -> Queued {
        Queued {
            remaining: info.estimate,
            info,
            ran: 0,
            preemptions: 0,
            seq: info.id.0,
        }
    }

    /// Its slack at `now`: it has waited all the time it did not run.
    pub fn slack(&self, now: Time) -> i64 {
        let waited = now
            .saturating_sub(self.info.arrival)
            .saturating_sub(self.ran);
        self.info.slack(waited)
    }
}

/// The request a worker runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Running {
    /// The request, as it was when this run began.
    pub request: Queued,
    /// When this run began.
    pub since: Time,
    /// Its slack when this run began; frozen while it runs.
    pub slack: i64,
}

impl Running {
    /// Remaining estimated work at `now`.
    pub fn remaining(&self, now: Time) -> Nanos {
        self.request
            .remaining
            .saturating_sub(now.saturating_sub(self.since))
    }

    /// Absolute deadline.
    pub fn due(&self) -> Time {
        self.request.info.due()
    }
}

/// A worker's queue, in the order it runs it. A FIFO queue is kept as
/// one: it never needs sorting, and the FIFO policies (the Shinjuku
/// family, sledge, darc) run every pick and requeue through it.
#[derive(Clone, Debug)]
enum Queue {
    /// [`Order::Fifo`]: in the order requests joined it.
    Fifo(VecDeque<Queued>),
    /// [`Order::Edf`] and [`Order::Srpt`]: by (the order's key, seq).
    Sorted(BTreeMap<(u64, u64), Queued>),
}

impl Queue {
    fn new(order: Order) -> Queue {
        match order {
            Order::Fifo => Queue::Fifo(VecDeque::new()),
            Order::Edf | Order::Srpt => Queue::Sorted(BTreeMap::new()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Queue::Fifo(q) => q.len(),
            Queue::Sorted(q) => q.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn iter(&self) -> impl Iterator<Item = &Queued> {
        let (fifo, sorted) = match self {
            Queue::Fifo(q) => (Some(q.iter()), None),
            Queue::Sorted(q) => (None, Some(q.values())),
        };
        fifo.into_iter()
            .flatten()
            .chain(sorted.into_iter().flatten())
    }

    fn head(&self) -> Option<&Queued> {
        match self {
            Queue::Fifo(q) => q.front(),
            Queue::Sorted(q) => q.values().next(),
        }
    }

    fn push(&mut self, order: Order, q: Queued) {
        match self {
            Queue::Fifo(queue) => queue.push_back(q),
            Queue::Sorted(queue) => {
                queue.insert((order.key(&q.info, q.remaining), q.seq), q);
            }
        }
    }

    fn pop(&mut self) -> Option<Queued> {
        match self {
            Queue::Fifo(q) => q.pop_front(),
            Queue::Sorted(q) => q.pop_first().map(|(_, q)| q),
        }
    }
}

/// One worker: the request it runs, and its queue.
#[derive(Clone, Debug)]
pub struct WorkerState {
    running: Option<Running>,
    queue: Queue,
    /// Remaining estimated work queued (C, Eq. 2).
    queued_work: Nanos,
}

impl WorkerState {
    /// The request it runs, if any.
    pub fn running(&self) -> Option<&Running> {
        self.running.as_ref()
    }

    /// Nothing running and nothing queued.
    pub fn is_idle(&self) -> bool {
        self.running.is_none() && self.queue.is_empty()
    }

    /// Requests queued (not counting the running one).
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Remaining estimated work queued (C, Eq. 2), the running request not
    /// counted.
    pub fn queued_work(&self) -> Nanos {
        self.queued_work
    }

    /// The queued requests, in the order the worker will run them.
    pub fn queue(&self) -> impl Iterator<Item = &Queued> {
        self.queue.iter()
    }

    /// Remaining estimated work queued with an absolute deadline before
    /// `due` (W, Eq. 1; the running request not counted, nor equal
    /// deadlines, as SledgeScale's tree counts them).
    pub fn earlier_work(&self, order: Order, due: Time) -> Nanos {
        match (&self.queue, order) {
            (Queue::Sorted(q), Order::Edf) => q.range(..(due, 0)).map(|(_, q)| q.remaining).sum(),
            _ => self
                .queue
                .iter()
                .filter(|q| q.info.due() < due)
                .map(|q| q.remaining)
                .sum(),
        }
    }
}

/// The workers of one dispatcher's group, all running their queues as
/// `local` says.
#[derive(Clone, Debug)]
pub struct Workers {
    local: Local,
    workers: Vec<WorkerState>,
}

impl Workers {
    /// `n` idle workers.
    pub fn new(n: usize, local: Local) -> Workers {
        let idle = WorkerState {
            running: None,
            queue: Queue::new(local.order),
            queued_work: 0,
        };
        Workers {
            local,
            workers: vec![idle; n],
        }
    }

    /// How they run their queues.
    pub fn local(&self) -> Local {
        self.local
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.workers.len()
    }

    /// None at all.
    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// Worker `w`.
    pub fn get(&self, w: WorkerId) -> &WorkerState {
        &self.workers[w.0 as usize]
    }

    /// Every worker with its id, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (WorkerId, &WorkerState)> {
        self.workers
            .iter()
            .enumerate()
            .map(|(i, s)| (WorkerId(i as u32), s))
    }

    /// Worker `w`'s earlier work for a request due at `due` (W, Eq. 1).
    pub fn earlier_work(&self, w: WorkerId, due: Time) -> Nanos {
        self.get(w).earlier_work(self.local.order, due)
    }

    /// Queues `q` on worker `w`.
    pub fn enqueue(&mut self, w: WorkerId, q: Queued) {
        let s = &mut self.workers[w.0 as usize];
        s.queued_work += q.remaining;
        s.queue.push(self.local.order, q);
    }

    /// The request worker `w` would run next, if any.
    pub fn next(&self, w: WorkerId) -> Option<&Queued> {
        self.get(w).queue.head()
    }

    /// Whether the head of `w`'s queue comes before its running request in
    /// the worker's order (the running one at its remaining work at `now`).
    pub fn head_first(&self, w: WorkerId, now: Time) -> bool {
        let s = self.get(w);
        let (Some(r), Some(head)) = (s.running, s.queue.head()) else {
            return s.running.is_none() && !s.queue.is_empty();
        };
        let order = self.local.order;
        match order {
            Order::Fifo => true,
            Order::Edf | Order::Srpt => {
                (order.key(&head.info, head.remaining), head.seq)
                    < (order.key(&r.request.info, r.remaining(now)), r.request.seq)
            }
        }
    }

    /// Starts the head of `w`'s queue at `now`; `w` must run nothing.
    pub fn start_next(&mut self, w: WorkerId, now: Time) -> Option<&Running> {
        let s = &mut self.workers[w.0 as usize];
        debug_assert!(s.running.is_none(), "worker {w:?} busy");
        let q = s.queue.pop()?;
        s.queued_work -= q.remaining;
        s.running = Some(Running {
            slack: q.slack(now),
            request: q,
            since: now,
        });
        s.running.as_ref()
    }

    /// Takes `w`'s running request off it at `now` (it finished, or is
    /// preempted): its run so far is accounted.
    pub fn stop(&mut self, w: WorkerId, now: Time) -> Option<Queued> {
        let r = self.workers[w.0 as usize].running.take()?;
        let mut q = r.request;
        q.remaining = r.remaining(now);
        q.ran += now.saturating_sub(r.since);
        Some(q)
    }

    /// Preempts `w`'s running request at `now` and puts it back in `w`'s
    /// queue; returns its id.
    pub fn requeue(&mut self, w: WorkerId, now: Time) -> Option<super::RequestId> {
        let mut q = self.stop(w, now)?;
        q.preemptions += 1;
        let id = q.info.id;
        self.enqueue(w, q);
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::RequestId;
    use crate::{FunctionId, US};

    fn req(id: u64, arrival: Time, deadline: Nanos, estimate: Nanos) -> Queued {
        Queued::new(RequestInfo {
            id: RequestId(id),
            function: FunctionId(0),
            arrival,
            deadline,
            estimate,
        })
    }

    const EDF: Local = Local {
        order: Order::Edf,
        quantum: None,
    };

    #[test]
    fn earlier_work_sums_the_queued_requests_due_strictly_before() {
        let mut ws = Workers::new(1, EDF);
        let w = WorkerId(0);
        ws.enqueue(w, req(0, 0, 100 * US, 10 * US));
        ws.enqueue(w, req(1, 0, 50 * US, 5 * US));
        ws.enqueue(w, req(2, 0, 100 * US, 7 * US));
        assert_eq!(ws.earlier_work(w, 100 * US), 5 * US);
        assert_eq!(ws.earlier_work(w, 100 * US + 1), 22 * US);
        assert_eq!(ws.get(w).queued_work(), 22 * US);
        // EDF, ties in arrival order.
        let order: Vec<u64> = ws.get(w).queue().map(|q| q.info.id.0).collect();
        assert_eq!(order, [1, 0, 2]);
    }

    #[test]
    fn slack_falls_while_waiting_and_freezes_while_running() {
        let mut ws = Workers::new(1, EDF);
        let w = WorkerId(0);
        ws.enqueue(w, req(0, 0, 100 * US, 10 * US));
        // Waited 30 µs: slack 100 − 10 − 30.
        let r = *ws.start_next(w, 30 * US).unwrap();
        assert_eq!(r.slack, 60_000);
        assert_eq!(r.remaining(34 * US), 6 * US);
        // Preempted at 34 µs, back in the queue: 4 µs ran.
        assert_eq!(ws.requeue(w, 34 * US), Some(RequestId(0)));
        let q = ws.next(w).unwrap();
        assert_eq!((q.remaining, q.ran, q.preemptions), (6 * US, 4 * US, 1));
        // Waiting again from 34 µs: at 50 µs it has waited 46.
        assert_eq!(q.slack(50 * US), 100_000 - 10_000 - 46_000);
    }

    #[test]
    fn fifo_requeues_to_the_tail() {
        let rr = Local {
            order: Order::Fifo,
            quantum: Some(1_000 * US),
        };
        let mut ws = Workers::new(1, rr);
        let w = WorkerId(0);
        ws.enqueue(w, req(5, 0, 1, 1_000 * US));
        ws.enqueue(w, req(3, 0, 1, 1_000 * US));
        ws.start_next(w, 0);
        assert!(ws.head_first(w, 10));
        ws.requeue(w, 1_000 * US);
        ws.start_next(w, 1_000 * US);
        assert_eq!(ws.get(w).running().unwrap().request.info.id, RequestId(3));
        assert_eq!(ws.next(w).unwrap().info.id, RequestId(5));
    }
}
