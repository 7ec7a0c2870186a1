//! The compact terminal table of a node [`Summary`].

use super::metrics::{PolicySummary, ScopeSummary};
use super::output::Summary;
use crate::svg::trim;
use crate::table;

/// Column headers; the first two columns are left-aligned, the others right-aligned.
const HEADER: [&str; COLUMNS] = [
    "policy", "function", "requests", "dropped", "miss_%", "p50_us", "p99_us", "p999_us",
    "sd_p999", "rps", "preempt", "w_util_%", "d_util_%",
];

const COLUMNS: usize = 13;

/// Cells of a statistic with nothing to cover.
const NONE: &str = "-";

/// The legend printed above the table.
const LEGEND: &str = "\
p50/p99/p999: latency in µs over finished requests; sd_p999: p99.9 slowdown (latency / work);
miss_%: finished after the deadline or dropped, of all requests; rps: finished per second;
preempt: preemptions per finished request; w_util/d_util: mean worker/dispatcher busy time
";

/// Renders the summary as an aligned text table: per offered rate a line
/// naming it, then one block per policy, a line for `all` and one per
/// function, a blank line between policies and between rates.
///
/// Utilisation is the policy's, on its `all` line only. Columns are as wide
/// as their widest cell over the whole table, so blocks of different rates
/// line up.
pub fn render_table(summary: &Summary) -> String {
    /// A line of the table: a rate's heading, a row of cells, or blank.
    enum Line {
        Rate(f64),
        Cells(Box<[String; COLUMNS]>),
        Blank,
    }
    let mut lines = vec![Line::Cells(Box::new(HEADER.map(String::from)))];
    for (i, load) in summary.loads.iter().enumerate() {
        if i > 0 {
            lines.push(Line::Blank);
        }
        lines.push(Line::Rate(load.rate));
        for (j, p) in load.policies.iter().enumerate() {
            if j > 0 {
                lines.push(Line::Blank);
            }
            for (k, s) in p.scopes.iter().enumerate() {
                lines.push(Line::Cells(Box::new(cells(p, s, k == 0))));
            }
        }
    }

    let widths = table::widths(lines.iter().filter_map(|line| match line {
        Line::Cells(cells) => Some(&**cells),
        _ => None,
    }));

    let mut out = String::from(LEGEND);
    for line in &lines {
        match line {
            Line::Rate(rate) => {
                out.push_str(&format!("offered {} requests/s\n", trim(*rate, 3)));
            }
            Line::Cells(cells) => {
                out.push_str(&table::aligned(cells, &widths));
                out.push('\n');
            }
            Line::Blank => out.push('\n'),
        }
    }
    out
}

/// The cells of one scope's line; the policy's name and utilisation on the
/// first (`all`) only.
fn cells(p: &PolicySummary, s: &ScopeSummary, first: bool) -> [String; COLUMNS] {
    let fixed = |v: Option<f64>, decimals: usize| {
        v.map_or_else(|| NONE.to_string(), |v| format!("{v:.decimals$}"))
    };
    let percent = |v: Option<f64>| fixed(v.map(|v| v * 100.0), 1);
    let (policy, workers, dispatchers) = if first {
        (
            p.policy.clone(),
            percent(p.usage.mean_worker()),
            percent(p.usage.mean_dispatcher()),
        )
    } else {
        Default::default()
    };
    [
        policy,
        s.scope.clone(),
        s.requests.to_string(),
        s.dropped.to_string(),
        fixed(s.miss_rate().map(|m| m * 100.0), 2),
        fixed(s.latency.map(|t| t.p50), 1),
        fixed(s.latency.map(|t| t.p99), 1),
        fixed(s.latency.map(|t| t.p999), 1),
        fixed(s.slowdown.map(|t| t.p999), 2),
        fixed(s.throughput, 0),
        fixed(s.preemptions_per_request(), 2),
        workers,
        dispatchers,
    ]
}
