//! The workers' side: picking, running, ticking, being preempted and
//! finishing.

use super::{Engine, Job, Phase, Res};
use crate::node::events::Event;
use crate::node::outcome::{NodeError, NodeSink, Start};
use faasched_model::node::{Dispatch, RequestOutcome, WorkerId};
use faasched_model::{Nanos, Time};
use std::ops::DerefMut;

impl Engine {
    /// Queues the request in `slot` on worker `w` of group `d`, waking the
    /// worker if it was idle.
    pub(super) fn enqueue(&mut self, d: usize, w: u32, slot: u32) {
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
    pub(super) fn pick(&mut self, g: u32, extra: Nanos) {
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
            self.first_picks.push((g, slot));
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

    /// Tells the sink of the first picks of the event just handled, in
    /// pick order, and does what it says: a start's extra work lengthens
    /// the request (its worker's finish moves), a refusal drops it and its
    /// worker picks again (perhaps a request of its own first pick).
    pub(super) fn start_first_picks<E, P: DerefMut, S: NodeSink>(
        &mut self,
        policies: &mut [P],
        sink: &mut S,
    ) -> Res<E>
    where
        P::Target: Dispatch,
    {
        let mut i = 0;
        while let Some(&(g, slot)) = self.first_picks.get(i) {
            i += 1;
            let info = self.slab.get(slot).info;
            let k = self.workers[g as usize];
            // Nothing but a later event takes a request off its worker.
            let running = k.phase == Phase::Running && k.slot == slot;
            match sink.first_pick(&info, self.now) {
                Start::Run(0) => {}
                Start::Run(extra) => {
                    let f = self.slab.get_mut(slot);
                    f.left = f.left.saturating_add(extra);
                    if running {
                        self.schedule(g);
                    }
                }
                Start::Refuse if running => self.leave(g, true, policies, sink)?,
                Start::Refuse => {
                    self.first_picks.clear();
                    return Err(NodeError::Request {
                        id: info.id,
                        what: "was refused its start after its worker let it go".into(),
                    });
                }
            }
        }
        self.first_picks.clear();
        Ok(())
    }

    /// When worker `g`'s running request finishes if nothing stops it.
    pub(super) fn finish_at(&self, g: u32) -> Time {
        let k = &self.workers[g as usize];
        k.exec_from.saturating_add(self.slab.get(k.slot).left)
    }

    /// Schedules worker `g`'s next local tick from its `exec_from`, or its
    /// finish if that comes first, in place of the one it had pending (its
    /// plan number passes). Only one of the two is pending: a tick
    /// schedules again (`tick`), so a long request under a short quantum
    /// leaves no finish per quantum in the heap.
    pub(super) fn schedule(&mut self, g: u32) {
        let (d, _) = self.split(g);
        let finish = self.finish_at(g);
        let k = &mut self.workers[g as usize];
        k.plan += 1;
        let plan = k.plan;
        let tick = self.locals[d]
            .quantum
            .map(|q| k.exec_from.saturating_add(q));
        match tick.filter(|&at| at < finish) {
            Some(at) => self.events.push(at, Event::Tick { w: g, plan }),
            None => self.events.push(finish, Event::Finish { w: g, plan }),
        }
    }

    /// Stops worker `g`'s request now, accounting its work and the
    /// worker's busy time; returns its slot.
    pub(super) fn stop(&mut self, g: u32) -> u32 {
        let now = self.now;
        let k = self.workers[g as usize];
        let f = self.slab.get_mut(k.slot);
        f.left -= now.saturating_sub(k.exec_from).min(f.left);
        self.stats.worker_busy[g as usize] += now - k.picked;
        self.workers[g as usize].phase = Phase::Idle;
        k.slot
    }

    /// Worker `g`'s request leaves it: finished now, or (`refused`) refused
    /// at its first pick and dropped without running. The worker picks its
    /// next.
    pub(super) fn leave<E, P: DerefMut, S: NodeSink>(
        &mut self,
        g: u32,
        refused: bool,
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
        if refused {
            self.stats.dropped += 1;
        } else {
            if let Some(e) = &mut self.estimator {
                e.record(f.info.function, f.work);
            }
            self.stats.finished += 1;
            self.last_finish = Some(now);
        }
        let outcome = RequestOutcome {
            info: f.info,
            work: f.work,
            dispatcher: d as u32,
            worker: f.worker,
            first_run: f.first_run.filter(|_| !refused),
            finish: (!refused).then_some(now),
            preemptions: f.preemptions,
        };
        policies[d].on_finish(now, &outcome);
        sink.outcome(outcome);
        self.next_or_idle(g, policies, sink)
    }

    /// Worker `g` has nothing running: it picks the head of its queue, or
    /// tells its dispatcher it is idle.
    pub(super) fn next_or_idle<E, P: DerefMut, S: NodeSink>(
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
    pub(super) fn tick(&mut self, g: u32) {
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
    pub(super) fn switch(&mut self, g: u32, extra: Nanos) {
        let (d, w) = self.split(g);
        let slot = self.stop(g);
        self.dispatchers[d].workers.requeue(WorkerId(w), self.now);
        self.slab.get_mut(slot).preemptions += 1;
        self.stats.preemptions += 1;
        self.workers[g as usize].switch_owed = true;
        self.pick(g, extra);
    }

    /// A sleeping worker woke up to its queue.
    pub(super) fn wake(&mut self, g: u32) {
        // Only work wakes a worker, and only the worker takes it off its
        // queue: there is something to pick.
        self.workers[g as usize].phase = Phase::Idle;
        self.pick(g, 0);
    }

    /// A dispatcher's preemption signal reached worker `g`: it re-picks by
    /// its local order if its queue's head comes first.
    pub(super) fn preempt(&mut self, g: u32) {
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
    pub(super) fn take_back<E, P: DerefMut, S: NodeSink>(
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
