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

use super::capacity::{Capacities, Found, Search, Searches, Target};
use super::catalog::{NodePolicy, node_policies};
use super::run::NodeOptions;
use crate::level::Level;
use crate::output::Publish;
use crate::table::{NONE, fixed};
use anyhow::{Result, bail};
use faasched_report::Staged;
use faasched_report::node::{Load, PolicySummary, ScopeSummary, Summary};
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
    type Ready = Ready;
    type Measured = (PolicySummary, f64);
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

    /// Refuses a case without loads, one of a file (its rate is its own),
    /// and options that do not make a run; looks its policies up and
    /// turns its loads into rates.
    fn ready(case: &NodeCase) -> Result<Ready> {
        let (Offered::Loads(v) | Offered::Rates(v)) = &case.offered;
        if v.is_empty() || v.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
            bail!("give loads or rates above 0");
        }
        let Some(capacity) = case.options.capacity() else {
            bail!("an experiment runs built-in workloads");
        };
        case.options.setup(Some(1.0))?;
        Ok(Ready {
            policies: node_policies(&case.policies)?,
            rates: case.offered.rates(capacity),
        })
    }

    /// A run per load and policy, the loads in turn.
    fn jobs(_: &NodeCase, ready: &Ready) -> Vec<String> {
        ready
            .rates
            .iter()
            .flat_map(|rate| {
                let at = format!("at {rate:.0} rps");
                ready
                    .policies
                    .iter()
                    .map(move |p| format!("{} {at}", p.name()))
            })
            .collect()
    }

    fn measure(case: &NodeCase, ready: &Ready, job: usize) -> Result<Self::Measured> {
        let n = ready.policies.len();
        let setup = case.options.setup(Some(ready.rates[job / n]))?;
        setup.run(&ready.policies[job % n], |_| {})
    }

    fn gather(case: NodeCase, ready: Ready, measured: Vec<Self::Measured>) -> Result<NodeRan> {
        let settings = case.options.setup(None)?.describe();
        let mut measured = measured.into_iter();
        let loads = ready
            .rates
            .iter()
            .map(|_| {
                let (policies, rates): (Vec<_>, Vec<_>) =
                    measured.by_ref().take(ready.policies.len()).unzip();
                Load {
                    rate: rates.last().copied().unwrap_or(0.0),
                    policies,
                }
            })
            .collect();
        Ok(NodeRan {
            case,
            summary: Summary { settings, loads },
        })
    }

    /// The case's summary.json, summary.csv and report.html.
    fn write(ran: &NodeRan, dir: &Path, title: &str, staged: &mut Staged) -> Result<()> {
        ran.summary.write(dir, title, staged)
    }
}

/// A node case checked: its policies, and its loads as rates.
pub struct Ready {
    policies: Vec<NodePolicy>,
    rates: Vec<f64>,
}

/// The node level's capacity searches, as the experiment runner runs them:
/// each case's policies' capacities at its tail target.
pub struct Capacity;

impl Level for Capacity {
    type Case = CapacityCase;
    type Ready = Searches;
    type Measured = Found;
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

    /// The case's searches, checked.
    fn ready(case: &CapacityCase) -> Result<Searches> {
        let target: Target = case.target.parse()?;
        let Some(capacity) = case.options.capacity() else {
            bail!("an experiment runs built-in workloads");
        };
        let policies = node_policies(&case.policies)?;
        let search = Search::new(target, capacity);
        Searches::new(case.options.setup(None)?, policies, case.seeds, search)
    }

    /// A search per policy and seed.
    fn jobs(_: &CapacityCase, searches: &Searches) -> Vec<String> {
        let seed = |i| searches.base.seed.wrapping_add(i);
        let jobs = searches.jobs().into_iter();
        jobs.map(|(p, i)| format!("{} seed {}", searches.policies[p].name(), seed(i)))
            .collect()
    }

    fn measure(_: &CapacityCase, searches: &Searches, job: usize) -> Result<Found> {
        searches.one(searches.jobs()[job], |_| {})
    }

    fn gather(case: CapacityCase, searches: Searches, found: Vec<Found>) -> Result<Self::Ran> {
        Ok((case, searches.gather(found)))
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
        let err = |cases: Vec<NodeCase>| format!("{:#}", run::<Node>(cases).err().unwrap());
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
