//! What the cluster commands do with their rows, `cluster simulate`'s
//! files and table: summary.json, summary.csv and report.html written
//! together into `--out`, then the table (or summary.json) on stdout and
//! what was written.

use crate::output::Outputs;
use crate::{out, outln};
use anyhow::Result;
use faasched_report::Staged;
use faasched_report::cluster::{
    ClusterRow, cluster_json, render_cluster_table, write_cluster_outputs, write_cluster_report,
};
use serde_json::Value;
use std::path::Path;

/// A file a command writes beside the summary: its name and how.
pub type Extra<'a> = (&'a str, &'a dyn Fn(&Path, &mut Staged) -> Result<()>);

/// Stages summary.json, summary.csv and report.html (titled `title`) in
/// `dir`.
pub fn stage(
    dir: &Path,
    title: &str,
    settings: &Value,
    rows: &[ClusterRow],
    staged: &mut Staged,
) -> Result<()> {
    write_cluster_outputs(dir, settings, rows, staged)?;
    write_cluster_report(dir, title, settings, rows, staged)?;
    Ok(())
}

/// What stdout shows of the rows: summary.json (`json`) or the table.
pub fn shown(json: bool, settings: &Value, rows: &[ClusterRow]) -> Result<String> {
    Ok(if json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&cluster_json(settings, rows))?
        )
    } else {
        render_cluster_table(rows)
    })
}

/// Says on stdout, under the table, what was written into the outputs'
/// directory: the summary's files, then `extra` (`, NAME` each).
pub fn wrote(outputs: &Outputs, extra: &str) -> Result<()> {
    if let (Some(dir), false) = (&outputs.dir, outputs.json) {
        outln!(
            "wrote summary.json, summary.csv, report.html{extra} to {}",
            dir.display()
        )?;
    }
    Ok(())
}

/// Writes summary.json, summary.csv, report.html (titled `title`) and
/// `extra` into the outputs' directory, together, then prints summary.json
/// or the table and what was written.
pub fn publish(
    outputs: &Outputs,
    title: &str,
    settings: &Value,
    rows: &[ClusterRow],
    extra: Option<Extra<'_>>,
) -> Result<()> {
    if let Some(dir) = &outputs.dir {
        let mut staged = Staged::new();
        stage(dir, title, settings, rows, &mut staged)?;
        if let Some((_, write)) = &extra {
            write(dir, &mut staged)?;
        }
        staged.commit()?;
    }
    out!("{}", shown(outputs.json, settings, rows)?)?;
    wrote(
        outputs,
        &extra.map_or_else(String::new, |(name, _)| format!(", {name}")),
    )
}
