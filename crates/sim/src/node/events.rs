//! The node engine's pending events: a heap by (time, sequence), so events
//! due at the same instant run in the order they were scheduled. A worker's
//! finish or tick owns the worker's slot ([`SlotHeap`]): the next one
//! scheduled replaces it in place, where it would have gone stale (its
//! plan number passed) and been popped for nothing. A request preempted
//! every quantum would otherwise leave one such entry per preemption, each
//! waiting in the heap until the instant it would have finished.

use crate::slots::{self, SlotHeap};
use faasched_model::Time;
use std::cmp::Ordering;

/// Something due to happen; `w` is a worker's index over the whole node,
/// `d` a dispatcher's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// The run `plan` of worker `w` finishes its request.
    Finish { w: u32, plan: u64 },
    /// Worker `w`'s local quantum timer fires during its run `plan`.
    Tick { w: u32, plan: u64 },
    /// Sleeping worker `w` is awake.
    Wake { w: u32 },
    /// A dispatcher's signal reaches worker `w`: re-pick by the local order.
    Preempt { w: u32 },
    /// Worker `w`'s run `run` reached the dispatcher quantum.
    Quantum { w: u32, run: u64 },
    /// The dispatcher's signal to take run `run` off worker `w` arrives.
    TakeBack { w: u32, run: u64 },
    /// Dispatcher `d` finished its current step.
    Dispatched { d: u32 },
}

/// An event with its key: its time in the high 64 bits, its sequence number
/// (the order it was scheduled in) in the low 64, so that the heap orders
/// by (time, sequence) with one 128-bit comparison, where a tuple's takes a
/// branch on the times' equality.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.key == other.key
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> Ordering {
        self.key.cmp(&other.key)
    }
}

impl Entry {
    fn at(&self) -> Time {
        (self.key >> 64) as Time
    }
}

impl slots::Entry for Entry {
    /// A worker's finish or tick: the worker's slot.
    #[inline(always)]
    fn slot(&self) -> Option<usize> {
        match self.event {
            Event::Finish { w, .. } | Event::Tick { w, .. } => Some(w as usize),
            _ => None,
        }
    }
}

/// Pending events, earliest first; ties in scheduling order.
#[derive(Debug)]
pub(crate) struct Events {
    heap: SlotHeap<Entry>,
    seq: u64,
}

impl Events {
    /// No events, for a node of `workers` workers.
    pub(crate) fn new(workers: usize) -> Events {
        Events {
            heap: SlotHeap::new(workers),
            seq: 0,
        }
    }

    /// Schedules `event` at `at`; a worker's finish or tick replaces the
    /// one it had pending.
    pub(crate) fn push(&mut self, at: Time, event: Event) {
        self.seq += 1;
        let e = Entry {
            key: u128::from(at) << 64 | u128::from(self.seq),
            event,
        };
        match slots::Entry::slot(&e) {
            Some(w) => self.heap.set(w, Some(e)),
            None => self.heap.push(e),
        }
    }

    /// When the next event is due.
    pub(crate) fn next_at(&self) -> Option<Time> {
        self.heap.peek().map(Entry::at)
    }

    /// The next event and its time.
    pub(crate) fn pop(&mut self) -> Option<(Time, Event)> {
        self.heap.pop().map(|e| (e.at(), e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_in_scheduling_order() {
        let mut ev = Events::new(4);
        ev.push(5, Event::Wake { w: 0 });
        ev.push(3, Event::Wake { w: 1 });
        ev.push(5, Event::Wake { w: 2 });
        ev.push(3, Event::Wake { w: 3 });
        let order: Vec<_> = std::iter::from_fn(|| ev.pop()).collect();
        assert_eq!(
            order,
            [
                (3, Event::Wake { w: 1 }),
                (3, Event::Wake { w: 3 }),
                (5, Event::Wake { w: 0 }),
                (5, Event::Wake { w: 2 }),
            ]
        );
    }

    #[test]
    fn a_workers_finish_or_tick_replaces_its_pending_one() {
        let mut ev = Events::new(2);
        ev.push(9, Event::Finish { w: 0, plan: 1 });
        ev.push(4, Event::Wake { w: 1 });
        ev.push(7, Event::Tick { w: 0, plan: 2 });
        ev.push(2, Event::Finish { w: 1, plan: 1 });
        ev.push(8, Event::Finish { w: 0, plan: 3 });
        let order: Vec<_> = std::iter::from_fn(|| ev.pop()).collect();
        assert_eq!(
            order,
            [
                (2, Event::Finish { w: 1, plan: 1 }),
                (4, Event::Wake { w: 1 }),
                (8, Event::Finish { w: 0, plan: 3 }),
            ]
        );
    }
}
