//! Offered load, and rescaling a workload's arrivals to a target load.
//!
//! The offered load of a workload on `cores` cores is its total CPU demand over
//! the core-time its arrivals span (docs/WORKLOADS.md):
//!
//! ```text
//! load = Σ cpu_demand / (cores × span),   span = latest arrival − earliest arrival
//! ```
//!
//! The span runs from the first arrival to the last one, so the last invocation's
//! demand counts although it arrives at the end: with few invocations the measure
//! runs high. I/O waits are not demand: they occupy no core.
//!
//! [`rescale_to_load`] stretches or squeezes the time between arrivals (every
//! arrival's distance from the earliest one is multiplied by one factor) and leaves
//! demands alone, so the mix of invocations stays what it was.

use crate::{Error, Result};
use faasched_model::{Invocation, Nanos, Phase, SEC, TIME_LIMIT, Time};

/// Offered CPU load of `invs` on `cores` cores, as a fraction (0.9 = 90 %).
///
/// Edge cases: `0.0` when the workload has no CPU demand (including an empty
/// slice); `f64::INFINITY` when it has demand but `cores` is 0 or all arrivals
/// fall on one instant. The slice need not be sorted.
pub fn offered_load(invs: &[Invocation], cores: usize) -> f64 {
    Offered::of(invs).load(cores)
}

/// What offered load is computed from, tallied one invocation at a time, so
/// that a stream need not be held to know its load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offered {
    count: u64,
    /// Total CPU demand, summed in `u128` phase by phase so that no
    /// workload, however extreme, can overflow it.
    demand: u128,
    /// Earliest and latest arrival; `None` for no invocations.
    bounds: Option<(Time, Time)>,
}

impl Offered {
    /// The tally of `invs`, in any order.
    pub fn of<'a>(invs: impl IntoIterator<Item = &'a Invocation>) -> Offered {
        let mut tally = Offered::default();
        for inv in invs {
            tally.add(inv);
        }
        tally
    }

    /// Counts `inv` in.
    pub fn add(&mut self, inv: &Invocation) {
        self.count += 1;
        self.demand += inv
            .phases
            .iter()
            .map(|p| match *p {
                Phase::Cpu(ns) => u128::from(ns),
                Phase::Io(_) => 0,
            })
            .sum::<u128>();
        let (first, last) = self.bounds.unwrap_or((inv.arrival, inv.arrival));
        self.bounds = Some((first.min(inv.arrival), last.max(inv.arrival)));
    }

    /// Invocations counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their offered load on `cores` cores (edge cases as [`offered_load`]'s).
    pub fn load(&self, cores: usize) -> f64 {
        if self.demand == 0 {
            return 0.0;
        }
        let span = self.bounds.map_or(0, |(first, last)| last - first);
        if cores == 0 || span == 0 {
            return f64::INFINITY;
        }
        self.demand as f64 / (cores as f64 * span as f64)
    }
}

/// Rescales the arrivals of `invs` so that their offered load on `cores` cores is
/// `target`, and returns the factor applied to inter-arrival times (> 1 spreads
/// arrivals out, lowering the load).
///
/// The earliest arrival stays where it is; every other arrival's distance from it
/// is multiplied by the factor and rounded to the nearest nanosecond. The new span
/// is chosen in whole nanoseconds first, and the factor is derived from it, so the
/// load is exact up to that rounding: its relative error is at most
/// 0.5 ns / new span. The scaling is monotone, so sorted arrivals stay sorted
/// (ties stay ties).
///
/// Errors ([`Error::Invalid`]): `target` not finite or ≤ 0; `cores` = 0; fewer
/// than two invocations; all arrivals on one instant; no CPU demand; a target so
/// high that the new span would be under 1 ns, or so low that an invocation
/// would end after [`TIME_LIMIT`].
pub fn rescale_to_load(invs: &mut [Invocation], cores: usize, target: f64) -> Result<f64> {
    if !target.is_finite() || target <= 0.0 {
        return Err(Error::invalid(
            "load",
            format!("{target} is not a positive number"),
        ));
    }
    if cores == 0 {
        return Err(Error::invalid("cores", "must be at least 1"));
    }
    if invs.len() < 2 {
        return Err(Error::invalid(
            "workload",
            "rescaling needs at least two invocations",
        ));
    }
    let tally = Offered::of(&*invs);
    let (first, last) = tally.bounds.unwrap_or_default();
    let span = last - first;
    if span == 0 {
        return Err(Error::invalid(
            "workload",
            "all arrivals are at one instant",
        ));
    }
    let demand = tally.demand;
    if demand == 0 {
        return Err(Error::invalid("workload", "no CPU demand to scale"));
    }
    let new_span = (demand as f64 / (cores as f64 * target)).round();
    if new_span < 1.0 || new_span > TIME_LIMIT.saturating_sub(first) as f64 {
        return Err(Error::invalid(
            "load",
            format!("{target} would need an arrival span of {new_span} ns"),
        ));
    }
    // In range: checked just above (the cast saturates at the very top anyway).
    let new_span = new_span as Nanos;
    for inv in invs.iter_mut() {
        inv.arrival = first + scale_offset(inv.arrival - first, new_span, span);
    }
    if let Some(inv) = invs.iter().find(|inv| !inv.within_time_limit()) {
        return Err(Error::invalid(
            "load",
            format!(
                "{target} would have invocation {} end after the latest instant a workload may reach ({} s)",
                inv.id,
                TIME_LIMIT / SEC
            ),
        ));
    }
    Ok(new_span as f64 / span as f64)
}

/// `offset × num / den`, rounded half up, in exact integer arithmetic.
/// Requires `offset ≤ den`, so the result is at most `num`.
fn scale_offset(offset: Nanos, num: Nanos, den: Nanos) -> Nanos {
    let scaled = (u128::from(offset) * u128::from(num) + u128::from(den / 2)) / u128::from(den);
    // offset ≤ den ⇒ scaled ≤ num, which fits.
    scaled.min(u128::from(num)) as Nanos
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_offset_is_exact_at_the_ends() {
        assert_eq!(scale_offset(0, 7, 3), 0);
        assert_eq!(scale_offset(3, 7, 3), 7);
        assert_eq!(scale_offset(u64::MAX, u64::MAX, u64::MAX), u64::MAX);
        assert_eq!(scale_offset(1, 3, 2), 2);
    }
}
