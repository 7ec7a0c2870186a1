//! `faasched node capacity`: per policy, the highest offered rate at which
//! the simulated node still meets a tail target; a table and (with `--out`)
//! summary.json and summary.csv.

use super::args::{NodeArgs, policy_help};
use anyhow::{Context, Result, anyhow, bail};
use clap::Args as ClapArgs;
use faasched_lab::interrupt;
use faasched_lab::node::capacity::{DEFAULT_MIN_REQUESTS, Search, Target, capacities};
use faasched_lab::node::catalog::node_policies;
use faasched_lab::{out, outln};
use faasched_report::Staged;
use std::path::PathBuf;

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
    target: String,
    /// Largest share of a run's requests the dispatcher may drop for its
    /// rate to hold, in percent: a p99.9 target forgives 0.1% of the
    /// requests, so by default a policy may drop no more.
    #[arg(long, value_name = "P%", default_value = "0.1%")]
    max_dropped: String,
    /// Seeds per policy, from --seed on; the capacity is their median.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1000))]
    seeds: u64,
    /// Relative precision of the bisection: it stops when the highest rate
    /// that held and the lowest that failed are this share apart.
    #[arg(long, default_value_t = 0.02)]
    precision: f64,
    /// Fewest requests a probe runs, whatever --seconds × rate gives (so
    /// that p99.9 rests on at least 20 requests by default).
    #[arg(long, default_value_t = DEFAULT_MIN_REQUESTS, value_parser = crate::os::args::count)]
    min_requests: u64,
    /// Node policies to search, comma-separated.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = "sledgescale,darc,shinjuku",
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
        let target: Target = self.target.parse().context("--target")?;
        let max_dropped = percent(&self.max_dropped).context("--max-dropped")?;
        let policies = node_policies(&self.policy)?;
        let options = self.node.options()?;
        let Some(workers_capacity) = options.capacity() else {
            bail!(
                "--workload {}: capacity needs a built-in workload (a file's arrivals fix its rate)",
                self.node.workload
            );
        };
        let setup = options.setup(None)?;
        let search = Search {
            max_dropped,
            precision: self.precision,
            min_requests: self.min_requests,
            ..Search::new(target, workers_capacity)
        };
        search.validate()?;
        interrupt::catch()?;
        let found = capacities(&setup, &policies, self.seeds, &search)?;
        let json = found.to_json();
        let text = if self.json {
            format!("{}\n", serde_json::to_string_pretty(&json)?)
        } else {
            found.render_table()
        };
        if let Some(dir) = &self.out {
            let mut staged = Staged::new();
            found.write(dir, "faasched node capacity", &mut staged)?;
            interrupt::check()?;
            staged.commit()?;
        }
        out!("{text}")?;
        if let (Some(dir), false) = (&self.out, self.json) {
            outln!(
                "wrote summary.json, summary.csv, report.html to {}",
                dir.display()
            )?;
        }
        Ok(())
    }
}

/// `P%`, P from 0 to 100, as a share.
fn percent(text: &str) -> Result<f64> {
    let p = text
        .strip_suffix('%')
        .ok_or_else(|| anyhow!("`{text}`: give a percentage, like `0.1%`"))?;
    match p.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p / 100.0),
        _ => bail!("`{text}`: give a percentage from 0% to 100%"),
    }
}
