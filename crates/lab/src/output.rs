//! Output the commands share: where a run's results go (`--out`, `--json`)
//! and how they are published, a run's invocations, a workload CSV, a
//! comparison's two worlds, and the words a summary line is made of.

use crate::interrupt;
use crate::{out, outln};
use anyhow::{Context, Result};
use faasched_model::Invocation;
use faasched_report::Staged;
use faasched_report::os::{
    InvocationsWriter, Metric, PolicySummary, Report, Summary, render_table, write_outputs,
    write_report,
};
use faasched_workload::csv;
use std::borrow::Borrow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Where a run's results go: the directory of its files (`--out`), and
/// whether standard output gets summary.json (`--json`) or the table.
///
/// As flags, their help says what a simulation or a replay writes; a
/// command that writes other files says so with clap's `mut_arg` on `out`
/// and `json`.
#[derive(Clone, Debug, Default, clap::Args)]
// Its doc is not a command's about.
#[command(about = None, long_about = None)]
pub struct Outputs {
    /// Write summary.json, summary.csv and report.html into this directory,
    /// together, once all are written.
    #[arg(id = "out", long = "out", short = 'o', value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Print nothing: the files are what a caller reads (Python's).
    #[arg(skip)]
    pub silent: bool,
}

impl Outputs {
    /// With a directory, creates it and the invocations.csv writer, staged
    /// in `staged`: an earlier run's file is replaced only once this run
    /// has written all its files ([`Outputs::emit`]).
    pub fn invocations(&self, staged: &mut Staged) -> Result<Option<InvocationsWriter>> {
        self.dir
            .as_deref()
            .map(|dir| invocations_in(dir, staged))
            .transpose()
    }

    /// Prints the table (or summary.json) and, with a directory, writes
    /// summary.json, summary.csv and report.html headed by `command` and
    /// `title`, then puts them in place with the files `staged` holds: an
    /// operating-system run, through [`Outputs::publish`].
    pub fn emit(&self, summary: Summary, command: &str, title: &str, staged: Staged) -> Result<()> {
        let run = OsRun(Report::single(command, title, summary));
        self.publish(&run, title, staged)
    }
}

/// One operating-system run's report: its one section's summary is what
/// the table, summary.json and summary.csv show.
struct OsRun(Report);

impl OsRun {
    fn summary(&self) -> &Summary {
        &self.0.sections[0].summary
    }
}

impl Publish for OsRun {
    fn files(&self) -> String {
        "summary.json, summary.csv, invocations.csv, report.html".into()
    }

    fn table(&self) -> String {
        let summary = self.summary();
        let mut table = run_heading(summary) + &render_table(summary);
        if let Some(line) = against_cfs(summary) {
            table.push_str(&line);
        }
        table
    }

    fn json(&self) -> serde_json::Value {
        self.summary().to_json()
    }

    /// The report is headed as it was built; `title` is its section's.
    fn write(&self, dir: &Path, _title: &str, staged: &mut Staged) -> Result<()> {
        write_outputs(dir, self.summary(), staged)?;
        write_report(dir, &self.0, staged)?;
        Ok(())
    }
}

/// What a command publishes of its run: the table a person reads, the JSON
/// a script reads, and the files of a directory. One [`Outputs::publish`]
/// then prints and writes every level's summaries the same way.
pub trait Publish {
    /// The files [`Publish::write`] puts in a directory, as the line that
    /// says where they went lists them.
    fn files(&self) -> String;
    /// The table printed without `--json`.
    fn table(&self) -> String;
    /// summary.json, printed with `--json`.
    fn json(&self) -> serde_json::Value;
    /// Writes the files into `dir` (created if missing), staged, the
    /// report headed `title`.
    fn write(&self, dir: &Path, title: &str, staged: &mut Staged) -> Result<()>;
}

impl Outputs {
    /// Prints `summary`'s table (or its JSON) and, with a directory, writes
    /// its files, the report headed `title`, putting them in place with
    /// those `staged` holds once all are written; a signal caught by then
    /// leaves an earlier run's files as they were.
    pub fn publish<P: Publish>(&self, summary: &P, title: &str, staged: Staged) -> Result<()> {
        self.publish_if(summary, title, staged, true)
    }

    /// [`Outputs::publish`] for what a run measured until a signal stopped
    /// it: its files are put in place all the same.
    pub fn publish_measured<P: Publish>(
        &self,
        summary: &P,
        title: &str,
        staged: Staged,
    ) -> Result<()> {
        self.publish_if(summary, title, staged, false)
    }

    fn publish_if<P: Publish>(
        &self,
        summary: &P,
        title: &str,
        mut staged: Staged,
        unless_stopped: bool,
    ) -> Result<()> {
        let text = match self.json {
            true => format!("{}\n", serde_json::to_string_pretty(&summary.json())?),
            false => summary.table(),
        };
        if let Some(dir) = &self.dir {
            summary.write(dir, title, &mut staged)?;
            if unless_stopped {
                interrupt::check()?;
            }
            staged.commit()?;
        }
        if self.silent {
            return Ok(());
        }
        out!("{text}")?;
        if let (Some(dir), false) = (&self.dir, self.json) {
            outln!("wrote {} to {}", summary.files(), dir.display())?;
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

/// The line an OS table is headed by, so that its output says what ran:
/// the workload, its load, the cores and invocations, and the kernel (the
/// model with its fair class, tick and switch cost, or the live one).
pub fn run_heading(summary: &Summary) -> String {
    let mut line = section_title(summary);
    if let Some(n) = summary.workload["invocations"].as_u64() {
        line.push_str(&format!(", {}", counted(n as usize, "invocation")));
    }
    let m = &summary.machine;
    if let Some(kernel) = m["kernel"].as_str() {
        line.push_str(&format!("; kernel: {kernel}"));
    }
    if let Some(fair) = m["fair_class"].as_str() {
        line.push_str(&format!(", {}", fair.to_uppercase()));
    }
    if let Some(hz) = m["hz"].as_u64() {
        line.push_str(&format!(", HZ {hz}"));
    }
    if let Some(us) = m["context_switch_us"].as_f64() {
        line.push_str(&format!(", {us} µs a context switch"));
    }
    line.push('\n');
    line
}

/// The line an OS table ends with when it ran `cfs` and others: each
/// other policy's mean turnaround against cfs's, the question the table is
/// read for; `None` without cfs or without another policy.
pub fn against_cfs(summary: &Summary) -> Option<String> {
    let mean = |p: &PolicySummary| p.all().stats(Metric::Turnaround).map(|s| s.mean);
    let cfs = summary.policies.iter().find(|p| p.policy == "cfs")?;
    let base = mean(cfs).filter(|&m| m > 0.0)?;
    let others: Vec<String> = summary
        .policies
        .iter()
        .filter(|p| p.policy != "cfs")
        .filter_map(|p| {
            Some(format!(
                "{} {:+.1}%",
                p.policy,
                (mean(p)? / base - 1.0) * 100.0
            ))
        })
        .collect();
    (!others.is_empty()).then(|| format!("mean turnaround against cfs: {}\n", others.join(", ")))
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

/// The writer of `dir/invocations.csv`, staged in `staged`, creating `dir`
/// (removed again if the run stops and leaves it empty).
pub fn invocations_in(dir: &Path, staged: &mut Staged) -> Result<InvocationsWriter> {
    staged.create_dir(dir)?;
    Ok(InvocationsWriter::create(
        &dir.join("invocations.csv"),
        staged,
    )?)
}

/// Writes the file `staged` puts at `path` through `write`, buffered; an
/// error names the file.
pub fn write_staged(
    path: &Path,
    staged: &mut Staged,
    write: impl FnOnce(&mut BufWriter<File>) -> ::csv::Result<()>,
) -> Result<()> {
    let mut out = BufWriter::new(staged.create(path)?);
    write(&mut out).with_context(|| format!("writing {}", path.display()))?;
    out.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Writes `invocations` as a workload CSV at `path`, staged in `staged`
/// (put in place at its commit: a run that stops part-way, an invocation
/// past the time limit or a full disk, leaves no file, or an earlier one as
/// it was). Owned invocations from a generator, borrowed ones from an
/// import.
pub fn write_workload<I: Borrow<Invocation>>(
    path: &Path,
    invocations: impl IntoIterator<Item = faasched_workload::Result<I>>,
    staged: &mut Staged,
) -> Result<()> {
    let mut w = csv::Writer::named(path, staged.create(path)?);
    for inv in invocations {
        w.write(inv?.borrow())?;
    }
    w.finish()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_well() {
        assert_eq!(counted(1, "function"), "1 function");
        assert_eq!(counted(0, "function"), "0 functions");
        assert_eq!(counted(12, "invocation"), "12 invocations");
        assert_eq!(counted(2, "process"), "2 processes");
    }
}
