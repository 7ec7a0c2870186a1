//! How long a router took to decide, on the wall clock of the machine that
//! ran the simulation: the one measure of a simulated cluster run that is
//! not a function of its seed and inputs.
//!
//! It is kept out of `summary.json`, `summary.csv` and `report.html`, which
//! stay the same bytes for the same seed and inputs, and goes to a file of
//! its own, `timing.json`, and to the terminal's error stream.
//!
//! Timing a call costs about as much as a fast router's decision, so one
//! decision in [`TIMED_EVERY`] is timed (the same ones in every run: the
//! count decides, not a clock), which keeps the simulation's own speed
//! within a percent of an untimed run's.

use crate::Result;
use crate::histogram::Histogram;
use crate::output::{FAASCHED_VERSION, write_json};
use crate::staged::Staged;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::Path;

/// One decision in this many is timed.
pub const TIMED_EVERY: u64 = 8;

/// The version of `timing.json`'s layout.
pub const TIMING_SCHEMA_VERSION: u32 = 1;

/// One router's decision times in one run, ns.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionTimes {
    decisions: u64,
    timed: Histogram,
}

impl DecisionTimes {
    /// None yet.
    pub fn new() -> DecisionTimes {
        DecisionTimes::default()
    }

    /// Counts a decision; true if it is one to time.
    #[inline]
    pub fn count(&mut self) -> bool {
        self.decisions += 1;
        self.decisions.is_multiple_of(TIMED_EVERY)
    }

    /// Records the time of a decision [`count`](Self::count) chose, ns.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.timed.record(ns);
    }

    /// Decisions counted.
    pub fn decisions(&self) -> u64 {
        self.decisions
    }

    /// Decisions timed.
    pub fn timed(&self) -> u64 {
        self.timed.count()
    }

    /// The median time of a timed decision, ns; `None` if none was timed.
    pub fn median_ns(&self) -> Option<u64> {
        self.timed.quantile_per_mille(500)
    }

    /// Its line of `timing.json`.
    fn json(&self, policy: &str) -> Value {
        let q = |pm| self.timed.quantile_per_mille(pm);
        json!({
            "policy": policy,
            "decisions": self.decisions,
            "timed": self.timed(),
            "mean_ns": self.timed.mean(),
            "p50_ns": q(500),
            "p99_ns": q(990),
            "p999_ns": q(999),
            "max_ns": self.timed.max(),
        })
    }
}

/// The content of `timing.json`: a line per policy, in `rows`' order.
pub fn timing_json(rows: &[(&str, &DecisionTimes)]) -> Value {
    json!({
        "schema_version": TIMING_SCHEMA_VERSION,
        "faasched_version": FAASCHED_VERSION,
        "timed_every": TIMED_EVERY,
        "policies": rows.iter().map(|(p, t)| t.json(p)).collect::<Vec<_>>(),
    })
}

/// Writes `timing.json` into `dir` (created if missing), staged.
pub fn write_cluster_timing(
    dir: &Path,
    rows: &[(&str, &DecisionTimes)],
    staged: &mut Staged,
) -> Result<()> {
    staged.create_dir(dir)?;
    write_json(&dir.join("timing.json"), &timing_json(rows), staged)
}

/// A line per policy for the terminal: the median and p99 decision time.
pub fn render_decision_times(rows: &[(&str, &DecisionTimes)]) -> String {
    let width = rows.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
    let mut text = String::new();
    for (policy, t) in rows {
        let q = |pm| {
            t.timed
                .quantile_per_mille(pm)
                .map_or_else(|| "-".to_string(), |ns| format!("{ns} ns"))
        };
        text.push_str(&format!(
            "decision time {policy:<width$}  median {}  p99 {}  ({} of {} decisions timed)\n",
            q(500),
            q(990),
            t.timed(),
            t.decisions,
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_decision_in_every_eight_is_timed_the_same_ones_each_run() {
        let mut t = DecisionTimes::new();
        let chosen: Vec<u64> = (1..=24).filter(|_| t.count()).collect();
        assert_eq!(chosen, [8, 16, 24]);
        assert_eq!(t.decisions(), 24);
    }

    #[test]
    fn the_file_and_the_lines_give_the_recorded_times() {
        let mut t = DecisionTimes::new();
        let mut times = [100, 200, 300].into_iter();
        for _ in 0..24 {
            if t.count() {
                t.record(times.next().unwrap());
            }
        }
        let v = timing_json(&[("ch-rlu", &t)]);
        let p = &v["policies"][0];
        assert_eq!(p["policy"], "ch-rlu");
        assert_eq!(p["timed"], 3);
        assert_eq!(p["p50_ns"], 200);
        assert_eq!(p["max_ns"], 300);
        assert_eq!(p["mean_ns"], 200.0);
        let empty = DecisionTimes::new();
        let text = render_decision_times(&[("ch-rlu", &t), ("random", &empty)]);
        assert_eq!(
            text,
            "decision time ch-rlu  median 200 ns  p99 300 ns  (3 of 24 decisions timed)\n\
             decision time random  median -  p99 -  (0 of 0 decisions timed)\n"
        );
    }
}
