//! The cluster engine's timers: at most one of each kind per server (its
//! next finish, its next cold start done, its keep-alive's next expiry, its
//! waiting head's deadline, its next load sample), one
//! publication, and one send per closed-loop client, in a set ordered by
//! (time, kind, index). A timer that moves is taken out and put back, so
//! the set never holds a stale one and stays as small as the cluster.

use faasched_model::Time;
use std::collections::BTreeSet;

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

/// Pending timers, earliest first.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    set: BTreeSet<(Time, Timer)>,
}

impl Timers {
    /// Schedules `timer` at `at`.
    pub(crate) fn add(&mut self, at: Time, timer: Timer) {
        self.set.insert((at, timer));
    }

    /// Moves a timer whose time is kept in `slot` to `at` (`None`: off).
    pub(crate) fn reset(&mut self, slot: &mut Option<Time>, at: Option<Time>, timer: Timer) {
        if *slot == at {
            return;
        }
        if let Some(old) = slot.take() {
            self.set.remove(&(old, timer));
        }
        if let Some(at) = at {
            self.set.insert((at, timer));
        }
        *slot = at;
    }

    /// When the next timer is due.
    pub(crate) fn next_at(&self) -> Option<Time> {
        self.set.first().map(|&(at, _)| at)
    }

    /// The next timer and its time.
    pub(crate) fn pop(&mut self) -> Option<(Time, Timer)> {
        self.set.pop_first()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_by_kind_then_index_and_moved_timers_leave_nothing() {
        let mut t = Timers::default();
        t.add(5, Timer::Publish);
        t.add(5, Timer::Sample(1));
        t.add(5, Timer::Sample(0));
        let mut slot = None;
        t.reset(&mut slot, Some(9), Timer::Finish(2));
        t.reset(&mut slot, Some(5), Timer::Finish(2));
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
    }
}
