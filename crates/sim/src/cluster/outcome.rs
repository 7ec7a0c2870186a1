//! What a cluster run hands out: each invocation's outcome to a
//! [`ClusterSink`], the run's [`ClusterStats`] at the end, or why it
//! stopped, [`ClusterError`].

use super::config::ConfigError;
use faasched_model::cluster::{InvocationId, InvocationOutcome, ServerId};
use faasched_model::{Nanos, SEC, Time};

/// Where a cluster run's outcomes go, each as soon as it is final. Any
/// `FnMut(InvocationOutcome)` is one.
pub trait ClusterSink {
    /// An invocation finished or was dropped.
    fn outcome(&mut self, outcome: InvocationOutcome);

    /// Whether the run should stop now ([`ClusterError::Interrupted`]):
    /// asked at least every [`POLL_EVENTS`](super::POLL_EVENTS) events.
    /// Never, by default.
    fn interrupted(&mut self) -> bool {
        false
    }
}

impl<F: FnMut(InvocationOutcome)> ClusterSink for F {
    fn outcome(&mut self, outcome: InvocationOutcome) {
        self(outcome)
    }
}

/// What one server did over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Invocations the router sent it.
    pub routed: u64,
    /// Core-time its cores were busy: ∫ min(in flight, cores) dt, cold
    /// starts and contention included.
    pub busy: Nanos,
    /// Invocations that started in a new container.
    pub cold_starts: u64,
    /// Invocations that reused an idle warm container.
    pub warm_starts: u64,
    /// Invocations dropped because no memory could be freed for their
    /// container: at once, or after a wait (`drops_after_wait`).
    pub drops: u64,
    /// Invocations that waited for memory (see
    /// [`ClusterConfig::memory_wait`](super::ClusterConfig::memory_wait)),
    /// whether they then started or were dropped.
    pub waits: u64,
    /// Their time spent waiting, in all.
    pub wait_time: Nanos,
    /// Invocations dropped after waiting for memory: their wait ran out, or
    /// nothing on the server could free memory for them any more.
    pub drops_after_wait: u64,
    /// Idle containers its keep-alive evicted to make room.
    pub evictions: u64,
    /// Idle containers its keep-alive let expire by themselves.
    pub expirations: u64,
    /// The most memory its containers (busy and idle) held at once, MB.
    pub max_memory_mb: u64,
}

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
    pub(crate) fn push(&mut self, at: Time, mean: f64, variance: f64) {
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

/// What a whole cluster run measured, beyond the per-invocation outcomes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterStats {
    /// Invocations that arrived.
    pub invocations: u64,
    /// Invocations that finished.
    pub finished: u64,
    /// Invocations the router dropped.
    pub dropped_by_router: u64,
    /// Invocations a server dropped for want of memory, at once or after a
    /// wait (the sum of [`ServerStats::drops`]).
    pub dropped_for_memory: u64,
    /// Events processed: arrivals and timers (finishes, expiries, ends of
    /// waits for memory, load samples, publications).
    pub events: u64,
    /// From the first arrival to the last finish (0 without a finish).
    pub span: Nanos,
    /// Each server's, by id.
    pub servers: Vec<ServerStats>,
    /// The loads as published every
    /// [`ClusterConfig::publish`](super::ClusterConfig::publish) while
    /// anything was left to run (with
    /// [`ClusterConfig::fresh`](super::ClusterConfig::fresh), the exact
    /// loads at each period's end).
    pub loads: LoadSeries,
}

impl ClusterStats {
    /// Cold starts over all servers.
    pub fn cold_starts(&self) -> u64 {
        self.servers.iter().map(|s| s.cold_starts).sum()
    }

    /// Invocations dropped, by the router or for memory.
    pub fn dropped(&self) -> u64 {
        self.dropped_by_router + self.dropped_for_memory
    }
}

/// Why a cluster run stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClusterError<E> {
    /// The configuration cannot run.
    Config(ConfigError),
    /// A function profile is not where its id says.
    Profile {
        /// Its index in the profiles.
        index: usize,
        /// What is wrong with it.
        what: String,
    },
    /// The invocation stream failed (a bad input file, say).
    Input(E),
    /// The invocation stream holds an invocation the cluster cannot take.
    Invocation {
        /// The invocation.
        id: InvocationId,
        /// What is wrong with it.
        what: String,
    },
    /// The router broke the [`Route`](faasched_model::cluster::Route)
    /// contract (a server the cluster does not have).
    Route {
        /// The router's name.
        policy: String,
        /// What it did.
        what: String,
    },
    /// A keep-alive policy broke the
    /// [`KeepAlive`](faasched_model::cluster::KeepAlive) contract (a
    /// container it does not hold idle).
    KeepAlive {
        /// The policy's name.
        policy: String,
        /// Its server.
        server: ServerId,
        /// What it did.
        what: String,
    },
    /// A closed-loop client asked for something impossible.
    Client {
        /// The client.
        client: u32,
        /// What it asked.
        what: String,
    },
    /// The next event falls after [`RUN_LIMIT`](crate::RUN_LIMIT): the load
    /// exceeds the cluster so much that its backlog never drains.
    TimeLimit {
        /// Invocations finished by then.
        finished: u64,
    },
    /// The sink asked the run to stop.
    Interrupted {
        /// Invocations finished by then.
        finished: u64,
    },
}

impl<E: std::fmt::Display> std::fmt::Display for ClusterError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterError::Config(e) => e.fmt(f),
            ClusterError::Profile { index, what } => {
                write!(f, "function profile {index}: {what}")
            }
            ClusterError::Input(e) => e.fmt(f),
            ClusterError::Invocation { id, what } => write!(f, "invocation {}: {what}", id.0),
            ClusterError::Route { policy, what } => write!(f, "router {policy} {what}"),
            ClusterError::KeepAlive {
                policy,
                server,
                what,
            } => write!(f, "keep-alive {policy} (server {}) {what}", server.0),
            ClusterError::Client { client, what } => write!(f, "client {client} {what}"),
            ClusterError::TimeLimit { finished } => write!(
                f,
                "the simulated clock reached its limit ({} days) with {finished} invocations \
                 finished: the load exceeds the cluster so much that its backlog does not \
                 drain; lower the load or add --servers",
                crate::RUN_LIMIT / (86_400 * SEC)
            ),
            ClusterError::Interrupted { finished } => {
                write!(f, "interrupted with {finished} invocations finished")
            }
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for ClusterError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClusterError::Config(e) => Some(e),
            ClusterError::Input(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
