//! Completions over simulated time, in memory bounded whatever the run's length.
//!
//! The run's length is not known while outcomes stream in, so [`Completions`]
//! counts finishes in buckets whose width adapts:
//!
//! 1. buckets start [`FIRST_BUCKET_WIDTH`] (2^20 ns ≈ 1.05 ms) wide; bucket `i`
//!    counts the finishes in `[i·width, (i+1)·width)`;
//! 2. a finish beyond [`COMPLETION_BUCKETS`] buckets doubles the width, merging
//!    neighbouring buckets pairwise, until it fits;
//! 3. so at most [`COMPLETION_BUCKETS`] counts are kept, and a run of length `T`
//!    ends with buckets between `T / COMPLETION_BUCKETS` and
//!    `2·T / COMPLETION_BUCKETS` wide (or the first width, if longer).
//!
//! Widths are powers of two in ns, so finding a bucket is a shift. Counts are
//! exact: they sum to the number of finishes recorded.

use faasched_model::{Nanos, Time};
use serde::{Deserialize, Serialize};

/// The most buckets a [`Completions`] keeps.
pub const COMPLETION_BUCKETS: usize = 256;

/// log2 of the first bucket width in ns.
const FIRST_SHIFT: u32 = 20;

/// Width of the buckets before any doubling: 2^20 ns ≈ 1.05 ms.
pub const FIRST_BUCKET_WIDTH: Nanos = 1 << FIRST_SHIFT;

/// Finishes per span of simulated time (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Completions {
    /// Bucket width is 2^shift ns.
    shift: u32,
    /// Finishes per bucket; never longer than [`COMPLETION_BUCKETS`].
    counts: Vec<u64>,
}

impl Default for Completions {
    fn default() -> Completions {
        Completions {
            shift: FIRST_SHIFT,
            counts: Vec::new(),
        }
    }
}

impl Completions {
    /// No finishes yet.
    pub fn new() -> Completions {
        Completions::default()
    }

    /// Counts one finish at simulated time `finish`.
    #[inline]
    pub fn record(&mut self, finish: Time) {
        let mut i = finish >> self.shift;
        while i >= COMPLETION_BUCKETS as u64 {
            self.coarsen();
            i = finish >> self.shift;
        }
        let i = i as usize;
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
    }

    /// Doubles the bucket width, merging buckets pairwise.
    fn coarsen(&mut self) {
        let merged: Vec<u64> = self.counts.chunks(2).map(|c| c.iter().sum()).collect();
        self.counts = merged;
        self.shift += 1;
    }

    /// Width of every bucket, in ns.
    pub fn width(&self) -> Nanos {
        1 << self.shift
    }

    /// Finishes per bucket: bucket `i` covers `[i·width, (i+1)·width)`; the last
    /// bucket holds the latest finish (empty if there was none).
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Number of finishes recorded.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The cumulative series `(end of bucket in ns, finishes up to it)`, one point
    /// per bucket, starting with `(0, 0)`.
    pub fn cumulative(&self) -> Vec<(Time, u64)> {
        let width = self.width();
        let mut done = 0;
        let mut points = vec![(0, 0)];
        for (i, &c) in self.counts.iter().enumerate() {
            done += c;
            points.push(((i as u64 + 1).saturating_mul(width), done));
        }
        points
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::{MS, SEC};

    #[test]
    fn a_short_run_keeps_the_first_width() {
        let mut c = Completions::new();
        for t in [0, 1, FIRST_BUCKET_WIDTH - 1, FIRST_BUCKET_WIDTH, 5 * MS] {
            c.record(t);
        }
        assert_eq!(c.width(), FIRST_BUCKET_WIDTH);
        assert_eq!(c.counts(), &[3, 1, 0, 0, 1]);
        assert_eq!(c.total(), 5);
        let cum = c.cumulative();
        assert_eq!(cum.first(), Some(&(0, 0)));
        assert_eq!(cum.last(), Some(&(5 * FIRST_BUCKET_WIDTH, 5)));
    }

    #[test]
    fn a_long_run_doubles_the_width_and_keeps_every_finish() {
        let mut c = Completions::new();
        let n = 100_000u64;
        // Finishes spread over 100 s, out of order.
        for k in 0..n {
            c.record((k * 7919 % n) * MS);
        }
        assert_eq!(c.total(), n);
        assert!(c.counts().len() <= COMPLETION_BUCKETS);
        let span = (n - 1) * MS;
        assert!(c.width() * COMPLETION_BUCKETS as u64 > span);
        assert!(c.width() * (COMPLETION_BUCKETS as u64) / 2 <= span);
        let cum = c.cumulative();
        assert!(cum.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(cum.last().unwrap().1, n);
    }

    #[test]
    fn extremes_fit() {
        let mut c = Completions::new();
        c.record(SEC);
        c.record(u64::MAX);
        assert_eq!(c.total(), 2);
        assert!(c.counts().len() <= COMPLETION_BUCKETS);
        assert_eq!(c.counts().last(), Some(&1));
        assert_eq!(c.cumulative().last().unwrap().1, 2);
    }
}
