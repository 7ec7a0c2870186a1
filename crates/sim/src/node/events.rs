//! The node engine's pending events: a binary heap by (time, sequence), so
//! events due at the same instant run in the order they were scheduled.

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

/// An event with its time and tie-breaking sequence number.
#[derive(Clone, Copy, Debug)]
struct Entry {
    at: Time,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
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
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// Pending events, earliest first; ties in scheduling order.
#[derive(Debug, Default)]
pub(crate) struct Events {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

impl Events {
    /// Schedules `event` at `at`.
    pub(crate) fn push(&mut self, at: Time, event: Event) {
        self.seq += 1;
        self.heap.push(Reverse(Entry {
            at,
            seq: self.seq,
            event,
        }));
    }

    /// When the next event is due.
    pub(crate) fn next_at(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse(e)| e.at)
    }

    /// The next event and its time.
    pub(crate) fn pop(&mut self) -> Option<(Time, Event)> {
        self.heap.pop().map(|Reverse(e)| (e.at, e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_in_scheduling_order() {
        let mut ev = Events::default();
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
}
