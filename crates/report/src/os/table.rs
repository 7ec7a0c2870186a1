//! The compact terminal table of an operating-system [`Summary`].

use super::metrics::{Metric, Scope, ScopeSummary};
use super::output::Summary;
use crate::cost::usd;
use crate::table::{aligned, widths};
use faasched_model::{Group, MS};

/// Column headers; the first two columns are left-aligned, the others right-aligned.
const HEADER: [&str; 10] = [
    "policy", "group", "count", "mean_ms", "p50_ms", "p99_ms", "slowdown", "vol_sw", "invol_sw",
    "cost_usd",
];

/// Cells of an empty scope's statistics.
const NONE: &str = "-";

/// What each group holds, from [`Group::range`]: `groups by CPU demand: G1
/// up to 50 ms, ..., G4 above 400 ms`.
fn groups_legend() -> String {
    let ms = |ns: u64| ns / MS;
    let each: Vec<String> = Group::ALL
        .iter()
        .map(|g| match g.range() {
            (_, Some(hi)) => format!("{g} up to {} ms", ms(hi)),
            (lo, None) => format!("{g} above {} ms", ms(lo)),
        })
        .collect();
    format!("groups by CPU demand: {}\n", each.join(", "))
}

/// Renders the summary as an aligned text table, one line per policy and scope
/// (all, G1..G4), a blank line between policies.
///
/// Columns: invocations; mean, p50 and p99 turnaround in ms; mean slowdown;
/// voluntary and involuntary switches per invocation; cost in USD. Sim-only
/// policies are marked `*`. Columns are as wide as their widest cell, which keeps
/// the table within 100 columns for policy names up to ~15 characters.
pub fn render_table(summary: &Summary) -> String {
    let mut lines: Vec<Option<[String; 10]>> = vec![Some(HEADER.map(String::from))];
    for (i, p) in summary.policies.iter().enumerate() {
        if i > 0 {
            lines.push(None);
        }
        let name = format!("{}{}", p.policy, if p.sim_only { " *" } else { "" });
        for s in &p.scopes {
            let first = s.scope == Scope::All;
            lines.push(Some(cells(if first { &name } else { "" }, s)));
        }
    }

    let widths = widths(lines.iter().flatten());

    let mut out = String::from(
        "mean/p50/p99: turnaround in ms; slowdown: mean of each turnaround / its CPU and I/O time;\n\
         vol_sw/invol_sw: switches per invocation; cost_usd: billed execution (1 ms steps);\n",
    );
    out.push_str(&groups_legend());
    for line in &lines {
        if let Some(cells) = line {
            out.push_str(&aligned(cells, &widths));
        }
        out.push('\n');
    }
    if summary.policies.iter().any(|p| p.sim_only) {
        out.push_str("* sim-only: needs a mechanism a stock kernel lacks\n");
    }
    out
}

/// The cells of one scope's line.
fn cells(policy: &str, s: &ScopeSummary) -> [String; 10] {
    let fixed = |v: Option<f64>, decimals: usize| {
        v.map_or_else(|| NONE.to_string(), |v| format!("{v:.decimals$}"))
    };
    let turnaround = s.stats(Metric::Turnaround);
    let slowdown = s.stats(Metric::Slowdown);
    [
        policy.to_string(),
        s.scope.to_string(),
        s.count.to_string(),
        fixed(turnaround.map(|t| t.mean), 2),
        fixed(turnaround.map(|t| t.p50), 2),
        fixed(turnaround.map(|t| t.p99), 2),
        fixed(slowdown.map(|t| t.mean), 2),
        fixed(s.voluntary_per_invocation(), 2),
        fixed(s.involuntary_per_invocation(), 2),
        usd(s.cost.usd()),
    ]
}
