//! The same node run simulated and live, side by side: per policy its
//! latency, slowdown, misses and preemptions in each world, and whether
//! the two worlds rank the policies alike.

use crate::compare::{aligned, cell, pair};
use anyhow::{Result, bail};
use faasched_report::node::{PolicySummary, Summary};
use serde::Serialize;
use std::fmt::Write as _;

/// What the rankings order the policies by: p99.9 slowdown, lowest first
/// (SledgeScale's headline metric).
pub const RANKED_BY: &str = "p99.9 slowdown";

/// One policy's numbers in one world, over all its requests.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Side {
    /// Median latency, µs.
    pub p50_us: Option<f64>,
    /// 99th percentile latency, µs.
    pub p99_us: Option<f64>,
    /// 99.9th percentile latency, µs.
    pub p999_us: Option<f64>,
    /// 99.9th percentile slowdown (latency / work).
    pub slowdown_p999: Option<f64>,
    /// Missed or dropped, % of the requests.
    pub miss_pct: Option<f64>,
    /// Preemptions per finished request.
    pub preemptions: Option<f64>,
}

impl Side {
    fn of(p: &PolicySummary) -> Side {
        let all = p.all();
        Side {
            p50_us: all.latency.map(|l| l.p50),
            p99_us: all.latency.map(|l| l.p99),
            p999_us: all.latency.map(|l| l.p999),
            slowdown_p999: all.slowdown.map(|s| s.p999),
            miss_pct: all.miss_rate().map(|m| m * 100.0),
            preemptions: (all.finished > 0).then(|| all.preemptions as f64 / all.finished as f64),
        }
    }
}

/// What names a row: a policy at a rate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct At {
    /// Offered requests per second.
    pub rate_rps: f64,
    /// The policy.
    pub policy: String,
}

/// What a ranking ranks: the policies at one rate, by [`RANKED_BY`] (a
/// policy with nothing finished last).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rate {
    /// Offered requests per second.
    pub rate_rps: f64,
}

/// One policy at one rate, in both worlds.
pub type Row = crate::compare::Row<At, Side>;

/// How each world orders the policies at one rate.
pub type Ranking = crate::compare::Ranking<Rate>;

/// The whole comparison, as compare.json holds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// What the rankings order by.
    pub ranked_by: &'static str,
    /// Per rate and policy.
    pub rows: Vec<Row>,
    /// Per rate.
    pub rankings: Vec<Ranking>,
}

/// Pairs a simulation's summary with the live one of the same runs (the
/// same rates and policies in the same order).
pub fn compare(sim: &Summary, live: &Summary) -> Result<Comparison> {
    if sim.loads.len() != live.loads.len() {
        bail!(
            "{} simulated rates but {} live ones",
            sim.loads.len(),
            live.loads.len()
        );
    }
    let mut rows = Vec::new();
    let mut rankings = Vec::new();
    for (s, l) in sim.loads.iter().zip(&live.loads) {
        let names = |ps: &[PolicySummary]| ps.iter().map(|p| p.policy.clone()).collect::<Vec<_>>();
        if names(&s.policies) != names(&l.policies) {
            bail!("the simulated and live runs have different policies");
        }
        for (sp, lp) in s.policies.iter().zip(&l.policies) {
            rows.push(Row {
                key: At {
                    rate_rps: s.rate,
                    policy: sp.policy.clone(),
                },
                sim: Side::of(sp),
                live: Side::of(lp),
            });
        }
        let rate = Rate { rate_rps: s.rate };
        rankings.push(Ranking::new(rate, rank(&s.policies), rank(&l.policies)));
    }
    Ok(Comparison {
        ranked_by: RANKED_BY,
        rows,
        rankings,
    })
}

/// `node compare`: the sweep simulated, then replayed live, each request
/// sent as `calls` says to a node serving what `deploy` holds, and the two
/// set side by side; published with each world's files in sim/ and live/
/// of `dir`. The simulation runs every request with the work the workload
/// gives it: for real functions, a workload whose work is theirs (the
/// workload.csv of a `node load` of them) sets both worlds on the same
/// functions.
#[cfg(feature = "live")]
pub fn compare_sweep(
    options: &super::run::NodeOptions,
    sweep: &super::sweep::Sweep,
    host: super::live::Host,
    calls: &crate::calls::CallOptions,
    deploy: Option<&std::path::Path>,
    dir: Option<&std::path::Path>,
    json: bool,
) -> Result<()> {
    use super::replay::{Live, live_settings};
    use crate::output::Publish;
    let runs = Live::prepare(options, host, calls, deploy)?;
    let sim = sweep.run(options, &mut |setup, policy, bar| {
        setup.run(policy, |_| bar.inc(1))
    })?;
    let mut live = sweep.run(options, &mut |setup, policy, bar| {
        runs.replayed(setup, policy, bar)
    })?;
    live_settings(&mut live.settings, &runs.host);
    let comparison = compare(&sim, &live)?;
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "sim_settings": sim.settings,
        "live_settings": live.settings,
        "comparison": comparison,
    }))? + "\n";
    crate::output::publish_comparison(
        dir,
        json,
        &text,
        &comparison.to_csv(),
        &comparison.render(),
        |world, sub, staged| match world {
            "sim" => sim.write(sub, "faasched node compare: simulated", staged),
            _ => live.write(sub, "faasched node compare: live", staged),
        },
    )
}

/// The policies by p99.9 slowdown, lowest first; ties keep their order,
/// and a policy with nothing finished comes last.
fn rank(policies: &[PolicySummary]) -> Vec<String> {
    crate::compare::rank(
        policies
            .iter()
            .map(|p| (p.policy.as_str(), p.all().slowdown.map(|s| s.p999))),
    )
}

/// compare.csv's header: one row per rate and policy.
pub const COMPARE_CSV_HEADER: &str = "rate_rps,policy,world,p50_us,p99_us,p999_us,\
                                      slowdown_p999,miss_pct,preemptions_per_request";

impl Comparison {
    /// compare.csv: a row per rate, policy and world; empty cells where
    /// nothing finished.
    pub fn to_csv(&self) -> String {
        let mut out = format!("{COMPARE_CSV_HEADER}\n");
        for r in &self.rows {
            for (world, side) in [("sim", &r.sim), ("live", &r.live)] {
                let cells = [
                    side.p50_us,
                    side.p99_us,
                    side.p999_us,
                    side.slowdown_p999,
                    side.miss_pct,
                    side.preemptions,
                ]
                .map(cell);
                let _ = writeln!(
                    out,
                    "{},{},{world},{}",
                    r.key.rate_rps,
                    r.key.policy,
                    cells.join(",")
                );
            }
        }
        out
    }

    /// The table `node compare` prints: a line per policy with each metric
    /// simulated and live, then each world's ranking.
    pub fn render(&self) -> String {
        let header = [
            "policy", "p50_us", "p99_us", "p999_us", "sd_p999", "miss_%", "preempt",
        ];
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.key.policy.clone(),
                    pair(r.sim.p50_us, r.live.p50_us, 1),
                    pair(r.sim.p99_us, r.live.p99_us, 1),
                    pair(r.sim.p999_us, r.live.p999_us, 1),
                    pair(r.sim.slowdown_p999, r.live.slowdown_p999, 2),
                    pair(r.sim.miss_pct, r.live.miss_pct, 2),
                    pair(r.sim.preemptions, r.live.preemptions, 2),
                ]
            })
            .collect();
        let lines = aligned(&header, &cells, 1);
        let mut out = String::from(
            "each cell: simulated / live; over all requests: p50/p99/p999 latency in µs, \
             sd_p999 the p99.9 slowdown (latency / work),\nmiss_% missed or dropped, preempt \
             preemptions per finished request\n",
        );
        let _ = writeln!(out, "{}", lines[0]);
        let mut rate = None;
        for (r, line) in self.rows.iter().zip(&lines[1..]) {
            if rate != Some(r.key.rate_rps) {
                rate = Some(r.key.rate_rps);
                let _ = writeln!(out, "offered {:.3} requests/s", r.key.rate_rps);
            }
            let _ = writeln!(out, "{line}");
        }
        for k in &self.rankings {
            let _ = writeln!(
                out,
                "by {RANKED_BY} at {:.3} requests/s: simulated {}; live {} ({})",
                k.key.rate_rps,
                k.sim.join(" < "),
                k.live.join(" < "),
                k.agreement()
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::node::{RequestId, RequestInfo, RequestOutcome, WorkerId};
    use faasched_model::{FunctionId, Functions, US};
    use faasched_report::node::{Collector, Load, Usage};

    /// A policy whose requests of 10 µs each took `latencies` µs.
    fn policy(name: &str, latencies: &[u64]) -> PolicySummary {
        let mut c = Collector::new(name);
        for (i, &l) in latencies.iter().enumerate() {
            c.record(&RequestOutcome {
                info: RequestInfo {
                    id: RequestId(i as u64),
                    function: FunctionId(0),
                    arrival: 0,
                    deadline: 100 * US,
                    estimate: 10 * US,
                },
                work: 10 * US,
                dispatcher: 0,
                worker: Some(WorkerId(0)),
                first_run: Some(0),
                finish: Some(l * US),
                preemptions: 1,
            });
        }
        c.finish(&Functions::new(), Usage::default())
    }

    fn summary(policies: Vec<PolicySummary>) -> Summary {
        Summary {
            settings: serde_json::json!({}),
            loads: vec![Load {
                rate: 100.0,
                policies,
            }],
        }
    }

    #[test]
    fn rankings_order_by_tail_slowdown_in_each_world() {
        let sim = summary(vec![
            policy("a", &[10, 20, 30]),
            policy("b", &[10, 20, 3000]),
            policy("c", &[10, 20, 300]),
        ]);
        let live = summary(vec![
            policy("a", &[10, 20, 300]),
            policy("b", &[10, 20, 30]),
            policy("c", &[10, 20, 3000]),
        ]);
        let c = compare(&sim, &live).unwrap();
        assert_eq!(c.rankings[0].sim, ["a", "c", "b"]);
        assert_eq!(c.rankings[0].live, ["b", "a", "c"]);
        assert!(!c.rankings[0].same);
        assert!(compare(&sim, &sim).unwrap().rankings[0].same);
        let a = &c.rows[0];
        assert_eq!(a.sim.slowdown_p999, Some(3.0));
        assert_eq!(a.live.slowdown_p999, Some(30.0));
        assert_eq!(a.sim.miss_pct, Some(0.0));
        assert!((a.live.miss_pct.unwrap() - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(a.sim.preemptions, Some(1.0));
        let table = c.render();
        assert!(
            table.contains("simulated a < c < b; live b < a < c (1 of 3 pairs alike)"),
            "{table}"
        );
        let csv = c.to_csv();
        assert_eq!(csv.lines().count(), 1 + 3 * 2);
        assert!(csv.starts_with(COMPARE_CSV_HEADER));
        assert!(csv.contains("\n100,a,live,"), "{csv}");
    }

    #[test]
    fn runs_of_different_policies_are_refused() {
        let sim = summary(vec![policy("a", &[10])]);
        let live = summary(vec![policy("b", &[10])]);
        assert!(compare(&sim, &live).is_err());
    }
}
