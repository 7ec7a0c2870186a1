//! What the live cluster commands (`cluster load`, `cluster replay`) do
//! with their rows: `cluster simulate`'s files and table.

use anyhow::Result;
use faasched_lab::{out, outln};
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
pub fn publish_files(
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

/// Writes summary.json, summary.csv, report.html (titled `title`) and
/// `extra` into `out`, together, then prints summary.json (`json`) or the
/// table and what was written.
pub fn publish(
    out: Option<&Path>,
    json: bool,
    title: &str,
    settings: &Value,
    rows: &[ClusterRow],
    extra: Option<Extra<'_>>,
) -> Result<()> {
    if let Some(dir) = out {
        let mut staged = Staged::new();
        publish_files(dir, title, settings, rows, &mut staged)?;
        if let Some((_, write)) = &extra {
            write(dir, &mut staged)?;
        }
        staged.commit()?;
    }
    if json {
        out!(
            "{}\n",
            serde_json::to_string_pretty(&cluster_json(settings, rows))?
        )?;
    } else {
        out!("{}", render_cluster_table(rows))?;
        if let Some(dir) = out {
            let extra = extra.map_or_else(String::new, |(name, _)| format!(", {name}"));
            outln!(
                "wrote summary.json, summary.csv, report.html{extra} to {}",
                dir.display()
            )?;
        }
    }
    Ok(())
}
