//! The dispatchers' side: a serial queue of steps, each asking the policy
//! when it starts and taking effect when it ends.

use super::{Effect, Engine, Job, Phase, Res, policy_error};
use crate::node::events::Event;
use crate::node::outcome::{NodeError, NodeSink};
use faasched_model::Nanos;
use faasched_model::node::{Dispatch, Placement, RequestOutcome, WorkerId};
use std::ops::DerefMut;

impl Engine {
    /// Runs dispatcher `d`'s waiting steps until one takes time.
    pub(super) fn pump<E, P: DerefMut, S: NodeSink>(
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
    pub(super) fn start_step<E, D: Dispatch + ?Sized>(
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
                    Placement::Drop(_) => {}
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
                disp.pull.clear();
                policy.on_quantum(now, WorkerId(w), &disp.workers, &mut disp.pull);
                if !disp.pull.is_empty() {
                    k.signalled = true;
                    k.overdue = false;
                    disp.effect = Effect::Signal { w, run };
                    Ok(self
                        .costs
                        .preempt_signal
                        .saturating_add(self.costs.idle_pull))
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
                let f = self.slab.get_mut(slot);
                let moved = self.costs.idle_pull;
                match policy.on_returned(now, &f.info, WorkerId(w)) {
                    None => {
                        disp.reoffer = true;
                        Ok(moved.saturating_add(self.offer(d, w, policy)))
                    }
                    Some(to) if to.0 as usize >= disp.workers.len() => Err(policy_error(
                        policy,
                        d,
                        format!(
                            "resumed request {} on worker {} of a group of {}",
                            f.info.id.0,
                            to.0,
                            disp.workers.len()
                        ),
                    )),
                    Some(to) => {
                        f.held = false;
                        disp.effect = Effect::Place {
                            slot,
                            placement: Placement::Worker {
                                worker: to,
                                preempt: false,
                            },
                        };
                        Ok(moved)
                    }
                }
            }
        }
    }

    /// Offers worker `w` of group `d` to the policy if it is idle; returns
    /// what that cost.
    pub(super) fn offer<D: Dispatch + ?Sized>(
        &mut self,
        d: usize,
        w: u32,
        policy: &mut D,
    ) -> Nanos {
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
    pub(super) fn end_step<E, P: DerefMut, S: NodeSink>(
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
                Placement::Drop(_) => {
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
            Effect::Pull { w } => self.hand_pull(d, w, policies)?,
            Effect::Signal { w, run } => {
                self.hand_pull(d, w, policies)?;
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

    /// Queues the requests the policy handed out in this step (its `pull`
    /// list) on worker `w` of group `d`; each must be one it holds.
    fn hand_pull<E, P: DerefMut>(&mut self, d: usize, w: u32, policies: &[P]) -> Res<E>
    where
        P::Target: Dispatch,
    {
        let pull = std::mem::take(&mut self.dispatchers[d].pull);
        let mut result = Ok(());
        for &id in &pull {
            match self.slab.slot(id) {
                Some(slot)
                    if self.slab.get(slot).held && self.slab.get(slot).dispatcher as usize == d =>
                {
                    self.slab.get_mut(slot).held = false;
                    self.enqueue(d, w, slot);
                }
                _ => {
                    result = Err(policy_error(
                        &*policies[d],
                        d,
                        format!("handed worker {w} request {}, which it does not hold", id.0),
                    ));
                    break;
                }
            }
        }
        self.dispatchers[d].pull = pull;
        result
    }
}
