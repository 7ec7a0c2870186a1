//! The kernel model's event queue, fully ordered by `(time, sequence)` so
//! simultaneous events pop in the order they were scheduled.
//!
//! Two structures share one sequence counter:
//!
//! - **core timers**: each core has at most one pending decision, which is
//!   re-armed far more often than it fires. They live in a [`Tournament`], so
//!   re-arming or cancelling is an O(log cores) update in place and nothing
//!   stale is ever left behind to pop. A fired timer stays in place until its
//!   handler re-arms or disarms the core, which it always does (a busy core is
//!   armed, an idle one is not), so handling a decision costs one update, not
//!   two;
//! - **one-shot events** (I/O completions, fair-server timers), which always
//!   fire once scheduled: a binary heap.

use crate::tournament::{NONE, Tournament};
use faasched_model::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// An internal kernel event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ev {
    /// A core's next decision point (phase end, slice expiry tick, CPU watch,
    /// end of a fair-server turn).
    Core(u32),
    /// A blocked task's I/O completes.
    IoDone(u32),
    /// A core's fair-server timer.
    FairServer(u32),
}

/// A pending core timer packed for one-instruction comparisons: time in the
/// high 64 bits, then the sequence number, then the core in the low
/// [`CORE_BITS`] bits. Sequence numbers are unique, so the order is by
/// `(time, sequence)`.
type Timer = u128;

/// Bits of a [`Timer`] holding the core (enough for `MAX_CPUS`).
const CORE_BITS: u32 = 8;

/// The core of a timer.
fn core_of(timer: Timer) -> u32 {
    timer as u32 & ((1 << CORE_BITS) - 1)
}

/// Min-queue of events by time, then scheduling order.
#[derive(Debug)]
pub struct Events {
    /// The cores' pending timers.
    timers: Tournament,
    /// The core timer last fired, to check that its handler moved it (debug
    /// builds only: kept up to date in release, it cost 0.2% of the
    /// instructions).
    fired: Timer,
    once: BinaryHeap<Reverse<(Time, u64, Ev)>>,
    seq: u64,
    /// Whether timers were armed without updating the tree, to check that
    /// nothing looks at it before [`Events::settle`].
    unsettled: bool,
}

impl Events {
    /// An empty queue for `cores` cores (at most `MAX_CPUS`).
    pub fn new(cores: usize) -> Events {
        Events {
            timers: Tournament::new(cores),
            fired: NONE,
            once: BinaryHeap::new(),
            seq: 0,
            unsettled: false,
        }
    }

    /// Sets core `core`'s timer to `at`, replacing any pending one. Inlined:
    /// LLVM had left it a call of its own from `Cores::arm` (-0.35%
    /// instructions).
    #[inline]
    pub fn arm(&mut self, core: u32, at: Time) {
        let timer = self.timer(core, at);
        self.timers.set(core, timer);
    }

    /// [`Events::arm`], but the tree is left to [`Events::settle`]: for many
    /// cores at once, one pass over the tree instead of a climb each.
    pub fn arm_deferred(&mut self, core: u32, at: Time) {
        let timer = self.timer(core, at);
        self.timers.set_leaf(core, timer);
        self.unsettled = true;
    }

    /// Brings the timers up to date after [`Events::arm_deferred`].
    pub fn settle(&mut self) {
        self.timers.settle();
        self.unsettled = false;
    }

    /// Core `core`'s timer at `at`, with the next sequence number.
    #[inline]
    fn timer(&mut self, core: u32, at: Time) -> Timer {
        debug_assert!(core < 1 << CORE_BITS && self.seq < 1 << (64 - CORE_BITS));
        self.seq += 1;
        let low = (self.seq << CORE_BITS) | core as u64;
        (at as u128) << 64 | low as u128
    }

    /// Cancels core `core`'s pending timer, if any.
    pub fn disarm(&mut self, core: u32) {
        self.timers.set(core, NONE);
    }

    /// Schedules a one-shot `ev` (not [`Ev::Core`]) at `at`.
    pub fn push(&mut self, at: Time, ev: Ev) {
        debug_assert!(!matches!(ev, Ev::Core(_)), "core timers are armed");
        self.seq += 1;
        self.once.push(Reverse((at, self.seq, ev)));
    }

    /// The tasks whose I/O completion is pending, in no order (for checks:
    /// O(events)).
    pub fn io_pending(&self) -> impl Iterator<Item = u32> + '_ {
        self.once
            .iter()
            .filter_map(|Reverse((_, _, ev))| match *ev {
                Ev::IoDone(slot) => Some(slot),
                Ev::Core(_) | Ev::FairServer(_) => None,
            })
    }

    /// The earliest event without removing it.
    pub fn peek(&self) -> Option<(Time, Ev)> {
        debug_assert!(!self.unsettled, "timers armed but not settled");
        let timer = self.timers.min();
        debug_assert!(
            self.fired == NONE || self.fired != self.timers.get(core_of(self.fired)),
            "a fired core timer was neither re-armed nor disarmed"
        );
        let (at, seq) = ((timer >> 64) as Time, (timer as u64) >> CORE_BITS);
        match self.once.peek() {
            Some(&Reverse((t, s, ev))) if (t, s) < (at, seq) => Some((t, ev)),
            _ if timer != NONE => Some((at, Ev::Core(core_of(timer)))),
            _ => None,
        }
    }

    /// Returns the earliest event if it is due by `bound`, and removes it
    /// unless it is a core timer: the caller must then re-arm or disarm that
    /// core before the next call.
    #[inline]
    pub fn fire_until(&mut self, bound: Time) -> Option<(Time, Ev)> {
        let first = self.peek().filter(|&(at, _)| at <= bound)?;
        match first.1 {
            Ev::Core(_) => {
                if cfg!(debug_assertions) {
                    self.fired = self.timers.min();
                }
            }
            Ev::IoDone(_) | Ev::FairServer(_) => {
                self.once.pop();
            }
        }
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a naive reference: one pending timer per core (re-arming
        /// replaces it, alone or with another before the tree is settled),
        /// one-shot events, all popped by (time, scheduling order). Five
        /// cores of a small machine or of a large one (both tree depths).
        #[test]
        fn matches_naive_reference(
            large in any::<bool>(),
            ops in prop::collection::vec((0u8..5, 0u32..5, 0u64..20), 1..200),
        ) {
            let cores = if large { 200 } else { 5 };
            let mut q = Events::new(cores);
            let mut naive: Vec<(Time, u64, Ev)> = Vec::new();
            let mut seq = 0;
            for (op, core, at) in ops {
                let core = core * cores as u32 / 5;
                match op {
                    0 => {
                        seq += 1;
                        q.arm(core, at);
                        naive.retain(|e| e.2 != Ev::Core(core));
                        naive.push((at, seq, Ev::Core(core)));
                    }
                    1 => {
                        q.disarm(core);
                        naive.retain(|e| e.2 != Ev::Core(core));
                    }
                    2 => {
                        seq += 1;
                        q.push(at, Ev::IoDone(core));
                        naive.push((at, seq, Ev::IoDone(core)));
                    }
                    3 => {
                        for (core, at) in [(core, at), ((core + 1) % cores as u32, at / 2)] {
                            seq += 1;
                            q.arm_deferred(core, at);
                            naive.retain(|e| e.2 != Ev::Core(core));
                            naive.push((at, seq, Ev::Core(core)));
                        }
                        q.settle();
                    }
                    _ => {
                        let first = naive.iter().copied().enumerate().min_by_key(|e| (e.1.0, e.1.1));
                        prop_assert_eq!(q.peek(), first.map(|e| (e.1.0, e.1.2)));
                        prop_assert_eq!(q.fire_until(Time::MAX), first.map(|e| (e.1.0, e.1.2)));
                        if let Some((i, e)) = first {
                            naive.remove(i);
                            if let Ev::Core(core) = e.2 {
                                q.disarm(core);
                            }
                        }
                    }
                }
            }
        }
    }
}
