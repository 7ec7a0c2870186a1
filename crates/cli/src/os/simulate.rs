//! `faasched simulate`: one workload, several policies, one table and (with
//! `--out`) summary.json, summary.csv, invocations.csv and report.html.

use crate::output::OS_FILES;
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::os::catalog::CATALOG;
use faasched_lab::os::run::{Kernel, WorkloadOptions};
use faasched_lab::os::simulate::{self, Options};
use faasched_lab::os::tuning::TuningFlags;
use faasched_lab::output::Outputs;

/// Run a workload through the simulated kernel under one or more policies.
///
/// With no options: the Huawei-like workload of the ALPS paper (15,000
/// invocations, 8 cores, 90% load, where the policies differ: on many cores
/// a Poisson load pools the queue and every policy comes close to the
/// ideal) under cfs, sfs, alps, gittins (the ALPS family's best on real
/// traces without real-time priorities; gittins-rt, with them, is better
/// there) and srpt (the oracle), as a table headed by what was run.
/// Every policy is listed under `--policy` below. Ctrl-C (or SIGTERM) stops
/// a run within milliseconds and leaves an earlier run's files in `--out` as
/// they were.
#[derive(ClapArgs, Debug)]
// The workload options' help, shared with `replay` and `compare`, told in
// this command's terms.
#[command(
    mut_arg("cores", |a| a.help("Cores of the simulated machine, 1 to 256 [default: 8]")),
    mut_arg("invocations", |a| a.help(
        "Invocations to generate (built-ins) or to take from the start of a file \
         [default: 15000 of a built-in, all of a file]"
    ))
)]
#[command(mut_arg("out", |a| a.help(OS_FILES)))]
pub struct Args {
    #[command(flatten)]
    workload: WorkloadOptions,
    /// Policies to compare, comma-separated, each run on the same invocations.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = simulate::DEFAULT_POLICIES,
        long_help = policy_help()
    )]
    policy: Vec<String>,
    #[command(flatten)]
    kernel: Kernel,
    #[command(flatten)]
    tuning: TuningFlags,
    #[command(flatten)]
    output: Outputs,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        simulate::run(Options {
            workload: self.workload,
            policies: self.policy,
            kernel: self.kernel,
            tuning: self.tuning,
            outputs: self.output,
        })
    }
}

/// `--policy`'s long help: every policy of the catalogue, with what it does.
fn policy_help() -> String {
    CATALOG.help("Policies to compare, comma-separated, each run on the same invocations:\n")
}
