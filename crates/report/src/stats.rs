//! What every level's metrics share: the [`Stats`] of a quantity over a
//! scope, and the fixed point slowdowns are recorded in.
//!
//! Percentiles are nearest-rank: the p-th percentile of n values is the
//! value of rank ⌈p·n/100⌉ (at least 1) in ascending order, so p99.9 of 1000
//! values is the 999th and of 100 values the largest.

use crate::histogram::Histogram;
use faasched_model::Nanos;
use serde::{Deserialize, Serialize};

/// Slowdown fixed point: a slowdown of 1.0 is recorded as this, so that a
/// ratio goes into a [`Histogram`] of integers to 10⁻⁶.
pub(crate) const SLOWDOWN_ONE: u64 = 1_000_000;

/// ⌊`time` · 10⁶ / `demand`⌋, `demand` taken as at least 1 ns, saturating:
/// a slowdown in [`SLOWDOWN_ONE`]s.
#[inline]
pub(crate) fn slowdown_fixed(time: Nanos, demand: Nanos) -> u64 {
    let demand = demand.max(1);
    match time.checked_mul(SLOWDOWN_ONE) {
        // Times below ~5 h: a plain u64 division, the hot path.
        Some(scaled) => scaled / demand,
        None => {
            let fixed = u128::from(time) * u128::from(SLOWDOWN_ONE) / u128::from(demand);
            u64::try_from(fixed).unwrap_or(u64::MAX)
        }
    }
}

/// Statistics of one quantity over a non-empty scope, in the unit its level
/// reports it in (each level's docs say which).
///
/// Mean and max are exact (up to the f64 conversion); percentiles are
/// nearest-rank, from a histogram (within its 0.049%) or exact from sorted
/// values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Arithmetic mean.
    pub mean: f64,
    /// 50th percentile.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

impl Stats {
    /// The statistics of `h`'s values divided by `scale` (ns → ms, a fixed
    /// point → its ratio); `None` if it is empty.
    pub(crate) fn of(h: &Histogram, scale: f64) -> Option<Stats> {
        let q = |pm| h.quantile_per_mille(pm).map(|v| v as f64 / scale);
        Some(Stats {
            mean: h.mean()? / scale,
            p50: q(500)?,
            p90: q(900)?,
            p99: q(990)?,
            p999: q(999)?,
            max: h.max()? as f64 / scale,
        })
    }

    /// The exact statistics of `sorted` (ascending); `None` if it is empty.
    pub(crate) fn of_sorted(sorted: &[f64]) -> Option<Stats> {
        let n = sorted.len();
        let max = *sorted.last()?;
        let rank = |per_mille: usize| sorted[(per_mille * n).div_ceil(1000).max(1) - 1];
        Some(Stats {
            mean: sorted.iter().sum::<f64>() / n as f64,
            p50: rank(500),
            p90: rank(900),
            p99: rank(990),
            p999: rank(999),
            max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::SEC;

    #[test]
    fn slowdown_fixed_point_rounds_down_and_saturates_on_both_paths() {
        assert_eq!(slowdown_fixed(3, 3), 1_000_000);
        assert_eq!(slowdown_fixed(22, 15), 1_466_666);
        assert_eq!(slowdown_fixed(5, 0), 5_000_000);
        // 10 h over 1 h of demand overflows u64 when scaled: the u128 path.
        let hour = 3600 * SEC;
        assert_eq!(slowdown_fixed(10 * hour, hour), 10_000_000);
        assert_eq!(slowdown_fixed(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn sorted_percentiles_are_nearest_rank() {
        let values: Vec<f64> = (1..=200).map(f64::from).collect();
        let s = Stats::of_sorted(&values).unwrap();
        assert_eq!((s.p50, s.p99, s.p999, s.max), (100.0, 198.0, 200.0, 200.0));
        assert_eq!(s.mean, 100.5);
        assert_eq!(Stats::of_sorted(&[]), None);
    }
}
