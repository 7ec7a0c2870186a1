//! `faasched node capacity`: per policy, the highest offered rate at which
//! the simulated node still meets a tail target; a table and (with `--out`)
//! summary.json and summary.csv.

use super::args::{NodeArgs, policies_help};
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::node::capacity::{
    CapacityOptions, DEFAULT_CAPACITY_POLICIES, DEFAULT_MAX_DROPPED, DEFAULT_MIN_REQUESTS,
    DEFAULT_PRECISION, DEFAULT_SEEDS, MAX_SEEDS, Target, capacity, percent,
};
use faasched_lab::output::Outputs;

/// Find the highest offered rate each node policy sustains at a tail target.
///
/// A rate holds for a policy when its run meets `--target` over all
/// requests and dropped at most `--max-dropped` of them. Per policy and
/// seed, the search starts at 5% of the workers' capacity (workers / mean
/// work), doubles the rate until it fails (at most up to 2× that capacity),
/// then bisects to `--precision`. Each probe runs max(--seconds × rate,
/// --min-requests) requests (a fixed --requests as given). The table gives
/// per policy the median of the seeds' capacities and their min–max;
/// `≥` marks one still held at 2× the workers' capacity. Ctrl-C stops the
/// searches and leaves an earlier run's files in `--out` as they were.
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    node: NodeArgs,
    /// What a rate must meet: p99.9-slowdown=X, p99-slowdown=X,
    /// p99.9-latency=T, p99-latency=T (T with a unit: 10ms, 200us) or
    /// miss-rate=P% (late or dropped requests).
    #[arg(long, short = 't', value_name = "TARGET")]
    target: Target,
    /// Largest share of a run's requests the dispatcher may drop for its
    /// rate to hold, in percent (like `0.5%`); by default 0.1%, as many as
    /// a p99.9 target forgives.
    #[arg(long, value_name = "P%", value_parser = percent)]
    max_dropped: Option<f64>,
    /// Seeds per policy, from --seed on; the capacity is their median.
    #[arg(long, default_value_t = DEFAULT_SEEDS, value_parser = clap::value_parser!(u64).range(1..=MAX_SEEDS))]
    seeds: u64,
    /// Relative precision of the bisection: it stops when the highest rate
    /// that held and the lowest that failed are this share apart.
    #[arg(long, default_value_t = DEFAULT_PRECISION)]
    precision: f64,
    /// Fewest requests a probe runs, whatever --seconds × rate gives (so
    /// that p99.9 rests on at least 20 requests by default).
    #[arg(long, default_value_t = DEFAULT_MIN_REQUESTS, value_parser = faasched_lab::workload::count)]
    min_requests: u64,
    /// Node policies to search, comma-separated.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = DEFAULT_CAPACITY_POLICIES,
        long_help = policies_help()
    )]
    policy: Vec<String>,
    #[command(flatten)]
    outputs: Outputs,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        let search = CapacityOptions {
            target: self.target,
            max_dropped: self.max_dropped.unwrap_or(DEFAULT_MAX_DROPPED),
            seeds: self.seeds,
            precision: self.precision,
            min_requests: self.min_requests,
            policies: self.policy,
        };
        capacity(&self.node.options()?, &search, &self.outputs)
    }
}
