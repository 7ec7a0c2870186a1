//! The servers' published loads over a run, summarised at each
//! publication: the paper's load evenness (§6.1, Fig. 8c). The simulator's
//! cluster engine and the live gateway push the same quantity, so that a
//! simulated row and a live one compare.

use crate::Time;

/// The most samples a [`LoadSeries`] keeps: 65,536, three days and a half
/// of publications every 5 s, 1.5 MB.
pub const MAX_LOAD_SAMPLES: usize = 1 << 16;

/// The servers' published loads over a window of publications: the mean
/// over those publications of the loads' mean and (population) variance
/// across servers, the paper's load evenness (§6.1, Fig. 8c).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadSample {
    /// When the window's first publication was.
    pub at: Time,
    /// Mean load (load average over cores) across servers.
    pub mean: f64,
    /// Variance of the load across servers.
    pub variance: f64,
}

/// The mean and population variance of `loads`, one per server, as a
/// [`LoadSeries`] takes them; `None` for no server (no spread to speak of).
pub fn spread(loads: &[f64]) -> Option<(f64, f64)> {
    if loads.is_empty() {
        return None;
    }
    let n = loads.len() as f64;
    let mean = loads.iter().sum::<f64>() / n;
    let variance = loads.iter().map(|l| (l - mean) * (l - mean)).sum::<f64>() / n;
    Some((mean, variance))
}

/// The servers' published loads over a run, summarised at each
/// publication (not per server) and bounded: one sample per publication
/// until [`MAX_LOAD_SAMPLES`]; then neighbouring samples merge in pairs
/// and each sample averages twice as many publications from then on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadSeries {
    /// Samples, oldest first; each averages `per_sample` consecutive
    /// publications (the last one maybe fewer).
    pub samples: Vec<LoadSample>,
    /// Publications each sample averages: 1 until the series first fills.
    pub per_sample: u64,
    /// Publications in all.
    pub publications: u64,
    /// The mean over every publication of the load variance across
    /// servers (0 without a publication).
    pub mean_variance: f64,
    /// Publications in the last sample, while it averages fewer than
    /// `per_sample`.
    pending: u64,
}

impl LoadSeries {
    /// Adds a publication at `at` whose loads across servers had this mean
    /// and variance.
    pub fn push(&mut self, at: Time, mean: f64, variance: f64) {
        self.publications += 1;
        self.mean_variance += (variance - self.mean_variance) / self.publications as f64;
        self.per_sample = self.per_sample.max(1);
        match self.samples.last_mut() {
            Some(last) if self.pending > 0 => {
                let k = self.pending as f64;
                last.mean = (last.mean * k + mean) / (k + 1.0);
                last.variance = (last.variance * k + variance) / (k + 1.0);
            }
            _ => self.samples.push(LoadSample { at, mean, variance }),
        }
        self.pending += 1;
        if self.pending < self.per_sample {
            return;
        }
        self.pending = 0;
        if self.samples.len() >= MAX_LOAD_SAMPLES {
            self.samples = self
                .samples
                .chunks(2)
                .map(|pair| {
                    let n = pair.len() as f64;
                    LoadSample {
                        at: pair[0].at,
                        mean: pair.iter().map(|s| s.mean).sum::<f64>() / n,
                        variance: pair.iter().map(|s| s.variance).sum::<f64>() / n,
                    }
                })
                .collect();
            self.per_sample *= 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_is_the_mean_and_the_population_variance() {
        assert_eq!(spread(&[]), None);
        assert_eq!(spread(&[0.5]), Some((0.5, 0.0)));
        // Mean 0.5; squared deviations 0.25, 0.25, 0, 0 over 4 servers.
        assert_eq!(spread(&[0.0, 1.0, 0.5, 0.5]), Some((0.5, 0.125)));
    }

    #[test]
    fn a_full_series_merges_pairs_and_keeps_the_exact_mean() {
        let mut l = LoadSeries::default();
        let n = MAX_LOAD_SAMPLES as u64 + 3;
        for k in 0..n {
            l.push(k, (k % 2) as f64, (k % 4) as f64);
        }
        // 2^16 singles merged into 2^15 pairs, then one more pair and a
        // pending single.
        assert_eq!(l.samples.len(), MAX_LOAD_SAMPLES / 2 + 2);
        assert_eq!((l.per_sample, l.publications), (2, n));
        assert_eq!(
            l.samples[1],
            LoadSample {
                at: 2,
                mean: 0.5,
                variance: 2.5
            }
        );
        assert_eq!(
            l.samples.last(),
            Some(&LoadSample {
                at: n - 1,
                mean: 0.0,
                variance: 2.0
            })
        );
        let exact = (0..n).map(|k| (k % 4) as f64).sum::<f64>() / n as f64;
        assert!((l.mean_variance - exact).abs() < 1e-9);
    }
}
