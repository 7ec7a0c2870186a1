//! What `node simulate` and `node capacity` share: the workload, the node's
//! shape and costs, and the policies.

use anyhow::{Context, Result, bail};
use clap::{Args as ClapArgs, ValueEnum};
use faasched_lab::node::catalog::{NODE_CATALOG, NodePolicy, node_policies};
use faasched_lab::node::run::{NodeSetup, NodeWorkload};
use faasched_lab::node::{Assign, Costs, Estimator, NodeConfig, read_costs};
use faasched_model::SEC;
use faasched_policy::node::PreemptTest;
use faasched_workload::node::{Deadlines, Estimate, Length, RequestFile, Workload};
use std::path::PathBuf;

/// The workload, the node and the policies of a node run.
#[derive(ClapArgs, Debug)]
pub struct NodeArgs {
    /// A built-in workload (SledgeScale's Table 3: fixed, bimodal-high,
    /// bimodal-extreme, sd-vbs, exponential, lognormal) or a workload CSV
    /// whose rows are one CPU phase each (its arrivals are kept).
    #[arg(
        long,
        short = 'w',
        value_name = "NAME|FILE",
        default_value = "exponential"
    )]
    pub workload: String,
    /// Workers in each dispatcher's group.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub workers: u32,
    /// Dispatchers, each over its own group of `--workers`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub dispatchers: u32,
    /// Which dispatcher an arrival reaches: in turn (the paper's runs), or
    /// at random as RSS spreads packets (seeded by --seed).
    #[arg(long, value_enum, default_value_t = AssignArg::Equal)]
    pub assign: AssignArg,
    /// Seconds of arrivals of a built-in.
    #[arg(long, default_value_t = 10.0, conflicts_with = "requests")]
    pub seconds: f64,
    /// A built-in's requests, instead of --seconds.
    #[arg(long, short = 'n', value_parser = crate::args::count)]
    pub requests: Option<u64>,
    /// Seed of the arrivals, the work and noisy estimates.
    #[arg(long, short = 's', default_value_t = 1)]
    pub seed: u64,
    /// Relative deadlines: a factor of each request's own work (`10x`, the
    /// paper's default), or a time (`1.13ms`, `500us`), per function
    /// (`sift=1.13ms,segmentation=2x`) and for the rest (`*=10x`).
    #[arg(long, value_name = "SPEC")]
    pub deadline: Option<String>,
    /// What policies are told of a request's work: `exact` (the paper's
    /// oracle for synthetic workloads), `median` (the median of the
    /// function's last 256 finished requests, the paper's estimator for
    /// real functions), or `noisy=E` (the work times a factor drawn
    /// uniformly from [1 − E, 1 + E), E from 0 to 1).
    #[arg(long, value_name = "exact|median|noisy=E", default_value = "exact")]
    pub estimate: String,
    /// `sledgescale`'s preemption test: `paper` (Alg. 1: the running
    /// request's slack exceeds the new one's estimate) or `code` (its slack
    /// is above 0, as SledgeScale's code tests).
    #[arg(long, value_enum, default_value_t = PreemptArg::Paper)]
    pub preempt_test: PreemptArg,
    /// A TOML file of the node's costs in ns (`dispatch_base`,
    /// `dispatch_per_worker`, `idle_pull`, `preempt_signal`,
    /// `preempt_latency`, `context_switch`, `sandbox_setup`, `wake`,
    /// `quantum_tick`, and `poll = true` for busy-polling workers); keys left
    /// out keep their defaults (docs/NODE.md lists them with their sources).
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum AssignArg {
    Equal,
    Random,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PreemptArg {
    Paper,
    Code,
}

/// `--policy`'s long help: every node policy, with what it does.
pub fn policy_help() -> String {
    let mut help = "Node policies, comma-separated, each run on the same requests:\n".to_string();
    for spec in NODE_CATALOG {
        help.push_str(&format!("\n  {}: {}", spec.name, spec.about));
    }
    help
}

impl NodeArgs {
    /// The policies of `names`.
    pub fn policies(names: &[String]) -> Result<Vec<NodePolicy>> {
        node_policies(names)
    }

    /// The run's setup, a built-in at `rate` requests per second (ignored
    /// for a file).
    pub fn setup(&self, rate: Option<f64>) -> Result<NodeSetup> {
        let (estimate, estimator) = self.estimates()?;
        let workload = match Workload::builtin(&self.workload) {
            Ok(workload) => NodeWorkload::Builtin {
                workload,
                rate: rate.unwrap_or(0.0),
                length: self.length()?,
            },
            Err(_) if std::path::Path::new(&self.workload).exists() => {
                NodeWorkload::File(RequestFile::open(self.workload.as_ref())?)
            }
            Err(e) => return Err(e.into()),
        };
        let costs = match &self.costs {
            Some(path) => read_costs(path)?,
            None => Costs::default(),
        };
        let config = NodeConfig {
            dispatchers: self.dispatchers as usize,
            workers: self.workers as usize,
            assign: match self.assign {
                AssignArg::Equal => Assign::Equal,
                AssignArg::Random => Assign::Random { seed: self.seed },
            },
            estimate: estimator,
            costs,
        };
        config.validate()?;
        let deadlines = match &self.deadline {
            Some(spec) => Deadlines::parse(spec).context("--deadline")?,
            None => Deadlines::default(),
        };
        Ok(NodeSetup {
            workload,
            config,
            seed: self.seed,
            deadlines,
            estimate,
            preempt_test: match self.preempt_test {
                PreemptArg::Paper => PreemptTest::Paper,
                PreemptArg::Code => PreemptTest::Code,
            },
        })
    }

    /// A built-in's capacity with every worker of every group.
    pub fn capacity(&self) -> Option<f64> {
        let w = Workload::builtin(&self.workload).ok()?;
        Some(w.capacity(self.workers * self.dispatchers))
    }

    fn length(&self) -> Result<Length> {
        if let Some(n) = self.requests {
            return Ok(Length::Count(n));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 86_400.0) {
            bail!(
                "--seconds {}: give a duration above 0 and at most a day",
                self.seconds
            );
        }
        Ok(Length::Duration((self.seconds * SEC as f64).round() as u64))
    }

    fn estimates(&self) -> Result<(Estimate, Estimator)> {
        Ok(match self.estimate.as_str() {
            "exact" => (Estimate::Exact, Estimator::Given),
            "median" => (Estimate::Exact, Estimator::PAPER_MEDIAN),
            s => match s.strip_prefix("noisy=") {
                Some(e) => {
                    let e: f64 = e
                        .parse()
                        .with_context(|| format!("--estimate {s}: `{e}` is not a number"))?;
                    (
                        Estimate::noisy(e).with_context(|| format!("--estimate {s}"))?,
                        Estimator::Given,
                    )
                }
                None => bail!("--estimate {s}: give exact, median or noisy=E"),
            },
        })
    }
}
