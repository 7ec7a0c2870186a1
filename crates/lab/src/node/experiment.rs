//! The SledgeScale paper's figures, and what it left out, as canned, seeded
//! node runs.
//!
//! A node experiment is a list of [`NodeCase`]s (serde data: `--plan`
//! prints them): a workload on a node, run under each policy at each
//! offered load. Every (case, load, policy) run is independent and
//! deterministic, so they run in parallel on rayon's pool and the output
//! does not depend on the thread count. Each case's directory gets
//! `summary.json`, `summary.csv` and `report.html` (latency, slowdown and
//! misses against the offered load).

use super::capacity::{Capacities, Search, Target, capacities};
use super::catalog::{NodePolicy, node_policies};
use super::run::NodeOptions;
use crate::level::{Level, in_parallel};
use crate::output::Publish;
use crate::table::{NONE, fixed};
use anyhow::{Context, Result, bail};
use faasched_report::Staged;
use faasched_report::node::{Load, ScopeSummary, Summary};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One configuration: a workload on a node, under each policy at each load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeCase {
    /// The report's heading for it.
    pub title: String,
    /// Its directory under `--out`, and its key in the table.
    pub slug: String,
    /// The workload, the node and its costs.
    pub options: NodeOptions,
    /// The offered loads.
    pub offered: Offered,
    /// The node policies it runs under.
    pub policies: Vec<String>,
}

/// Offered loads of a case's runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Offered {
    /// Fractions of the workers' capacity (workers / mean work).
    Loads(Vec<f64>),
    /// Requests per second.
    Rates(Vec<f64>),
}

impl Offered {
    /// The rates, for a workload of capacity `capacity` requests per second.
    fn rates(&self, capacity: f64) -> Vec<f64> {
        match self {
            Offered::Loads(l) => l.iter().map(|l| l * capacity).collect(),
            Offered::Rates(r) => r.clone(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Offered::Loads(v) | Offered::Rates(v) => v.len(),
        }
    }
}

/// A figure the paper draws as load sustained at a tail target: each
/// policy's capacity there, searched as `faasched node capacity` does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityCase {
    /// The report's heading for it.
    pub title: String,
    /// Its directory under `--out`, and its key in the table.
    pub slug: String,
    /// The workload, the node and its costs; `seconds` sets each probe's
    /// length (at least 20,000 requests).
    pub options: NodeOptions,
    /// The tail target, as `--target` spells it.
    pub target: String,
    /// Seeds searched per policy, from the options' seed on.
    pub seeds: u64,
    /// The node policies; the first is the one the others are set against.
    pub policies: Vec<String>,
    /// The paper's ratios of the first policy's capacity over each other's,
    /// by policy (what the table sets ours beside).
    pub paper: Vec<(String, f64)>,
}

/// What one case measured.
pub struct NodeRan {
    /// The case.
    pub case: NodeCase,
    /// Per load, every policy.
    pub summary: Summary,
}

impl NodeRan {
    /// `policy`'s scope `scope` at load index `load`.
    pub fn scope(&self, load: usize, policy: &str, scope: &str) -> Option<&ScopeSummary> {
        self.summary.loads[load]
            .policies
            .iter()
            .find(|p| p.policy == policy)?
            .scope(scope)
    }
}

/// The node level, as the experiment runner runs it: each case under each
/// policy at each load.
pub struct Node;

impl Level for Node {
    type Case = NodeCase;
    type Ran = NodeRan;

    fn slug(case: &NodeCase) -> &str {
        &case.slug
    }

    fn title(case: &NodeCase) -> &str {
        &case.title
    }

    fn case(ran: &NodeRan) -> &NodeCase {
        &ran.case
    }

    /// Runs every policy of every case at every load, in parallel, and
    /// gathers the results in case, load and policy order.
    fn run(cases: Vec<NodeCase>) -> Result<Vec<NodeRan>> {
        let looked_up = check(&cases)?;
        let jobs: Vec<(usize, usize, usize)> = cases
            .iter()
            .enumerate()
            .flat_map(|(c, case)| {
                (0..case.offered.len())
                    .flat_map(move |l| (0..case.policies.len()).map(move |p| (c, l, p)))
            })
            .collect();
        let measured = in_parallel(
            &jobs,
            |&(c, l, p)| format!("{} {} {}", cases[c].slug, l, cases[c].policies[p]),
            |&(c, l, p)| {
                let case = &cases[c];
                let rate = case
                    .options
                    .capacity()
                    .map(|cap| case.offered.rates(cap)[l]);
                case.options
                    .setup(rate)
                    .and_then(|setup| setup.run(&looked_up[c][p], |_| {}))
                    .with_context(|| {
                        format!("case {}, rate {rate:?}, {}", case.slug, case.policies[p])
                    })
            },
        );
        let mut measured = measured.into_iter();
        let mut ran = Vec::new();
        for case in cases {
            let settings = case.options.setup(None)?.describe();
            let mut loads = Vec::new();
            for _ in 0..case.offered.len() {
                let mut policies = Vec::new();
                let mut rate = 0.0;
                for _ in &case.policies {
                    let (summary, r) = measured.next().expect("a result per job")?;
                    policies.push(summary);
                    rate = r;
                }
                loads.push(Load { rate, policies });
            }
            ran.push(NodeRan {
                case,
                summary: Summary { settings, loads },
            });
        }
        Ok(ran)
    }

    /// The case's summary.json, summary.csv and report.html.
    fn write(ran: &NodeRan, dir: &Path, title: &str, staged: &mut Staged) -> Result<()> {
        ran.summary.write(dir, title, staged)
    }
}

/// Each case's policies, looked up once; refuses, before anything runs, a
/// case without loads, and options that do not make a run.
fn check(cases: &[NodeCase]) -> Result<Vec<Vec<NodePolicy>>> {
    let mut out = Vec::new();
    for case in cases {
        let slug = &case.slug;
        let (Offered::Loads(v) | Offered::Rates(v)) = &case.offered;
        if v.is_empty() || v.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
            bail!("case {slug}: give loads or rates above 0");
        }
        if case.options.capacity().is_none() {
            bail!("case {slug}: an experiment runs built-in workloads");
        }
        case.options
            .setup(Some(1.0))
            .with_context(|| format!("case {slug}"))?;
        out.push(node_policies(&case.policies).with_context(|| format!("case {slug}"))?);
    }
    Ok(out)
}

/// The node level's capacity searches, as the experiment runner runs them:
/// each case's policies' capacities at its tail target.
pub struct Capacity;

impl Level for Capacity {
    type Case = CapacityCase;
    type Ran = (CapacityCase, Capacities);

    fn slug(case: &CapacityCase) -> &str {
        &case.slug
    }

    fn title(case: &CapacityCase) -> &str {
        &case.title
    }

    fn case(ran: &Self::Ran) -> &CapacityCase {
        &ran.0
    }

    /// Searches every case's policies' capacities (each case's searches in
    /// parallel), in case order.
    fn run(cases: Vec<CapacityCase>) -> Result<Vec<Self::Ran>> {
        cases
            .into_iter()
            .map(|case| {
                let context = || format!("case {}", case.slug);
                let target: Target = case.target.parse().with_context(context)?;
                let capacity = case
                    .options
                    .capacity()
                    .ok_or_else(|| anyhow::anyhow!("case {}: a built-in workload", case.slug))?;
                let setup = case.options.setup(None).with_context(context)?;
                let policies = node_policies(&case.policies).with_context(context)?;
                let search = Search::new(target, capacity);
                let found =
                    capacities(&setup, &policies, case.seeds, &search).with_context(context)?;
                Ok((case, found))
            })
            .collect()
    }

    /// The case's summary.json, summary.csv and report.html, as `node
    /// capacity --out` writes them.
    fn write(ran: &Self::Ran, dir: &Path, title: &str, staged: &mut Staged) -> Result<()> {
        ran.1.write(dir, title, staged)
    }
}

/// A ratio cell: `v` with 2 decimals.
pub fn ratio(v: Option<f64>) -> String {
    fixed(v, 2)
}

/// Percent with 2 decimals, or [`NONE`].
pub fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| NONE.to_string(), |v| format!("{:.2}", v * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::level::run;
    use crate::node::figures;

    fn tiny(slug: &str) -> NodeCase {
        let mut case = figures::lognormal_cases(3).remove(0);
        case.slug = slug.to_string();
        case.options.workload = "sd-vbs".into();
        case.options.requests = Some(2_000);
        case.offered = Offered::Loads(vec![0.5, 0.9]);
        case.policies = vec!["sledgescale".into(), "darc".into()];
        case
    }

    #[test]
    fn results_come_in_case_load_and_policy_order() {
        let ran = run::<Node>(vec![tiny("a"), tiny("b")]).unwrap();
        assert_eq!(ran.len(), 2);
        let loads = &ran[1].summary.loads;
        assert_eq!(loads.len(), 2);
        let capacity = 27_100.271_002_710_026;
        assert!(
            (loads[1].rate - 0.9 * capacity).abs() < 1e-6,
            "{}",
            loads[1].rate
        );
        let names: Vec<&str> = loads[0]
            .policies
            .iter()
            .map(|p| p.policy.as_str())
            .collect();
        assert_eq!(names, ["sledgescale", "darc"]);
        assert_eq!(ran[0].scope(1, "darc", "all").unwrap().requests, 2_000);
        // Same cases, same results, whatever ran in parallel.
        let again = run::<Node>(vec![tiny("a"), tiny("b")]).unwrap();
        assert_eq!(again[1].summary, ran[1].summary);
    }

    #[test]
    fn bad_cases_are_refused_before_anything_runs() {
        let err = |cases: Vec<NodeCase>| run::<Node>(cases).err().unwrap().to_string();
        assert!(err(vec![]).contains("no cases"));
        assert!(err(vec![tiny("a/b")]).contains("slug"));
        assert!(err(vec![tiny("a"), tiny("a")]).contains("two cases"));
        let mut c = tiny("a");
        c.offered = Offered::Rates(vec![]);
        assert!(err(vec![c]).contains("above 0"));
        let mut cap = figures::fixed_cases(1);
        cap[0].slug = "../x".into();
        let err = run::<Capacity>(cap).err().unwrap().to_string();
        assert!(err.contains("slug"), "{err}");
        let mut c = tiny("a");
        c.policies = vec!["nope".into()];
        assert!(format!("{:#}", run::<Node>(vec![c]).err().unwrap()).contains("nope"));
    }
}
