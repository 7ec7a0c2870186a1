//! The requests in flight: a slab reused as requests finish, so the engine
//! allocates only while the number in flight grows, never per request.

use faasched_model::node::{Queued, Request, RequestId, RequestInfo, WorkerId};
use faasched_model::{IdMap, Nanos, Time};

/// What the engine knows of a request that is not final yet.
#[derive(Debug)]
pub(crate) struct Flight {
    /// What its policy sees (the function's name is not kept: no outcome
    /// carries it).
    pub(crate) info: RequestInfo,
    /// The work it needs, hidden from the policy.
    pub(crate) work: Nanos,
    /// Its dispatcher.
    pub(crate) dispatcher: u32,
    /// Work it still has to do.
    pub(crate) left: Nanos,
    /// Its estimate less what it ran, and what it ran, as of when it was
    /// last taken back by its policy (a worker's queue keeps them
    /// otherwise).
    pub(crate) est_left: Nanos,
    pub(crate) ran: Nanos,
    /// Times taken off a worker.
    pub(crate) preemptions: u32,
    /// When a worker first picked it.
    pub(crate) first_run: Option<Time>,
    /// The worker (in its group) that last picked it.
    pub(crate) worker: Option<WorkerId>,
    /// Its policy holds it (late binding).
    pub(crate) held: bool,
}

impl Flight {
    /// A request just arrived at `dispatcher`, its policy told `estimate`.
    pub(crate) fn new(req: &Request, estimate: Nanos, dispatcher: u32) -> Flight {
        Flight {
            info: req.info(estimate),
            work: req.work,
            left: req.work,
            est_left: estimate,
            ran: 0,
            dispatcher,
            preemptions: 0,
            first_run: None,
            worker: None,
            held: false,
        }
    }

    /// How it joins a worker's queue.
    pub(crate) fn queued(&self) -> Queued {
        let mut q = Queued::new(self.info);
        q.remaining = self.est_left;
        q.ran = self.ran;
        q.preemptions = self.preemptions;
        q
    }
}

/// Requests in flight by slot, and their slots by id.
#[derive(Debug, Default)]
pub(crate) struct Slab {
    items: Vec<Option<Flight>>,
    free: Vec<u32>,
    by_id: IdMap<RequestId, u32>,
}

impl Slab {
    /// Stores `f`; returns its slot.
    pub(crate) fn insert(&mut self, f: Flight) -> u32 {
        let id = f.info.id;
        let slot = match self.free.pop() {
            Some(s) => {
                self.items[s as usize] = Some(f);
                s
            }
            None => {
                self.items.push(Some(f));
                (self.items.len() - 1) as u32
            }
        };
        self.by_id.insert(id, slot);
        slot
    }

    /// The request in `slot`.
    pub(crate) fn get(&self, slot: u32) -> &Flight {
        self.items[slot as usize]
            .as_ref()
            .expect("the engine only keeps slots of requests in flight")
    }

    /// The request in `slot`, to change.
    pub(crate) fn get_mut(&mut self, slot: u32) -> &mut Flight {
        self.items[slot as usize]
            .as_mut()
            .expect("the engine only keeps slots of requests in flight")
    }

    /// The slot of request `id`, if in flight.
    pub(crate) fn slot(&self, id: RequestId) -> Option<u32> {
        self.by_id.get(&id).copied()
    }

    /// Takes the request in `slot` out: it is final.
    pub(crate) fn remove(&mut self, slot: u32) -> Flight {
        let f = self.items[slot as usize]
            .take()
            .expect("the engine only keeps slots of requests in flight");
        self.by_id.remove(&f.info.id);
        self.free.push(slot);
        f
    }

    /// Requests in flight.
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Some request still in flight, the lowest id first.
    pub(crate) fn first(&self) -> Option<&Flight> {
        self.items.iter().flatten().min_by_key(|f| f.info.id)
    }
}
