//! `faasched simulate`: one workload, several policies, one table and (with
//! `--out`) summary.json, summary.csv, invocations.csv and report.html.

use crate::output::{OutputArgs, progress, section_title};
use crate::run::{KernelArgs, refuse_repeated, run_policy};
use crate::source::{Source, WorkloadArgs};
use crate::tuning::TuningArgs;
use anyhow::{Context, Result, bail};
use clap::Args as ClapArgs;
use faasched_report::{Staged, Summary};
use faasched_sys::signals::Signals;

/// Run a workload through the simulated kernel under one or more policies.
///
/// With no options: the Huawei-like workload of the ALPS paper (15,000
/// invocations, 56 cores, 90% load) under cfs, fifo, rr and srpt, as a table.
/// Every policy is listed under `--policy` below.
#[derive(ClapArgs, Debug)]
// The workload options' help, shared with `replay` and `compare`, told in
// this command's terms.
#[command(
    mut_arg("cores", |a| a.help("Cores of the simulated machine, 1 to 256 [default: 56]")),
    mut_arg("invocations", |a| a.help(
        "Invocations to generate (built-ins) or to take from the start of a file \
         [default: 15000 of a built-in, all of a file]"
    ))
)]
pub struct Args {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Policies to compare, comma-separated, each run on the same invocations.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = "cfs,fifo,rr,srpt",
        long_help = policy_help()
    )]
    policy: Vec<String>,
    #[command(flatten)]
    kernel: KernelArgs,
    #[command(flatten)]
    tuning: TuningArgs,
    #[command(flatten)]
    output: OutputArgs,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        let tuning = self.tuning.tuning()?;
        refuse_repeated(&self.policy)?;
        for name in &self.policy {
            faasched_policy::setup(name, &tuning)?;
        }
        let source = Source::resolve(&self.workload)?;
        let cores = self.workload.cores();
        // Ctrl-C or SIGTERM ends a run through its errors' path, so that the
        // staged files are removed rather than left half-written.
        let mut signals = Signals::block().context("blocking termination signals")?;
        let mut seen = 0u64;
        let mut staged = Staged::new();
        let mut invocations = self.output.invocations(&mut staged)?;
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
                    seen += 1;
                    // A look every 4,096 outcomes: a read that would block,
                    // about a µs, where the outcomes take milliseconds.
                    if seen.is_multiple_of(4096)
                        && let Some(signal) = signals.take()?
                    {
                        bail!("interrupted by signal {signal}; no file was written");
                    }
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
            machine: self.kernel.describe(cores, self.workload.seed),
        };
        let title = section_title(&summary);
        self.output
            .emit(summary, "faasched simulate", &title, staged)
    }
}

/// `--policy`'s long help: every policy of the catalogue, with what it does.
fn policy_help() -> String {
    let mut help =
        "Policies to compare, comma-separated, each run on the same invocations:\n".to_string();
    for (name, what) in faasched_policy::POLICIES {
        help.push_str(&format!("\n  {name}: {what}"));
    }
    help
}
