//! The cluster engine's timers: at most one of each movable kind per server
//! (its next finish, its next cold start done, its keep-alive's next
//! expiry, its waiting head's deadline), one load sample per server, one
//! publication, and one send per closed-loop client, run in the order of
//! (time, kind, index).
//!
//! The movable timers move at almost every arrival and finish (a server's
//! next finish changes whenever its processor sharing does), so they live
//! in a binary heap with lazy deletion rather than an ordered set:
//!
//! 1. Moving a timer writes its new time in its slot ([`Timers::set`]),
//!    with the slot's next generation, and pushes a heap entry carrying
//!    both; the entry of its old time stays in the heap, stale: an entry of
//!    a movable timer is current only while its slot holds its time and
//!    generation, so a slot has at most one current entry even when the
//!    timer moved away and back to the same time.
//! 2. The heap's top is never stale: every change drops stale entries off
//!    the top, so [`Timers::next_at`] reads it as it is.
//! 3. [`Timers::pop`] takes the top and clears its slot; an added timer
//!    added twice at one time runs once, as with a set.
//! 4. Stale entries below the top leave when they reach it, or all at once
//!    when they outnumber the current ones ([`Timers::compact`], linear),
//!    so the heap stays as small as the cluster whatever the timers do.
//!
//! Generations break ties between entries of one timer at one time, of
//! which at most one is current, so the order of the current timers is
//! (time, kind, index) alone.

use faasched_model::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What a timer does when due. At one instant timers run in this order
/// (the variants' order), then by index: finishes first, so that a
/// container freed at an instant serves an arrival at that instant, and
/// load samples after the changes of their instant; memory freed at an
/// instant (a finish, an expiry) serves a waiting invocation whose deadline
/// is that instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Timer {
    /// Server `s`'s next invocation finishes.
    Finish(u32),
    /// Server `s`'s next cold start taking wall time is done: its
    /// invocation runs.
    Ready(u32),
    /// Server `s`'s keep-alive says an idle container expires.
    Expire(u32),
    /// Server `s`'s head invocation waiting for memory reaches its
    /// deadline.
    Wait(u32),
    /// Server `s`'s kernel samples its active tasks.
    Sample(u32),
    /// Every server publishes its load.
    Publish,
    /// Closed-loop client `c` sends its next invocation.
    Send(u32),
}

/// Movable timer kinds per server: [`Timer::Finish`], [`Timer::Ready`],
/// [`Timer::Expire`], [`Timer::Wait`].
const MOVABLE: usize = 4;

impl Timer {
    /// The server and the slot of a movable timer; `None` for the others,
    /// which are only ever added and popped.
    fn slot(self) -> Option<(usize, usize)> {
        match self {
            Timer::Finish(s) => Some((s as usize, 0)),
            Timer::Ready(s) => Some((s as usize, 1)),
            Timer::Expire(s) => Some((s as usize, 2)),
            Timer::Wait(s) => Some((s as usize, 3)),
            Timer::Sample(_) | Timer::Publish | Timer::Send(_) => None,
        }
    }
}

/// A movable timer's slot: when it is due (`None`: off), and how many
/// times it was moved, which tells its current heap entry from stale ones.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    at: Option<Time>,
    generation: u64,
}

/// Entries below which the heap is never compacted: a rebuild of a heap
/// this small would cost more than the stale entries it drops.
const COMPACT_FLOOR: usize = 64;

/// Pending timers, earliest first (module docs: the heap's invariants).
#[derive(Debug, Default)]
pub(crate) struct Timers {
    /// Entries (time, timer, generation); added timers have generation 0.
    heap: BinaryHeap<Reverse<(Time, Timer, u64)>>,
    /// Per server, each movable timer's slot.
    due: Vec<[Slot; MOVABLE]>,
    /// Movable timers on: the slots that hold a time.
    movable_on: usize,
    /// Added timers in the heap (they are never stale).
    fixed: usize,
}

impl Timers {
    /// No timers, for a cluster of `servers` servers.
    pub(crate) fn new(servers: usize) -> Timers {
        Timers {
            heap: BinaryHeap::new(),
            due: vec![[Slot::default(); MOVABLE]; servers],
            movable_on: 0,
            fixed: 0,
        }
    }

    /// Schedules `timer`, a load sample, the publication or a send, at
    /// `at`.
    ///
    /// # Panics
    ///
    /// If `timer` is movable: those go through [`Timers::set`].
    pub(crate) fn add(&mut self, at: Time, timer: Timer) {
        assert!(timer.slot().is_none(), "{timer:?} moves: set it");
        self.heap.push(Reverse((at, timer, 0)));
        self.fixed += 1;
    }

    /// Moves movable `timer` to `at` (`None`: off).
    ///
    /// # Panics
    ///
    /// If `timer` is not movable, or names a server beyond
    /// [`Timers::new`]'s.
    pub(crate) fn set(&mut self, timer: Timer, at: Option<Time>) {
        let (s, k) = timer.slot().expect("only movable timers are set");
        let slot = &mut self.due[s][k];
        if slot.at == at {
            return;
        }
        match (slot.at.is_some(), at.is_some()) {
            (false, true) => self.movable_on += 1,
            (true, false) => self.movable_on -= 1,
            _ => {}
        }
        slot.at = at;
        slot.generation += 1;
        if let Some(at) = at {
            self.heap.push(Reverse((at, timer, slot.generation)));
        }
        self.settle();
    }

    /// When the next timer is due.
    pub(crate) fn next_at(&self) -> Option<Time> {
        self.heap.peek().map(|&Reverse((at, _, _))| at)
    }

    /// The next timer and its time; a movable one is off once popped.
    pub(crate) fn pop(&mut self) -> Option<(Time, Timer)> {
        let Reverse(top) = self.heap.pop()?;
        let (at, timer, _) = top;
        match timer.slot() {
            Some((s, k)) => {
                self.due[s][k].at = None;
                self.movable_on -= 1;
            }
            None => {
                self.fixed -= 1;
                while self.heap.peek() == Some(&Reverse(top)) {
                    self.heap.pop();
                    self.fixed -= 1;
                }
            }
        }
        self.settle();
        Some((at, timer))
    }

    /// Whether heap entry `(at, timer, generation)` is current.
    fn current(&self, at: Time, timer: Timer, generation: u64) -> bool {
        timer.slot().is_none_or(|(s, k)| {
            let slot = self.due[s][k];
            slot.at == Some(at) && slot.generation == generation
        })
    }

    /// Restores the invariants after a change: no stale top, and no more
    /// stale entries than current ones (past [`COMPACT_FLOOR`]).
    fn settle(&mut self) {
        while let Some(&Reverse((at, timer, generation))) = self.heap.peek()
            && !self.current(at, timer, generation)
        {
            self.heap.pop();
        }
        let current = self.fixed + self.movable_on;
        if self.heap.len() > COMPACT_FLOOR.max(2 * current) {
            self.compact();
        }
    }

    /// Drops every stale entry, rebuilding the heap: linear in its size,
    /// paid for by the stale entries pushed since the last rebuild.
    fn compact(&mut self) {
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        entries.retain(|&Reverse((at, timer, generation))| self.current(at, timer, generation));
        self.heap = BinaryHeap::from(entries);
    }

    /// Entries in the heap, stale ones included.
    #[cfg(test)]
    fn entries(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn earliest_first_then_by_kind_then_index_and_moved_timers_leave_nothing() {
        let mut t = Timers::new(3);
        t.add(5, Timer::Publish);
        t.add(5, Timer::Sample(1));
        t.add(5, Timer::Sample(0));
        t.set(Timer::Finish(2), Some(9));
        t.set(Timer::Finish(2), Some(5));
        t.set(Timer::Wait(1), Some(3));
        t.set(Timer::Wait(1), None);
        let order: Vec<_> = std::iter::from_fn(|| t.pop()).collect();
        assert_eq!(
            order,
            [
                (5, Timer::Finish(2)),
                (5, Timer::Sample(0)),
                (5, Timer::Sample(1)),
                (5, Timer::Publish),
            ]
        );
        assert_eq!((t.next_at(), t.entries()), (None, 0));
    }

    #[test]
    fn a_timer_moved_away_and_back_runs_once() {
        let mut t = Timers::new(1);
        t.set(Timer::Expire(0), Some(4));
        t.set(Timer::Expire(0), Some(2));
        t.set(Timer::Expire(0), Some(4));
        assert_eq!(t.pop(), Some((4, Timer::Expire(0))));
        assert_eq!(t.pop(), None);
    }

    #[test]
    fn stale_entries_never_outnumber_current_ones_for_long() {
        let mut t = Timers::new(2);
        t.set(Timer::Finish(1), Some(1));
        for at in 0..10_000 {
            t.set(Timer::Finish(0), Some(1_000_000 - at));
        }
        assert!(t.entries() <= COMPACT_FLOOR, "{} entries", t.entries());
        assert_eq!(t.pop(), Some((1, Timer::Finish(1))));
        assert_eq!(t.pop(), Some((1_000_000 - 9_999, Timer::Finish(0))));
        assert_eq!(t.pop(), None);
    }

    /// The ordered set the heap replaces, with its slots: the reference.
    #[derive(Default)]
    struct Model {
        set: BTreeSet<(Time, Timer)>,
        due: std::collections::BTreeMap<Timer, Time>,
    }

    impl Model {
        fn set(&mut self, timer: Timer, at: Option<Time>) {
            if let Some(old) = self.due.remove(&timer) {
                self.set.remove(&(old, timer));
            }
            if let Some(at) = at {
                self.set.insert((at, timer));
                self.due.insert(timer, at);
            }
        }

        fn pop(&mut self) -> Option<(Time, Timer)> {
            let (at, timer) = self.set.pop_first()?;
            if self.due.get(&timer) == Some(&at) {
                self.due.remove(&timer);
            }
            Some((at, timer))
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Set(u32, u8, Option<Time>),
        Add(u32, bool, Time),
        Pop,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..3u32, 0..4u8, proptest::option::of(0..40u64))
                .prop_map(|(s, k, at)| Op::Set(s, k, at)),
            1 => (0..3u32, any::<bool>(), 0..40u64).prop_map(|(i, send, at)| Op::Add(i, send, at)),
            3 => Just(Op::Pop),
        ]
    }

    fn movable(s: u32, k: u8) -> Timer {
        match k {
            0 => Timer::Finish(s),
            1 => Timer::Ready(s),
            2 => Timer::Expire(s),
            _ => Timer::Wait(s),
        }
    }

    proptest! {
        #[test]
        fn the_heap_runs_timers_as_the_ordered_set_does(
            ops in proptest::collection::vec(op(), 0..400)
        ) {
            let mut heap = Timers::new(3);
            let mut model = Model::default();
            let mut added = BTreeSet::new();
            for op in ops {
                match op {
                    Op::Set(s, k, at) => {
                        heap.set(movable(s, k), at);
                        model.set(movable(s, k), at);
                    }
                    // Added timers are unique at a time, as the engine's
                    // samples, publications and sends are.
                    Op::Add(i, send, at) => {
                        let timer = if send { Timer::Send(i) } else { Timer::Sample(i) };
                        if added.insert((at, timer)) {
                            heap.add(at, timer);
                            model.set.insert((at, timer));
                        }
                    }
                    Op::Pop => {
                        let popped = heap.pop();
                        prop_assert_eq!(popped, model.pop());
                        if let Some((at, timer)) = popped {
                            added.remove(&(at, timer));
                        }
                    }
                }
                prop_assert_eq!(heap.next_at(), model.set.first().map(|&(at, _)| at));
                prop_assert!(heap.entries() <= COMPACT_FLOOR.max(2 * model.set.len()));
            }
            let rest: Vec<_> = std::iter::from_fn(|| heap.pop()).collect();
            let expected: Vec<_> = std::iter::from_fn(|| model.pop()).collect();
            prop_assert_eq!(rest, expected);
        }
    }
}
