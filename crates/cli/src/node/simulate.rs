//! `faasched node simulate`: one request workload through the simulated
//! node under several dispatch policies; a table and (with `--out`)
//! summary.json, summary.csv and report.html.

use super::args::{NodeArgs, policy_help};
use crate::stdout::{out, outln};
use anyhow::{Result, bail};
use clap::Args as ClapArgs;
use faasched_lab::node::run::NodeWorkload;
use faasched_lab::{interrupt, progress};
use faasched_report::Staged;
use faasched_report::node::{
    Load, REPORT_HTML, Summary, render_table, write_outputs, write_report,
};
use faasched_workload::node::{LOGNORMAL_CAP, LOGNORMAL_FLOOR};
use std::path::PathBuf;

/// Run requests through a simulated node (dispatchers binding requests to
/// worker threads) under one or more dispatch policies.
///
/// With no options: SledgeScale's exponential workload (mean 100 us) at 80%
/// of the capacity of 1 dispatcher and 6 workers, for 10 s of arrivals,
/// under sledgescale and its baselines, as a table of latency, slowdown and
/// deadline misses per policy. Every policy is listed under `--policy`.
/// Ctrl-C stops a run and leaves an earlier run's files in `--out` as they
/// were.
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    node: NodeArgs,
    /// Offered requests per second of a built-in [default: --load 0.8].
    #[arg(long, conflicts_with = "load")]
    rate: Option<f64>,
    /// Offered load as a fraction of the workers' capacity (workers / mean
    /// work, overheads left out) [default: 0.8].
    #[arg(long)]
    load: Option<f64>,
    /// Node policies to compare, comma-separated, each run on the same
    /// requests.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = "sledgescale,darc,shinjuku,lld,rr,sledge,srpt",
        long_help = policy_help()
    )]
    policy: Vec<String>,
    /// Write summary.json, summary.csv and report.html into this directory,
    /// together, once all are written.
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    json: bool,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        let policies = NodeArgs::policies(&self.policy)?;
        let rate = self.rate()?;
        let setup = self.node.setup(rate)?;
        if let NodeWorkload::Builtin { workload, .. } = &setup.workload
            && workload.name == "lognormal"
        {
            eprintln!(
                "lognormal: work clamped to [{} us, {} ms]",
                LOGNORMAL_FLOOR / 1_000,
                LOGNORMAL_CAP / 1_000_000
            );
        }
        interrupt::catch()?;
        let mut summaries = Vec::new();
        let mut offered = 0.0;
        for policy in &policies {
            let bar = progress::bar(policy.name(), None);
            let (summary, rate) = setup.run(policy, |_| bar.inc(1))?;
            bar.finish_and_clear();
            offered = rate;
            summaries.push(summary);
        }
        let summary = Summary {
            settings: setup.describe(),
            loads: vec![Load {
                rate: offered,
                policies: summaries,
            }],
        };
        let text = if self.json {
            format!("{}\n", serde_json::to_string_pretty(&summary.to_json())?)
        } else {
            render_table(&summary)
        };
        if let Some(dir) = &self.out {
            let mut staged = Staged::new();
            write_outputs(dir, &summary, &mut staged)?;
            write_report(dir, "faasched node simulate", &summary, &mut staged)?;
            interrupt::check()?;
            staged.commit()?;
        }
        out!("{text}")?;
        if let (Some(dir), false) = (&self.out, self.json) {
            outln!(
                "wrote summary.json, summary.csv, {REPORT_HTML} to {}",
                dir.display()
            )?;
        }
        Ok(())
    }

    /// The offered rate of a built-in: `--rate`, or `--load` (0.8 by
    /// default) of its capacity; a file's rate is its own.
    fn rate(&self) -> Result<Option<f64>> {
        let Some(capacity) = self.node.capacity() else {
            if self.rate.is_some() || self.load.is_some() {
                bail!("--rate and --load set a built-in's rate; a file's arrivals are its own");
            }
            return Ok(None);
        };
        if let Some(rate) = self.rate {
            if !(rate.is_finite() && rate > 0.0) {
                bail!("--rate {rate}: give requests per second above 0");
            }
            return Ok(Some(rate));
        }
        let load = self.load.unwrap_or(0.8);
        if !(load.is_finite() && load > 0.0 && load <= 10.0) {
            bail!("--load {load}: give a fraction of the capacity above 0 and at most 10");
        }
        Ok(Some(load * capacity))
    }
}
