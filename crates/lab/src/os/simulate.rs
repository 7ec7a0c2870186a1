//! `faasched simulate`: one workload through the simulated kernel under
//! several policies, one table and (with a directory) summary.json,
//! summary.csv, invocations.csv and report.html.

use crate::os::catalog::{Policy, policies};
use crate::os::run::{Kernel, Machine, WorkloadOptions};
use crate::os::tuning::TuningFlags;
use crate::output::{Outputs, section_title};
use crate::{interrupt, progress};
use anyhow::Result;
use faasched_report::Staged;
use faasched_report::os::Summary;

/// The policies `faasched simulate` runs unless told, comma-separated as
/// `--policy` takes them: the papers', gittins (the ALPS family's best on
/// real traces without real-time priorities) and the oracle.
pub const DEFAULT_POLICIES: &str = "cfs,sfs,alps,gittins,srpt";

/// What `faasched simulate` runs, and where its results go.
#[derive(Debug, Clone)]
pub struct Options {
    /// The workload, on the simulator's default cores unless asked.
    pub workload: WorkloadOptions,
    /// The policies' names, each run on the same invocations, in order.
    pub policies: Vec<String>,
    /// The simulated kernel.
    pub kernel: Kernel,
    /// The learning policies' parameters.
    pub tuning: TuningFlags,
    /// Where the results go.
    pub outputs: Outputs,
}

/// Runs every policy over the workload in turn and emits the summary; a
/// signal stops it within milliseconds, leaving an earlier run's files.
pub fn run(o: Options) -> Result<()> {
    let policies = policies(&o.policies, &o.tuning.tuning()?)?;
    let source = o.workload.resolve(None, None)?;
    let machine = Machine {
        kernel: o.kernel,
        cores: source.cores(),
        seed: o.workload.seed,
    };
    interrupt::catch()?;
    let mut staged = Staged::new();
    let mut invocations = o.outputs.invocations(&mut staged)?;
    let name = |p: &Policy| p.name().to_string();
    let summaries = progress::each(&policies, name, Some(source.len()), |policy, bar| {
        machine.run(policy, &source, |outcome| {
            bar.inc(1);
            if let Some(w) = invocations.as_mut() {
                w.write(policy.name(), outcome)?;
            }
            Ok(())
        })
    })?;
    if let Some(w) = invocations {
        w.finish()?;
    }
    let summary = Summary {
        policies: summaries,
        workload: source.describe(),
        machine: machine.describe(),
    };
    let title = section_title(&summary);
    o.outputs.emit(summary, "faasched simulate", &title, staged)
}
