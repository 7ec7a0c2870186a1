//! The cluster engine's timers: at most one of each movable kind per server
//! (its next finish, its next cold start done, its keep-alive's next
//! expiry, its waiting head's deadline), one load sample per server, one
//! publication, and one send per closed-loop client, run in the order of
//! (time, kind, index).
//!
//! The movable timers move at almost every arrival and finish (a server's
//! next finish changes whenever its processor sharing does), so they live
//! in a [`SlotHeap`] rather than an ordered set: each movable timer owns a
//! slot, which holds its entry's position, kept up to date as entries
//! move, so a timer moves in place (one sift, no allocation) and leaves
//! nothing stale behind. The heap holds exactly the pending timers.
//!
//! 1. [`Timers::set`] moves a movable timer to a new time (sifting its
//!    entry up or down), adds it, or takes it out.
//! 2. [`Timers::add`] adds a load sample, the publication or a send; an
//!    added timer added twice at one time runs once, as with a set.
//! 3. [`Timers::pop`] takes the earliest (time, kind, index) and frees its
//!    slot.

use crate::slots::{Entry, SlotHeap};
use faasched_model::Time;

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

/// The heap slot of server `server`'s movable timer of kind `kind` (its
/// rank among [`MOVABLE`]'s, as [`Timer::code`] ranks it).
fn heap_slot(server: usize, kind: usize) -> usize {
    server * MOVABLE + kind
}

impl Timer {
    /// The heap slot of a movable timer; `None` for the others, which are
    /// only ever added and popped.
    fn slot(self) -> Option<usize> {
        let (s, kind) = match self {
            Timer::Finish(s) => (s, 0),
            Timer::Ready(s) => (s, 1),
            Timer::Expire(s) => (s, 2),
            Timer::Wait(s) => (s, 3),
            Timer::Sample(_) | Timer::Publish | Timer::Send(_) => return None,
        };
        Some(heap_slot(s as usize, kind))
    }
}

impl Timer {
    /// The timer as the low 64 bits of a heap key: kind (the variant's
    /// rank) above index, so that keys order as timers do.
    fn code(self) -> u64 {
        let (kind, index) = match self {
            Timer::Finish(s) => (0, s),
            Timer::Ready(s) => (1, s),
            Timer::Expire(s) => (2, s),
            Timer::Wait(s) => (3, s),
            Timer::Sample(s) => (4, s),
            Timer::Publish => (5, 0),
            Timer::Send(c) => (6, c),
        };
        (kind << 32) | u64::from(index)
    }

    /// The timer of [`Timer::code`] `code`.
    fn decode(code: u64) -> Timer {
        let index = code as u32;
        match code >> 32 {
            0 => Timer::Finish(index),
            1 => Timer::Ready(index),
            2 => Timer::Expire(index),
            3 => Timer::Wait(index),
            4 => Timer::Sample(index),
            5 => Timer::Publish,
            _ => Timer::Send(index),
        }
    }
}

/// A heap entry: time in the high 64 bits, [`Timer::code`] in the low, so
/// that one integer comparison orders entries by (time, kind, index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key(u128);

impl Key {
    fn new(at: Time, timer: Timer) -> Key {
        Key((u128::from(at) << 64) | u128::from(timer.code()))
    }

    fn at(self) -> Time {
        (self.0 >> 64) as Time
    }

    fn timer(self) -> Timer {
        Timer::decode(self.0 as u64)
    }
}

impl Entry for Key {
    /// A movable timer's slot, read off the code without decoding it.
    #[inline(always)]
    fn slot(&self) -> Option<usize> {
        let code = self.0 as u64;
        let kind = (code >> 32) as usize;
        (kind < MOVABLE).then(|| heap_slot(code as u32 as usize, kind))
    }
}

/// Pending timers, earliest first (module docs).
#[derive(Debug)]
pub(crate) struct Timers {
    /// Each server's movable timers in slots of their own.
    heap: SlotHeap<Key>,
}

impl Timers {
    /// No timers, for a cluster of `servers` servers.
    pub(crate) fn new(servers: usize) -> Timers {
        Timers {
            heap: SlotHeap::new(servers * MOVABLE),
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
        self.heap.push(Key::new(at, timer));
    }

    /// Moves movable `timer` to `at` (`None`: off).
    ///
    /// # Panics
    ///
    /// If `timer` is not movable, or names a server beyond
    /// [`Timers::new`]'s.
    pub(crate) fn set(&mut self, timer: Timer, at: Option<Time>) {
        let slot = timer.slot().expect("only movable timers are set");
        self.heap.set(slot, at.map(|at| Key::new(at, timer)));
    }

    /// When the next timer is due.
    pub(crate) fn next_at(&self) -> Option<Time> {
        self.heap.peek().map(|k| k.at())
    }

    /// The next timer, left pending.
    pub(crate) fn peek(&self) -> Option<Timer> {
        self.heap.peek().map(|k| k.timer())
    }

    /// Whether any server has a movable timer pending.
    pub(crate) fn any_movable(&self) -> bool {
        self.heap.any_set()
    }

    /// The next timer and its time; a movable one is off once popped.
    pub(crate) fn pop(&mut self) -> Option<(Time, Timer)> {
        let top = self.heap.pop()?;
        while self.heap.peek() == Some(&top) {
            self.heap.pop();
        }
        Some((top.at(), top.timer()))
    }

    /// Entries in the heap.
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
    fn a_timer_moved_many_times_holds_one_entry() {
        let mut t = Timers::new(2);
        t.set(Timer::Finish(1), Some(1));
        for at in 0..10_000 {
            t.set(Timer::Finish(0), Some(1_000_000 - at));
        }
        assert_eq!(t.entries(), 2);
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
                prop_assert_eq!(heap.entries(), model.set.len());
            }
            let rest: Vec<_> = std::iter::from_fn(|| heap.pop()).collect();
            let expected: Vec<_> = std::iter::from_fn(|| model.pop()).collect();
            prop_assert_eq!(rest, expected);
        }
    }
}
