//! The kernel model's event queue: one binary heap, fully ordered by
//! `(time, sequence)` so simultaneous events pop in the order they were pushed.

use faasched_model::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// An internal kernel event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ev {
    /// A core's next decision point (phase end, slice expiry tick, CPU watch,
    /// end of a fair-server turn). Stale when the core's generation moved on.
    Core { core: u32, epoch: u64 },
    /// A blocked task's I/O completes.
    IoDone { slot: u32 },
    /// A core's fair-server timer. Stale when the core's server generation moved on.
    FairServer { core: u32, epoch: u64 },
}

/// Min-heap of events by time, then insertion order.
#[derive(Debug, Default)]
pub struct Events {
    heap: BinaryHeap<Reverse<(Time, u64, Ev)>>,
    seq: u64,
}

impl Events {
    /// Schedules `ev` at `at`.
    pub fn push(&mut self, at: Time, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    /// The earliest event without removing it.
    pub fn peek(&self) -> Option<(Time, Ev)> {
        self.heap.peek().map(|Reverse((t, _, e))| (*t, *e))
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(Time, Ev)> {
        self.heap.pop().map(|Reverse((t, _, e))| (t, e))
    }
}
