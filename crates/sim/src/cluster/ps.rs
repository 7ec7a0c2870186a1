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

use super::cores::{Bind, Cores, Done, Job};
use super::outcome::InsideStats;
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
pub struct Ps {
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
    /// Core-time the cores were busy: ∫ min(running, cores) dt.
    busy: Nanos,
}

impl Ps {
    /// A server of `cores` cores and contention `gamma` (millionths), idle
    /// from `start`.
    pub(crate) fn new(cores: u32, gamma: u64, start: Time) -> Ps {
        Ps {
            cores,
            gamma,
            v: 0,
            last: start,
            starting: 0,
            jobs: BinaryHeap::new(),
            busy: 0,
        }
    }

    /// The virtual clock's rate as a fraction: units per ns.
    fn rate(&self) -> (u128, u128) {
        let r = self.jobs.len() as u128;
        let n = r + self.starting as u128;
        let m = r.min(self.cores as u128);
        ((m << VSHIFT) * MICRO, r * (MICRO + self.gamma as u128 * n))
    }

    /// Advances the clock to `now`.
    fn run_to(&mut self, now: Time) {
        let dt = now.saturating_sub(self.last);
        self.last = self.last.max(now);
        if dt == 0 || self.jobs.is_empty() {
            return;
        }
        let (num, den) = self.rate();
        self.v += dt as u128 * num / den;
        self.busy += dt * (self.jobs.len() as u64).min(self.cores as u64);
    }
}

impl Cores for Ps {
    fn in_flight(&self) -> u64 {
        self.jobs.len() as u64
    }

    fn set_starting(&mut self, starting: u64) {
        self.starting = starting;
    }

    fn advance(&mut self, now: Time, _bind: &mut impl Bind) -> Result<(), String> {
        self.run_to(now);
        Ok(())
    }

    /// Its virtual finish is the clock plus its work.
    fn add(&mut self, job: Job, _bind: &mut impl Bind) -> Result<(), String> {
        let finish = self.v + ((job.work as u128) << VSHIFT);
        self.jobs.push(Reverse((finish, job.id, job.slot)));
        Ok(())
    }

    /// When the lowest virtual finish is reached at the current rate;
    /// `Time::MAX` if beyond the clock.
    fn next_at(&mut self) -> Option<Time> {
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

    /// The lowest virtual finish (then id) first.
    fn pop_done(&mut self) -> Option<Done> {
        match self.jobs.peek() {
            Some(&Reverse((finish, _, slot))) if finish <= self.v => {
                self.jobs.pop();
                Some(Done {
                    slot,
                    first_run: None,
                    finish: Some(self.last),
                    inside: None,
                })
            }
            _ => None,
        }
    }

    fn busy(&self) -> Nanos {
        self.busy
    }

    fn end(&mut self) -> Result<Option<InsideStats>, String> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Start;
    use faasched_model::FunctionId;

    /// Processor sharing never asks for containers: the engine binds them
    /// as it adds work.
    struct Bound;

    impl Bind for Bound {
        fn first_run(&mut self, _slot: u32, _at: Time) -> Start {
            unreachable!("processor sharing binds no container at first run")
        }

        fn done(&mut self, _slot: u32, _at: Time) {
            unreachable!("processor sharing binds no container at first run")
        }
    }

    /// A job of `work` ns in slot `slot`.
    fn job(slot: u32, work: Nanos) -> Job {
        Job {
            slot,
            id: InvocationId(slot as u64),
            function: FunctionId(0),
            work,
            estimate: work,
            warm: work,
            memory_mb: 1,
        }
    }

    fn done(ps: &mut Ps) -> Option<u32> {
        ps.pop_done().map(|d| d.slot)
    }

    #[test]
    fn two_on_one_core_share_it_and_the_clock_rounds_against_the_job() {
        let mut ps = Ps::new(1, 0, 0);
        ps.add(job(0, 10), &mut Bound).unwrap();
        ps.add(job(1, 10), &mut Bound).unwrap();
        assert_eq!(ps.next_at(), Some(20));
        ps.advance(7, &mut Bound).unwrap();
        assert_eq!(ps.busy(), 7);
        assert_eq!(ps.next_at(), Some(20));
        assert_eq!(done(&mut ps), None);
        ps.advance(20, &mut Bound).unwrap();
        assert_eq!(
            (done(&mut ps), done(&mut ps), done(&mut ps)),
            (Some(0), Some(1), None)
        );
    }

    #[test]
    fn contention_slows_every_job() {
        // γ = 0.5, two jobs on two cores: each at 1 / (1 + 1) = 1/2.
        let mut ps = Ps::new(2, 500_000, 0);
        ps.add(job(0, 10), &mut Bound).unwrap();
        ps.add(job(1, 30), &mut Bound).unwrap();
        assert_eq!(ps.next_at(), Some(20));
        ps.advance(20, &mut Bound).unwrap();
        assert_eq!(ps.busy(), 40);
        assert_eq!(
            ps.pop_done(),
            Some(Done {
                slot: 0,
                first_run: None,
                finish: Some(20),
                inside: None
            })
        );
        // Alone: 1 / 1.5; 20 ns of work left take 30 ns.
        assert_eq!(ps.next_at(), Some(50));
        // One starting without a core: 1 / 2 again.
        ps.set_starting(1);
        assert_eq!(ps.next_at(), Some(60));
    }
}
