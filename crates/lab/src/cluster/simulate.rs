//! `faasched cluster simulate`: one invocation workload through the
//! simulated cluster under several routers; a table and (with a directory)
//! summary.json, summary.csv, functions.csv, report.html and timing.json;
//! the routers' decision times on stderr.

use super::catalog::{Contender, contenders};
use super::publish::Rows;
use super::run::ClusterOptions;
use crate::output::Outputs;
use crate::{interrupt, progress};
use anyhow::Result;
use faasched_report::Staged;
use faasched_report::cluster::{render_decision_times, write_cluster_timing};
use std::path::Path;

/// The routers `faasched cluster simulate` runs unless told,
/// comma-separated as `--policy` takes them: CH-RLU and its baselines.
pub const DEFAULT_ROUTERS: &str = "ch-rlu,ch-bl,openwhisk,least-loaded,random,round-robin,greedy";

/// What `faasched cluster simulate` runs, and where its results go.
#[derive(Clone, Debug)]
pub struct Options {
    /// The workload and the cluster.
    pub cluster: ClusterOptions,
    /// The routers (`ROUTER` or `ROUTER:KEEP-ALIVE`), each run on the same
    /// invocations, in order.
    pub policies: Vec<String>,
    /// Where the results go.
    pub outputs: Outputs,
}

/// Runs every router over the workload in turn and publishes the rows; a
/// signal stops it, leaving an earlier run's files.
pub fn run(o: Options) -> Result<()> {
    let contenders = contenders(&o.policies)?;
    let setup = o.cluster.setup()?;
    interrupt::catch()?;
    let ran = progress::each(&contenders, Contender::name, None, |c, bar| {
        setup.run(c, |_| bar.inc(1))
    })?;
    let (rows, decisions): (Vec<_>, Vec<_>) = ran
        .into_iter()
        .map(|ran| (ran.row(o.cluster.cores), ran.decisions))
        .unzip();
    let timing: Vec<_> = rows
        .iter()
        .map(|r| r.policy.as_str())
        .zip(&decisions)
        .collect();
    let settings = setup.describe();
    let write_timing =
        |dir: &Path, staged: &mut Staged| Ok(write_cluster_timing(dir, &timing, staged)?);
    let published = Rows {
        extra: Some(("timing.json", &write_timing)),
        ..Rows::new(&settings, &rows)
    };
    o.outputs
        .publish(&published, "faasched cluster simulate", Staged::new())?;
    if !o.outputs.silent {
        eprint!("{}", render_decision_times(&timing));
    }
    Ok(())
}
