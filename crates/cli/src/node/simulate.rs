//! `faasched node simulate`: one request workload through the simulated
//! node under several dispatch policies; a table and (with `--out`)
//! summary.json, summary.csv and report.html.

use super::args::{NodeArgs, policy_help};
use crate::stdout::{out, outln};
use anyhow::{Result, bail};
use clap::Args as ClapArgs;
use faasched_lab::node::catalog::{NodePolicy, node_policies};
use faasched_lab::node::run::{NodeSetup, NodeWorkload};
use faasched_lab::progress::ProgressBar;
use faasched_lab::{interrupt, progress};
use faasched_report::node::{
    Load, PolicySummary, Summary, render_table, write_outputs, write_report,
};
use faasched_report::{REPORT_HTML, Staged};
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
    #[command(flatten)]
    sweep: Sweep,
    #[command(flatten)]
    outputs: Outputs,
}

/// The rates and the policies of a node run, simulated or live.
#[derive(ClapArgs, Debug)]
pub struct Sweep {
    /// Offered requests per second of a built-in; several, comma-separated,
    /// make a sweep (the report draws each metric against them)
    /// [default: --load 0.8].
    #[arg(long, value_delimiter = ',', conflicts_with = "load")]
    rate: Vec<f64>,
    /// Offered load as a fraction of the workers' capacity (workers / mean
    /// work, overheads left out); several, comma-separated, make a sweep
    /// [default: 0.8].
    #[arg(long, value_delimiter = ',')]
    load: Vec<f64>,
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
}

/// Where a node run's summary goes.
#[derive(ClapArgs, Debug)]
pub struct Outputs {
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
        let summary = self.sweep.run(&self.node, &mut |setup, policy, bar| {
            setup.run(policy, |_| bar.inc(1))
        })?;
        self.outputs.write(&summary, "faasched node simulate")
    }
}

impl Outputs {
    /// Prints the table (or summary.json) of `summary` and writes its
    /// files, the report titled `title`.
    pub fn write(&self, summary: &Summary, title: &str) -> Result<()> {
        let text = if self.json {
            format!("{}\n", serde_json::to_string_pretty(&summary.to_json())?)
        } else {
            render_table(summary)
        };
        if let Some(dir) = &self.out {
            let mut staged = Staged::new();
            write_outputs(dir, summary, &mut staged)?;
            write_report(dir, title, summary, &mut staged)?;
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
}

/// One policy's run of a setup (simulated or live), counting its requests
/// on the bar: its summary and the offered rate.
pub type RunOne<'a> =
    dyn FnMut(&NodeSetup, &NodePolicy, &ProgressBar) -> Result<(PolicySummary, f64)> + 'a;

impl Sweep {
    /// Every policy at every rate through `run` (a simulation or a live
    /// replay), summarised.
    pub fn run(&self, node: &NodeArgs, run: &mut RunOne<'_>) -> Result<Summary> {
        let policies = node_policies(&self.policy)?;
        let options = node.options()?;
        let setups = self
            .rates(options.capacity())?
            .into_iter()
            .map(|rate| options.setup(rate))
            .collect::<Result<Vec<_>>>()?;
        if let NodeWorkload::Builtin { workload, .. } = &setups[0].workload
            && workload.name == "lognormal"
        {
            eprintln!(
                "lognormal: work clamped to [{} us, {} ms]",
                LOGNORMAL_FLOOR / 1_000,
                LOGNORMAL_CAP / 1_000_000
            );
        }
        interrupt::catch()?;
        let mut loads = Vec::new();
        for setup in &setups {
            let mut summaries = Vec::new();
            let mut offered = 0.0;
            for policy in &policies {
                let bar = progress::bar(policy.name(), None);
                let (summary, rate) = run(setup, policy, &bar)?;
                bar.finish_and_clear();
                offered = rate;
                summaries.push(summary);
            }
            loads.push(Load {
                rate: offered,
                policies: summaries,
            });
        }
        let mut settings = setups[0].describe();
        if setups.len() > 1 {
            // A sweep: every rate, not the first one's.
            settings["workload"]["rate_rps"] = loads.iter().map(|l| l.rate).collect();
        }
        Ok(Summary { settings, loads })
    }

    /// The offered rates of a built-in: `--rate`, or `--load` (0.8 by
    /// default) of `capacity`; a file's rate is its own (one `None`).
    fn rates(&self, capacity: Option<f64>) -> Result<Vec<Option<f64>>> {
        let Some(capacity) = capacity else {
            if !self.rate.is_empty() || !self.load.is_empty() {
                bail!("--rate and --load set a built-in's rate; a file's arrivals are its own");
            }
            return Ok(vec![None]);
        };
        if !self.rate.is_empty() {
            return self
                .rate
                .iter()
                .map(|&rate| match rate.is_finite() && rate > 0.0 {
                    true => Ok(Some(rate)),
                    false => bail!("--rate {rate}: give requests per second above 0"),
                })
                .collect();
        }
        let loads = match self.load.is_empty() {
            true => vec![0.8],
            false => self.load.clone(),
        };
        loads
            .iter()
            .map(
                |&load| match load.is_finite() && load > 0.0 && load <= 10.0 {
                    true => Ok(Some(load * capacity)),
                    false => bail!(
                        "--load {load}: give a fraction of the capacity above 0 and at most 10"
                    ),
                },
            )
            .collect()
    }
}
