//! A node sweep: every policy at every offered rate, each run simulated
//! or live, summarised as one [`Summary`]; and `node simulate`, the sweep
//! run through the simulator and published.

use super::catalog::{NodePolicy, node_policies};
use super::run::{NodeOptions, NodeSetup, NodeWorkload};
use crate::output::{Outputs, Publish};
use crate::{interrupt, progress};
use anyhow::{Result, bail};
use faasched_report::Staged;
use faasched_report::node::{Load, PolicySummary, Summary};
use faasched_workload::node::{LOGNORMAL_CAP, LOGNORMAL_FLOOR};
use indicatif::ProgressBar;
use std::path::Path;

/// The node policies `faasched node simulate` runs unless told,
/// comma-separated as `--policy` takes them.
pub const DEFAULT_NODE_POLICIES: &str = "sledgescale,darc,shinjuku,lld,rr,sledge,srpt";

/// The offered rates and the policies of a node run, simulated or live.
#[derive(Clone, Debug, Default)]
pub struct Sweep {
    /// Offered requests per second of a built-in (`--rate`).
    pub rates: Vec<f64>,
    /// Offered loads, as fractions of the workers' capacity (`--load`);
    /// with neither, 0.8.
    pub loads: Vec<f64>,
    /// The node policies, as the catalogue names them.
    pub policies: Vec<String>,
}

/// One policy's run of a setup (simulated or live), counting its requests
/// on the bar: its summary and the offered rate.
pub type RunOne<'a> =
    dyn FnMut(&NodeSetup, &NodePolicy, &ProgressBar) -> Result<(PolicySummary, f64)> + 'a;

impl Sweep {
    /// Every policy at every rate of `options` through `run` (a simulation
    /// or a live replay), summarised.
    pub fn run(&self, options: &NodeOptions, run: &mut RunOne<'_>) -> Result<Summary> {
        let policies = node_policies(&self.policies)?;
        let setups = self
            .offered(options.capacity())?
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
            let name = |p: &NodePolicy| p.name().to_string();
            let ran = progress::each(&policies, name, None, |policy, bar| run(setup, policy, bar))?;
            // Every policy's run is offered the same rate.
            let rate = ran.last().map_or(0.0, |(_, rate)| *rate);
            loads.push(Load {
                rate,
                policies: ran.into_iter().map(|(summary, _)| summary).collect(),
            });
        }
        let mut settings = setups[0].describe();
        if setups.len() > 1 {
            // A sweep: every rate, not the first one's.
            settings["workload"]["rate_rps"] = loads.iter().map(|l| l.rate).collect();
        }
        Ok(Summary { settings, loads })
    }

    /// The offered rates of a built-in: the rates, or the loads (0.8 by
    /// default) of `capacity`; a file's rate is its own (one `None`).
    fn offered(&self, capacity: Option<f64>) -> Result<Vec<Option<f64>>> {
        let Some(capacity) = capacity else {
            if !self.rates.is_empty() || !self.loads.is_empty() {
                bail!("--rate and --load set a built-in's rate; a file's arrivals are its own");
            }
            return Ok(vec![None]);
        };
        if !self.rates.is_empty() {
            return self
                .rates
                .iter()
                .map(|&rate| match rate.is_finite() && rate > 0.0 {
                    true => Ok(Some(rate)),
                    false => bail!("--rate {rate}: give requests per second above 0"),
                })
                .collect();
        }
        let loads = match self.loads.is_empty() {
            true => vec![0.8],
            false => self.loads.clone(),
        };
        loads
            .iter()
            .map(
                |&load| match load.is_finite() && load > 0.0 && load <= 10.0 {
                    true => Ok(Some(load * capacity)),
                    false => bail!("--load {load}: give a fraction of the capacity above 0, at most 10 on a node"),
                },
            )
            .collect()
    }
}

impl Publish for Summary {
    fn files(&self) -> String {
        "summary.json, summary.csv, report.html".into()
    }

    fn table(&self) -> String {
        faasched_report::node::render_table(self)
    }

    fn json(&self) -> serde_json::Value {
        self.to_json()
    }

    fn write(&self, dir: &Path, title: &str, staged: &mut Staged) -> Result<()> {
        faasched_report::node::write_outputs(dir, self, staged)?;
        faasched_report::node::write_report(dir, title, self, staged)?;
        Ok(())
    }
}

/// `node simulate`: the sweep through the simulated node, published.
pub fn simulate(options: &NodeOptions, sweep: &Sweep, outputs: &Outputs) -> Result<()> {
    let summary = sweep.run(options, &mut |setup, policy, bar| {
        setup.run(policy, |_| bar.inc(1))
    })?;
    outputs.publish(&summary, "faasched node simulate", Staged::new())
}
