//! What a live cluster's real functions cost on this machine, measured in
//! process before a replay: each mapped function's warm time (the CPU
//! time of a warm call, the median of several) and the load of its code at
//! a cold start (the mean of several), so that a replay's slowdowns are
//! over what the real function takes, and the simulator set beside it
//! runs the same real functions the live nodes run.
//!
//! The calls go through a node's own executor and containers
//! ([`WasmExecutor`], [`Containers`](faasched_live::node::containers::Containers)),
//! each started and resumed on one worker until it is done, as a node's
//! worker runs a call alone: the first call of each of a function's first
//! [`COLD_COPIES`] copies starts its container cold (its code loaded from
//! the cache, as on a node), the next [`COST_SAMPLES`] find one warm.

use super::catalog::keep_alive;
use super::compare::COST_SAMPLES;
use crate::node::deploy::Deployed;
use crate::node::live::{Host, NodeContainers};
use anyhow::{Context, Result, bail};
use faasched_live::node::containers::ColdStart;
use faasched_live::node::invoke::{Cancel, Invoke, Written};
use faasched_live::node::load::{Calls, FunctionCall};
use faasched_live::node::runtime::{Executor, Finished, Step};
use faasched_live::node::wasm::WasmExecutor;
use faasched_model::Nanos;
use faasched_model::cluster::FunctionProfile;
use faasched_workload::cluster::FunctionTable;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// Copies of each function whose first call starts cold: as many loads
/// of its code as are averaged.
pub const COLD_COPIES: usize = 3;

/// What one real function costs here, on the live (wall) clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Measured {
    /// A warm call's CPU time, the median, ns.
    #[serde(rename = "warm_ns")]
    pub warm: Nanos,
    /// Loading its code at a cold start, the mean, ns.
    #[serde(rename = "load_ns")]
    pub load: Nanos,
    /// Whether the call is a built-in (`fib`, say), whose cold start waits
    /// as `spin`'s does ([`ColdStart::share`]).
    pub builtin: bool,
}

impl Measured {
    /// `table`'s row (on the live clock) as the real function ran it: its
    /// measured warm time, and a cold start its load plus the node's wait
    /// after it (`cold_start`'s share of the row's cold − warm).
    pub fn profile(&self, table: &FunctionProfile, cold_start: ColdStart) -> FunctionProfile {
        let wait = table.cold_extra() as f64 * cold_start.share(self.builtin);
        let warm = self.warm.max(1);
        FunctionProfile {
            warm,
            cold: warm
                .saturating_add(self.load)
                .saturating_add(wait.round() as Nanos),
            ..*table
        }
    }
}

/// The real functions' costs of every function of `table` that `calls`
/// maps, by the table's name, each copy of a function given its
/// function's: measured on sandboxes as `host` gives them, with the
/// functions of `deployed` registered. Errs naming the call that fails.
pub fn measure(
    host: &Host,
    deployed: &[Deployed],
    table: &FunctionTable,
    calls: &Calls,
) -> Result<BTreeMap<String, Measured>> {
    let memory_mb = table
        .profiles()
        .iter()
        .map(|p| u64::from(p.memory_mb))
        .sum();
    let containers = NodeContainers {
        table: table.clone(),
        // Room for every container: nothing is evicted meanwhile.
        memory_mb,
        keep_alive: keep_alive("lru")?,
        cold_start: ColdStart { wait: Some(0.0) },
    };
    let executor = host
        .executor(1, Some(&containers))
        .context("the sandboxes, to measure the functions")?;
    for d in deployed {
        executor
            .register(&d.name, &d.module, d.settings.deployment.clone())
            .map_err(|f| anyhow::anyhow!("{}: {f}", d.manifest.display()))?;
    }
    // Each call's copies, in table order.
    let mut groups: Vec<(Arc<FunctionCall>, Vec<&str>)> = Vec::new();
    for (f, _) in table.iter() {
        let Some(call) = calls.of(&f.name) else {
            continue;
        };
        match groups.iter_mut().find(|(c, _)| Arc::ptr_eq(c, call)) {
            Some((_, copies)) => copies.push(&f.name),
            None => groups.push((Arc::clone(call), vec![&f.name])),
        }
    }
    let builtin =
        |function: &str| executor.with_runtime(|r| r.loader(function).map(|l| l.is_builtin()));
    let mut warm = Vec::with_capacity(groups.len());
    for (call, copies) in &groups {
        for copy in copies.iter().take(COLD_COPIES) {
            let cold = run(&executor, call, copy)?;
            if !cold.cold {
                bail!("{copy}: its first call found a warm container");
            }
        }
        let mut cpu: Vec<Nanos> = (0..COST_SAMPLES)
            .map(|_| run(&executor, call, copies[0]).map(|f| f.cpu))
            .collect::<Result<_>>()?;
        cpu.sort_unstable();
        warm.push(cpu[cpu.len() / 2]);
    }
    let loads = executor
        .containers()
        .map(|c| c.cold_starts())
        .unwrap_or_default();
    let mut measured = BTreeMap::new();
    for ((call, copies), warm) in groups.iter().zip(warm) {
        let load = loads
            .get(call.function())
            .map(|c| c.mean_load())
            .with_context(|| format!("{call}: no cold start of it was counted"))?;
        let builtin = builtin(call.function()).map_err(|f| anyhow::anyhow!("{call}: {f}"))?;
        for copy in copies {
            measured.insert(
                copy.to_string(),
                Measured {
                    warm,
                    load,
                    builtin,
                },
            );
        }
    }
    Ok(measured)
}

/// Each label of `calls` with its call and what its function measured (its
/// first copy's in `table`, where `measured` has it), in label order.
pub fn per_label<'c>(
    calls: &'c Calls,
    table: &FunctionTable,
    measured: &BTreeMap<String, Measured>,
) -> Vec<(&'c str, &'c FunctionCall, Option<Measured>)> {
    calls
        .iter()
        .map(|(label, call)| {
            let m = table.iter().find_map(|(f, _)| {
                calls
                    .of(&f.name)
                    .filter(|c| std::ptr::eq(&***c, call))
                    .and(measured.get(&*f.name).copied())
            });
            (label, call, m)
        })
        .collect()
}

/// One call of `call`, labelled `label`, run to its end on worker 0; an
/// error if it failed or answered other than a success.
fn run(executor: &WasmExecutor, call: &FunctionCall, label: &str) -> Result<Finished> {
    let what = || format!("{label}: calling {call}");
    let invoke = Invoke {
        function: call.function().to_string(),
        query: call.query().map(str::to_string),
        headers: Default::default(),
        body: call.body().clone(),
        label: Some(label.to_string()),
        deadline: None,
        received: Instant::now(),
        cancel: Cancel::new(),
    };
    let mut job = executor
        .start(0, &invoke)
        .map_err(|f| anyhow::anyhow!("{f}"))
        .with_context(what)?;
    let finished = loop {
        match executor.resume(0, &mut job) {
            Step::Done(done) => {
                break done
                    .map_err(|f| anyhow::anyhow!("{f}"))
                    .with_context(what)?;
            }
            Step::Stopped => {}
        }
    };
    match &finished.written {
        Some(Written::Response(r)) if !r.status.is_success() => {
            bail!("{}: it answered {}", what(), r.status)
        }
        Some(Written::Command { .. }) if finished.value != 0 => {
            bail!("{}: it exited with status {}", what(), finished.value)
        }
        _ => Ok(finished),
    }
}
