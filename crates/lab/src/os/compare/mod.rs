//! Simulating and replaying the same workload under the same policies, and
//! how far the simulated turnaround is from the measured one.
//!
//! Four worlds, paired by invocation id: the simulation of the workload as
//! planned; the replay; the simulation again with each invocation given the
//! CPU time it used live (what the model makes of the work the machine
//! really did, so that a policy is compared at the load it ran at); and once
//! more on cores that lose the share of their time the replay saw going to
//! other work. [`analysis`] turns them into a [`Comparison`], [`render`] into
//! the table.

mod analysis;
mod render;

pub use analysis::{Comparison, Row};
pub use render::render;

use crate::os::catalog::{Policy, policies};
use crate::os::replay::{self, Live};
use crate::os::run::{Kernel, Machine, WorkloadOptions};
use crate::os::tuning::TuningFlags;
use crate::output::invocations_in;
use crate::{out, outln};
use analysis::{LiveRuns, Samples, compare, in_planned_group, slowed, with_cpu};
use anyhow::{Context, Result};
use faasched_model::{Group, Invocation, Nanos, US};
use faasched_report::Staged;
use faasched_report::os::{InvocationsWriter, PolicySummary, Summary, write_outputs};
use faasched_workload::Source;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The subdirectories `--out` gets, one per world, each with its
/// invocations.csv (sim/ and live/ with their summaries too).
pub const WORLDS: [&str; 4] = ["sim", "live", "sim-at-live-cpu", "sim-at-live-capacity"];

/// What `faasched compare` simulates and replays, and where its results go.
#[derive(Debug, Clone)]
pub struct Options {
    /// The workload, as `replay` takes it.
    pub workload: WorkloadOptions,
    /// The policies' names (live-capable ones).
    pub policies: Vec<String>,
    /// The simulated kernel; without a base slice, the live kernel's.
    pub kernel: Kernel,
    /// The learning policies' parameters.
    pub tuning: TuningFlags,
    /// The calibration file, as for `replay`.
    pub calibration: Option<PathBuf>,
    /// Rounds the policies take turns in, in both worlds.
    pub rounds: u32,
    /// The directory of compare.json, compare.csv and the worlds' files.
    pub out: Option<PathBuf>,
    /// compare.json on standard output instead of the table.
    pub json: bool,
}

/// Simulates and replays the workload, compares, and prints the table
/// (or compare.json).
pub fn run(o: Options) -> Result<()> {
    let policies = policies(&o.policies, &o.tuning.tuning()?)?;
    let (live, source) = replay::prepare(&policies, &o.workload, o.calibration.as_deref())?;
    let mut kernel = o.kernel;
    // Linux scales its base slice by the CPUs online, not by the cores a
    // replay uses: the simulation takes the live kernel's.
    if kernel.base_slice_us.is_none() {
        kernel.base_slice_us = faasched_sys::sched::base_slice().map(|s| s / US);
    }
    let machine = Machine {
        kernel,
        cores: live.cores(),
        seed: o.workload.seed,
    };
    let out = o.out.as_deref();
    let comparison = comparison(&policies, &source, &machine, &live, o.rounds, out)?;
    if o.json {
        outln!("{}", serde_json::to_string_pretty(&comparison)?)?;
    } else {
        out!("{}", render(&comparison))?;
        if let Some(dir) = out {
            outln!(
                "wrote compare.json, compare.csv, {}/ to {}",
                WORLDS.join("/, "),
                dir.display()
            )?;
        }
    }
    Ok(())
}

/// Simulates `source` on `machine` and replays it on `live` under each of
/// `policies` in `rounds`, and compares; with `out`, writes compare.json,
/// compare.csv and the [`WORLDS`]' files there, put in place together.
fn comparison(
    policies: &[Policy],
    source: &Source,
    machine: &Machine,
    live: &Live,
    rounds: u32,
    out: Option<&Path>,
) -> Result<Comparison> {
    let all = source.invocations()?;
    replay::check_rounds(rounds, all.len())?;
    // Each invocation's group as the workload plans it: the simulations
    // at the measured CPU move some across a group's bound (by CPU time),
    // and a group must hold the same invocations in every world.
    let groups: HashMap<u64, Group> = all.iter().map(|inv| (inv.id, inv.group())).collect();
    let mut staged = Staged::new();
    let mut writers = match out {
        Some(dir) => WORLDS
            .iter()
            .map(|w| invocations_in(&dir.join(w), &mut staged).map(Some))
            .collect::<Result<Vec<_>>>()?,
        None => WORLDS.iter().map(|_| None).collect(),
    };
    let [sim_out, live_out, at_live_cpu_out, at_live_out] = &mut writers[..] else {
        unreachable!("a writer per world");
    };
    let simulate = |policy: &Policy, work: &[Invocation], out: Option<&mut InvocationsWriter>| {
        simulate(machine, policy, work, &groups, rounds, out)
    };
    let (mut sim, mut sim_summaries) = (Vec::new(), Vec::new());
    for p in policies {
        let (t, s) = simulate(p, &all, sim_out.as_mut())?;
        sim.push(t);
        sim_summaries.push(s);
    }
    let mut measured: Vec<Samples> = policies.iter().map(|_| Samples::default()).collect();
    let mut used: Vec<HashMap<u64, Nanos>> = policies.iter().map(|_| HashMap::new()).collect();
    let replayed = replay::replay_policies(policies, &all, live, rounds, |i, o| {
        measured[i].record(o);
        used[i].insert(o.id, o.cpu);
        if let Some(w) = live_out.as_mut() {
            w.write(policies[i].name(), o)?;
        }
        Ok(())
    })?;
    let (live_summaries, other_work): (Vec<_>, Vec<_>) = replayed
        .into_iter()
        .map(|r| (r.summary, r.stats.other_work_share()))
        .unzip();
    let (mut at_live_cpu, mut at_live) = (Vec::new(), Vec::new());
    for ((p, used), &other) in policies.iter().zip(&used).zip(&other_work) {
        let as_measured = |speed: f64, out: Option<&mut InvocationsWriter>| {
            let work: Vec<Invocation> = all
                .iter()
                .map(|inv| with_cpu(inv, used.get(&inv.id).map(|&c| slowed(c, speed))))
                .collect();
            simulate(p, &work, out).map(|(t, _)| t)
        };
        at_live_cpu.push(as_measured(1.0, at_live_cpu_out.as_mut())?);
        at_live.push(as_measured(1.0 - other, at_live_out.as_mut())?);
    }
    for w in writers.into_iter().flatten() {
        w.finish()?;
    }
    let live_runs = LiveRuns {
        measured: &mut measured,
        other_work: &other_work,
        at_live_cpu: &at_live_cpu,
        at_live: &at_live,
    };
    let names: Vec<&str> = policies.iter().map(Policy::name).collect();
    let comparison = compare(&names, &mut sim, live_runs);
    if let Some(dir) = out {
        let sim_summary = Summary {
            policies: sim_summaries,
            workload: source.describe(),
            machine: machine.describe(),
        };
        let live_summary = Summary {
            policies: live_summaries,
            workload: source.describe(),
            machine: live.machine(),
        };
        write_outputs(&dir.join("sim"), &sim_summary, &mut staged)?;
        write_outputs(&dir.join("live"), &live_summary, &mut staged)?;
        let json = serde_json::to_string_pretty(&comparison)?;
        staged.write(&dir.join("compare.json"), (json + "\n").as_bytes())?;
        let path = dir.join("compare.csv");
        let mut w = csv::Writer::from_writer(staged.create(&path)?);
        for r in &comparison.rows {
            w.serialize(r)?;
        }
        w.flush()
            .with_context(|| format!("writing {}", path.display()))?;
        staged.commit()?;
    }
    Ok(comparison)
}

/// `policy` simulated on `machine` over `all` in the replay's parts (of
/// `rounds`), each outcome in its group of `groups` (by id) and written to
/// `out` if given.
fn simulate(
    machine: &Machine,
    policy: &Policy,
    all: &[Invocation],
    groups: &HashMap<u64, Group>,
    rounds: u32,
    mut out: Option<&mut InvocationsWriter>,
) -> Result<(Samples, PolicySummary)> {
    let mut t = Samples::default();
    let parts = replay::parts(all, rounds).map(|part| part.iter().cloned().map(Ok));
    let s = machine.run_in_parts(policy, parts, |o| {
        let o = &*in_planned_group(o, groups);
        t.record(o);
        if let Some(w) = out.as_deref_mut() {
            w.write(policy.name(), o)?;
        }
        Ok(())
    })?;
    Ok((t, s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::catalog::Tuning;
    use crate::os::run::Kernel;
    use faasched_model::{MS, Outcome, Phase, Phases};

    /// An invocation of 49 ms of CPU that used 51 ms live is simulated in
    /// G2, and compared in G1, where the replay and the first simulation
    /// count it.
    #[test]
    fn an_invocation_stays_in_its_planned_group() {
        let f = faasched_model::Functions::new().intern("f");
        let inv = Invocation {
            id: 3,
            function: f.clone(),
            arrival: 0,
            phases: Phases::from_buf([Phase::Cpu(49 * MS)]),
            memory_mb: 128,
            deadline: None,
        };
        let used = with_cpu(&inv, Some(51 * MS));
        assert_eq!((inv.group(), used.group()), (Group::G1, Group::G2));
        let o = Outcome {
            id: 3,
            function: f,
            group: used.group(),
            arrival: 0,
            first_run: 0,
            finish: 51 * MS,
            cpu: 51 * MS,
            io: 0,
            voluntary_switches: 1,
            involuntary_switches: 0,
            memory_mb: 128,
        };
        let groups = HashMap::from([(3, inv.group())]);
        assert_eq!(in_planned_group(&o, &groups).group, Group::G1);
        // And so the simulation records it.
        let machine = Machine {
            kernel: Kernel::default(),
            cores: 1,
            seed: 1,
        };
        let cfs = Policy::new("cfs", &Tuning::default()).unwrap();
        let (t, _) = simulate(&machine, &cfs, &[used], &groups, 1, None).unwrap();
        assert_eq!((t.turnaround[1].len(), t.turnaround[2].len()), (1, 0));
    }
}
