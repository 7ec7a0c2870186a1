//! The CH-RLU paper's figures, and what it left out, as canned, seeded
//! cluster runs.
//!
//! A cluster experiment is a list of [`ClusterCase`]s (serde data: `--plan`
//! prints them): a workload on a cluster, run under each policy. Every
//! (case, policy) run is independent and deterministic, so they run in
//! parallel on rayon's pool and the output does not depend on the thread
//! count. [`write_cluster_files`] writes `table.txt`, `table.csv`, and per
//! case `summary.json`, `summary.csv`, `report.html` and `timing.json` (as
//! `cluster simulate --out` writes them; the routers' decision times in
//! `timing.json` are taken while the runs share the machine's cores).

use super::catalog::contenders;
use super::run::ClusterOptions;
use crate::experiment::{Table, check_slug};
use crate::progress;
use anyhow::{Context, Result, bail};
use faasched_report::Staged;
use faasched_report::cluster::{
    ClusterRow, DecisionTimes, write_cluster_outputs, write_cluster_report, write_cluster_timing,
};
use rayon::prelude::*;
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

/// Runs every policy of every case, in parallel, and gathers the rows in
/// case and policy order. Every case is checked before anything runs.
pub fn run_cluster_cases(cases: Vec<ClusterCase>) -> Result<Vec<CaseRan>> {
    if cases.is_empty() {
        bail!("no cases to run");
    }
    let mut looked_up = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let slug = &case.slug;
        check_slug(slug, cases[..i].iter().map(|c| c.slug.as_str()))?;
        looked_up.push(contenders(&case.policies).with_context(|| format!("case {slug}"))?);
    }
    let mut settings = Vec::new();
    for case in &cases {
        let setup = case
            .options
            .setup()
            .with_context(|| format!("case {}", case.slug))?;
        settings.push(setup.describe());
    }
    let jobs: Vec<(usize, usize)> = cases
        .iter()
        .enumerate()
        .flat_map(|(c, case)| (0..case.policies.len()).map(move |p| (c, p)))
        .collect();
    let bar = progress::runs("experiment", jobs.len() as u64);
    let measured: Vec<Result<(ClusterRow, DecisionTimes)>> = jobs
        .par_iter()
        .map(|&(c, p)| {
            let case = &cases[c];
            bar.set_message(format!("{} {}", case.slug, case.policies[p]));
            let r = case
                .options
                .setup()
                .and_then(|setup| setup.run(&looked_up[c][p]))
                .map(|ran| (ran.row(case.options.cores), ran.decisions))
                .with_context(|| format!("case {}, {}", case.slug, case.policies[p]));
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    let mut measured = measured.into_iter();
    let mut ran = Vec::new();
    for (case, settings) in cases.into_iter().zip(settings) {
        let (rows, decisions) = (0..case.policies.len())
            .map(|_| measured.next().expect("a result per job"))
            .collect::<Result<(Vec<_>, Vec<_>)>>()?;
        ran.push(CaseRan {
            case,
            settings,
            rows,
            decisions,
        });
    }
    Ok(ran)
}

/// Writes `table.txt`, `table.csv` and each case's summary.json,
/// summary.csv, report.html and timing.json into `dir`, all put in place
/// together once written.
pub fn write_cluster_files(
    mut staged: Staged,
    dir: &Path,
    name: &str,
    ran: &[CaseRan],
    table: &Table,
    text: &str,
) -> Result<()> {
    staged.write(&dir.join("table.txt"), text.as_bytes())?;
    table.write_csv(&dir.join("table.csv"), &mut staged)?;
    for r in ran {
        let d = dir.join(&r.case.slug);
        write_cluster_outputs(&d, &r.settings, &r.rows, &mut staged)?;
        let title = format!("faasched experiment {name}: {}", r.case.title);
        write_cluster_report(&d, &title, &r.settings, &r.rows, &mut staged)?;
        write_cluster_timing(&d, &r.timing_rows(), &mut staged)?;
    }
    Ok(staged.commit()?)
}
