//! `faasched simulate`: one workload, several policies, one table and (with
//! `--out`) summary.json, summary.csv, invocations.csv and report.html.

use crate::run::{KernelArgs, run_policy};
use crate::source::{Source, WorkloadArgs};
use crate::tuning::TuningArgs;
use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use faasched_report::{
    InvocationsWriter, REPORT_HTML, Report, Summary, render_table, write_outputs, write_report,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

/// Run a workload through the simulated kernel under one or more policies.
///
/// With no options: the Huawei-like workload of the ALPS paper (15,000
/// invocations, 56 cores, 90% load) under cfs, fifo, rr and srpt, as a table.
///
/// Policies: cfs (kernel defaults), fifo, rr, alps (learned rank and slice on
/// a stock kernel), and the sim-only alps-kernel (the ALPS paper's patched
/// CFS), srpt, srpt-eb, srpt-random, random, ps, fifo-np.
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Policies to compare, comma-separated, each run on the same invocations.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = "cfs,fifo,rr,srpt"
    )]
    policy: Vec<String>,
    #[command(flatten)]
    kernel: KernelArgs,
    #[command(flatten)]
    tuning: TuningArgs,
    /// Write summary.json, summary.csv, invocations.csv and report.html (charts
    /// of the summary, one self-contained page) into this directory.
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    json: bool,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        let tuning = self.tuning.tuning()?;
        for name in &self.policy {
            faasched_policy::setup(name, &tuning)?;
        }
        let source = Source::resolve(&self.workload)?;
        let cores = self.workload.cores();
        let mut invocations = match &self.out {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                Some(InvocationsWriter::create(&dir.join("invocations.csv"))?)
            }
            None => None,
        };
        let mut policies = Vec::new();
        for name in &self.policy {
            let bar = progress(name, source.len());
            let summary = run_policy(
                name,
                &tuning,
                &source,
                &self.kernel,
                cores,
                self.workload.seed,
                |o| {
                    bar.inc(1);
                    if let Some(w) = invocations.as_mut() {
                        w.write(name, o)?;
                    }
                    Ok(())
                },
            )?;
            bar.finish_and_clear();
            policies.push(summary);
        }
        if let Some(w) = invocations {
            w.finish()?;
        }
        let summary = Summary {
            policies,
            workload: source.describe(),
            machine: self.kernel.describe(cores),
        };
        let text = if self.json {
            format!("{}\n", serde_json::to_string_pretty(&summary.to_json())?)
        } else {
            render_table(&summary)
        };
        if let Some(dir) = &self.out {
            write_outputs(dir, &summary)?;
            let title = section_title(&summary);
            write_report(dir, &Report::single("faasched simulate", &title, summary))?;
        }
        print!("{text}");
        if let (Some(dir), false) = (&self.out, self.json) {
            println!(
                "wrote summary.json, summary.csv, invocations.csv, {REPORT_HTML} to {}",
                dir.display()
            );
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
        title.push_str(&format!(" on {cores} cores"));
    }
    title
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress(name: &str, len: Option<u64>) -> ProgressBar {
    let bar = match len {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::no_length(),
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>12} [{bar:40}] {pos}/{len} invocations ({per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_prefix(name.to_string());
    bar
}
