//! `faasched node replay`: the requests `node simulate` runs, sent to a
//! live node runtime under each policy; the same table and files.

use super::args::NodeArgs;
use super::host::HostArgs;
use super::simulate::{Outputs, Sweep};
use anyhow::{Result, bail};
use clap::Args as ClapArgs;
use faasched_lab::node::catalog::NodePolicy;
use faasched_lab::node::live::Host;
use faasched_lab::node::replay::replay;
use faasched_lab::node::run::NodeSetup;
use faasched_lab::progress::ProgressBar;
use faasched_report::node::PolicySummary;
use serde_json::{Value, json};

/// Run requests through a live node under one or more dispatch policies,
/// as `node simulate` runs them through a simulated one.
///
/// The requests `node simulate` runs with the same options are sent at
/// their arrival times to a node runtime started for each policy (a
/// dispatcher thread per group, worker threads running each request as
/// `spin` of its work in a fresh WebAssembly sandbox), measured, and
/// summarised as `node simulate` summarises (the same table, summary.json,
/// summary.csv and report.html).
///
/// Requests are sent in process, without HTTP, so what is measured is the
/// scheduling; a request's latency counts from its arrival time even when
/// the sender was late. A workload of µs asks more of threads than they
/// keep: `--stretch 10` runs the same experiment ten times slower. The
/// node's CPUs are shared with the sender; on a small machine, give the
/// node few workers. Estimates are `exact` (a spin's own µs) or `median`.
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    node: NodeArgs,
    #[command(flatten)]
    sweep: Sweep,
    #[command(flatten)]
    host: HostArgs,
    #[command(flatten)]
    outputs: Outputs,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        if self.node.costs.is_some() {
            bail!("--costs sets what the simulator charges; a live node pays its own");
        }
        let host = measured_spin(self.host.host()?)?;
        let mut summary = self.sweep.run(&self.node, &mut |setup, policy, bar| {
            replayed(setup, policy, &host, bar)
        })?;
        live_settings(&mut summary.settings, &host);
        self.outputs.write(&summary, "faasched node replay")
    }
}

/// `host` with `spin` measured once for every policy's run, said on
/// stderr.
pub fn measured_spin(host: Host) -> Result<Host> {
    let host = host.with_spin_measured()?;
    if let Some(steps) = host.spin_steps_per_ms {
        eprintln!("spin: {steps} steps per ms of CPU, the same for every policy");
    }
    Ok(host)
}

/// `policy` replayed live with a progress bar; says on stderr how late the
/// requests were sent.
pub fn replayed(
    setup: &NodeSetup,
    policy: &NodePolicy,
    host: &Host,
    bar: &ProgressBar,
) -> Result<(PolicySummary, f64)> {
    let r = replay(setup, policy, host, |_| bar.inc(1))?;
    bar.suspend(|| {
        eprintln!(
            "{}: requests sent late by p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs; \
             sandboxes used {} of the work asked",
            policy.name(),
            r.late.p50 as f64 / 1e3,
            r.late.p99 as f64 / 1e3,
            r.late.max as f64 / 1e3,
            r.cpu_over_work
                .map_or_else(|| "none".to_string(), |x| format!("{:.1}%", x * 100.0))
        )
    });
    Ok((r.summary, r.rate))
}

/// What summary.json records of a live run: the host instead of the
/// simulator's costs.
pub fn live_settings(settings: &mut Value, host: &Host) {
    if let Some(map) = settings.as_object_mut() {
        map.remove("costs");
    }
    settings["live"] = json!({
        "cpus": host.cpus,
        "poll": host.poll,
        "cpu_limit_ns": host.cpu_limit,
        "memory_limit_bytes": host.memory_limit,
        "max_sandboxes": host.max_sandboxes,
        "spin_steps_per_ms": host.spin_steps_per_ms,
        "online_cpus": faasched_sys::sched::online_cpus(),
    });
}
