//! A log-bucketed histogram of `u64` values (HDR-style), for percentiles in
//! memory that does not grow with the number of values recorded.
//!
//! # Buckets and precision
//!
//! Values below 2^([`SUB_BITS`] + 1) = 2048 each have their own bucket: they are
//! exact. Above, every power-of-two range `[2^e, 2^(e+1))` is split into
//! 2^[`SUB_BITS`] = 1024 equal buckets, so a bucket is at most 1/1024 of its lower
//! bound wide. A bucket reports its midpoint, hence the **relative error of a
//! reported percentile is at most 2^-(SUB_BITS+1) ≈ 0.049%**, for any `u64`.
//!
//! The bucket array grows lazily up to the largest value seen (at most 56 320
//! buckets for `u64::MAX`; ~25 000 for values up to 10 s in ns), so memory depends
//! on the range of the values, never on their number.
//!
//! Count, sum (as `u128`), minimum and maximum are kept exactly.

use serde::{Deserialize, Serialize};

/// Sub-bucket bits: each power-of-two range above 2^(SUB_BITS+1) holds
/// 2^SUB_BITS buckets.
pub const SUB_BITS: u32 = 10;

/// Values below this are recorded exactly (each has its own bucket).
pub const EXACT_BELOW: u64 = 1 << (SUB_BITS + 1);

/// A log-bucketed histogram with exact count, sum, min and max.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    sum: u128,
    /// `u64::MAX` while empty.
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram {
            counts: Vec::new(),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

/// The bucket of `v`: `v` itself below [`EXACT_BELOW`], else
/// `shift · 2^SUB_BITS + (v >> shift)` where `shift = ⌊log2 v⌋ − SUB_BITS`.
#[inline]
fn bucket_of(v: u64) -> usize {
    let log2 = 63 - (v | 1).leading_zeros();
    if log2 <= SUB_BITS {
        v as usize
    } else {
        let shift = log2 - SUB_BITS;
        (((shift as u64) << SUB_BITS) + (v >> shift)) as usize
    }
}

/// The inclusive range `(low, high)` of values that fall in bucket `i`.
fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < EXACT_BELOW {
        (i, i)
    } else {
        let shift = (i >> SUB_BITS) - 1;
        let low = (i - (shift << SUB_BITS)) << shift;
        (low, low + ((1 << shift) - 1))
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram::default()
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let b = bucket_of(v);
        if b >= self.counts.len() {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.count += 1;
        self.sum += u128::from(v);
    }

    /// Adds every value recorded in `other` to this histogram.
    pub fn merge(&mut self, other: &Histogram) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum += other.sum;
    }

    /// Number of values recorded (exact).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the values recorded (exact).
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// Smallest value recorded (exact), `None` if empty.
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// Largest value recorded (exact), `None` if empty.
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// Arithmetic mean of the values recorded (from the exact sum), `None` if empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// The nearest-rank quantile `per_mille / 1000` (500 = p50, 999 = p99.9): the
    /// value of rank ⌈q·n⌉ (at least 1), i.e. the smallest recorded value `v` such
    /// that at least q·n values are ≤ `v`. `None` if empty.
    ///
    /// The rank is computed in integers, so p99.9 of 1000 values is exactly the
    /// 999th. Ranks 1 and n report the exact minimum and maximum; any other rank
    /// reports the midpoint of its value's bucket, clamped to
    /// [`min`](Self::min)..=[`max`](Self::max): exact below [`EXACT_BELOW`], within
    /// 2^-(SUB_BITS+1) relative error above.
    ///
    /// # Panics
    /// If `per_mille > 1000` (a programmer error: quantiles are constants).
    pub fn quantile_per_mille(&self, per_mille: u32) -> Option<u64> {
        assert!(per_mille <= 1000, "quantile {per_mille}‰ is above 1000‰");
        if self.count == 0 {
            return None;
        }
        let rank = (u128::from(self.count) * u128::from(per_mille))
            .div_ceil(1000)
            .max(1) as u64;
        if rank == 1 {
            return Some(self.min);
        }
        if rank == self.count {
            return Some(self.max);
        }
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (low, high) = bucket_range(i);
                let mid = low + (high - low) / 2;
                return Some(mid.clamp(self.min, self.max));
            }
        }
        unreachable!("bucket counts sum to the histogram's count")
    }

    /// The cumulative distribution as points `(value, count of values ≤ value)`,
    /// coarsened to a grid of `steps_per_octave` cells per power of two (cells
    /// linear within an octave, so at most 1/`steps_per_octave` of their lower
    /// bound wide). Empty if nothing was recorded.
    ///
    /// 1. The first point is `(min, 0)`; the last is `(max, count)`.
    /// 2. Each occupied cell ends with a point at the highest value its
    ///    occupied buckets may hold (clamped to `max`), with the count so far.
    /// 3. After a run of empty cells, a point at the lowest value of the next
    ///    occupied bucket (clamped to `min`) with the count before it keeps the
    ///    curve flat over the gap.
    ///
    /// Both coordinates are non-decreasing; there are at most
    /// 2 · (64 · `steps_per_octave` + 1) + 1 points, whatever the count.
    ///
    /// # Panics
    /// If `steps_per_octave` is 0 (a programmer error: it is a constant).
    pub fn cdf(&self, steps_per_octave: u32) -> Vec<(u64, u64)> {
        assert!(
            steps_per_octave > 0,
            "a CDF grid needs at least one step per octave"
        );
        let mut points = Vec::new();
        if self.count == 0 {
            return points;
        }
        let mut seen = 0;
        let mut open: Option<u64> = None;
        let mut last_high = self.min;
        for (i, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let (low, high) = bucket_range(i);
            let (low, high) = (low.max(self.min), high.min(self.max));
            let cell = grid_cell(low, steps_per_octave);
            match open {
                None => points.push((low, 0)),
                Some(prev) if prev == cell => {}
                Some(prev) => {
                    points.push((last_high, seen));
                    if cell > prev + 1 {
                        points.push((low, seen));
                    }
                }
            }
            open = Some(cell);
            seen += c;
            last_high = high;
        }
        points.push((last_high, seen));
        points
    }
}

/// The cell of `v` on a grid of `steps` cells per power of two: 0 for 0, else
/// `1 + ⌊log2 v⌋·steps + ⌊(v − 2^⌊log2 v⌋)·steps / 2^⌊log2 v⌋⌋`.
fn grid_cell(v: u64, steps: u32) -> u64 {
    if v == 0 {
        return 0;
    }
    let e = 63 - v.leading_zeros();
    let frac = (u128::from(v - (1 << e)) * u128::from(steps)) >> e;
    1 + u64::from(e) * u64::from(steps) + frac as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64: a tiny deterministic generator for the tests.
    struct SplitMix(u64);

    impl SplitMix {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// Uniform in [0, 1).
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Nearest-rank quantile of sorted values, the definition the histogram follows.
    fn exact(sorted: &[u64], per_mille: u32) -> u64 {
        let n = sorted.len() as u64;
        let rank = (n * u64::from(per_mille)).div_ceil(1000).max(1);
        sorted[(rank - 1) as usize]
    }

    const QUANTILES: [u32; 7] = [0, 1, 500, 900, 990, 999, 1000];

    #[test]
    fn buckets_tile_the_whole_u64_range() {
        let mut expected_low = 0u64;
        for i in 0..=bucket_of(u64::MAX) {
            let (low, high) = bucket_range(i);
            assert_eq!(low, expected_low, "bucket {i} starts where {} ended", i - 1);
            assert_eq!(bucket_of(low), i);
            assert_eq!(bucket_of(high), i);
            if high == u64::MAX {
                assert_eq!(i, bucket_of(u64::MAX));
                return;
            }
            expected_low = high + 1;
        }
        panic!("buckets end before u64::MAX");
    }

    #[test]
    fn small_integers_are_exact() {
        let mut h = Histogram::new();
        let values: Vec<u64> = (0..EXACT_BELOW).rev().collect();
        for &v in &values {
            h.record(v);
        }
        let mut sorted = values.clone();
        sorted.sort_unstable();
        for pm in 0..=1000 {
            assert_eq!(h.quantile_per_mille(pm), Some(exact(&sorted, pm)), "{pm}‰");
        }
        assert_eq!(h.count(), EXACT_BELOW);
        assert_eq!(h.min(), Some(0));
        assert_eq!(h.max(), Some(EXACT_BELOW - 1));
    }

    #[test]
    fn nearest_rank_on_a_tiny_set() {
        let mut h = Histogram::new();
        for v in [15, 20, 35, 40, 50] {
            h.record(v);
        }
        // Wikipedia's nearest-rank example: p30 = 20, p40 = 20, p50 = 35, p100 = 50.
        assert_eq!(h.quantile_per_mille(300), Some(20));
        assert_eq!(h.quantile_per_mille(400), Some(20));
        assert_eq!(h.quantile_per_mille(500), Some(35));
        assert_eq!(h.quantile_per_mille(1000), Some(50));
        assert_eq!(h.quantile_per_mille(0), Some(15));
        assert_eq!(h.mean(), Some(32.0));
    }

    #[test]
    fn relative_error_is_bounded_over_nine_orders_of_magnitude() {
        let mut rng = SplitMix(42);
        let mut h = Histogram::new();
        let mut values = Vec::new();
        for _ in 0..200_000 {
            // Log-uniform over [1e3, 1e12): µs to 1000 s, in ns.
            let v = 10f64.powf(3.0 + 9.0 * rng.unit()) as u64;
            h.record(v);
            values.push(v);
        }
        values.sort_unstable();
        let bound = 1.0 / f64::from(1u32 << (SUB_BITS + 1));
        assert!(bound <= 0.001);
        for pm in QUANTILES.into_iter().chain((0..=1000).step_by(7)) {
            let want = exact(&values, pm);
            let got = h.quantile_per_mille(pm).unwrap();
            let err = (got as f64 - want as f64).abs() / want as f64;
            assert!(err <= bound, "{pm}‰: got {got}, want {want}, error {err}");
        }
        assert_eq!(h.count(), values.len() as u64);
        assert_eq!(h.sum(), values.iter().map(|&v| u128::from(v)).sum::<u128>());
        assert_eq!(h.min(), values.first().copied());
        assert_eq!(h.max(), values.last().copied());
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64;
        assert!((h.mean().unwrap() - mean).abs() / mean < 1e-12);
    }

    #[test]
    fn extremes_do_not_overflow() {
        let mut h = Histogram::new();
        h.record(u64::MAX);
        h.record(u64::MAX - 1);
        h.record(0);
        assert_eq!(h.quantile_per_mille(1000), Some(u64::MAX));
        assert_eq!(h.quantile_per_mille(0), Some(0));
        assert_eq!(h.sum(), 2 * u128::from(u64::MAX) - 1);
        let p50 = h.quantile_per_mille(500).unwrap();
        assert!((u64::MAX - p50) as f64 / u64::MAX as f64 <= 0.001);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut rng = SplitMix(7);
        let (mut a, mut b, mut both) = (Histogram::new(), Histogram::new(), Histogram::new());
        for i in 0..10_000 {
            let v = rng.next() >> (rng.next() % 64);
            if i % 3 == 0 { &mut a } else { &mut b }.record(v);
            both.record(v);
        }
        let mut merged = Histogram::new();
        merged.merge(&a);
        merged.merge(&b);
        merged.merge(&Histogram::new());
        assert_eq!(merged, both);
    }

    #[test]
    fn cdf_is_monotone_bounded_and_ends_at_the_count() {
        let mut rng = SplitMix(3);
        let mut h = Histogram::new();
        let mut values = Vec::new();
        for _ in 0..50_000 {
            // Two clusters a decade apart leave empty cells between them.
            let base = if rng.next().is_multiple_of(4) {
                2e8
            } else {
                1e7
            };
            let v = (base * (1.0 + rng.unit())) as u64;
            h.record(v);
            values.push(v);
        }
        values.sort_unstable();
        let points = h.cdf(16);
        assert_eq!(points.first(), Some(&(values[0], 0)));
        assert_eq!(points.last(), Some(&(*values.last().unwrap(), 50_000)));
        assert!(points.len() <= 2 * (64 * 16 + 1) + 1);
        for w in points.windows(2) {
            assert!(w[0].0 <= w[1].0 && w[0].1 <= w[1].1, "{w:?}");
        }
        // Every point's count is the exact count at or below its value, or (a
        // point opening a gap) below it.
        for &(v, n) in &points[1..] {
            let below = values.partition_point(|&x| x < v) as u64;
            let at_or_below = values.partition_point(|&x| x <= v) as u64;
            assert!(n == below || n == at_or_below, "({v}, {n})");
        }
        // The gap between the clusters is one flat stretch.
        assert!(
            points
                .windows(2)
                .any(|w| w[0].1 == w[1].1 && w[1].0 > 2 * w[0].0)
        );
        // Memory and points do not depend on the count.
        let mut twice = h.clone();
        twice.merge(&h);
        assert_eq!(twice.cdf(16).len(), points.len());

        let mut one = Histogram::new();
        one.record(7);
        one.record(7);
        assert_eq!(one.cdf(16), vec![(7, 0), (7, 2)]);
        assert!(Histogram::new().cdf(16).is_empty());
    }

    #[test]
    fn grid_cells_split_each_octave_evenly() {
        assert_eq!(grid_cell(0, 4), 0);
        assert_eq!(grid_cell(1, 4), 1);
        assert_eq!(grid_cell(2, 4), 5);
        assert_eq!(grid_cell(3, 4), 7);
        assert_eq!(grid_cell(1024, 4), 41);
        assert_eq!(grid_cell(1279, 4), 41);
        assert_eq!(grid_cell(1280, 4), 42);
        assert_eq!(grid_cell(u64::MAX, 4), 1 + 63 * 4 + 3);
    }

    #[test]
    fn empty_histogram_has_no_statistics() {
        let h = Histogram::new();
        assert_eq!(h.count(), 0);
        assert_eq!((h.min(), h.max(), h.mean()), (None, None, None));
        assert_eq!(h.quantile_per_mille(500), None);
    }
}
