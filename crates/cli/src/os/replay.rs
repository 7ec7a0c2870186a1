//! `faasched replay`: run a workload for real on this machine, each policy in
//! turn, every invocation a process of the function suite, and write the
//! simulator's outputs marked live.

use crate::output::OS_FILES;
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::os::replay::{self, Options};
use faasched_lab::os::run::WorkloadOptions;
use faasched_lab::os::tuning::TuningFlags;
use faasched_lab::output::Outputs;
use std::path::PathBuf;

/// Run a workload for real on this machine under one or more policies.
///
/// Every invocation becomes a process at its arrival time (open loop: a late
/// launch is measured and reported, and counts in the invocation's times),
/// running a function of the suite (`faasched fn list`) for the CPU time and
/// I/O waits the workload gives it, mapped to real work by this machine's
/// calibration (`faasched fn calibrate`; measured once and saved if missing).
/// Each process starts under the attributes its policy gives it, set in the
/// child before exec, and is steered until it exits: demotion at slice
/// expiry (sfs, hybrid, sfs-alps, sfs-gittins) or CPU-time bounds (las,
/// alps-las, gittins, gittins-rt), each noticed by a CPU-time timer on the process, core
/// groups by affinity (hybrid), the ALPS learner retraining from finished
/// invocations (alps, alps-io, alps-las), the Gittins index following its
/// functions' CPU times (gittins, gittins-rt).
///
/// Policies: cfs, fifo, rr, sfs, hybrid (and its variants), alps, alps-io,
/// las, alps-las, gittins, gittins-rt, sfs-alps, sfs-gittins.
///
/// fifo, rr, sfs and hybrid need the privilege for SCHED_FIFO/SCHED_RR,
/// alps, alps-io, alps-las and gittins for negative nice values,
/// sfs-gittins and gittins-rt for the first, sfs-alps for both (root, or
/// CAP_SYS_NICE); without it the command says which policies need it and
/// runs none. Sim-only policies (srpt, ps, alps-kernel, ...) are refused.
///
/// Outputs as `simulate`'s, marked live: each policy in summary.json carries
/// `live` (launch lateness, the launcher's and steering's CPU, how promptly
/// CPU watches acted, the calibration used).
#[derive(ClapArgs, Debug)]
#[command(mut_arg("out", |a| a.help(OS_FILES)))]
pub struct Args {
    #[command(flatten)]
    workload: WorkloadOptions,
    /// Policies to run, comma-separated, one after the other on the same
    /// invocations.
    #[arg(long, short = 'p', value_delimiter = ',', default_value = "cfs")]
    policy: Vec<String>,
    #[command(flatten)]
    tuning: TuningFlags,
    /// Calibration file to map CPU time to work (default: the one `faasched
    /// fn calibrate` saves; measured now if there is none).
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
    #[command(flatten)]
    rounds: Rounds,
    #[command(flatten)]
    output: Outputs,
}

/// How the policies take turns on the machine.
#[derive(ClapArgs, Debug, Clone, Copy)]
pub struct Rounds {
    /// Replay in this many rounds: the invocations are split into as many
    /// consecutive parts, and each part is replayed under every policy in
    /// turn before the next (the order rotating by one each round), so that
    /// the minutes when this shared machine runs slower fall on every policy
    /// alike. A policy keeps its state (ALPS's lessons) from one round to
    /// the next. With 1, each policy replays the whole workload in turn.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        replay::run(Options {
            workload: self.workload,
            policies: self.policy,
            tuning: self.tuning,
            calibration: self.calibration,
            rounds: self.rounds.rounds,
            outputs: self.output,
        })
    }
}
