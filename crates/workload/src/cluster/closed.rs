//! CH-RLU's closed-loop clients (§6.1, Locust): each of N threads invokes a
//! function drawn by weight, waits for its response, thinks U(0, 1 s), and
//! invokes again.
//!
//! [`ClosedLoop`] is the sampler an engine drives:
//! 1. at the start, each thread calls [`ClosedLoop::next_after`] with time 0:
//!    it thinks first, so the threads do not all fire at 0;
//! 2. when a thread's invocation finishes (or is dropped) at `t`, it calls
//!    [`ClosedLoop::next_after`] with `t` for its next function and send
//!    time.
//!
//! The function is drawn at the send time, so Fig 9's bursts
//! ([`ClosedLoop::with_boosts`]) apply to the weights then in force. The
//! engine numbers the invocations and gives them their work (the function's
//! warm time, as the other streams do).

use super::bursts::Boosts;
use super::stream::Weights;
use crate::{Error, Result};
use faasched_model::{FunctionId, Nanos, SEC, Time};
use rand::Rng;

/// Locust threads for CH-RLU's low load (§6.1).
pub const LOW_LOAD_THREADS: u32 = 20;
/// Locust threads for CH-RLU's heavy load (§6.1).
pub const HEAVY_LOAD_THREADS: u32 = 120;
/// The longest think time: Locust waits "0-1 seconds" (§6.1).
pub const DEFAULT_THINK: Nanos = SEC;

/// Closed-loop clients: threads, weights, think time, bursts.
#[derive(Clone, Debug, PartialEq)]
pub struct ClosedLoop {
    threads: u32,
    weights: Weights,
    think: Nanos,
    boosts: Option<Boosts>,
}

impl ClosedLoop {
    /// `threads` clients (at least 1) drawing functions by `weights`, thinking
    /// U(0, [`DEFAULT_THINK`]).
    pub fn new(threads: u32, weights: Weights) -> Result<ClosedLoop> {
        if threads == 0 {
            return Err(Error::invalid("threads", "0: want at least 1"));
        }
        Ok(ClosedLoop {
            threads,
            weights,
            think: DEFAULT_THINK,
            boosts: None,
        })
    }

    /// The same, thinking U(0, `think`) instead (0: no think time).
    pub fn with_think(mut self, think: Nanos) -> ClosedLoop {
        self.think = think;
        self
    }

    /// The same, with Fig 9's bursts multiplying the boosted functions'
    /// weights while they last.
    pub fn with_boosts(mut self, boosts: Boosts) -> ClosedLoop {
        self.boosts = Some(boosts);
        self
    }

    /// Its bursts, if it has any.
    pub fn boosts(&self) -> Option<&Boosts> {
        self.boosts.as_ref()
    }

    /// Its threads.
    pub fn threads(&self) -> u32 {
        self.threads
    }

    /// Its weights, without bursts.
    pub fn weights(&self) -> &Weights {
        &self.weights
    }

    /// The longest think time.
    pub fn think(&self) -> Nanos {
        self.think
    }

    /// A thread whose invocation finished at `finish` (or that starts, with
    /// 0): the function it invokes next and when it sends it, finish + U(0,
    /// think) (saturating at the end of time).
    pub fn next_after<R: Rng + ?Sized>(&self, finish: Time, rng: &mut R) -> (FunctionId, Time) {
        let send = finish.saturating_add(rng.random_range(0..=self.think));
        (self.pick_at(send, rng), send)
    }

    /// A function drawn by the weights in force at `t`.
    pub fn pick_at<R: Rng + ?Sized>(&self, t: Time, rng: &mut R) -> FunctionId {
        let Some(boosts) = &self.boosts else {
            return self.weights.pick(rng);
        };
        let boosted = boosts.boosted_at(t);
        let w = self.weights.weights();
        let extra: Vec<f64> = boosted
            .iter()
            .map(|f| (boosts.spec().factor - 1.0) * w.get(f.0 as usize).copied().unwrap_or(0.0))
            .collect();
        let total = self.weights.total();
        let x = rng.random::<f64>() * (total + extra.iter().sum::<f64>());
        if x < total {
            return self.weights.pick_at(x);
        }
        let mut rest = x - total;
        for (f, e) in boosted.iter().zip(&extra) {
            if rest < *e {
                return *f;
            }
            rest -= e;
        }
        // Rounding at the very top: the last boosted function.
        boosted
            .last()
            .copied()
            .unwrap_or_else(|| self.weights.pick_at(x))
    }
}
