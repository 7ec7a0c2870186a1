//! The ALPS I/O study's mixed workload (alps-io-study §8.2): Table 1 (mean
//! and p99 completion time per class under CFS and ALPS) and Fig. 6
//! (completions over time, in the report), with our `alps-io` beside them.
//!
//! The study ran its four classes on 16 cores; so do we, at the ALPS
//! experiments' 90% load, with the mixed-io workload of docs/WORKLOADS.md.

use super::stats::{find, label, mean, p99, preemptions};
use super::{Case, Ran, Variant};
use crate::level::Settings;
use crate::os::run::{Fair, Kernel};
use crate::table::{Table, change, fixed};
use faasched_report::os::{PolicySummary, Scope};

/// The study's machine.
const CORES: usize = 16;
const LOAD: f64 = 0.9;
const INVOCATIONS: u64 = 15_000;

/// The case under EEVDF (today's kernels, ours) and under legacy CFS (the
/// study's 5.x kernel generation, where wakeup preemption follows vruntime
/// and there is no custom slice to protect a running task).
pub fn cases(s: &Settings) -> Vec<Case> {
    [
        (Fair::Eevdf, "", ""),
        (Fair::Cfs, " under legacy CFS", "-cfs"),
    ]
    .into_iter()
    .map(|(fair, suffix, slug)| {
        let variants = ["cfs", "alps", "alps-io"].map(Variant::plain).to_vec();
        Case {
            title: format!("mixed-io at 90% load on {CORES} cores{suffix}"),
            slug: format!("mixed-io-90{slug}"),
            workload: s.workload("mixed-io", CORES, LOAD, INVOCATIONS),
            kernel: Kernel {
                fair,
                ..Kernel::default()
            },
            variants,
            by_function: true,
        }
    })
    .collect()
}

/// Table 1: per class and policy, mean and p99 turnaround and their change
/// against cfs; then, per policy, how much of alps's I/O gain it keeps.
pub fn table(ran: &[Ran]) -> Table {
    let mut t = Table::new(
        &[
            "case",
            "class",
            "policy",
            "mean_ms",
            "vs_cfs",
            "p99_ms",
            "p99_vs_cfs",
            "invol_sw",
        ],
        3,
    );
    for r in ran {
        for (class, policies) in &r.by_function {
            let cfs = find(policies, "cfs");
            for p in policies {
                let base = |f: fn(&PolicySummary, Scope) -> Option<f64>| {
                    cfs.and_then(|c| f(c, Scope::All))
                };
                t.push(vec![
                    r.case.slug.clone(),
                    class.clone(),
                    label(p),
                    fixed(mean(p, Scope::All), 2),
                    change(mean(p, Scope::All), base(mean)),
                    fixed(p99(p, Scope::All), 2),
                    change(p99(p, Scope::All), base(p99)),
                    preemptions(p),
                ]);
            }
        }
        t.notes.push(format!("{}:", r.case.title));
        for line in gains(r) {
            t.notes.push(format!("  {line}"));
        }
    }
    t.notes
        .push("turnaround in ms; vs_cfs: against cfs; invol_sw: preemptions per invocation".into());
    t
}

/// The check, spelled out: the share of alps's I/O-class mean gain
/// (over cfs) that alps-io keeps, and each CPU class's change against cfs.
fn gains(r: &Ran) -> Vec<String> {
    let class_mean = |class: &str, policy: &str| {
        r.by_function
            .get(class)
            .and_then(|ps| find(ps, policy))
            .and_then(|p| mean(p, Scope::All))
    };
    let mut lines = Vec::new();
    for class in r.by_function.keys() {
        let (Some(cfs), Some(alps), Some(ours)) = (
            class_mean(class, "cfs"),
            class_mean(class, "alps"),
            class_mean(class, "alps-io"),
        ) else {
            continue;
        };
        let mut line = format!(
            "{class}: alps {} against cfs, alps-io {}",
            change(Some(alps), Some(cfs)),
            change(Some(ours), Some(cfs)),
        );
        if class.starts_with("io") {
            match cfs > alps {
                true => {
                    line += &format!(
                        "; alps-io keeps {:.0}% of alps's gain",
                        (cfs - ours) / (cfs - alps) * 100.0
                    )
                }
                false => line += "; alps gained nothing here",
            }
        }
        lines.push(line);
    }
    lines
}
