//! The CH-RLU paper's figures, and what it left out, as canned, seeded
//! cluster runs.
//!
//! A cluster experiment is a list of [`ClusterCase`]s (serde data: `--plan`
//! prints them): a workload on a cluster, run under each policy. Every
//! (case, policy) run is independent and deterministic, so they run in
//! parallel on rayon's pool and the output does not depend on the thread
//! count. Each case's directory gets `summary.json`, `summary.csv`,
//! `functions.csv`, `report.html` and `timing.json` (as `cluster simulate
//! --out` writes them; the routers' decision times in `timing.json` are
//! taken while the runs share the machine's cores).

use super::catalog::{Contender, contenders};
use super::run::{ClusterOptions, ClusterSetup};
use crate::level::Level;
use anyhow::Result;
use faasched_report::Staged;
use faasched_report::cluster::{
    ClusterRow, DecisionTimes, FunctionRow, LoadPoint, write_cluster_outputs, write_cluster_report,
    write_cluster_timing,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// One configuration: a workload on a cluster, under each policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterCase {
    /// The report's heading for it.
    pub title: String,
    /// Its directory under `--out`, and its key in the table.
    pub slug: String,
    /// The workload and the cluster.
    pub options: ClusterOptions,
    /// The policies it runs under (`ROUTER` or `ROUTER:KEEP-ALIVE`).
    pub policies: Vec<String>,
}

/// What one case measured.
pub struct CaseRan {
    /// The case.
    pub case: ClusterCase,
    /// Its settings, as summary.json records them.
    pub settings: Value,
    /// A row per policy, in the case's order.
    pub rows: Vec<ClusterRow>,
    /// The routers' decision times, in the same order.
    pub decisions: Vec<DecisionTimes>,
}

impl CaseRan {
    /// Each policy with its decision times, in the case's order.
    pub fn timing_rows(&self) -> Vec<(&str, &DecisionTimes)> {
        self.rows
            .iter()
            .map(|r| r.policy.as_str())
            .zip(&self.decisions)
            .collect()
    }

    /// `policy`'s row.
    pub fn row(&self, policy: &str) -> Option<&ClusterRow> {
        self.rows.iter().find(|r| r.policy == policy)
    }
}

/// What one router's run of a case measured: its row, with the loads
/// over time and the functions' rows apart (the row's serde is
/// summary.json's, which leaves them out, and a sweep's machines send
/// this whole), and its decision times.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct RouterRun {
    row: ClusterRow,
    load_series: Vec<LoadPoint>,
    functions: Vec<FunctionRow>,
    decisions: DecisionTimes,
}

/// The cluster level, as the experiment runner runs it: each case under
/// each router.
pub struct Cluster;

impl Level for Cluster {
    type Case = ClusterCase;
    type Ready = (Vec<Contender>, ClusterSetup);
    type Measured = RouterRun;
    type Ran = CaseRan;

    fn slug(case: &ClusterCase) -> &str {
        &case.slug
    }

    fn title(case: &ClusterCase) -> &str {
        &case.title
    }

    fn case(ran: &CaseRan) -> &ClusterCase {
        &ran.case
    }

    /// The routers looked up, and the workload and cluster set up.
    fn ready(case: &ClusterCase) -> Result<(Vec<Contender>, ClusterSetup)> {
        Ok((contenders(&case.policies)?, case.options.setup()?))
    }

    /// A run per router.
    fn jobs(case: &ClusterCase, _: &Self::Ready) -> Vec<String> {
        case.policies.clone()
    }

    fn measure(
        case: &ClusterCase,
        (routers, setup): &Self::Ready,
        job: usize,
    ) -> Result<Self::Measured> {
        let ran = setup.run(&routers[job], |_| {})?;
        let mut row = ran.row(case.options.cores);
        Ok(RouterRun {
            load_series: std::mem::take(&mut row.load_series),
            functions: std::mem::take(&mut row.functions),
            row,
            decisions: ran.decisions,
        })
    }

    fn gather(
        case: ClusterCase,
        (_, setup): Self::Ready,
        measured: Vec<Self::Measured>,
    ) -> Result<CaseRan> {
        let (rows, decisions) = measured
            .into_iter()
            .map(|m| {
                let mut row = m.row;
                row.load_series = m.load_series;
                row.functions = m.functions;
                (row, m.decisions)
            })
            .unzip();
        Ok(CaseRan {
            case,
            settings: setup.describe(),
            rows,
            decisions,
        })
    }

    /// The case's summary.json, summary.csv, functions.csv, report.html
    /// and timing.json.
    fn write(ran: &CaseRan, dir: &Path, title: &str, staged: &mut Staged) -> Result<()> {
        write_cluster_outputs(dir, &ran.settings, &ran.rows, staged)?;
        write_cluster_report(dir, title, &ran.settings, &ran.rows, staged)?;
        write_cluster_timing(dir, &ran.timing_rows(), staged)?;
        Ok(())
    }
}
