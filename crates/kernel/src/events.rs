//! The kernel model's event queue, fully ordered: by time, and at one
//! instant one-shot events first, in the order they were scheduled, then core
//! timers, by core.
//!
//! Two structures:
//!
//! - **core timers**: each core has at most one pending decision, which is
//!   re-armed far more often than it fires. They live in a [`Tournament`], so
//!   re-arming or cancelling is an O(log cores) update in place and nothing
//!   stale is ever left behind to pop. A fired timer stays in place until its
//!   handler re-arms or disarms the core, which it always does (a busy core is
//!   armed, an idle one is not), so handling a decision costs one update, not
//!   two. Simultaneous timers fire by core, not in the order they were armed:
//!   a timer is then a 64-bit key, time and core, which the tree compares and
//!   selects in one instruction each, where a sequence number would take 128
//!   bits, two of each a level of the climb, the hottest loop of a run (-2.9%
//!   instructions in `bench sim`'s (b));
//! - **one-shot events** (I/O completions, fair-server timers), which always
//!   fire once scheduled: a binary heap, by time then a sequence number.
//!
//! One-shot events come before core timers at the same instant, so that a
//! core deciding at that instant sees the wakeups (I/O completions) and
//! fair-server turns due then.

use crate::config::{MAX_ALPS_WAIT_LIMIT, MAX_FAIR_SERVER_PERIOD};
use crate::tournament::{Key, Tournament};
use faasched_model::{SEC, TIME_LIMIT, Time};
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
/// high `64 - CORE_BITS` bits, the core in the low [`CORE_BITS`] bits. Cores
/// are unique, so the order is by `(time, core)`.
type Timer = u64;

/// No timer: after every real one.
const NONE: Timer = <Timer as Key>::NONE;

/// Bits of a [`Timer`] holding the core (enough for `MAX_CPUS`).
const CORE_BITS: u32 = 8;

/// Instants of events must be below this, 2^56 − 1 ns (about 2.3 years), to
/// fit a [`Timer`] beside the core and stay apart from [`NONE`]. Checked in
/// debug builds only: the engine stops at [`RUN_LIMIT`], which keeps every
/// instant it arms below it.
const EVENT_LIMIT: Time = (1 << (64 - CORE_BITS)) - 1;

/// The latest instant a run may simulate (about 1.7 years): the engine
/// handles no event after it (`faasched_sim` reports an error instead). From
/// an instant up to it, the kernel arms events at most a phase (at most
/// [`TIME_LIMIT`] long), a context switch and a tick (each at most 1 s), a
/// fair-server period (at most [`MAX_FAIR_SERVER_PERIOD`]), an ALPS wait limit
/// (at most [`MAX_ALPS_WAIT_LIMIT`]) or a watch lag
/// (at most 1 s) ahead: an hour of margin covers the durations, so every
/// event stays below [`EVENT_LIMIT`].
pub const RUN_LIMIT: Time = EVENT_LIMIT - TIME_LIMIT - 3_600 * SEC;

const _: () = assert!(
    MAX_FAIR_SERVER_PERIOD + 3 * SEC < 3_600 * SEC
        && MAX_ALPS_WAIT_LIMIT + 3 * SEC < 3_600 * SEC
        && RUN_LIMIT > 2 * TIME_LIMIT
);

/// No core: [`Events::fired`] when no fired timer awaits its re-arm.
const NO_CORE: u32 = u32::MAX;

/// The core of a timer.
fn core_of(timer: Timer) -> u32 {
    timer as u32 & ((1 << CORE_BITS) - 1)
}

/// Min-queue of events by time, then scheduling order.
#[derive(Debug)]
pub struct Events {
    /// The cores' pending timers.
    timers: Tournament<Timer>,
    /// The core whose timer fired and was not yet re-armed or disarmed, or
    /// [`NO_CORE`], to check that its handler moved it (debug builds only:
    /// kept up to date in release, it cost 0.2% of the instructions).
    fired: u32,
    once: BinaryHeap<Reverse<(Time, u64, Ev)>>,
    /// The one-shot events' sequence number, their order at one instant.
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
            fired: NO_CORE,
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

    /// Core `core`'s timer at `at`; notes that a fired one was moved.
    #[inline]
    fn timer(&mut self, core: u32, at: Time) -> Timer {
        debug_assert!(core < 1 << CORE_BITS, "core {core}");
        debug_assert!(at < EVENT_LIMIT, "timer at {at} ns");
        self.moved(core);
        at << CORE_BITS | core as u64
    }

    /// Cancels core `core`'s pending timer, if any.
    pub fn disarm(&mut self, core: u32) {
        self.moved(core);
        self.timers.set(core, NONE);
    }

    /// Core `core`'s timer was re-armed or disarmed (debug builds only).
    #[inline(always)]
    fn moved(&mut self, core: u32) {
        if cfg!(debug_assertions) && self.fired == core {
            self.fired = NO_CORE;
        }
    }

    /// Schedules a one-shot `ev` (not [`Ev::Core`]) at `at`.
    pub fn push(&mut self, at: Time, ev: Ev) {
        debug_assert!(!matches!(ev, Ev::Core(_)), "core timers are armed");
        debug_assert!(at < EVENT_LIMIT, "{ev:?} at {at} ns");
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

    /// The earliest event without removing it: a one-shot event if it is
    /// due no later than the earliest core timer.
    pub fn peek(&self) -> Option<(Time, Ev)> {
        debug_assert!(!self.unsettled, "timers armed but not settled");
        debug_assert!(
            self.fired == NO_CORE,
            "core {}'s fired timer was neither re-armed nor disarmed",
            self.fired
        );
        let timer = self.timers.min();
        // With no timer, `at` is `EVENT_LIMIT`, after every one-shot event.
        let at = timer >> CORE_BITS;
        match self.once.peek() {
            Some(&Reverse((t, _, ev))) if t <= at => Some((t, ev)),
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
            Ev::Core(core) => {
                if cfg!(debug_assertions) {
                    self.fired = core;
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
        /// one-shot events, all popped by time, then one-shot events in
        /// scheduling order, then timers by core. Five cores of a small
        /// machine or of a large one (both tree depths).
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
                        // At one instant, one-shot events in order, then
                        // timers by core.
                        let order = |&(_, (at, seq, ev)): &(usize, (Time, u64, Ev))| match ev {
                            Ev::Core(core) => (at, 1, u64::from(core)),
                            Ev::IoDone(_) | Ev::FairServer(_) => (at, 0, seq),
                        };
                        let first = naive.iter().copied().enumerate().min_by_key(order);
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
