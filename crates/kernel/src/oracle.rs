//! The sim-only queues: SRPT on (predicted) remaining CPU, and a global FIFO.

use crate::task::Task;
use faasched_model::Nanos;
use std::collections::{BTreeSet, VecDeque};

/// Preemptive shortest remaining processing time on predictions.
#[derive(Debug, Default)]
pub struct Srpt {
    tree: BTreeSet<(Nanos, u64, u32)>,
}

impl Srpt {
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
