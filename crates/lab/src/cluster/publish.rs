//! What the cluster commands publish of their rows: summary.json,
//! summary.csv, functions.csv and report.html (and a command's own files
//! beside them),
//! and the table or summary.json on stdout, through [`Outputs::publish`].
//!
//! [`Outputs::publish`]: crate::output::Outputs::publish

use crate::output::Publish;
use anyhow::Result;
use faasched_report::Staged;
use faasched_report::cluster::{
    ClusterRow, cluster_json, render_cluster_table, write_cluster_outputs, write_cluster_report,
};
use serde_json::Value;
use std::path::Path;

/// A file a command writes beside the summary: its name and how.
pub type Extra<'a> = (&'a str, &'a dyn Fn(&Path, &mut Staged) -> Result<()>);

/// A cluster run's rows, one per router, with the settings they ran under.
pub struct Rows<'a> {
    /// The settings, as summary.json records them.
    pub settings: &'a Value,
    /// A row per router.
    pub rows: &'a [ClusterRow],
    /// A command's own file, if it writes one.
    pub extra: Option<Extra<'a>>,
}

impl<'a> Rows<'a> {
    /// `rows` run under `settings`, with no file of the command's own.
    pub fn new(settings: &'a Value, rows: &'a [ClusterRow]) -> Rows<'a> {
        Rows {
            settings,
            rows,
            extra: None,
        }
    }
}

impl Publish for Rows<'_> {
    fn files(&self) -> String {
        let extra = self.extra.map(|(name, _)| format!(", {name}"));
        format!(
            "summary.json, summary.csv, functions.csv, report.html{}",
            extra.unwrap_or_default()
        )
    }

    fn table(&self) -> String {
        render_cluster_table(self.rows)
    }

    fn json(&self) -> Value {
        cluster_json(self.settings, self.rows)
    }

    fn write(&self, dir: &Path, title: &str, staged: &mut Staged) -> Result<()> {
        write_cluster_outputs(dir, self.settings, self.rows, staged)?;
        write_cluster_report(dir, title, self.settings, self.rows, staged)?;
        if let Some((_, write)) = self.extra {
            write(dir, staged)?;
        }
        Ok(())
    }
}
