//! What `simulate` and `replay` share around their runs: `--out` and
//! `--json`, and writing and printing a run's summary.

use crate::stdout::{out, outln};
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::interrupt;
use faasched_lab::output::invocations_in;
use faasched_report::os::{
    InvocationsWriter, Report, Summary, render_table, write_outputs, write_report,
};
use faasched_report::{REPORT_HTML, Staged};
use std::path::{Path, PathBuf};

/// Where a run's results go.
#[derive(ClapArgs, Debug)]
pub struct OutputArgs {
    /// Write summary.json, summary.csv, invocations.csv and report.html (charts
    /// of the summary, one self-contained page) into this directory. Files are written as hidden .NAME.faasched-partial.PID and renamed into
    /// place together once all are written; what a killed run leaves is removed
    /// by the next run writing into DIR.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

impl OutputArgs {
    /// With `--out`, creates the directory and the invocations.csv writer,
    /// staged in `staged`: an earlier run's file is replaced only once this
    /// run has written all its files ([`OutputArgs::emit`]).
    pub fn invocations(&self, staged: &mut Staged) -> Result<Option<InvocationsWriter>> {
        self.out
            .as_deref()
            .map(|dir| invocations_in(dir, staged))
            .transpose()
    }

    /// Prints the table (or summary.json with `--json`) and, with `--out`,
    /// writes summary.json, summary.csv and report.html headed by `command`
    /// and `title`, then puts them in place with the files `staged` holds.
    pub fn emit(
        &self,
        summary: Summary,
        command: &str,
        title: &str,
        mut staged: Staged,
    ) -> Result<()> {
        let text = if self.json {
            format!("{}\n", serde_json::to_string_pretty(&summary.to_json())?)
        } else {
            render_table(&summary)
        };
        if let Some(dir) = &self.out {
            write_outputs(dir, &summary, &mut staged)?;
            write_report(dir, &Report::single(command, title, summary), &mut staged)?;
            // A signal caught while the files were written: none replaces
            // an earlier run's.
            interrupt::check()?;
            staged.commit()?;
        }
        out!("{text}")?;
        if let (Some(dir), false) = (&self.out, self.json) {
            outln!(
                "wrote summary.json, summary.csv, invocations.csv, {REPORT_HTML} to {}",
                dir.display()
            )?;
        }
        Ok(())
    }
}

/// The report's heading for a run: workload, load and cores, as described.
pub fn section_title(summary: &Summary) -> String {
    let workload = summary.workload["name"].as_str().unwrap_or("workload");
    let mut title = workload.to_string();
    if let Some(load) = summary.workload["load"].as_f64() {
        title.push_str(&format!(" at {}% load", (load * 100.0).round()));
    }
    if let Some(cores) = summary.machine["cores"].as_u64() {
        title.push_str(&format!(" on {}", counted(cores as usize, "core")));
    }
    title
}

/// `n` and `noun`, plural unless `n` is 1 (`process` → `processes`).
pub fn counted(n: usize, noun: &str) -> String {
    let plural = match n {
        1 => "",
        _ if noun.ends_with('s') => "es",
        _ => "s",
    };
    format!("{n} {noun}{plural}")
}

/// What a `compare` command (node or cluster) publishes: with `dir`, the
/// two worlds' outputs in sim/ and live/ (`world` stages one), compare.json
/// and compare.csv, together; then compare.json on stdout (`json`) or the
/// table and what was written.
pub fn publish_comparison(
    dir: Option<&Path>,
    json: bool,
    compare_json: &str,
    compare_csv: &str,
    table: &str,
    world: impl Fn(&str, &Path, &mut Staged) -> Result<()>,
) -> Result<()> {
    if let Some(dir) = dir {
        let mut staged = Staged::new();
        staged.create_dir(dir)?;
        for name in ["sim", "live"] {
            let sub = dir.join(name);
            staged.create_dir(&sub)?;
            world(name, &sub, &mut staged)?;
        }
        staged.write(&dir.join("compare.json"), compare_json.as_bytes())?;
        staged.write(&dir.join("compare.csv"), compare_csv.as_bytes())?;
        interrupt::check()?;
        staged.commit()?;
    }
    match json {
        true => out!("{compare_json}")?,
        false => out!("{table}")?,
    }
    if let (Some(dir), false) = (dir, json) {
        outln!(
            "wrote compare.json, compare.csv, sim/ and live/ to {}",
            dir.display()
        )?;
    }
    Ok(())
}
