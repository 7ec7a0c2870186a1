//! Predicting a request's work from what the node has seen: SledgeScale
//! estimates the real-world functions "as the median observed execution time
//! during the last 256 requests" (sledgescale-sec25 §4). Pure bookkeeping, no
//! clock, so the simulator and the live runtime predict alike.

use crate::{FunctionId, IdMap, Nanos};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The window the paper uses: the last 256 finished requests of a function.
pub const PAPER_WINDOW: usize = 256;

/// What a policy is told of a request's work, in the simulator and on a
/// live node alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Estimate {
    /// The request's own estimate: in the simulator the workload's,
    /// `Request::estimate` (the paper's oracle for its synthetic
    /// workloads); on a live node what the executor knows of the call
    /// (`spin`'s µs).
    Given,
    /// The median work of the function's last `window` requests finished
    /// at the node (any dispatcher), the given estimate before any
    /// ([`MedianEstimator`]); the paper uses 256 for
    /// its real-world functions (§4).
    Median {
        /// Requests remembered per function.
        window: usize,
    },
}

impl Estimate {
    /// The paper's estimator for its real-world functions.
    pub const PAPER_MEDIAN: Estimate = Estimate::Median {
        window: PAPER_WINDOW,
    };
}

/// The median work of each function's last `window` finished requests.
///
/// Before a function has finished any request the caller's fallback (the
/// workload's own estimate) stands in. Of an even number of samples the
/// lower middle one is the median: always a work actually observed, as the
/// paper's "median observed execution time" reads.
#[derive(Clone, Debug)]
pub struct MedianEstimator {
    window: usize,
    functions: IdMap<FunctionId, Window>,
}

/// One function's recent work, in finishing order and sorted.
#[derive(Clone, Debug, Default)]
struct Window {
    recent: VecDeque<Nanos>,
    /// The same values, ascending: the median is read in O(1) and a sample
    /// is replaced in O(window) without allocating.
    sorted: Vec<Nanos>,
}

impl MedianEstimator {
    /// An estimator over each function's last `window` requests; `None` for
    /// a window of 0, which holds nothing to take a median of.
    pub fn new(window: usize) -> Option<MedianEstimator> {
        (window > 0).then(|| MedianEstimator {
            window,
            functions: IdMap::default(),
        })
    }

    /// The window it keeps per function.
    pub fn window(&self) -> usize {
        self.window
    }

    /// The median of `function`'s recent work, or `fallback` before any
    /// request of it finished.
    pub fn estimate(&self, function: FunctionId, fallback: Nanos) -> Nanos {
        self.functions
            .get(&function)
            .and_then(|w| w.sorted.get((w.sorted.len() - 1) / 2))
            .copied()
            .unwrap_or(fallback)
    }

    /// A request of `function` finished after `work`; the oldest sample
    /// leaves a full window.
    pub fn record(&mut self, function: FunctionId, work: Nanos) {
        let w = self.functions.entry(function).or_default();
        if w.recent.len() == self.window
            && let Some(old) = w.recent.pop_front()
            && let Ok(i) = w.sorted.binary_search(&old)
        {
            w.sorted.remove(i);
        }
        w.recent.push_back(work);
        let i = w.sorted.partition_point(|&x| x <= work);
        w.sorted.insert(i, work);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: FunctionId = FunctionId(7);

    #[test]
    fn falls_back_until_a_request_finished() {
        let mut e = MedianEstimator::new(PAPER_WINDOW).unwrap();
        assert_eq!(e.estimate(F, 42), 42);
        e.record(F, 10);
        assert_eq!(e.estimate(F, 42), 10);
        assert_eq!(e.estimate(FunctionId(8), 42), 42);
    }

    #[test]
    fn the_lower_middle_of_an_even_count() {
        let mut e = MedianEstimator::new(4).unwrap();
        for w in [40, 10, 30, 20] {
            e.record(F, w);
        }
        assert_eq!(e.estimate(F, 0), 20);
        e.record(F, 50);
        // 40 left: 10 20 30 50.
        assert_eq!(e.estimate(F, 0), 20);
        e.record(F, 60);
        // 10 left: 20 30 50 60.
        assert_eq!(e.estimate(F, 0), 30);
    }

    #[test]
    fn forgets_beyond_the_window_like_a_sort_of_the_last_samples() {
        let mut e = MedianEstimator::new(5).unwrap();
        let mut seen = Vec::new();
        let mut x: u64 = 1;
        for _ in 0..200 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let w = (x >> 40) % 17;
            e.record(F, w);
            seen.push(w);
            let mut last: Vec<u64> = seen.iter().rev().take(5).copied().collect();
            last.sort_unstable();
            assert_eq!(e.estimate(F, 99), last[(last.len() - 1) / 2]);
        }
    }

    #[test]
    fn an_empty_window_is_refused() {
        assert!(MedianEstimator::new(0).is_none());
    }
}
