//! The [`Collector`] cluster outcomes stream into, and the [`ClusterSummary`]
//! it finishes into; what each number means is in the
//! [`cluster`](super) module's documentation.

use crate::cost::Cost;
use crate::histogram::Histogram;
use crate::stats::{SLOWDOWN_ONE, Stats, slowdown_fixed};
use faasched_model::FunctionId;
use faasched_model::cluster::{Inside, InvocationOutcome};
use std::collections::BTreeMap;

/// Latency is recorded in µs and reported in ms: divided by this.
const US_PER_MS: f64 = 1e3;

/// One function's running totals.
#[derive(Clone, Copy, Debug, Default)]
struct FunctionAcc {
    invocations: u64,
    finished: u64,
    cold: u64,
    /// Exact sum of the finished ones' latencies, ns.
    latency_sum: u128,
    slowdown_sum: f64,
    cost: Cost,
}

/// One function's measures over a run (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FunctionSummary {
    /// The function.
    pub function: FunctionId,
    /// Its invocations, dropped ones included.
    pub invocations: u64,
    /// Of those, finished.
    pub finished: u64,
    /// Of the finished, started cold.
    pub cold: u64,
    /// Mean end-to-end latency (arrival to finish) of the finished ones,
    /// ms; `None` if none finished.
    pub latency_mean_ms: Option<f64>,
    /// Their mean slowdown; `None` if none finished.
    pub slowdown_mean: Option<f64>,
    /// What their executions would cost on a FaaS provider.
    pub cost: Cost,
}

/// Collects one policy's outcomes.
#[derive(Clone, Debug)]
pub struct Collector {
    policy: String,
    invocations: u64,
    dropped: u64,
    cold: u64,
    /// µs, finished invocations.
    latency: Histogram,
    /// Fixed point, finished invocations.
    slowdown: Histogram,
    /// Exact sum of the slowdowns, for the global increase.
    slowdown_sum: f64,
    functions: BTreeMap<FunctionId, FunctionAcc>,
    node: Option<NodeSummary>,
    os: Option<OsSummary>,
}

/// What node servers measured of the invocations that reached one (see
/// the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeSummary {
    /// Invocations that started on a node server.
    pub reached: u64,
    /// Of those, finished after their deadline on the node, or dropped by
    /// its policy.
    pub missed: u64,
    /// Of those, dropped by the node's policy.
    pub dropped: u64,
    /// Times they were taken off a worker before they finished.
    pub preemptions: u64,
}

impl NodeSummary {
    /// missed / reached.
    pub fn miss_ratio(&self) -> Option<f64> {
        (self.reached > 0).then(|| self.missed as f64 / self.reached as f64)
    }

    /// preemptions / reached.
    pub fn preemptions_per_invocation(&self) -> Option<f64> {
        (self.reached > 0).then(|| self.preemptions as f64 / self.reached as f64)
    }
}

/// What OS servers' kernels measured of the invocations that ran on one
/// (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OsSummary {
    /// Invocations that ran as a process on an OS server.
    pub reached: u64,
    /// Switches away from them because they exited (or blocked).
    pub voluntary_switches: u64,
    /// Switches away from them because something else took their core.
    pub involuntary_switches: u64,
}

impl OsSummary {
    /// involuntary switches / reached: how often the kernel preempted an
    /// invocation.
    pub fn preemptions_per_invocation(&self) -> Option<f64> {
        (self.reached > 0).then(|| self.involuntary_switches as f64 / self.reached as f64)
    }

    /// All switches / reached.
    pub fn switches_per_invocation(&self) -> Option<f64> {
        (self.reached > 0).then(|| {
            (self.voluntary_switches + self.involuntary_switches) as f64 / self.reached as f64
        })
    }
}

/// What a policy's run measured (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterSummary {
    /// The policy's name, as the CLI spells it.
    pub policy: String,
    /// Outcomes recorded, dropped ones included.
    pub invocations: u64,
    /// Finished invocations.
    pub finished: u64,
    /// Dropped invocations.
    pub dropped: u64,
    /// Finished invocations that started cold.
    pub cold: u64,
    /// Latency in ms over the finished invocations; `None` if none finished.
    pub latency: Option<Stats>,
    /// Slowdown over the finished invocations; `None` if none finished.
    pub slowdown: Option<Stats>,
    /// Mean slowdown − 1; `None` if none finished.
    pub global_increase: Option<f64>,
    /// Each function's mean slowdown, over the functions with a finished
    /// invocation; `None` if none.
    pub function_slowdown: Option<Stats>,
    /// What the finished invocations' executions would cost on a FaaS
    /// provider, over those whose first run is known.
    pub cost: Cost,
    /// Each function's measures, by id.
    pub functions: Vec<FunctionSummary>,
    /// Node servers' measures; `None` where no outcome came from one.
    pub node: Option<NodeSummary>,
    /// OS servers' measures; `None` where no outcome came from one.
    pub os: Option<OsSummary>,
}

impl ClusterSummary {
    /// cold / finished; `None` if none finished.
    pub fn cold_ratio(&self) -> Option<f64> {
        (self.finished > 0).then(|| self.cold as f64 / self.finished as f64)
    }

    /// dropped / invocations; `None` without invocations.
    pub fn drop_ratio(&self) -> Option<f64> {
        (self.invocations > 0).then(|| self.dropped as f64 / self.invocations as f64)
    }
}

impl Collector {
    /// A collector for `policy`.
    pub fn new(policy: &str) -> Collector {
        Collector {
            policy: policy.to_string(),
            invocations: 0,
            dropped: 0,
            cold: 0,
            latency: Histogram::new(),
            slowdown: Histogram::new(),
            slowdown_sum: 0.0,
            functions: BTreeMap::new(),
            node: None,
            os: None,
        }
    }

    /// Records one outcome, finished or dropped.
    pub fn record(&mut self, o: &InvocationOutcome) {
        self.invocations += 1;
        match o.inside {
            Some(Inside::Node(place)) => {
                let node = self.node.get_or_insert_default();
                node.reached += 1;
                node.missed += u64::from(place.missed);
                node.dropped += u64::from(o.dropped());
                node.preemptions += u64::from(place.preemptions);
            }
            Some(Inside::Os(place)) => {
                let os = self.os.get_or_insert_default();
                os.reached += 1;
                os.voluntary_switches += place.voluntary_switches;
                os.involuntary_switches += place.involuntary_switches;
            }
            None => {}
        }
        let f = self.functions.entry(o.info.profile.function).or_default();
        f.invocations += 1;
        let (Some(latency), Some(slowdown)) = (o.latency(), o.slowdown()) else {
            self.dropped += 1;
            return;
        };
        self.cold += u64::from(o.cold);
        self.latency.record(latency / 1_000);
        self.slowdown
            .record(slowdown_fixed(latency, o.info.profile.warm));
        self.slowdown_sum += slowdown;
        f.finished += 1;
        f.cold += u64::from(o.cold);
        f.latency_sum += u128::from(latency);
        f.slowdown_sum += slowdown;
        if let Some(execution) = o.execution() {
            f.cost.add(execution, o.info.profile.memory_mb);
        }
    }

    /// Outcomes recorded so far.
    pub fn count(&self) -> u64 {
        self.invocations
    }

    /// The summary.
    pub fn finish(self) -> ClusterSummary {
        let finished = self.latency.count();
        let mut per_function: Vec<f64> = self
            .functions
            .values()
            .filter(|f| f.finished > 0)
            .map(|f| f.slowdown_sum / f.finished as f64)
            .collect();
        let mut cost = Cost::default();
        for f in self.functions.values() {
            cost.merge(&f.cost);
        }
        let functions = self
            .functions
            .iter()
            .map(|(&function, f)| {
                let mean = |sum: f64| (f.finished > 0).then(|| sum / f.finished as f64);
                FunctionSummary {
                    function,
                    invocations: f.invocations,
                    finished: f.finished,
                    cold: f.cold,
                    latency_mean_ms: mean(f.latency_sum as f64 / 1e6),
                    slowdown_mean: mean(f.slowdown_sum),
                    cost: f.cost,
                }
            })
            .collect();
        per_function.sort_by(f64::total_cmp);
        ClusterSummary {
            policy: self.policy,
            invocations: self.invocations,
            finished,
            dropped: self.dropped,
            cold: self.cold,
            latency: Stats::of(&self.latency, US_PER_MS),
            slowdown: Stats::of(&self.slowdown, SLOWDOWN_ONE as f64),
            global_increase: (finished > 0).then(|| self.slowdown_sum / finished as f64 - 1.0),
            function_slowdown: Stats::of_sorted(&per_function),
            cost,
            functions,
            node: self.node,
            os: self.os,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::MS;
    use faasched_model::cluster::{FunctionProfile, InvocationId, InvocationInfo, ServerId};

    /// An invocation of `function` (warm `warm_ms`) that took `latency_ms`,
    /// its last `warm_ms` running, or was dropped.
    fn outcome(
        function: u32,
        warm_ms: u64,
        latency_ms: Option<u64>,
        cold: bool,
    ) -> InvocationOutcome {
        InvocationOutcome {
            info: InvocationInfo {
                id: InvocationId(0),
                arrival: 10 * MS,
                profile: FunctionProfile {
                    function: FunctionId(function),
                    memory_mb: 128,
                    warm: warm_ms * MS,
                    cold: 3 * warm_ms * MS,
                },
            },
            work: warm_ms * MS,
            server: latency_ms.map(|_| ServerId(0)),
            cold,
            first_run: latency_ms.map(|l| 10 * MS + (l - warm_ms) * MS),
            finish: latency_ms.map(|l| 10 * MS + l * MS),
            inside: None,
        }
    }

    #[test]
    fn hand_computed_cost_and_per_function_measures() {
        let mut c = Collector::new("ch-rlu");
        c.record(&outcome(0, 100, Some(100), false));
        c.record(&outcome(0, 100, Some(300), true));
        c.record(&outcome(1, 10, Some(20), false));
        c.record(&outcome(2, 10, None, false));
        // An outcome whose first run is unknown (live) is not billed.
        c.record(&InvocationOutcome {
            first_run: None,
            ..outcome(1, 10, Some(40), false)
        });
        let s = c.finish();
        // Billed: 100 + 100 + 10 ms, at 128 MB each.
        assert_eq!(s.cost.requests(), 3);
        assert_eq!(s.cost.billed_mb_ms(), 210 * 128);
        let by_id: Vec<_> = s
            .functions
            .iter()
            .map(|f| {
                (
                    f.function.0,
                    f.invocations,
                    f.finished,
                    f.cold,
                    f.latency_mean_ms,
                    f.slowdown_mean,
                    f.cost.billed_mb_ms(),
                )
            })
            .collect();
        assert_eq!(
            by_id,
            [
                (0, 2, 2, 1, Some(200.0), Some(2.0), 200 * 128),
                (1, 2, 2, 0, Some(30.0), Some(3.0), 10 * 128),
                (2, 1, 0, 0, None, None, 0),
            ]
        );
    }

    #[test]
    fn hand_computed_global_increase_and_function_slowdowns() {
        let mut c = Collector::new("ch-rlu");
        // Function 0 (warm 100 ms): slowdowns 1, 3 (cold); function 1 (warm
        // 10 ms): 2; function 2: only dropped.
        c.record(&outcome(0, 100, Some(100), false));
        c.record(&outcome(0, 100, Some(300), true));
        c.record(&outcome(1, 10, Some(20), false));
        c.record(&outcome(2, 10, None, false));
        let s = c.finish();
        assert_eq!((s.invocations, s.finished, s.dropped, s.cold), (4, 3, 1, 1));
        assert_eq!(s.cold_ratio(), Some(1.0 / 3.0));
        assert_eq!(s.drop_ratio(), Some(0.25));
        // (1 + 3 + 2) / 3 − 1: every invocation weighs the same.
        assert!((s.global_increase.unwrap() - 1.0).abs() < 1e-12);
        // Per function: 2 (function 0's mean) and 2 (function 1's).
        let f = s.function_slowdown.unwrap();
        assert_eq!((f.mean, f.p50, f.max), (2.0, 2.0, 2.0));
        // Within the histogram's 0.049% above 2048 µs; the max is exact.
        let lat = s.latency.unwrap();
        assert!((lat.p50 - 100.0).abs() <= 0.05, "{lat:?}");
        assert_eq!(lat.max, 300.0);
        let sd = s.slowdown.unwrap();
        assert!((sd.p50 - 2.0).abs() <= 2.0 * 0.0005, "{sd:?}");
        assert_eq!(sd.max, 3.0);
    }

    #[test]
    fn nothing_finished_reads_none() {
        let mut c = Collector::new("random");
        c.record(&outcome(0, 5, None, false));
        let s = c.finish();
        assert!(s.latency.is_none() && s.slowdown.is_none());
        assert!(s.global_increase.is_none() && s.function_slowdown.is_none());
        assert_eq!(s.cold_ratio(), None);
        assert_eq!(Collector::new("x").finish().drop_ratio(), None);
    }
}
