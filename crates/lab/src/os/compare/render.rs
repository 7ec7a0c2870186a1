//! `compare`'s table.

use super::analysis::Comparison;
use std::fmt::Write as _;

/// The table's columns, heading and width; the first two are
/// left-aligned, the others right-aligned. The heading line and every row
/// are laid out from it.
const COLUMNS: [(&str, usize); 15] = [
    ("policy", 12),
    ("group", 5),
    ("count", 6),
    ("sim mean ms", 12),
    ("live mean ms", 12),
    ("live/sim", 8),
    ("KS", 6),
    ("sim resp ms", 12),
    ("live resp ms", 12),
    ("CPU l/s", 8),
    ("sim@live CPU", 14),
    ("live/that", 9),
    ("+capacity", 10),
    ("live/that", 9),
    ("invol l:m", 11),
];

/// What the table's terse headings mean, printed under it so that the
/// output explains itself without the docs.
const LEGEND: &str = "\
columns: live/sim = live mean / simulated mean; KS = Kolmogorov-Smirnov distance between the
  simulated and live turnarounds (0 same, 1 disjoint); resp = arrival to first run;
  CPU l/s = CPU time the invocations used live / simulated; sim@live CPU = simulated again,
  each invocation given the CPU time it used live; +capacity = that on cores less the share
  other work took; live/that = live mean / the column before it; invol l:m = involuntary
  switches per invocation, live : the last simulation
";

/// One line of the table: `cells` laid out under [`COLUMNS`].
fn push_line(out: &mut String, cells: &[String; COLUMNS.len()]) {
    for (k, (text, (_, width))) in cells.iter().zip(COLUMNS).enumerate() {
        if k > 0 {
            out.push(' ');
        }
        let _ = if k < 2 {
            write!(out, "{text:<width$}")
        } else {
            write!(out, "{text:>width$}")
        };
    }
    out.push('\n');
}

/// The table `compare` prints: a line per policy and group, then the
/// rankings.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let cell =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    push_line(&mut out, &COLUMNS.map(|(heading, _)| heading.to_string()));
    for r in &c.rows {
        let cells = [
            r.policy.clone(),
            r.group.clone(),
            r.count_live.to_string(),
            cell(r.mean_sim_ms, 2),
            cell(r.mean_live_ms, 2),
            cell(r.ratio_of_means, 3),
            cell(r.ks_distance, 3),
            cell(r.response_sim_ms, 2),
            cell(r.response_live_ms, 2),
            cell(r.cpu_ratio, 3),
            cell(r.mean_sim_at_live_cpu_ms, 2),
            cell(r.ratio_to_sim_at_live_cpu, 3),
            cell(r.mean_sim_at_live_capacity_ms, 2),
            cell(r.ratio_to_sim_at_live_capacity, 3),
            format!(
                "{}:{}",
                cell(r.involuntary_live, 1),
                cell(r.involuntary_sim_at_live_capacity, 1)
            ),
        ];
        push_line(&mut out, &cells);
    }
    let verdict = |agree| if agree { "agree" } else { "DISAGREE" };
    let _ = writeln!(
        out,
        "ranking by mean turnaround: simulated {}; measured {} ({})",
        c.ranking_sim.join(" < "),
        c.ranking_live.join(" < "),
        verdict(c.rankings_agree)
    );
    let _ = writeln!(
        out,
        "simulated with the CPU times measured: {} ({} with the measured ranking)",
        c.ranking_sim_at_live_cpu.join(" < "),
        verdict(c.rankings_agree_at_live_cpu)
    );
    let lost: Vec<String> = c
        .rows
        .iter()
        .filter(|r| r.group == "all")
        .map(|r| format!("{} {:.1}%", r.policy, 100.0 * r.other_work_share))
        .collect();
    let _ = writeln!(
        out,
        "and on cores that lose to other work what the replay measured ({}): {} ({} with the \
         measured ranking)",
        lost.join(", "),
        c.ranking_sim_at_live_capacity.join(" < "),
        verdict(c.rankings_agree_at_live_capacity)
    );
    out.push_str(LEGEND);
    out
}
