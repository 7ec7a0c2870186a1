//! The node engine's state and its reactions to arrivals and events; the loop
//! that merges them is [`super::run`].

use super::config::{Assign, Costs, Estimate, NodeConfig};
use super::events::{Event, Events};
use super::flight::{Flight, Slab};
use super::outcome::{NodeError, NodeSink, NodeStats};
use faasched_model::node::{
    Dispatch, Local, MedianEstimator, Placement, Request, RequestId, RequestOutcome, WorkerId,
    Workers,
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
            events: Events::default(),
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

    /// Requests in flight (held by a policy when the run has no events
    /// left), the first of them.
    pub(crate) fn leftover(&self) -> Option<(usize, RequestId, u32)> {
        self.slab
            .first()
            .map(|f| (self.slab.len(), f.info.id, f.dispatcher))
    }

    /// `(dispatcher, worker in its group)` of node-wide worker `g`.
    fn split(&self, g: u32) -> (usize, u32) {
        (g as usize / self.group, (g as usize % self.group) as u32)
    }

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
        self.pump(d, policies, sink)
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
            Some((at, ev)) => self.handle(at, ev, policies, sink),
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
            Event::Finish { w, .. } => self.finished(w, policies, sink),
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

    /// Runs dispatcher `d`'s waiting steps until one takes time.
    fn pump<E, P: DerefMut, S: NodeSink>(
        &mut self,
        d: usize,
        policies: &mut [P],
        sink: &mut S,
    ) -> Res<E>
    where
        P::Target: Dispatch,
    {
        while !self.dispatchers[d].busy {
            let Some(job) = self.dispatchers[d].jobs.pop_front() else {
                return Ok(());
            };
            let cost = self.start_step(d, job, &mut *policies[d])?;
            if cost == 0 {
                self.end_step(d, policies, sink)?;
            } else {
                self.dispatchers[d].busy = true;
                self.stats.dispatcher_busy[d] += cost;
                self.events.push(
                    self.now.saturating_add(cost),
                    Event::Dispatched { d: d as u32 },
                );
            }
        }
        Ok(())
    }

    /// Starts a dispatcher step: asks the policy, reading the workers as
    /// they are now; returns the step's cost (its effect waits for its end).
    fn start_step<E, D: Dispatch + ?Sized>(
        &mut self,
        d: usize,
        job: Job,
        policy: &mut D,
    ) -> Result<Nanos, NodeError<E>> {
        let now = self.now;
        let disp = &mut self.dispatchers[d];
        disp.effect = Effect::Nothing;
        match job {
            Job::Request(slot) => {
                let f = self.slab.get_mut(slot);
                let decision = policy.on_request(now, &f.info, &disp.workers);
                let mut cost = self.costs.decision(decision.scanned);
                match decision.placement {
                    Placement::Worker { worker, preempt } => {
                        if worker.0 as usize >= disp.workers.len() {
                            return Err(policy_error(
                                policy,
                                d,
                                format!(
                                    "placed request {} on worker {} of a group of {}",
                                    f.info.id.0,
                                    worker.0,
                                    disp.workers.len()
                                ),
                            ));
                        }
                        if preempt {
                            cost = cost.saturating_add(self.costs.preempt_signal);
                        }
                    }
                    Placement::Hold => {
                        f.held = true;
                        disp.reoffer = true;
                    }
                    Placement::Drop => {}
                }
                disp.effect = Effect::Place {
                    slot,
                    placement: decision.placement,
                };
                Ok(cost)
            }
            Job::Idle(w) => Ok(self.offer(d, w, policy)),
            Job::Quantum { w, run, periodic } => {
                let g = self.global(d, w);
                let k = &mut self.workers[g as usize];
                if k.phase != Phase::Running || k.run != run || k.signalled {
                    return Ok(0);
                }
                let disp = &mut self.dispatchers[d];
                let quantum = disp.quantum;
                if policy.on_quantum(now, WorkerId(w), &disp.workers) {
                    k.signalled = true;
                    k.overdue = false;
                    disp.effect = Effect::Signal { w, run };
                    Ok(self.costs.preempt_signal)
                } else {
                    k.overdue = true;
                    // Looked at again a quantum later, while it runs.
                    if let Some(q) = quantum.filter(|_| periodic) {
                        let at = now.saturating_add(q);
                        if at < self.finish_at(g) {
                            self.events.push(at, Event::Quantum { w: g, run });
                        }
                    }
                    Ok(0)
                }
            }
            Job::Returned { slot, w } => {
                policy.on_returned(now, &self.slab.get(slot).info);
                disp.reoffer = true;
                Ok(self.offer(d, w, policy))
            }
        }
    }

    /// Offers worker `w` of group `d` to the policy if it is idle; returns
    /// what that cost.
    fn offer<D: Dispatch + ?Sized>(&mut self, d: usize, w: u32, policy: &mut D) -> Nanos {
        let g = self.global(d, w);
        let disp = &mut self.dispatchers[d];
        if self.workers[g as usize].phase != Phase::Idle || !disp.workers.get(WorkerId(w)).is_idle()
        {
            return 0;
        }
        disp.pull.clear();
        policy.on_idle(self.now, WorkerId(w), &disp.workers, &mut disp.pull);
        if disp.pull.is_empty() {
            disp.waiting[w as usize] = true;
            0
        } else {
            disp.effect = Effect::Pull { w };
            self.costs.idle_pull
        }
    }

    /// Ends dispatcher `d`'s step: its decision takes effect now.
    fn end_step<E, P: DerefMut, S: NodeSink>(
        &mut self,
        d: usize,
        policies: &mut [P],
        sink: &mut S,
    ) -> Res<E>
    where
        P::Target: Dispatch,
    {
        let now = self.now;
        match std::mem::replace(&mut self.dispatchers[d].effect, Effect::Nothing) {
            Effect::Nothing => {}
            Effect::Place { slot, placement } => match placement {
                Placement::Worker { worker, preempt } => {
                    self.enqueue(d, worker.0, slot);
                    if preempt {
                        let g = self.global(d, worker.0);
                        self.events.push(
                            now.saturating_add(self.costs.preempt_latency),
                            Event::Preempt { w: g },
                        );
                    }
                }
                Placement::Hold => {}
                Placement::Drop => {
                    let f = self.slab.remove(slot);
                    let outcome = RequestOutcome {
                        info: f.info,
                        work: f.work,
                        dispatcher: d as u32,
                        worker: None,
                        first_run: None,
                        finish: None,
                        preemptions: 0,
                    };
                    self.stats.dropped += 1;
                    policies[d].on_finish(now, &outcome);
                    sink.outcome(outcome);
                }
            },
            Effect::Pull { w } => {
                let pull = std::mem::take(&mut self.dispatchers[d].pull);
                let mut result = Ok(());
                for &id in &pull {
                    match self.slab.slot(id) {
                        Some(slot)
                            if self.slab.get(slot).held
                                && self.slab.get(slot).dispatcher as usize == d =>
                        {
                            self.slab.get_mut(slot).held = false;
                            self.enqueue(d, w, slot);
                        }
                        _ => {
                            result = Err(policy_error(
                                &*policies[d],
                                d,
                                format!(
                                    "handed worker {w} request {}, which it does not hold",
                                    id.0
                                ),
                            ));
                            break;
                        }
                    }
                }
                self.dispatchers[d].pull = pull;
                result?;
            }
            Effect::Signal { w, run } => {
                let g = self.global(d, w);
                self.events.push(
                    now.saturating_add(self.costs.preempt_latency),
                    Event::TakeBack { w: g, run },
                );
            }
        }
        let disp = &mut self.dispatchers[d];
        if std::mem::take(&mut disp.reoffer) {
            for w in 0..disp.waiting.len() {
                if std::mem::take(&mut disp.waiting[w]) {
                    disp.jobs.push_back(Job::Idle(w as u32));
                }
            }
            let group = &mut self.workers[d * self.group..(d + 1) * self.group];
            for (w, k) in group.iter_mut().enumerate() {
                if k.phase == Phase::Running && std::mem::take(&mut k.overdue) {
                    disp.jobs.push_back(Job::Quantum {
                        w: w as u32,
                        run: k.run,
                        periodic: false,
                    });
                }
            }
        }
        Ok(())
    }

    /// Queues the request in `slot` on worker `w` of group `d`, waking the
    /// worker if it was idle.
    fn enqueue(&mut self, d: usize, w: u32, slot: u32) {
        let disp = &mut self.dispatchers[d];
        disp.workers
            .enqueue(WorkerId(w), self.slab.get(slot).queued());
        disp.waiting[w as usize] = false;
        let g = self.global(d, w);
        if self.workers[g as usize].phase == Phase::Idle {
            match self.costs.wake_latency() {
                0 => self.pick(g, 0),
                wake => {
                    self.workers[g as usize].phase = Phase::Waking;
                    self.events
                        .push(self.now.saturating_add(wake), Event::Wake { w: g });
                }
            }
        }
    }

    /// Worker `g` picks the head of its queue now, paying `extra` and what it
    /// owes before the request's work runs.
    fn pick(&mut self, g: u32, extra: Nanos) {
        let (d, w) = self.split(g);
        let now = self.now;
        let Some(id) = self.dispatchers[d]
            .workers
            .start_next(WorkerId(w), now)
            .map(|r| r.request.info.id)
        else {
            self.workers[g as usize].phase = Phase::Idle;
            return;
        };
        let slot = self.slab.slot(id).expect("a queued request is in flight");
        let f = self.slab.get_mut(slot);
        let k = &mut self.workers[g as usize];
        let mut overhead = extra;
        if std::mem::take(&mut k.switch_owed) {
            overhead += self.costs.context_switch;
            self.stats.switches += 1;
        }
        if f.first_run.is_none() {
            f.first_run = Some(now);
            overhead += self.costs.sandbox_setup;
        }
        f.worker = Some(WorkerId(w));
        k.phase = Phase::Running;
        k.slot = slot;
        k.picked = now;
        k.exec_from = now.saturating_add(overhead);
        k.run += 1;
        k.overdue = false;
        k.signalled = false;
        self.schedule(g);
        if let Some(q) = self.dispatchers[d].quantum {
            let k = self.workers[g as usize];
            let at = k.exec_from.saturating_add(q);
            if at < self.finish_at(g) {
                self.events.push(at, Event::Quantum { w: g, run: k.run });
            }
        }
    }

    /// When worker `g`'s running request finishes if nothing stops it.
    fn finish_at(&self, g: u32) -> Time {
        let k = &self.workers[g as usize];
        k.exec_from.saturating_add(self.slab.get(k.slot).left)
    }

    /// Schedules worker `g`'s finish and next local tick from its
    /// `exec_from`; earlier ones go stale.
    fn schedule(&mut self, g: u32) {
        let (d, _) = self.split(g);
        let finish = self.finish_at(g);
        let k = &mut self.workers[g as usize];
        k.plan += 1;
        let plan = k.plan;
        let tick = self.locals[d]
            .quantum
            .map(|q| k.exec_from.saturating_add(q));
        self.events.push(finish, Event::Finish { w: g, plan });
        if let Some(at) = tick.filter(|&at| at < finish) {
            self.events.push(at, Event::Tick { w: g, plan });
        }
    }

    /// Stops worker `g`'s request now, accounting its work and the
    /// worker's busy time; returns its slot.
    fn stop(&mut self, g: u32) -> u32 {
        let now = self.now;
        let k = self.workers[g as usize];
        let f = self.slab.get_mut(k.slot);
        f.left -= now.saturating_sub(k.exec_from).min(f.left);
        self.stats.worker_busy[g as usize] += now - k.picked;
        self.workers[g as usize].phase = Phase::Idle;
        k.slot
    }

    /// Worker `g`'s request finished.
    fn finished<E, P: DerefMut, S: NodeSink>(
        &mut self,
        g: u32,
        policies: &mut [P],
        sink: &mut S,
    ) -> Res<E>
    where
        P::Target: Dispatch,
    {
        let (d, w) = self.split(g);
        let now = self.now;
        let slot = self.stop(g);
        self.dispatchers[d].workers.stop(WorkerId(w), now);
        let f = self.slab.remove(slot);
        if let Some(e) = &mut self.estimator {
            e.record(f.info.function, f.work);
        }
        let outcome = RequestOutcome {
            info: f.info,
            work: f.work,
            dispatcher: d as u32,
            worker: f.worker,
            first_run: f.first_run,
            finish: Some(now),
            preemptions: f.preemptions,
        };
        self.stats.finished += 1;
        self.last_finish = Some(now);
        policies[d].on_finish(now, &outcome);
        sink.outcome(outcome);
        self.next_or_idle(g, policies, sink)
    }

    /// Worker `g` has nothing running: it picks the head of its queue, or
    /// tells its dispatcher it is idle.
    fn next_or_idle<E, P: DerefMut, S: NodeSink>(
        &mut self,
        g: u32,
        policies: &mut [P],
        sink: &mut S,
    ) -> Res<E>
    where
        P::Target: Dispatch,
    {
        let (d, w) = self.split(g);
        if self.dispatchers[d].workers.get(WorkerId(w)).queued() > 0 {
            self.pick(g, 0);
            Ok(())
        } else {
            self.workers[g as usize].phase = Phase::Idle;
            self.dispatchers[d].jobs.push_back(Job::Idle(w));
            self.pump(d, policies, sink)
        }
    }

    /// Worker `g`'s local quantum timer fired.
    fn tick(&mut self, g: u32) {
        let (d, w) = self.split(g);
        let tick = self.costs.quantum_tick;
        self.stats.ticks += 1;
        if self.dispatchers[d]
            .workers
            .head_first(WorkerId(w), self.now)
        {
            self.switch(g, tick);
        } else {
            // Carries on after the timer's handler.
            let k = self.workers[g as usize];
            let f = self.slab.get_mut(k.slot);
            f.left -= self.now.saturating_sub(k.exec_from).min(f.left);
            self.workers[g as usize].exec_from = self.now.saturating_add(tick);
            self.schedule(g);
        }
    }

    /// Worker `g` puts its request back in its queue and picks again, paying
    /// `extra` and a context switch.
    fn switch(&mut self, g: u32, extra: Nanos) {
        let (d, w) = self.split(g);
        let slot = self.stop(g);
        self.dispatchers[d].workers.requeue(WorkerId(w), self.now);
        self.slab.get_mut(slot).preemptions += 1;
        self.stats.preemptions += 1;
        self.workers[g as usize].switch_owed = true;
        self.pick(g, extra);
    }

    /// A sleeping worker woke up to its queue.
    fn wake(&mut self, g: u32) {
        // Only work wakes a worker, and only the worker takes it off its
        // queue: there is something to pick.
        self.workers[g as usize].phase = Phase::Idle;
        self.pick(g, 0);
    }

    /// A dispatcher's preemption signal reached worker `g`: it re-picks by
    /// its local order if its queue's head comes first.
    fn preempt(&mut self, g: u32) {
        let k = self.workers[g as usize];
        if self.now < k.exec_from {
            // Handled once the set-up or switch under way is done.
            self.events.push(k.exec_from, Event::Preempt { w: g });
            return;
        }
        let (d, w) = self.split(g);
        if self.dispatchers[d]
            .workers
            .head_first(WorkerId(w), self.now)
        {
            self.switch(g, 0);
        }
    }

    /// The dispatcher's signal takes worker `g`'s request back to the policy.
    fn take_back<E, P: DerefMut, S: NodeSink>(
        &mut self,
        g: u32,
        policies: &mut [P],
        sink: &mut S,
    ) -> Res<E>
    where
        P::Target: Dispatch,
    {
        let k = self.workers[g as usize];
        if self.now < k.exec_from {
            self.events
                .push(k.exec_from, Event::TakeBack { w: g, run: k.run });
            return Ok(());
        }
        let (d, w) = self.split(g);
        let slot = self.stop(g);
        let q = self.dispatchers[d]
            .workers
            .stop(WorkerId(w), self.now)
            .expect("a running worker runs a request");
        let f = self.slab.get_mut(slot);
        f.est_left = q.remaining;
        f.ran = q.ran;
        f.preemptions += 1;
        f.held = true;
        self.stats.preemptions += 1;
        self.workers[g as usize].switch_owed = true;
        let disp = &mut self.dispatchers[d];
        disp.jobs.push_back(Job::Returned { slot, w });
        if disp.workers.get(WorkerId(w)).queued() > 0 {
            self.pick(g, 0);
        }
        self.pump(d, policies, sink)
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
