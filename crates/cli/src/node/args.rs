//! What `node simulate` and `node capacity` share: the workload, the node's
//! shape and costs, and the policies.

use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use faasched_lab::node::admission::Admit;
use faasched_lab::node::admission::AdmitArgs;
use faasched_lab::node::catalog::NODE_CATALOG;
use faasched_lab::node::run::{Deadlines, Estimates, NodeOptions, PreemptTest, Spread};
use faasched_lab::node::{Costs, read_costs};
use std::path::PathBuf;

/// The workload, the node and the policies of a node run.
#[derive(ClapArgs, Debug)]
pub struct NodeArgs {
    /// A built-in workload (SledgeScale's Table 3: fixed, bimodal-high,
    /// bimodal-extreme, sd-vbs, exponential, lognormal; its Fig. 1:
    /// colocated) or a workload CSV
    /// whose rows are one CPU phase each (its arrivals are kept).
    #[arg(
        long,
        short = 'w',
        value_name = "NAME|FILE",
        default_value_t = NodeOptions::default().workload
    )]
    pub workload: String,
    /// Workers in each dispatcher's group.
    #[arg(long, default_value_t = NodeOptions::default().workers, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub workers: u32,
    /// Dispatchers, each over its own group of `--workers`.
    #[arg(long, default_value_t = NodeOptions::default().dispatchers, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub dispatchers: u32,
    /// Which dispatcher an arrival reaches: in turn (the paper's runs), or
    /// at random as RSS spreads packets (seeded by --seed).
    #[arg(long, value_enum, default_value_t = AssignArg::Equal)]
    pub assign: AssignArg,
    /// Seconds of arrivals of a built-in.
    #[arg(long, default_value_t = NodeOptions::default().seconds, conflicts_with = "requests")]
    pub seconds: f64,
    /// A built-in's requests, instead of --seconds.
    #[arg(long, short = 'n', value_parser = faasched_lab::workload::count)]
    pub requests: Option<u64>,
    /// Seed of the arrivals, the work and noisy estimates.
    #[arg(long, short = 's', default_value_t = 1)]
    pub seed: u64,
    /// Relative deadlines: a factor of each request's own work (`10x`, the
    /// paper's default), or a time (`1.13ms`, `500us`), per function
    /// (`sift=1.13ms,segmentation=2x`) and for the rest (`*=10x`).
    #[arg(long, value_name = "SPEC")]
    pub deadline: Option<Deadlines>,
    /// What policies are told of a request's work: `exact` (the paper's
    /// oracle for synthetic workloads), `median` (the median of the
    /// function's last 256 finished requests, the paper's estimator for
    /// real functions), or `noisy=E` (the work times a factor drawn
    /// uniformly from [1 − E, 1 + E), E from 0 to 1).
    #[arg(long, value_name = "exact|median|noisy=E", default_value = "exact")]
    pub estimate: Estimates,
    /// `sledgescale`'s preemption test: `paper` (Alg. 1: the running
    /// request's slack exceeds the new one's estimate) or `code` (its slack
    /// is above 0, as SledgeScale's code tests).
    #[arg(long, value_enum, default_value_t = PreemptArg::Paper)]
    pub preempt_test: PreemptArg,
    /// A file of the node's costs in ns, TOML (or JSON for a `.json`
    /// name), as `faasched node calibrate` writes them (`dispatch_base`,
    /// `dispatch_per_worker`, `idle_pull`, `preempt_signal`,
    /// `preempt_latency`, `context_switch`, `sandbox_setup`, `wake`,
    /// `quantum_tick`, and `poll = true` for busy-polling workers); keys left
    /// out keep their defaults (docs/NODE.md lists them with their sources).
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
    /// Multiply every time of the workload by K: each request's work and
    /// deadline and the gaps between arrivals (so `--rate` is the rate of
    /// the stretched stream, and `--load` the same share of a capacity K
    /// times smaller), and the policies' own times with them (quanta,
    /// DARC's bounds): the same schedule K times slower. The node's costs
    /// stay as they are. For live runs, whose threads cannot keep a
    /// workload of µs: the simulation of the same stretched stream is what
    /// they compare to.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub stretch: u32,
    #[command(flatten)]
    pub admit: AdmitArgs,
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

impl From<PreemptArg> for PreemptTest {
    fn from(p: PreemptArg) -> PreemptTest {
        match p {
            PreemptArg::Paper => PreemptTest::Paper,
            PreemptArg::Code => PreemptTest::Code,
        }
    }
}

/// `--policy`'s long help where it takes several: every node policy, with
/// what it does.
pub fn policies_help() -> String {
    NODE_CATALOG.help("Node policies, comma-separated, each run on the same requests:\n")
}

/// `--policy`'s long help where it takes one.
pub fn policy_help() -> String {
    NODE_CATALOG.help("The node policy to run, one of:\n")
}

impl NodeArgs {
    /// The options as the lab takes them.
    pub fn options(&self) -> Result<NodeOptions> {
        Ok(NodeOptions {
            workload: self.workload.clone(),
            workers: self.workers,
            dispatchers: self.dispatchers,
            spread: match self.assign {
                AssignArg::Equal => Spread::Equal,
                AssignArg::Random => Spread::Random,
            },
            requests: self.requests,
            seconds: self.seconds,
            seed: self.seed,
            deadline: self.deadline.clone(),
            estimate: self.estimate,
            preempt_test: self.preempt_test.into(),
            costs: match &self.costs {
                Some(path) => read_costs(path)?,
                None => Costs::default(),
            },
            stretch: self.stretch,
            admission: self.admit.admit(Admit::default()),
        })
    }
}
