//! One server's cores, shared by processor sharing with each invocation
//! capped at one core, in exact integer arithmetic.
//!
//! Every invocation in flight on a server runs at the same rate, so the
//! server keeps one virtual clock: the service each of them has received
//! since the server started. An invocation that needs `w` ns of work and
//! starts when the clock reads `v` finishes when it reads `v + w`. Between
//! two changes the clock advances at
//!
//! ```text
//! rate = min(r, cores) / (r · (1 + γ·n))     per ns of real time
//! ```
//!
//! with r invocations running and n in flight (the running ones and those
//! still starting cold without taking a core).
//!
//! kept in units of 2^-16 ns, so that a run's rounding (less than one unit
//! per change, always against the invocation) stays below a nanosecond for
//! 65,536 changes; a finish is due at the first whole nanosecond by which
//! the clock has reached it.

use faasched_model::cluster::InvocationId;
use faasched_model::{Nanos, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Fraction bits of the virtual clock.
const VSHIFT: u32 = 16;

/// γ's unit: millionths.
const MICRO: u128 = 1_000_000;

/// The processor-sharing state of one server.
#[derive(Debug)]
pub(crate) struct Ps {
    cores: u32,
    /// γ in millionths.
    gamma: u64,
    /// Service each invocation in flight has received, 2^-16 ns.
    v: u128,
    /// When `v` was last advanced.
    last: Time,
    /// Invocations in flight that take no core yet (starting cold): they
    /// count in the contention term only.
    starting: u64,
    /// Invocations in flight by virtual finish, ties by id; with their
    /// slot in the engine.
    jobs: BinaryHeap<Reverse<(u128, InvocationId, u32)>>,
}

impl Ps {
    /// An idle server of `cores` cores and contention `gamma` (millionths).
    pub(crate) fn new(cores: u32, gamma: u64) -> Ps {
        Ps {
            cores,
            gamma,
            v: 0,
            last: 0,
            starting: 0,
            jobs: BinaryHeap::new(),
        }
    }

    /// Invocations in flight: running, or starting without a core.
    pub(crate) fn active(&self) -> u64 {
        self.jobs.len() as u64 + self.starting
    }

    /// How many invocations are starting without a core now (call
    /// [`Ps::advance`] to now first).
    pub(crate) fn set_starting(&mut self, starting: u64) {
        self.starting = starting;
    }

    /// The virtual clock's rate as a fraction: units per ns.
    fn rate(&self) -> (u128, u128) {
        let r = self.jobs.len() as u128;
        let n = r + self.starting as u128;
        let m = r.min(self.cores as u128);
        ((m << VSHIFT) * MICRO, r * (MICRO + self.gamma as u128 * n))
    }

    /// Advances the clock to `now`; returns the core-time the cores were
    /// busy since the last advance.
    pub(crate) fn advance(&mut self, now: Time) -> Nanos {
        let dt = now.saturating_sub(self.last);
        self.last = self.last.max(now);
        if dt == 0 || self.jobs.is_empty() {
            return 0;
        }
        let (num, den) = self.rate();
        self.v += dt as u128 * num / den;
        dt * (self.jobs.len() as u64).min(self.cores as u64)
    }

    /// Adds an invocation that needs `work` ns (call [`Ps::advance`] to
    /// now first).
    pub(crate) fn add(&mut self, slot: u32, id: InvocationId, work: Nanos) {
        let finish = self.v + ((work as u128) << VSHIFT);
        self.jobs.push(Reverse((finish, id, slot)));
    }

    /// When the next invocation finishes if nothing changes (call
    /// [`Ps::advance`] to now first); `Time::MAX` if beyond the clock.
    pub(crate) fn next_finish(&self) -> Option<Time> {
        let &Reverse((finish, _, _)) = self.jobs.peek()?;
        let left = finish.saturating_sub(self.v);
        let (num, den) = self.rate();
        let dt = left
            .checked_mul(den)
            .map(|x| x.div_ceil(num))
            .and_then(|dt| Time::try_from(dt).ok())
            .unwrap_or(Time::MAX);
        Some(self.last.saturating_add(dt))
    }

    /// The slot of an invocation whose work is done, the lowest virtual
    /// finish (then id) first.
    pub(crate) fn pop_done(&mut self) -> Option<u32> {
        match self.jobs.peek() {
            Some(&Reverse((finish, _, slot))) if finish <= self.v => {
                self.jobs.pop();
                Some(slot)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_on_one_core_share_it_and_the_clock_rounds_against_the_job() {
        let mut ps = Ps::new(1, 0);
        ps.add(0, InvocationId(0), 10);
        ps.add(1, InvocationId(1), 10);
        assert_eq!(ps.next_finish(), Some(20));
        assert_eq!(ps.advance(7), 7);
        assert_eq!(ps.next_finish(), Some(20));
        assert_eq!(ps.pop_done(), None);
        ps.advance(20);
        assert_eq!(
            (ps.pop_done(), ps.pop_done(), ps.pop_done()),
            (Some(0), Some(1), None)
        );
    }

    #[test]
    fn contention_slows_every_job() {
        // γ = 0.5, two jobs on two cores: each at 1 / (1 + 1) = 1/2.
        let mut ps = Ps::new(2, 500_000);
        ps.add(0, InvocationId(0), 10);
        ps.add(1, InvocationId(1), 30);
        assert_eq!(ps.next_finish(), Some(20));
        assert_eq!(ps.advance(20), 40);
        assert_eq!(ps.pop_done(), Some(0));
        // Alone: 1 / 1.5; 20 ns of work left take 30 ns.
        assert_eq!(ps.next_finish(), Some(50));
        // One starting without a core: 1 / 2 again.
        ps.set_starting(1);
        assert_eq!(ps.next_finish(), Some(60));
    }
}
