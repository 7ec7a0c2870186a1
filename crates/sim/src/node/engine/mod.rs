//! The node engine's state and its reactions to arrivals and events; the loop
//! that merges them is [`super::run`]. The dispatchers' steps are in
//! `dispatcher`, the workers' reactions in `worker`.

mod dispatcher;
mod worker;

use super::config::{Assign, Costs, Estimate, NodeConfig};
use super::events::{Event, Events};
use super::flight::{Flight, Slab};
use super::outcome::{NodeError, NodeSink, NodeStats};
use faasched_model::node::{
    Dispatch, Local, MedianEstimator, Placement, Request, RequestId, Workers,
};
use faasched_model::{Nanos, Time};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::collections::VecDeque;
use std::ops::DerefMut;

/// What a worker is doing, as the engine sees it ([`Workers`] holds its
/// queue and running request, as the policy sees them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing to run: asleep, or polling.
    Idle,
    /// Work reached it asleep; it wakes at its `Wake` event.
    Waking,
    /// It runs the request in `slot`.
    Running,
}

/// One worker's engine-side state.
#[derive(Clone, Copy, Debug)]
struct Worker {
    phase: Phase,
    /// The request it runs, while `Running`.
    slot: u32,
    /// When it picked that request.
    picked: Time,
    /// When the request's work (re)starts, after the overheads paid at the
    /// pick (set-up, context switch, quantum tick).
    exec_from: Time,
    /// Changes whenever its planned finish moves: older `Finish` and `Tick`
    /// events are stale.
    plan: u64,
    /// Changes at every pick: older `Quantum` and `TakeBack` events are
    /// stale.
    run: u64,
    /// A preemption's context switch it pays at its next pick.
    switch_owed: bool,
    /// Its run reached the dispatcher quantum and the policy let it go on:
    /// asked again as soon as the policy holds a new request.
    overdue: bool,
    /// The dispatcher decided to take its run back.
    signalled: bool,
}

/// A step the dispatcher takes in turn (it is a serial resource: steps wait
/// in arrival order).
#[derive(Clone, Copy, Debug)]
enum Job {
    /// Decide where the request in this slot goes.
    Request(u32),
    /// Offer this (idle) worker of the group to the policy.
    Idle(u32),
    /// This worker's run reached the dispatcher quantum: at its periodic
    /// expiry, or asked again when the policy got a request.
    Quantum { w: u32, run: u64, periodic: bool },
    /// The request in `slot` came back from worker `w`.
    Returned { slot: u32, w: u32 },
}

/// What a dispatcher step does when it ends.
#[derive(Clone, Copy, Debug)]
enum Effect {
    Nothing,
    /// The decision on the request in `slot`.
    Place {
        slot: u32,
        placement: Placement,
    },
    /// Queue the dispatcher's `pull` list on this worker.
    Pull {
        w: u32,
    },
    /// Send the signal that takes run `run` off worker `w`.
    Signal {
        w: u32,
        run: u64,
    },
}

/// One dispatcher and its group.
struct Dispatcher {
    workers: Workers,
    jobs: VecDeque<Job>,
    /// A step is under way; it ends at a `Dispatched` event.
    busy: bool,
    effect: Effect,
    /// After the step, offer the waiting workers again: the policy holds a
    /// new request.
    reoffer: bool,
    /// Requests the policy handed to an idle worker in the current step.
    pull: Vec<RequestId>,
    /// Workers idle whose last offer the policy answered with nothing.
    waiting: Vec<bool>,
    /// The policy's dispatcher quantum.
    quantum: Option<Nanos>,
}

/// Everything a run keeps, but the policies and the sink.
pub(crate) struct Engine {
    pub(crate) now: Time,
    costs: Costs,
    group: usize,
    locals: Vec<Local>,
    rng: Option<Pcg64>,
    arrivals: u64,
    estimator: Option<MedianEstimator>,
    events: Events,
    slab: Slab,
    workers: Vec<Worker>,
    dispatchers: Vec<Dispatcher>,
    pub(crate) stats: NodeStats,
    first_arrival: Option<Time>,
    last_arrival: Option<Time>,
    last_finish: Option<Time>,
    last_id: Option<RequestId>,
    /// Workers that picked a request for the first time during the event
    /// being handled, with its slot, in pick order: the sink learns of
    /// each once the event is done ([`NodeSink::first_pick`]).
    first_picks: Vec<(u32, u32)>,
}

/// An engine error, with the input stream's error type.
type Res<E> = Result<(), NodeError<E>>;

impl Engine {
    /// A node of `config`'s shape, its workers run as each policy says.
    pub(crate) fn new<P>(config: &NodeConfig, policies: &[P]) -> Engine
    where
        P: DerefMut,
        P::Target: Dispatch,
    {
        let n = config.dispatchers * config.workers;
        let locals: Vec<Local> = policies.iter().map(|p| p.local()).collect();
        Engine {
            now: 0,
            costs: config.costs,
            group: config.workers,
            rng: match config.assign {
                Assign::Equal => None,
                Assign::Random { seed } => Some(Pcg64::seed_from_u64(seed)),
            },
            arrivals: 0,
            estimator: match config.estimate {
                Estimate::Given => None,
                Estimate::Median { window } => MedianEstimator::new(window),
            },
            events: Events::new(n),
            slab: Slab::default(),
            workers: vec![
                Worker {
                    phase: Phase::Idle,
                    slot: 0,
                    picked: 0,
                    exec_from: 0,
                    plan: 0,
                    run: 0,
                    switch_owed: false,
                    overdue: false,
                    signalled: false,
                };
                n
            ],
            dispatchers: policies
                .iter()
                .zip(&locals)
                .map(|(p, &local)| Dispatcher {
                    workers: Workers::new(config.workers, local),
                    jobs: VecDeque::new(),
                    busy: false,
                    effect: Effect::Nothing,
                    reoffer: false,
                    pull: Vec::new(),
                    // Idle from the start: offered once the policy holds something.
                    waiting: vec![true; config.workers],
                    quantum: p.quantum(),
                })
                .collect(),
            locals,
            stats: NodeStats {
                worker_busy: vec![0; n],
                dispatcher_busy: vec![0; config.dispatchers],
                ..NodeStats::default()
            },
            first_arrival: None,
            last_arrival: None,
            last_finish: None,
            last_id: None,
            first_picks: Vec::new(),
        }
    }

    /// When the next event is due.
    pub(crate) fn next_event(&self) -> Option<Time> {
        self.events.next_at()
    }

    /// The stats, with the span filled in.
    pub(crate) fn finish_stats(&mut self) -> NodeStats {
        let mut s = std::mem::take(&mut self.stats);
        s.span = super::outcome::span(self.first_arrival, self.last_finish);
        s
    }

    /// Errs if requests are still in flight when the run has no events
    /// left: a policy held them and gave no idle worker them.
    pub(crate) fn drained<E, P>(&self, policies: &[P]) -> Res<E>
    where
        P: DerefMut,
        P::Target: Dispatch,
    {
        let Some(f) = self.slab.first() else {
            return Ok(());
        };
        let d = f.dispatcher as usize;
        Err(NodeError::Policy {
            policy: policies[d].name().to_owned(),
            dispatcher: d,
            what: format!(
                "still held {} requests (the first, {}) when nothing was left to run: \
                 no idle worker was given them",
                self.slab.len(),
                f.info.id.0
            ),
        })
    }

    /// `(dispatcher, worker in its group)` of node-wide worker `g`.
    fn split(&self, g: u32) -> (usize, u32) {
        (g as usize / self.group, (g as usize % self.group) as u32)
    }

    /// Node-wide index of worker `w` of dispatcher `d`.
    fn global(&self, d: usize, w: u32) -> u32 {
        (d * self.group) as u32 + w
    }

    /// Checks a request from the stream before it is admitted.
    pub(crate) fn check<E>(&self, req: &Request) -> Res<E> {
        let bad = |what: String| Err(NodeError::Request { id: req.id, what });
        if req.arrival > faasched_model::TIME_LIMIT {
            return bad(format!(
                "arrives at {} ns, past the simulator's limit of {} ns",
                req.arrival,
                faasched_model::TIME_LIMIT
            ));
        }
        if req.work > faasched_model::TIME_LIMIT {
            return bad(format!(
                "needs {} ns of work, past the simulator's limit of {} ns",
                req.work,
                faasched_model::TIME_LIMIT
            ));
        }
        if let Some(prev) = self.last_arrival
            && req.arrival < prev
        {
            return bad(format!(
                "arrives at {} ns, before an earlier request (at {prev} ns): requests must \
                 come in arrival order",
                req.arrival
            ));
        }
        if let Some(last) = self.last_id
            && req.id <= last
        {
            return bad(format!(
                "follows request {}: ids must increase in arrival order",
                last.0
            ));
        }
        Ok(())
    }

    /// `req` reaches the node now (its arrival, checked by [`Engine::check`]).
    pub(crate) fn arrive<E, P: DerefMut, S: NodeSink>(
        &mut self,
        req: Request,
        policies: &mut [P],
        sink: &mut S,
    ) -> Res<E>
    where
        P::Target: Dispatch,
    {
        self.now = req.arrival;
        self.first_arrival.get_or_insert(req.arrival);
        self.last_arrival = Some(req.arrival);
        self.last_id = Some(req.id);
        self.stats.requests += 1;
        self.stats.events += 1;
        let n = self.dispatchers.len() as u64;
        let d = match &mut self.rng {
            None => self.arrivals % n,
            Some(rng) => rng.random_range(0..n),
        } as usize;
        self.arrivals += 1;
        let estimate = match &self.estimator {
            None => req.estimate,
            Some(e) => e.estimate(req.function.id, req.estimate),
        };
        let slot = self.slab.insert(Flight::new(&req, estimate, d as u32));
        self.dispatchers[d].jobs.push_back(Job::Request(slot));
        self.pump(d, policies, sink)?;
        self.start_first_picks(policies, sink)
    }

    /// Handles the next pending event (there is one).
    pub(crate) fn handle_next<E, P: DerefMut, S: NodeSink>(
        &mut self,
        policies: &mut [P],
        sink: &mut S,
    ) -> Res<E>
    where
        P::Target: Dispatch,
    {
        match self.events.pop() {
            Some((at, ev)) => {
                self.handle(at, ev, policies, sink)?;
                self.start_first_picks(policies, sink)
            }
            None => Ok(()),
        }
    }

    /// Handles the event due at `at`, unless it is stale; errs past the
    /// clock's limit.
    fn handle<E, P: DerefMut, S: NodeSink>(
        &mut self,
        at: Time,
        ev: Event,
        policies: &mut [P],
        sink: &mut S,
    ) -> Res<E>
    where
        P::Target: Dispatch,
    {
        if !self.live(ev) {
            return Ok(());
        }
        if at > crate::RUN_LIMIT {
            return Err(NodeError::TimeLimit {
                finished: self.stats.finished,
            });
        }
        self.now = at;
        self.stats.events += 1;
        match ev {
            Event::Finish { w, .. } => self.leave(w, false, policies, sink),
            Event::Tick { w, .. } => {
                self.tick(w);
                Ok(())
            }
            Event::Wake { w } => {
                self.wake(w);
                Ok(())
            }
            Event::Preempt { w } => {
                self.preempt(w);
                Ok(())
            }
            Event::Quantum { w, run } => {
                let (d, local) = self.split(w);
                self.dispatchers[d].jobs.push_back(Job::Quantum {
                    w: local,
                    run,
                    periodic: true,
                });
                self.pump(d, policies, sink)
            }
            Event::TakeBack { w, .. } => self.take_back(w, policies, sink),
            Event::Dispatched { d } => {
                let d = d as usize;
                self.dispatchers[d].busy = false;
                self.end_step(d, policies, sink)?;
                self.pump(d, policies, sink)
            }
        }
    }

    /// Whether `ev` still applies.
    fn live(&self, ev: Event) -> bool {
        let running = |w: u32| self.workers[w as usize];
        match ev {
            Event::Finish { w, plan } | Event::Tick { w, plan } => {
                let k = running(w);
                k.phase == Phase::Running && k.plan == plan
            }
            Event::Quantum { w, run } | Event::TakeBack { w, run } => {
                let k = running(w);
                k.phase == Phase::Running && k.run == run
            }
            Event::Wake { w } => running(w).phase == Phase::Waking,
            Event::Preempt { w } => running(w).phase == Phase::Running,
            Event::Dispatched { .. } => true,
        }
    }
}

/// A policy broke its contract.
fn policy_error<E, D: Dispatch + ?Sized>(policy: &D, d: usize, what: String) -> NodeError<E> {
    NodeError::Policy {
        policy: policy.name().to_owned(),
        dispatcher: d,
        what,
    }
}
