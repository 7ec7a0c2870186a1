//! The hybrid FIFO+CFS paper's cost experiment (hybrid-fifo-cfs-cost §VI):
//! Table I (p99 response, execution and turnaround, total cost), Fig. 12
//! (hybrid against cfs), Fig. 15 (the adaptive limit's percentile), Fig. 18
//! (fixed against rightsized groups) and Fig. 20 (cost).
//!
//! The paper's setup: the first 12,442 invocations of the Azure trace on 50
//! cores, half of them FIFO, with the time limit at 1,633 ms, "the 90th
//! percentile of function duration in our workload". Ours: the Azure-like
//! workload, 12,442 invocations, 50 cores, and the time limit set the same way,
//! at the p90 of this workload's CPU demands, computed here from the workload.

use super::stats::{find, label, mean, preemptions, stat};
use super::{Case, Ran, Variant};
use crate::level::Settings;
use crate::os::catalog::Tuning;
use crate::os::run::Kernel;
use crate::table::{Table, change, fixed};
use anyhow::{Context, Result};
use faasched_model::{MS, Phase};
use faasched_report::os::{Metric, Scope};
use faasched_workload::Source;

/// The paper's sample: the first 12,442 invocations of its trace.
const INVOCATIONS: u64 = 12_442;
/// The paper's enclave.
const CORES: usize = 50;
/// Loads: ours at the ALPS setting, and an overload burst like the paper's
/// (its CFS p99 turnaround of 233 s means arrivals far outran the cores).
const LOADS: [f64; 2] = [0.9, 1.2];

/// One case per load; the time limit is the workload's p90 CPU demand.
pub fn cases(s: &Settings) -> Result<Vec<Case>> {
    LOADS
        .iter()
        .map(|&load| {
            let workload = s.workload("azure", CORES, load, INVOCATIONS);
            let limit_ms = p90_cpu_ms(&Source::resolve(&workload)?)?;
            let percent = (load * 100.0).round();
            let hybrid = |label: &str, policy: &str, percentile: Option<f64>| {
                let mut t = Tuning::default();
                t.hybrid.time_limit_ms = limit_ms;
                if let Some(p) = percentile {
                    t.hybrid.percentile = p;
                }
                Variant::tuned(label, policy, t)
            };
            let mut variants = vec![
                Variant::plain("fifo"),
                Variant::plain("cfs"),
                Variant::plain("sfs"),
                hybrid("hybrid-fixed", "hybrid-fixed", None),
                hybrid("hybrid-rightsized", "hybrid-rightsized", None),
                hybrid("hybrid-adaptive", "hybrid-adaptive", None),
                hybrid("hybrid", "hybrid", None),
            ];
            for p in [25.0, 50.0, 75.0, 90.0] {
                let name = format!("hybrid-adaptive p{p}");
                variants.push(hybrid(&name, "hybrid-adaptive", Some(p)));
            }
            Ok(Case {
                title: format!(
                    "azure at {percent}% load on {CORES} cores, time limit {limit_ms:.0} ms (p90)"
                ),
                slug: format!("azure-{percent}"),
                workload,
                kernel: Kernel::default(),
                variants,
                by_function: false,
            })
        })
        .collect()
}

/// The 90th percentile (nearest rank) of the workload's CPU demands, ms.
fn p90_cpu_ms(source: &Source) -> Result<f64> {
    let mut cpu = Vec::new();
    for inv in source.stream()? {
        cpu.push(Phase::cpu_total(
            &inv.context("reading the workload")?.phases,
        ));
    }
    cpu.sort_unstable();
    let rank = (cpu.len() * 9).div_ceil(10).max(1);
    Ok(cpu.get(rank - 1).copied().unwrap_or(MS) as f64 / MS as f64)
}

/// Table I, per case and policy: p99 response, execution and turnaround in
/// seconds, total cost and its change against cfs, mean turnaround, and
/// preemptions.
pub fn table(ran: &[Ran]) -> Table {
    let mut t = Table::new(
        &[
            "case",
            "policy",
            "p99_response_s",
            "p99_execution_s",
            "p99_turnaround_s",
            "cost_usd",
            "cost_vs_cfs",
            "mean_ms",
            "invol_sw",
        ],
        2,
    );
    for r in ran {
        let cfs = find(&r.summary.policies, "cfs").map(|c| c.all().cost.usd());
        for p in &r.summary.policies {
            let p99_s = |m| stat(p, Scope::All, m, |s| s.p99 / 1e3);
            let cost = p.all().cost.usd();
            t.push(vec![
                r.case.slug.clone(),
                label(p),
                fixed(p99_s(Metric::Response), 3),
                fixed(p99_s(Metric::Execution), 3),
                fixed(p99_s(Metric::Turnaround), 3),
                format!("{cost:.4}"),
                change(Some(cost), cfs),
                fixed(mean(p, Scope::All), 2),
                preemptions(p),
            ]);
        }
    }
    t.notes = vec![
        "response: arrival to first run; execution: first run to finish (billed);".into(),
        "cost: AWS Lambda's price for the billed execution (1 ms steps) and requests;".into(),
        "invol_sw: preemptions per invocation".into(),
    ];
    t
}
