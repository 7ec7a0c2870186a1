//! Per-policy metrics: the [`Collector`] that outcomes stream into, and the
//! [`PolicySummary`] it finishes into.
//!
//! Memory is constant in the number of outcomes: each group keeps one
//! [`Histogram`] per [`Metric`], exact switch counts and an exact [`Cost`]; the
//! "all" scope is the merge of the four groups, built by [`Collector::finish`].
//! For the charts, each scope's turnaround CDF comes from its histogram
//! ([`Histogram::cdf`], [`CDF_STEPS_PER_OCTAVE`] cells per power of two) and the
//! policy's finishes over simulated time from a [`Completions`] (bounded buckets).
//!
//! # Units
//!
//! Time metrics are recorded in ns and reported in ms. Slowdown, a ratio, is
//! recorded in fixed point, ⌊turnaround · 10⁶ / (cpu + io)⌋ (so to 10⁻⁶; 1.0 for
//! an invocation with no demand, as [`Outcome::slowdown`]), and reported as a
//! ratio. Both therefore divide the recorded integer by [`REPORT_SCALE`] (10⁶).

use super::timeline::Completions;
use crate::cost::Cost;
use crate::histogram::Histogram;
use crate::stats::{SLOWDOWN_ONE, Stats, slowdown_fixed};
use faasched_model::{Group, Outcome};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// Recorded integers are divided by this when reported: ns → ms, and the
/// slowdown's fixed point → ratio.
pub const REPORT_SCALE: f64 = 1e6;

/// Grid of the turnaround CDFs: cells per power of two of the value, so one cell
/// spans at most 1/16 ≈ 6% of its lower bound.
pub const CDF_STEPS_PER_OCTAVE: u32 = 16;

/// A per-invocation quantity, in the order of the output rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// finish − arrival.
    Turnaround,
    /// first_run − arrival.
    Response,
    /// finish − first_run (the billed duration).
    Execution,
    /// turnaround − cpu − io.
    Waiting,
    /// turnaround / (cpu + io); a ratio, not a time.
    Slowdown,
}

impl Metric {
    /// Every metric, in output order.
    pub const ALL: [Metric; 5] = [
        Metric::Turnaround,
        Metric::Response,
        Metric::Execution,
        Metric::Waiting,
        Metric::Slowdown,
    ];

    /// Index 0..5 in [`Metric::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name the output files use (`turnaround`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Turnaround => "turnaround",
            Metric::Response => "response",
            Metric::Execution => "execution",
            Metric::Waiting => "waiting",
            Metric::Slowdown => "slowdown",
        }
    }

    /// The value to record for `o`: ns for times, fixed-point ratio for slowdown.
    #[inline]
    fn value(self, o: &Outcome) -> u64 {
        match self {
            Metric::Turnaround => o.turnaround(),
            Metric::Response => o.response(),
            Metric::Execution => o.execution(),
            Metric::Waiting => o.waiting(),
            Metric::Slowdown => slowdown(o),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// ⌊turnaround · 10⁶ / (cpu + io)⌋, 10⁶ if there is no demand, saturating.
#[inline]
fn slowdown(o: &Outcome) -> u64 {
    match o.cpu + o.io {
        0 => SLOWDOWN_ONE,
        demand => slowdown_fixed(o.turnaround(), demand),
    }
}

/// Which invocations a line of the summary covers: all, or one group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Every invocation; labelled `all`.
    All,
    /// One duration group; labelled `G1`..`G4`.
    Group(Group),
}

impl Scope {
    /// Every scope, in output order: all, G1..G4.
    pub const ALL: [Scope; 5] = [
        Scope::All,
        Scope::Group(Group::G1),
        Scope::Group(Group::G2),
        Scope::Group(Group::G3),
        Scope::Group(Group::G4),
    ];

    /// Index 0..5 in [`Scope::ALL`].
    pub fn index(self) -> usize {
        match self {
            Scope::All => 0,
            Scope::Group(g) => 1 + g.index(),
        }
    }

    /// The label the output files use: `all`, `G1`..`G4`.
    pub fn label(self) -> &'static str {
        match self {
            Scope::All => "all",
            Scope::Group(Group::G1) => "G1",
            Scope::Group(Group::G2) => "G2",
            Scope::Group(Group::G3) => "G3",
            Scope::Group(Group::G4) => "G4",
        }
    }

    /// The scope a label names, if any.
    pub fn from_label(label: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.label() == label)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl Serialize for Scope {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scope, D::Error> {
        let label = String::deserialize(d)?;
        Scope::from_label(&label).ok_or_else(|| {
            de::Error::custom(format!("unknown group `{label}`, expected all or G1..G4"))
        })
    }
}

/// One point of a cumulative distribution.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CdfPoint {
    /// The value, in ms.
    pub ms: f64,
    /// Fraction of the scope's invocations at or below `ms` (0..=1).
    pub fraction: f64,
}

/// Everything measured over one scope of one policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScopeSummary {
    /// Which invocations.
    pub scope: Scope,
    /// How many invocations.
    pub count: u64,
    /// Statistics per metric, indexed by [`Metric::index`], in ms (a ratio for
    /// slowdown); `None` when `count` is 0.
    pub stats: [Option<Stats>; 5],
    /// Total voluntary context switches.
    pub voluntary_switches: u64,
    /// Total involuntary context switches.
    pub involuntary_switches: u64,
    /// Exact billing totals.
    pub cost: Cost,
    /// The turnaround CDF, from the histogram (see [`Histogram::cdf`]): starts at
    /// the minimum with fraction 0, ends at the maximum with fraction 1; empty for
    /// an empty scope.
    pub turnaround_cdf: Vec<CdfPoint>,
}

impl ScopeSummary {
    /// The statistics of one metric; `None` for an empty scope.
    pub fn stats(&self, metric: Metric) -> Option<&Stats> {
        self.stats[metric.index()].as_ref()
    }

    /// Voluntary switches per invocation; `None` for an empty scope.
    pub fn voluntary_per_invocation(&self) -> Option<f64> {
        self.per_invocation(self.voluntary_switches)
    }

    /// Involuntary switches per invocation; `None` for an empty scope.
    pub fn involuntary_per_invocation(&self) -> Option<f64> {
        self.per_invocation(self.involuntary_switches)
    }

    fn per_invocation(&self, total: u64) -> Option<f64> {
        (self.count > 0).then(|| total as f64 / self.count as f64)
    }
}

/// The finished measurements of one policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PolicySummary {
    /// The policy's name, as the CLI spells it.
    pub policy: String,
    /// Whether the policy needs a mechanism only the simulator has (a patched kernel).
    pub sim_only: bool,
    /// Busy core-time / available core-time over the run, as the caller measured it.
    pub utilisation: f64,
    /// Per scope, in [`Scope::ALL`] order (all, G1..G4).
    pub scopes: [ScopeSummary; 5],
    /// Finished invocations over simulated time.
    pub completions: Completions,
    /// What a live run measured beyond the outcomes (launch lateness,
    /// steering overhead, calibration); `None` for a simulation.
    pub live: Option<serde_json::Value>,
    /// The parameters the policy ran with, if it has any (its TOML table).
    pub params: Option<serde_json::Value>,
}

impl PolicySummary {
    /// The summary over every invocation.
    pub fn all(&self) -> &ScopeSummary {
        &self.scopes[0]
    }

    /// The summary of one scope.
    pub fn scope(&self, scope: Scope) -> &ScopeSummary {
        &self.scopes[scope.index()]
    }
}

/// Running totals for one group.
#[derive(Clone, Debug, Default)]
struct Acc {
    hists: [Histogram; 5],
    voluntary: u64,
    involuntary: u64,
    cost: Cost,
}

impl Acc {
    fn merge(&mut self, other: &Acc) {
        for (a, b) in self.hists.iter_mut().zip(&other.hists) {
            a.merge(b);
        }
        self.voluntary += other.voluntary;
        self.involuntary += other.involuntary;
        self.cost.merge(&other.cost);
    }

    fn summary(&self, scope: Scope) -> ScopeSummary {
        let turnaround = &self.hists[Metric::Turnaround.index()];
        let count = turnaround.count();
        let turnaround_cdf = turnaround
            .cdf(CDF_STEPS_PER_OCTAVE)
            .into_iter()
            .map(|(v, n)| CdfPoint {
                ms: v as f64 / REPORT_SCALE,
                fraction: n as f64 / count as f64,
            })
            .collect();
        ScopeSummary {
            scope,
            count,
            stats: self.hists.each_ref().map(|h| Stats::of(h, REPORT_SCALE)),
            voluntary_switches: self.voluntary,
            involuntary_switches: self.involuntary,
            cost: self.cost,
            turnaround_cdf,
        }
    }
}

/// Collects the outcomes of one policy's run, in memory independent of their number.
#[derive(Clone, Debug)]
pub struct Collector {
    policy: String,
    sim_only: bool,
    groups: [Acc; 4],
    completions: Completions,
}

impl Collector {
    /// A collector for `policy`; `sim_only` marks a simulator-only mechanism.
    pub fn new(policy: &str, sim_only: bool) -> Collector {
        Collector {
            policy: policy.to_string(),
            sim_only,
            groups: Default::default(),
            completions: Completions::new(),
        }
    }

    /// Records one outcome in its group (`outcome.group`).
    #[inline]
    pub fn record(&mut self, outcome: &Outcome) {
        let acc = &mut self.groups[outcome.group.index()];
        for (h, m) in acc.hists.iter_mut().zip(Metric::ALL) {
            h.record(m.value(outcome));
        }
        acc.voluntary += outcome.voluntary_switches;
        acc.involuntary += outcome.involuntary_switches;
        acc.cost.add(outcome.execution(), outcome.memory_mb);
        self.completions.record(outcome.finish);
    }

    /// Number of outcomes recorded so far.
    pub fn count(&self) -> u64 {
        self.groups.iter().map(|g| g.hists[0].count()).sum()
    }

    /// The summary, with the `utilisation` the caller measured over the run.
    pub fn finish(self, utilisation: f64) -> PolicySummary {
        let mut all = Acc::default();
        for g in &self.groups {
            all.merge(g);
        }
        let scopes = Scope::ALL.map(|scope| match scope {
            Scope::All => all.summary(scope),
            Scope::Group(g) => self.groups[g.index()].summary(scope),
        });
        PolicySummary {
            policy: self.policy,
            sim_only: self.sim_only,
            utilisation,
            scopes,
            completions: self.completions,
            live: None,
            params: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::{Function, FunctionId};

    fn outcome(turnaround: u64, cpu: u64, io: u64) -> Outcome {
        Outcome {
            id: 0,
            function: Function {
                id: FunctionId(0),
                name: "f".into(),
            },
            group: Group::G1,
            arrival: 0,
            first_run: 0,
            finish: turnaround,
            cpu,
            io,
            voluntary_switches: 0,
            involuntary_switches: 0,
            memory_mb: 128,
        }
    }

    #[test]
    fn slowdown_is_over_cpu_and_io_and_one_without_demand() {
        assert_eq!(slowdown(&outcome(3, 2, 1)), 1_000_000);
        assert_eq!(slowdown(&outcome(22, 10, 5)), 1_466_666);
        assert_eq!(slowdown(&outcome(0, 0, 0)), 1_000_000);
        assert_eq!(slowdown(&outcome(5, 0, 0)), 1_000_000);
    }

    #[test]
    fn scope_labels_round_trip() {
        for s in Scope::ALL {
            assert_eq!(Scope::from_label(s.label()), Some(s));
            assert_eq!(Scope::ALL[s.index()], s);
        }
        assert_eq!(Scope::from_label("G5"), None);
        assert_eq!(Metric::ALL.map(Metric::index), [0, 1, 2, 3, 4]);
    }
}
