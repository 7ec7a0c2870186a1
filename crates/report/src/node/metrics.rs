//! Per-policy node metrics: the [`Collector`] that request outcomes stream
//! into, and the [`PolicySummary`] it finishes into. What each number means
//! is in the [`node`](super) module's documentation.

use crate::histogram::Histogram;
use crate::stats::{SLOWDOWN_ONE, Stats, slowdown_fixed};
use faasched_model::node::RequestOutcome;
use faasched_model::{FunctionId, Functions, Nanos, SEC};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Latency is recorded in ns and reported in µs: divided by this.
const NS_PER_US: f64 = 1e3;

/// The label of the scope that covers every request.
pub const ALL: &str = "all";

/// Everything measured over one scope of one policy: every request, or one
/// function's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScopeSummary {
    /// [`ALL`], or the function's name.
    pub scope: String,
    /// Requests recorded, dropped ones included.
    pub requests: u64,
    /// Requests that finished.
    pub finished: u64,
    /// Requests the dispatcher dropped.
    pub dropped: u64,
    /// Requests that finished after their absolute deadline, or were dropped.
    pub missed: u64,
    /// Times finished requests were taken off a worker, in all.
    pub preemptions: u64,
    /// Latency in µs over the finished requests; `None` if none finished.
    pub latency: Option<Stats>,
    /// Slowdown (latency / work) over the finished requests; `None` if none
    /// finished.
    pub slowdown: Option<Stats>,
    /// Finished requests per second of the run's span; `None` for a span of 0.
    pub throughput: Option<f64>,
}

impl ScopeSummary {
    /// missed / requests; `None` with no requests.
    pub fn miss_rate(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.missed as f64 / self.requests as f64)
    }

    /// preemptions / finished; `None` if none finished.
    pub fn preemptions_per_request(&self) -> Option<f64> {
        (self.finished > 0).then(|| self.preemptions as f64 / self.finished as f64)
    }
}

/// What the engine measured of a policy's run beyond its outcomes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// The run's span, ns: the time throughput is counted over.
    pub span: Nanos,
    /// Per worker, in the order the engine numbers them: busy time / span.
    pub workers: Vec<f64>,
    /// Per dispatcher: busy time / span.
    pub dispatchers: Vec<f64>,
}

impl Usage {
    /// Mean worker utilisation; `None` without workers.
    pub fn mean_worker(&self) -> Option<f64> {
        mean(&self.workers)
    }

    /// Mean dispatcher utilisation; `None` without dispatchers.
    pub fn mean_dispatcher(&self) -> Option<f64> {
        mean(&self.dispatchers)
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The finished measurements of one policy at one offered load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PolicySummary {
    /// The policy's name, as the CLI spells it.
    pub policy: String,
    /// Span and utilisation, as the engine gave them.
    pub usage: Usage,
    /// [`ALL`] first, then one per function that had requests, in function
    /// id order.
    pub scopes: Vec<ScopeSummary>,
}

impl PolicySummary {
    /// The scope of every request.
    ///
    /// # Panics
    /// If `scopes` is empty, which [`Collector::finish`] never leaves it.
    pub fn all(&self) -> &ScopeSummary {
        &self.scopes[0]
    }

    /// The scope named `scope` ([`ALL`] or a function's name), if any.
    pub fn scope(&self, scope: &str) -> Option<&ScopeSummary> {
        self.scopes.iter().find(|s| s.scope == scope)
    }
}

/// Running totals of one function.
#[derive(Clone, Debug, Default)]
struct Acc {
    requests: u64,
    dropped: u64,
    missed: u64,
    preemptions: u64,
    /// ns, finished requests only.
    latency: Histogram,
    /// Fixed point, finished requests only.
    slowdown: Histogram,
}

impl Acc {
    fn record(&mut self, o: &RequestOutcome) {
        self.requests += 1;
        self.missed += u64::from(o.missed());
        match o.latency() {
            None => self.dropped += 1,
            Some(latency) => {
                self.latency.record(latency);
                self.slowdown.record(slowdown_fixed(latency, o.work));
                self.preemptions += u64::from(o.preemptions);
            }
        }
    }

    fn merge(&mut self, other: &Acc) {
        self.requests += other.requests;
        self.dropped += other.dropped;
        self.missed += other.missed;
        self.preemptions += other.preemptions;
        self.latency.merge(&other.latency);
        self.slowdown.merge(&other.slowdown);
    }

    fn summary(&self, scope: String, span: Nanos) -> ScopeSummary {
        let finished = self.latency.count();
        ScopeSummary {
            scope,
            requests: self.requests,
            finished,
            dropped: self.dropped,
            missed: self.missed,
            preemptions: self.preemptions,
            latency: Stats::of(&self.latency, NS_PER_US),
            slowdown: Stats::of(&self.slowdown, SLOWDOWN_ONE as f64),
            throughput: (span > 0).then(|| finished as f64 * SEC as f64 / span as f64),
        }
    }
}

/// Collects the outcomes of one policy's run at one offered load, in memory
/// independent of their number (see the module docs).
#[derive(Clone, Debug)]
pub struct Collector {
    policy: String,
    functions: BTreeMap<FunctionId, Acc>,
}

impl Collector {
    /// A collector for `policy`.
    pub fn new(policy: &str) -> Collector {
        Collector {
            policy: policy.to_string(),
            functions: BTreeMap::new(),
        }
    }

    /// Records one outcome, finished or dropped.
    pub fn record(&mut self, outcome: &RequestOutcome) {
        self.functions
            .entry(outcome.info.function)
            .or_default()
            .record(outcome);
    }

    /// Outcomes recorded so far.
    pub fn count(&self) -> u64 {
        self.functions.values().map(|a| a.requests).sum()
    }

    /// The summary: scopes labelled with the names in `functions` (an id the
    /// table lacks reads `#ID`), and what the engine measured (`usage`).
    pub fn finish(self, functions: &Functions, usage: Usage) -> PolicySummary {
        let mut all = Acc::default();
        for acc in self.functions.values() {
            all.merge(acc);
        }
        let span = usage.span;
        let mut scopes = vec![all.summary(ALL.to_string(), span)];
        scopes.extend(self.functions.iter().map(|(&id, acc)| {
            let name = functions
                .get(id)
                .map_or_else(|| format!("#{}", id.0), |f| f.name.to_string());
            acc.summary(name, span)
        }));
        PolicySummary {
            policy: self.policy,
            usage,
            scopes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::US;
    use faasched_model::node::{RequestId, RequestInfo, WorkerId};

    /// A request of `function` arriving at `arrival` with `work`, deadline
    /// 10 × work, finishing at `finish` (`None`: dropped).
    fn outcome(function: u32, arrival: u64, work: u64, finish: Option<u64>) -> RequestOutcome {
        RequestOutcome {
            info: RequestInfo {
                id: RequestId(arrival),
                function: FunctionId(function),
                arrival,
                deadline: 10 * work,
                estimate: work,
            },
            work,
            dispatcher: 0,
            worker: finish.map(|_| WorkerId(0)),
            first_run: finish.map(|_| arrival),
            finish,
            preemptions: 0,
        }
    }

    /// Within the histogram's relative error, 2^-11.
    fn within(got: f64, want: f64) -> bool {
        (got - want).abs() / want <= 1.0 / 2048.0
    }

    fn functions() -> Functions {
        let mut f = Functions::new();
        f.intern("short");
        f.intern("long");
        f
    }

    #[test]
    fn counts_misses_drops_and_preemptions_on_a_hand_made_set() {
        let mut c = Collector::new("edf");
        // short: work 100 ns, due 1000 ns after arrival.
        c.record(&outcome(0, 0, 100, Some(100))); // latency 100, slowdown 1
        c.record(&outcome(0, 0, 100, Some(1000))); // exactly at the deadline: met
        c.record(&outcome(0, 0, 100, Some(1001))); // one ns late: missed
        c.record(&outcome(0, 0, 100, None)); // dropped: missed
        // long: work 1000 ns, due 10 000 ns after arrival; preempted twice.
        let mut long = outcome(1, 500, 1000, Some(2500));
        long.preemptions = 2;
        c.record(&long);
        assert_eq!(c.count(), 5);
        let usage = Usage {
            span: 2 * US,
            workers: vec![0.5, 1.0],
            dispatchers: vec![0.25],
        };
        let p = c.finish(&functions(), usage);
        let labels: Vec<&str> = p.scopes.iter().map(|s| s.scope.as_str()).collect();
        assert_eq!(labels, ["all", "short", "long"]);

        let all = p.all();
        assert_eq!(
            (all.requests, all.finished, all.dropped, all.missed),
            (5, 4, 1, 2)
        );
        assert_eq!(all.miss_rate(), Some(0.4));
        assert_eq!(all.preemptions_per_request(), Some(0.5));
        // 4 finished over 2 µs.
        assert_eq!(all.throughput, Some(2e6));
        // Latencies 100, 1000, 1001, 2000 ns.
        let lat = all.latency.unwrap();
        assert_eq!(lat.mean, 1.02525);
        assert_eq!((lat.p50, lat.p99, lat.p999, lat.max), (1.0, 2.0, 2.0, 2.0));
        // Slowdowns 1, 10, 10.01, 2: p50 is rank 2 = 2, from its bucket.
        let sd = all.slowdown.unwrap();
        assert!(within(sd.p50, 2.0), "{}", sd.p50);
        assert_eq!(sd.max, 10.01);
        assert!((sd.mean - 23.01 / 4.0).abs() < 1e-12);

        let short = p.scope("short").unwrap();
        assert_eq!((short.requests, short.dropped, short.missed), (4, 1, 2));
        assert_eq!(short.miss_rate(), Some(0.5));
        assert_eq!(short.preemptions_per_request(), Some(0.0));
        let long = p.scope("long").unwrap();
        assert_eq!((long.missed, long.preemptions), (0, 2));
        assert_eq!(long.slowdown.unwrap().p999, 2.0);
        assert_eq!(p.usage.mean_worker(), Some(0.75));
        assert_eq!(p.usage.mean_dispatcher(), Some(0.25));
    }

    #[test]
    fn nearest_rank_percentiles_on_a_hand_computed_sample() {
        // Latencies 5, 10, ..., 1000 ns (200 values, all exact in the
        // histogram): p50 is rank 100 = 500 ns, p90 rank 180 = 900 ns, p99
        // rank 198 = 990 ns, p99.9 rank ⌈199.8⌉ = 200 = 1000 ns.
        let mut c = Collector::new("fifo");
        for i in (1..=200).rev() {
            c.record(&outcome(0, 0, 5, Some(5 * i)));
        }
        let p = c.finish(&functions(), Usage::default());
        let lat = p.all().latency.unwrap();
        assert_eq!((lat.p50, lat.p90, lat.p99, lat.p999), (0.5, 0.9, 0.99, 1.0));
        assert_eq!((lat.mean, lat.max), (0.5025, 1.0));
        // Slowdowns 1..=200, recorded above the histogram's exact range.
        let sd = p.all().slowdown.unwrap();
        assert!(within(sd.p50, 100.0) && within(sd.p99, 198.0), "{sd:?}");
        assert_eq!((sd.p999, sd.max), (200.0, 200.0));
        // No span: no throughput, and no utilisation to average.
        assert_eq!(p.all().throughput, None);
        assert_eq!(p.usage.mean_worker(), None);
    }

    #[test]
    fn large_latencies_stay_within_the_stated_error() {
        let mut c = Collector::new("fifo");
        for i in 1..=1000u64 {
            c.record(&outcome(0, 0, 10 * US, Some(i * 37 * US + i)));
        }
        let lat = c
            .finish(&functions(), Usage::default())
            .all()
            .latency
            .unwrap();
        // Rank 999: 999 · 37 µs + 999 ns.
        let want = (999.0 * 37_000.0 + 999.0) / 1e3;
        assert!(within(lat.p999, want), "{}", lat.p999);
        assert_eq!(lat.max, (1000.0 * 37_000.0 + 1000.0) / 1e3);
    }

    #[test]
    fn only_drops_leave_latency_empty_and_unknown_functions_are_labelled() {
        let mut c = Collector::new("darc");
        c.record(&outcome(7, 0, 100, None));
        let p = c.finish(
            &functions(),
            Usage {
                span: SEC,
                ..Usage::default()
            },
        );
        assert_eq!(p.scopes[1].scope, "#7");
        let all = p.all();
        assert_eq!(
            (all.requests, all.finished, all.dropped, all.missed),
            (1, 0, 1, 1)
        );
        assert_eq!((all.latency, all.slowdown), (None, None));
        assert_eq!(all.miss_rate(), Some(1.0));
        assert_eq!(all.preemptions_per_request(), None);
        assert_eq!(all.throughput, Some(0.0));

        let empty = Collector::new("idle").finish(&functions(), Usage::default());
        assert_eq!(empty.scopes.len(), 1);
        assert_eq!(empty.all().miss_rate(), None);
    }
}
