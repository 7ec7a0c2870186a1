//! The node's load report (`GET /load`, a [`LoadReport`]): what a cluster
//! gateway routes on, published the way the CH-RLU paper's invokers
//! publish theirs.
//!
//! A sampler task in the ingress takes the node's active invocations
//! (accepted and not yet answered: the runtime's running and queued ones,
//! which is what the kernel's `nr_running` would count of them) every
//! period into the simulator's own [`LoadAvg`], and publishes that
//! average over the node's cores. Sampling in the ingress costs one timer
//! and two atomic loads a period, and needs nothing of the backend but
//! what the ingress already counts.

use crate::wire::LoadReport;
use faasched_model::cluster::loadavg::{LOAD_FREQ, LoadAvg};
use std::time::Duration;

/// The memory a node reports by default, MB: 2 GiB, a small invoker's.
pub const DEFAULT_MEMORY_MB: u32 = 2048;

/// What a node says of itself in its load reports. Build with
/// [`LoadConfig::new`] and its setters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadConfig {
    cores: u32,
    memory_mb: u32,
    period: Duration,
}

impl Default for LoadConfig {
    fn default() -> LoadConfig {
        LoadConfig::new()
    }
}

impl LoadConfig {
    /// One core, [`DEFAULT_MEMORY_MB`], sampled every [`LOAD_FREQ`].
    pub fn new() -> LoadConfig {
        LoadConfig {
            cores: 1,
            memory_mb: DEFAULT_MEMORY_MB,
            period: Duration::from_nanos(LOAD_FREQ),
        }
    }

    /// The cores the load is averaged over: the node's workers. By default 1;
    /// 0 counts as 1.
    pub fn cores(&mut self, cores: u32) -> &mut LoadConfig {
        self.cores = cores.max(1);
        self
    }

    /// The memory for containers the node reports, MB. By default
    /// [`DEFAULT_MEMORY_MB`].
    pub fn memory_mb(&mut self, memory_mb: u32) -> &mut LoadConfig {
        self.memory_mb = memory_mb;
        self
    }

    /// How often the active invocations are sampled and the average
    /// published. By default [`LOAD_FREQ`], the kernel's 5 s; a zero
    /// period counts as 1 ms.
    pub fn period(&mut self, period: Duration) -> &mut LoadConfig {
        self.period = period.max(Duration::from_millis(1));
        self
    }

    /// The sampling period.
    pub fn sampling_period(&self) -> Duration {
        self.period
    }
}

/// The sampler's state: the average and when it last moved.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Sampled {
    average: LoadAvg,
    published_ms: u64,
    seq: u64,
}

impl Sampled {
    /// One sample of `active` invocations, taken `at_ms` after start.
    pub(super) fn sample(&mut self, active: u64, at_ms: u64) {
        self.average.sample(active);
        self.published_ms = at_ms;
        self.seq += 1;
    }

    /// The report of this state under `config`.
    pub(super) fn report(&self, config: &LoadConfig) -> LoadReport {
        LoadReport {
            cores: config.cores,
            memory_mb: config.memory_mb,
            load: self.average.shown() / f64::from(config.cores),
            published_ms: self.published_ms,
            seq: self.seq,
            node: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_is_the_kernel_average_over_the_cores() {
        let mut config = LoadConfig::new();
        config.cores(2).memory_mb(512);
        let mut s = Sampled::default();
        assert_eq!(s.report(&config).load, 0.0);
        for i in 0..1_000 {
            s.sample(3, i * 5);
        }
        let r = s.report(&config);
        assert_eq!(
            (r.cores, r.memory_mb, r.seq, r.published_ms),
            (2, 512, 1_000, 4_995)
        );
        assert_eq!(r.load, 1.5);
        let back: LoadReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
