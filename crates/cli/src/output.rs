//! What `simulate` and `replay` share around their runs: `--out` and
//! `--json`, the progress bar, and writing and printing a run's summary.

use crate::stdout::{out, outln};
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_report::{
    InvocationsWriter, REPORT_HTML, Report, Staged, Summary, render_table, write_outputs,
    write_report,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};

/// Where a run's results go.
#[derive(ClapArgs, Debug)]
pub struct OutputArgs {
    /// Write summary.json, summary.csv, invocations.csv and report.html (charts
    /// of the summary, one self-contained page) into this directory.
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

/// The writer of `dir/invocations.csv`, staged in `staged`, creating `dir`
/// (removed again if the run stops and leaves it empty).
pub fn invocations_in(dir: &Path, staged: &mut Staged) -> Result<InvocationsWriter> {
    staged.create_dir(dir)?;
    Ok(InvocationsWriter::create(
        &dir.join("invocations.csv"),
        staged,
    )?)
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

/// [`progress`] of a run of known length.
const BAR: &str = "{prefix:>12} [{bar:40}] {pos}/{len} invocations ({per_sec}, eta {eta})";
/// [`progress`] of a run of unknown length.
const COUNT: &str = "{prefix:>12} {pos} invocations ({per_sec})";

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress(name: &str, len: Option<u64>) -> ProgressBar {
    // Without a length (a file read to its end), a count: a bar and an eta
    // would have nothing to measure against.
    let (bar, template) = match len {
        Some(n) => (ProgressBar::new(n), BAR),
        None => (ProgressBar::no_length(), COUNT),
    };
    bar.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(name.to_string());
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_templates_parse() {
        for t in [BAR, COUNT] {
            assert!(ProgressStyle::with_template(t).is_ok(), "{t}");
        }
    }
}
