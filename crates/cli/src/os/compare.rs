//! `faasched compare`: simulate and replay the same workload under the same
//! policies, and report per policy and group how far the simulated
//! turnaround distribution is from the measured one.

use crate::os::replay::Rounds;
use crate::output::COMPARE_JSON;
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::os::compare::{self, Options};
use faasched_lab::os::run::{Kernel, WorkloadOptions};
use faasched_lab::os::tuning::TuningFlags;
use faasched_lab::output::Outputs;
use std::path::PathBuf;

/// What `--out` writes.
const FILES: &str = "Write compare.json, compare.csv, sim/ and live/ with each world's \
summary.json, summary.csv and invocations.csv, and sim-at-live-cpu/ and sim-at-live-capacity/ \
with the invocations.csv of the second and third simulations, into this directory: the \
invocations of all four pair by id. (In sim-at-live-capacity/, `cpu_us` is the core time each \
invocation held, its measured CPU time divided by the share of the cores left to it.) Files are \
written as hidden .NAME.faasched-partial.PID and renamed into place together once all are \
written; what a killed run leaves is removed by the next run writing into DIR";

/// Simulate and replay the same workload and policies, and compare.
///
/// For each policy and group (all, G1..G4): the mean turnaround simulated and
/// measured, their ratio (measured / simulated), the Kolmogorov–Smirnov
/// distance between the two turnaround distributions (0: the same empirical
/// CDF, 1: every value of one below every value of the other), the mean
/// response (arrival to first run) in both worlds, which
/// tells a wait in a queue from a slower run, and the ratio of the CPU time
/// the invocations used (measured / simulated: below 1, the machine did less
/// work than the workload asks, so it ran at a lower load). Then the same
/// simulation again with each invocation given the CPU time it used live
/// (its CPU phases scaled to it): what the model makes of the work the
/// machine really did, so that a policy's turnaround is compared at the
/// load it ran at (at 80% load a few percent more CPU time moves a mean
/// turnaround by tens of percent). Then once more on a machine with the
/// capacity the replay had: the share of the cores' time that went to
/// anything but the invocations (the launcher, the kernel's threads, other
/// processes, the host's steal; from /proc/stat) is taken from every core,
/// each invocation's CPU time divided by what is left. Then whether the
/// policies rank the same by mean turnaround in each. `invol l:m` is how
/// often something else took an invocation's core, measured and in that
/// last simulation (involuntary switches per invocation). This is how we
/// find where the kernel model is wrong (docs/FIDELITY.md).
///
/// The simulated machine has the replay's cores, the live kernel's EEVDF
/// base slice (which Linux scales by the CPUs online, not by the cores the
/// replay uses) and otherwise the simulator's default kernel (EEVDF, HZ
/// 250, 3.5 µs per switch), unless told otherwise. With `--rounds`, the
/// simulation runs the same parts as the replay, each on an empty machine
/// with the policy keeping what it learned, so that both worlds start each
/// part without the backlog of the one before.
///
/// Policies: those `replay` runs (cfs, fifo, rr, sfs, hybrid and its
/// variants, alps, alps-io, las, alps-las, gittins, gittins-rt, sfs-alps,
/// sfs-gittins),
/// with the same privileges. The workload and
/// cores are the replay's: 1,000 invocations unless `-n` says otherwise
/// (of a file too), on all this machine's CPUs or the first `--cores`.
#[derive(ClapArgs, Debug)]
#[command(mut_arg("out", |a| a.help(FILES)), mut_arg("json", |a| a.help(COMPARE_JSON)))]
pub struct Args {
    #[command(flatten)]
    workload: WorkloadOptions,
    /// Policies to compare, comma-separated (live-capable ones only).
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = "cfs,sfs,alps"
    )]
    policy: Vec<String>,
    #[command(flatten)]
    kernel: Kernel,
    #[command(flatten)]
    tuning: TuningFlags,
    /// Calibration file (as for `replay`).
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
    #[command(flatten)]
    rounds: Rounds,
    #[command(flatten)]
    outputs: Outputs,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        compare::run(Options {
            workload: self.workload,
            policies: self.policy,
            kernel: self.kernel,
            tuning: self.tuning,
            calibration: self.calibration,
            rounds: self.rounds.rounds,
            out: self.outputs.dir,
            json: self.outputs.json,
        })
    }
}
