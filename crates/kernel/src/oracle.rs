//! The sim-only queues: SRPT on (predicted) remaining CPU, and a global FIFO.

use crate::task::Task;
use crate::tournament::{Key, Tournament};
use faasched_model::{MAX_CPUS, Nanos, Time};
use std::collections::{BTreeSet, VecDeque};

/// A core running no task, in [`Srpt::running`].
const NONE: u128 = <u128 as Key>::NONE;

/// Preemptive shortest remaining processing time on predictions.
#[derive(Debug)]
pub struct Srpt {
    /// The waiting tasks by remaining work.
    tree: BTreeSet<(Nanos, u64, u32)>,
    /// The running tasks by the instant their predicted work runs out, the
    /// latest (then the highest core) first: see [`Srpt::on_run`]. None on
    /// one core, where there is nothing to search.
    running: Option<Tournament<u128>>,
}

impl Srpt {
    /// A queue on a machine of `cores` cores.
    pub fn new(cores: usize) -> Srpt {
        Srpt {
            tree: BTreeSet::new(),
            running: (cores > 1).then(|| Tournament::new(cores)),
        }
    }

    /// `t` starts a turn on `core`, its work starting at `start` (after the
    /// switch). From then on, its remaining work at `now` is `finish − now`
    /// (while positive), where `finish = start + predicted − done` stays put
    /// while it runs: an accounting moves its `done` and its start alike. So
    /// the running tasks are ordered by remaining work once, at dispatch,
    /// and a wakeup finds the one it would preempt without scanning them.
    pub fn on_run(&mut self, core: u32, t: &Task, start: Time) {
        if let Some(running) = &mut self.running {
            let finish = start + t.predicted - t.done;
            // Inverted, as the tree keeps the minimum.
            let key = ((u64::MAX - finish) as u128) << 64 | (MAX_CPUS - 1 - core as usize) as u128;
            running.set(core, key);
        }
    }

    /// The task on `core` leaves it.
    pub fn on_stop(&mut self, core: u32) {
        if let Some(running) = &mut self.running {
            running.set(core, NONE);
        }
    }

    /// The core whose task's predicted work runs out the latest (the highest
    /// core on ties), if any task runs and the queue keeps track.
    pub fn latest(&self) -> Option<u32> {
        let key = self.running.as_ref()?.min();
        (key != NONE).then(|| (MAX_CPUS - 1 - key as u64 as usize) as u32)
    }

    /// Predicted CPU left for `t` after `done` of work: the prediction minus the
    /// work done, never below zero (a task that outlived its prediction is
    /// predicted to finish next).
    pub fn remaining(t: &Task, done: Nanos) -> Nanos {
        t.predicted.saturating_sub(done)
    }

    pub fn waiting(&self) -> usize {
        self.tree.len()
    }

    pub fn push(&mut self, slot: u32, t: &Task) {
        self.tree.insert((Self::remaining(t, t.done), t.seq, slot));
    }

    pub fn remove(&mut self, slot: u32, t: &Task) -> bool {
        self.tree.remove(&(Self::remaining(t, t.done), t.seq, slot))
    }

    pub fn pop(&mut self) -> Option<u32> {
        self.tree.pop_first().map(|e| e.2)
    }
}

/// Non-preemptive global first-in-first-out.
#[derive(Debug, Default)]
pub struct Fifo {
    queue: VecDeque<u32>,
}

impl Fifo {
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }

    pub fn push(&mut self, slot: u32) {
        self.queue.push_back(slot);
    }

    pub fn remove(&mut self, slot: u32) -> bool {
        match self.queue.iter().position(|&s| s == slot) {
            Some(i) => self.queue.remove(i).is_some(),
            None => false,
        }
    }

    pub fn pop(&mut self) -> Option<u32> {
        self.queue.pop_front()
    }
}
