//! Open-loop Poisson requests of a [`Workload`], seeded and streamed.
//!
//! 1. Gaps between arrivals are exponential at the asked rate, in whole ns
//!    (`⌊E·θ⌋` with θ chosen so the mean gap is exact even when it is a
//!    few ns); the first request arrives one gap after time 0.
//! 2. Each request's function is drawn by the workload's request shares,
//!    then its work from that function's distribution.
//! 3. Its relative deadline comes from [`Deadlines`] and its own work.
//! 4. Its estimate comes from [`Estimate`], drawn from a generator of its
//!    own: a seed gives the same arrivals, functions and work whatever the
//!    estimate error, so runs that differ only in it compare like with like.
//!
//! Ids are 0, 1, 2, ... in arrival order.

use super::builtin::Workload;
use super::deadline::{Deadline, Deadlines};
use super::estimate::{Estimate, estimate_rng};
use crate::{Error, Result};
use faasched_model::node::{Request, RequestId};
use faasched_model::{Function, Nanos, SEC, TIME_LIMIT, Time};
use rand::{Rng, SeedableRng};
use rand_distr::Exp1;
use rand_pcg::Pcg64Mcg;
use std::iter::FusedIterator;

/// Highest arrival rate: one request per ns on average.
pub const MAX_RATE_PER_S: f64 = SEC as f64;

/// How many requests a stream holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    /// Every request arriving before this time (from 0).
    Duration(Nanos),
    /// This many requests.
    Count(u64),
}

/// Everything that fixes a stream of a workload's requests.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Mean arrival rate, requests per second: finite, above 0, at most
    /// [`MAX_RATE_PER_S`].
    pub rate_per_s: f64,
    /// Where the stream ends.
    pub length: Length,
    /// Seed of every random draw.
    pub seed: u64,
    /// Relative deadlines asked for; overrides must name functions of the
    /// workload; by default the workload's deadline factor × work.
    pub deadlines: Deadlines,
    /// What the estimates are.
    pub estimate: Estimate,
}

/// A function ready to draw from.
#[derive(Clone, Debug)]
struct Drawn {
    function: Function,
    /// Request share of this function and every earlier one.
    cumulative: f64,
    deadline: Deadline,
}

/// A workload's requests, streamed in arrival order; memory does not grow
/// with the length.
#[derive(Clone, Debug)]
pub struct Requests {
    workload: Workload,
    functions: Vec<Drawn>,
    rng: Pcg64Mcg,
    estimate_rng: Pcg64Mcg,
    estimate: Estimate,
    gap_scale: f64,
    length: Length,
    now: Time,
    next_id: u64,
}

impl Workload {
    /// The requests of this workload under `params`. Errors name the
    /// parameter: a rate not finite, not above 0 or above
    /// [`MAX_RATE_PER_S`], a duration or count of 0, a count that would
    /// outlast the clock at this rate, or a deadline override naming no
    /// function of the workload.
    pub fn requests(&self, params: &Params) -> Result<Requests> {
        let rate = params.rate_per_s;
        if !(rate.is_finite() && rate > 0.0 && rate <= MAX_RATE_PER_S) {
            return Err(Error::invalid(
                "rate",
                format!("must be above 0 and at most {MAX_RATE_PER_S:e} requests/s, got {rate:?}"),
            ));
        }
        let mean_gap = SEC as f64 / rate;
        match params.length {
            Length::Duration(0) | Length::Count(0) => {
                return Err(Error::invalid("length", "must be above 0"));
            }
            Length::Duration(d) if d > TIME_LIMIT => {
                return Err(Error::invalid(
                    "duration",
                    format!("must be at most {} s", TIME_LIMIT / SEC),
                ));
            }
            // Twice the expected span: the chance a Poisson stream runs past
            // that is nil, and arrivals saturate rather than wrap anyway.
            Length::Count(n) if 2.0 * mean_gap * n as f64 > TIME_LIMIT as f64 => {
                return Err(Error::invalid(
                    "count",
                    format!(
                        "{n} requests at {rate} requests/s would span about {:.3e} s, past the \
                         clock's limit: ask for fewer or a higher rate",
                        mean_gap * n as f64 / SEC as f64
                    ),
                ));
            }
            _ => {}
        }
        self.validate()?;
        let names: Vec<&str> = self.functions.iter().map(|f| f.name).collect();
        params.deadlines.check_names(&names)?;
        let table = self.function_table();
        let mut cumulative = 0.0;
        let functions = self
            .functions
            .iter()
            .zip(table.iter())
            .map(|(mix, function)| {
                cumulative += mix.share;
                Drawn {
                    function: function.clone(),
                    cumulative,
                    deadline: params
                        .deadlines
                        .for_function(mix.name)
                        .unwrap_or(Deadline::Factor(self.deadline_factor)),
                }
            })
            .collect();
        Ok(Requests {
            workload: *self,
            functions,
            rng: Pcg64Mcg::seed_from_u64(params.seed),
            estimate_rng: estimate_rng(params.seed),
            estimate: params.estimate,
            gap_scale: 1.0 / (1.0 / mean_gap).ln_1p(),
            length: params.length,
            now: 0,
            next_id: 0,
        })
    }
}

impl Requests {
    /// The workload the requests come from.
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// The functions requests invoke: the i-th is `FunctionId(i)`.
    pub fn functions(&self) -> impl Iterator<Item = &Function> {
        self.functions.iter().map(|d| &d.function)
    }
}

impl Iterator for Requests {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if let Length::Count(n) = self.length
            && self.next_id == n
        {
            return None;
        }
        let e: f64 = self.rng.sample(Exp1);
        let arrival = self.now.saturating_add((e * self.gap_scale) as Nanos);
        if let Length::Duration(d) = self.length
            && arrival >= d
        {
            // Stay ended: a later call must not draw again.
            self.length = Length::Count(self.next_id);
            return None;
        }
        self.now = arrival;
        let u: f64 = self.rng.random();
        let drawn = self
            .functions
            .iter()
            .find(|d| u < d.cumulative)
            .unwrap_or_else(|| &self.functions[self.functions.len() - 1]);
        let mix = self.workload.functions[drawn.function.id.0 as usize];
        let work = mix.work.sample(&mut self.rng);
        let id = RequestId(self.next_id);
        self.next_id += 1;
        Some(Request {
            id,
            function: drawn.function.clone(),
            arrival,
            work,
            deadline: drawn.deadline.of(work),
            estimate: self.estimate.of(work, &mut self.estimate_rng),
        })
    }
}

impl FusedIterator for Requests {}
