//! What the cluster's open-loop streams share: a weighted choice of function
//! and a homogeneous Poisson stream over it.

use super::table::FunctionTable;
use crate::node::{Length, MAX_RATE_PER_S};
use crate::{Error, Result};
use faasched_model::cluster::{Invocation, InvocationId};
use faasched_model::{FunctionId, Nanos, SEC, TIME_LIMIT, Time};
use rand::{Rng, SeedableRng};
use rand_distr::Exp1;
use rand_pcg::Pcg64;
use std::iter::FusedIterator;

/// A choice of function in proportion to per-function weights (rates,
/// Locust weights, counts): `FunctionId(i)` has weight `weights[i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Weights {
    weights: Vec<f64>,
    /// Running sums of the weights, the last one their total.
    cumulative: Vec<f64>,
}

impl Weights {
    /// Weights for `FunctionId(0..weights.len())`. Errors: none, one not
    /// finite or below 0, or all 0.
    pub fn new(weights: &[f64]) -> Result<Weights> {
        if let Some((i, w)) = weights
            .iter()
            .enumerate()
            .find(|(_, w)| !(w.is_finite() && **w >= 0.0))
        {
            return Err(Error::invalid(
                "weights",
                format!("function {i} has weight {w:?}, not finite and at least 0"),
            ));
        }
        let mut total = 0.0;
        let cumulative: Vec<f64> = weights
            .iter()
            .map(|w| {
                total += w;
                total
            })
            .collect();
        if !(total > 0.0 && total.is_finite()) {
            return Err(Error::invalid(
                "weights",
                format!("they sum to {total:?}: at least one must be above 0, the sum finite"),
            ));
        }
        Ok(Weights {
            weights: weights.to_vec(),
            cumulative,
        })
    }

    /// `Ok` if there is exactly one weight per function of `table`, the
    /// streams' precondition; else an error naming `weights`.
    pub fn check_covers(&self, table: &FunctionTable) -> Result<()> {
        if self.len() == table.len() {
            return Ok(());
        }
        Err(Error::invalid(
            "weights",
            format!(
                "{} weights for a table of {} functions",
                self.len(),
                table.len()
            ),
        ))
    }

    /// The weights, by function id.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// Their sum.
    pub fn total(&self) -> f64 {
        self.cumulative.last().copied().unwrap_or(0.0)
    }

    /// How many functions.
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// Whether there are none (never, for weights [`Weights::new`] made).
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }

    /// The function whose share of the total holds `x`, a point in
    /// `[0, total)`: each function with probability weight / total when `x` is
    /// uniform; never one of weight 0.
    pub fn pick_at(&self, x: f64) -> FunctionId {
        let i = self.cumulative.partition_point(|&c| c <= x);
        // x at or past the total (rounding): the last function with weight.
        let i = if i < self.len() {
            i
        } else {
            self.weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
        };
        FunctionId(i as u32)
    }

    /// A function drawn in proportion to the weights.
    pub fn pick<R: Rng + ?Sized>(&self, rng: &mut R) -> FunctionId {
        self.pick_at(rng.random::<f64>() * self.total())
    }

    /// The `n` functions of the highest weight, highest first (ties: lower
    /// id first).
    pub fn top(&self, n: usize) -> Vec<FunctionId> {
        let mut ids: Vec<usize> = (0..self.len()).collect();
        ids.sort_by(|&a, &b| self.weights[b].total_cmp(&self.weights[a]).then(a.cmp(&b)));
        ids.into_iter()
            .take(n)
            .map(|i| FunctionId(i as u32))
            .collect()
    }
}

/// Checks that `length` is not empty and that a stream at `rate_per_s`
/// stays within the clock.
pub(super) fn check_length(length: Length, rate_per_s: f64) -> Result<()> {
    if !(rate_per_s.is_finite() && rate_per_s > 0.0 && rate_per_s <= MAX_RATE_PER_S) {
        return Err(Error::invalid(
            "rate",
            format!(
                "must be above 0 and at most {MAX_RATE_PER_S:e} invocations/s, got {rate_per_s:?}"
            ),
        ));
    }
    let mean_gap = SEC as f64 / rate_per_s;
    match length {
        Length::Duration(0) | Length::Count(0) => Err(Error::invalid("length", "must be above 0")),
        Length::Duration(d) if d > TIME_LIMIT => Err(Error::invalid(
            "duration",
            format!("must be at most {} s", TIME_LIMIT / SEC),
        )),
        // Twice the expected span: a Poisson stream is all but sure to end
        // before it.
        Length::Count(n) if 2.0 * mean_gap * n as f64 > TIME_LIMIT as f64 => Err(Error::invalid(
            "count",
            format!(
                "{n} invocations at {rate_per_s} invocations/s would span about {:.3e} s, past \
                 the clock's limit: ask for fewer",
                mean_gap * n as f64 / SEC as f64
            ),
        )),
        _ => Ok(()),
    }
}

/// An open-loop Poisson stream: exponential gaps at a total rate, each
/// invocation's function drawn by [`Weights`], its work the function's warm
/// time. Ids 0, 1, 2, ... in arrival order; the first arrives one gap after
/// 0; memory does not grow with the length.
#[derive(Clone, Debug)]
pub struct OpenLoop {
    weights: Weights,
    warm: Vec<Nanos>,
    rng: Pcg64,
    mean_gap_ns: f64,
    length: Length,
    now: Time,
    next_id: u64,
}

impl OpenLoop {
    /// `rate_per_s` invocations per second of `table`'s functions, chosen by
    /// `weights` (one per function of the table), until `length`, drawn from
    /// `seed`. Errors name the parameter.
    pub fn new(
        table: &FunctionTable,
        weights: Weights,
        rate_per_s: f64,
        length: Length,
        seed: u64,
    ) -> Result<OpenLoop> {
        weights.check_covers(table)?;
        check_length(length, rate_per_s)?;
        Ok(OpenLoop {
            weights,
            warm: table.profiles().iter().map(|p| p.warm).collect(),
            rng: Pcg64::seed_from_u64(seed),
            mean_gap_ns: SEC as f64 / rate_per_s,
            length,
            now: 0,
            next_id: 0,
        })
    }

    /// The weights functions are drawn by.
    pub fn weights(&self) -> &Weights {
        &self.weights
    }
}

impl Iterator for OpenLoop {
    type Item = Invocation;

    fn next(&mut self) -> Option<Invocation> {
        if let Length::Count(n) = self.length
            && self.next_id == n
        {
            return None;
        }
        let e: f64 = self.rng.sample(Exp1);
        let arrival = self
            .now
            .saturating_add((e * self.mean_gap_ns).round() as Nanos);
        if let Length::Duration(d) = self.length
            && arrival >= d
        {
            // Stay ended: a later call must not draw again.
            self.length = Length::Count(self.next_id);
            return None;
        }
        self.now = arrival;
        let function = self.weights.pick(&mut self.rng);
        let id = InvocationId(self.next_id);
        self.next_id += 1;
        Some(Invocation {
            id,
            function,
            arrival,
            work: self.warm[function.0 as usize],
        })
    }
}

impl FusedIterator for OpenLoop {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_skip_zero_weights_and_stay_in_range() {
        let w = Weights::new(&[0.0, 1.0, 0.0, 3.0, 0.0]).unwrap();
        assert_eq!(w.pick_at(0.0), FunctionId(1));
        assert_eq!(w.pick_at(0.999), FunctionId(1));
        assert_eq!(w.pick_at(1.0), FunctionId(3));
        assert_eq!(w.pick_at(4.0), FunctionId(3));
        assert_eq!(w.pick_at(9.0), FunctionId(3));
        assert_eq!(w.top(2), [FunctionId(3), FunctionId(1)]);
        assert!(Weights::new(&[0.0]).is_err());
        assert!(Weights::new(&[]).is_err());
        assert!(Weights::new(&[1.0, f64::NAN]).is_err());
        assert!(Weights::new(&[1.0, -1.0]).is_err());
    }
}
