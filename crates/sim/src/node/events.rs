//! The node engine's pending events: a heap by (time, sequence), so events
//! due at the same instant run in the order they were scheduled. Two heaps,
//! merged at every pop by their tops:
//!
//! - a worker's finish or tick owns the worker's slot in a [`SlotHeap`]:
//!   the next one scheduled replaces it in place, where it would have gone
//!   stale (its plan number passed) and been popped for nothing. A request
//!   preempted every quantum would otherwise leave one such entry per
//!   preemption, each waiting until the instant it would have finished;
//! - every other event, which fires once scheduled or is rarely stale, in
//!   a plain binary heap, whose pops need no positions kept.

use crate::slots::{self, SlotHeap};
use faasched_model::Time;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

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
    /// The workers' finishes and ticks, one slot each.
    timers: SlotHeap<Entry>,
    /// Every other event.
    once: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

impl Events {
    /// No events, for a node of `workers` workers.
    pub(crate) fn new(workers: usize) -> Events {
        Events {
            timers: SlotHeap::new(workers),
            once: BinaryHeap::new(),
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
            Some(w) => self.timers.set(w, Some(e)),
            None => self.once.push(Reverse(e)),
        }
    }

    /// The earlier of the two heaps' tops: whether it is a timer.
    fn timer_first(&self) -> Option<bool> {
        match (self.timers.peek(), self.once.peek()) {
            (None, None) => None,
            (Some(t), Some(Reverse(o))) => Some(t < o),
            (t, _) => Some(t.is_some()),
        }
    }

    /// When the next event is due.
    pub(crate) fn next_at(&self) -> Option<Time> {
        match self.timer_first()? {
            true => self.timers.peek().map(Entry::at),
            false => self.once.peek().map(|Reverse(e)| e.at()),
        }
    }

    /// The next event and its time.
    pub(crate) fn pop(&mut self) -> Option<(Time, Event)> {
        let e = match self.timer_first()? {
            true => self.timers.pop(),
            false => self.once.pop().map(|Reverse(e)| e),
        }?;
        Some((e.at(), e.event))
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
