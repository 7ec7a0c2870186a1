//! The cluster level's `report.html`; its layout is in the
//! [`cluster`](super) module's documentation.

use super::output::{ClusterRow, LoadPoint};
use crate::Result;
use crate::chart::{MARGIN, PANEL, Palette, WIDE_PANEL, Y_TICK_GAP};
use crate::cost::usd;
use crate::page::{self, Page};
use crate::staged::Staged;
use crate::svg::{Frame, Scale, Tick, count, escape, put, significant, tick_labels, truncate};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// How a bar chart's values read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    /// A share (0.05 = 5%), drawn in percent.
    Share,
    /// A plain number (a slowdown, a variance of loads).
    Plain,
}

impl Unit {
    /// `v` as the axis plots it.
    fn plotted(self, v: f64) -> f64 {
        match self {
            Unit::Share => v * 100.0,
            Unit::Plain => v,
        }
    }

    /// `v` as a label shows it: three significant digits, in percent for a
    /// share.
    fn shown(self, v: f64) -> String {
        match self {
            Unit::Share => format!("{}%", significant(v * 100.0, 3)),
            Unit::Plain => significant(v, 3),
        }
    }
}

/// A metric compared across routers, one bar each.
struct BarMetric {
    /// The figure's `data-kind`.
    kind: &'static str,
    /// Its name in the chart's heading and on the value axis.
    title: &'static str,
    /// How its values read.
    unit: Unit,
    /// Its value in a row; `None` when the row has nothing to measure.
    value: fn(&ClusterRow) -> Option<f64>,
}

/// The bar charts, in page order: the comparisons of CH-RLU's Figs. 7, 8,
/// 12 and 13.
const BARS: [BarMetric; 5] = [
    BarMetric {
        kind: "global-increase",
        title: "global latency increase",
        unit: Unit::Share,
        value: |r| r.global_increase,
    },
    BarMetric {
        kind: "cold-ratio",
        title: "cold-start ratio",
        unit: Unit::Share,
        value: |r| r.cold_ratio,
    },
    BarMetric {
        kind: "drops",
        title: "dropped invocations",
        unit: Unit::Share,
        value: drop_share,
    },
    BarMetric {
        kind: "load-variance",
        title: "mean load variance",
        unit: Unit::Plain,
        value: |r| Some(r.load_variance),
    },
    BarMetric {
        kind: "function-slowdown-p50",
        title: "median function slowdown",
        unit: Unit::Plain,
        value: |r| r.function_slowdown_p50,
    },
];

/// Dropped invocations over all of a row's; `None` without an invocation.
fn drop_share(r: &ClusterRow) -> Option<f64> {
    (r.invocations > 0).then(|| r.dropped as f64 / r.invocations as f64)
}

/// How far apart (the largest over the smallest positive) a chart's values
/// may be on a linear axis; beyond, the axis is logarithmic, since one
/// overloaded baseline a thousand times the others would flatten them all
/// to nothing.
const LOG_SPREAD: f64 = 100.0;

/// The value axis from zero to `top`, or a log one from `least` (positive)
/// to `top` when they are more than [`LOG_SPREAD`] apart; and whether it is
/// the log one.
fn value_scale(least: Option<f64>, top: f64) -> (Scale, bool) {
    match least {
        Some(least) if least > 0.0 && top / least > LOG_SPREAD => {
            (Scale::log(least, top, least), true)
        }
        _ => (Scale::zero_to(top), false),
    }
}

/// The labelled ticks of value axis `scale`, at least [`Y_TICK_GAP`] apart
/// over `plot_height`, with `suffix` (`%`).
fn value_ticks(scale: &Scale, plot_height: f64, suffix: &str) -> Vec<Tick> {
    let ticks = scale.ticks(Y_TICK_GAP / plot_height);
    let labelled = match scale {
        Scale::Linear { .. } => tick_labels(&ticks),
        Scale::Log { .. } => ticks.iter().map(|&v| (v, significant(v, 3))).collect(),
    };
    labelled
        .into_iter()
        .map(|(v, l)| (v, format!("{l}{suffix}")))
        .collect()
}

/// An axis title, marked when the axis is logarithmic.
fn axis_title(title: &str, log: bool) -> String {
    if log {
        format!("{title} (log scale)")
    } else {
        title.to_string()
    }
}

/// Horizontal room per router in a bar chart, px: a bar and its value
/// label; seven routers fit a panel's width, three to a row.
const BAND: f64 = 44.0;

/// Margins (left, right, top, bottom) of a bar chart, px: the bottom one
/// holds the router names, slanted so that long ones do not collide.
const BAR_MARGIN: (f64, f64, f64, f64) = (MARGIN.0, MARGIN.1, 34.0, 72.0);

/// Characters of a router's name under its bar (the full name is in the
/// tooltip, the table and the legend).
const NAME_CHARS: usize = 14;

/// Margins (left, right, top, bottom) of a load chart, px: the right one
/// holds half the last time label (`100000`).
const LOAD_MARGIN: (f64, f64, f64, f64) = (MARGIN.0, 30.0, MARGIN.2, MARGIN.3);

/// The most points a load chart's line draws, about two per pixel of its
/// width: a run keeps up to 65,536 samples per router, far more than a
/// chart can show and megabytes of page.
const MAX_LINE_POINTS: usize = 1200;

/// Writes the cluster page's `report.html` into `dir` (created if missing,
/// through [`Staged::create_dir`]), staged: it takes its place at `staged`'s
/// commit. Returns the file's path. Errors name the file (or the directory).
pub fn write_cluster_report(
    dir: &Path,
    title: &str,
    settings: &Value,
    rows: &[ClusterRow],
    staged: &mut Staged,
) -> Result<PathBuf> {
    page::write(dir, &render_cluster_html(title, settings, rows), staged)
}

/// Renders the cluster page (see the [`cluster`](super) module's docs):
/// `settings` as summary.json records them, `rows` one per router in the
/// order given, each with its [`ClusterRow::load_series`].
pub fn render_cluster_html(title: &str, settings: &Value, rows: &[ClusterRow]) -> String {
    let policies = Palette::of(rows.iter().map(|r| r.policy.as_str()));
    let mut page = Page::open(title, &policies);
    page.settings(settings);
    let out = page.body();
    out.push_str("<h2>Routers</h2>\n");
    table(out, rows, &policies);
    out.push_str(
        "<h2>Across routers</h2>\n<p class=\"note\">One bar per router (hover a bar \
         for its full name and value); lower is better in every chart.</p>\n\
         <div class=\"charts\">\n",
    );
    for metric in &BARS {
        bars(out, rows, metric, &policies);
    }
    out.push_str(
        "</div>\n<h2>Published loads over time</h2>\n<p class=\"note\">What the \
         routers saw: at each publication, the variance and the mean across servers of \
         the published load (1-minute load average over cores), a line per router. \
         Flat and low variance is an even spread.</p>\n<div class=\"charts\">\n",
    );
    load_chart(
        out,
        rows,
        &policies,
        ("load-variance-time", "load variance across servers"),
        |p| p.variance,
    );
    load_chart(
        out,
        rows,
        &policies,
        ("load-mean-time", "mean load across servers"),
        |p| p.mean,
    );
    out.push_str("</div>\n");
    page.finish(
        "latency = finish − arrival; slowdown = latency / the function's warm time \
         alone on an idle server; global latency increase = mean slowdown − 1 over the \
         finished invocations (CH-RLU §6.1); median function slowdown: the median over \
         functions of each one's mean slowdown; cold-start ratio: cold starts over \
         finished invocations; dropped: over all invocations; load variance: the \
         population variance across servers of the published load, averaged over the \
         publications. Percentiles are nearest-rank from log-bucketed histograms \
         (within 0.05%).",
    )
}

fn table(out: &mut String, rows: &[ClusterRow], policies: &Palette) {
    out.push_str(
        "<div class=\"numbers\"><table class=\"main\"><thead><tr><th>router</th>\
         <th>invocations</th><th>dropped</th><th>cold<br>starts</th>\
         <th>global latency<br>increase</th><th>p50<br>slowdown</th>\
         <th>p99<br>slowdown</th><th>median function<br>slowdown</th>\
         <th>mean load<br>variance</th><th>utilisation<br>mean / max</th>\
         <th>cost<br>(USD)</th></tr></thead><tbody>",
    );
    let dash = || "–".to_string();
    let share = |v: Option<f64>| v.map_or_else(dash, |v| Unit::Share.shown(v));
    let fixed = |v: Option<f64>| v.map_or_else(dash, |v| format!("{v:.2}"));
    for r in rows {
        let i = policies.index(&r.policy);
        put!(
            out,
            "<tr class=\"p{i}\"><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td><td>{}</td></tr>",
            policies.swatch(&r.policy),
            escape(&r.policy),
            count(r.invocations as f64),
            count(r.dropped as f64),
            share(r.cold_ratio),
            share(r.global_increase),
            fixed(r.slowdown_p50),
            fixed(r.slowdown_p99),
            fixed(r.function_slowdown_p50),
            Unit::Plain.shown(r.load_variance),
            share(r.utilisation_mean),
            share(r.utilisation_max),
            r.cost_usd.map_or_else(dash, |v| format!("${}", usd(v))),
        );
    }
    out.push_str(
        "</tbody></table></div>\n<p class=\"note\">dropped: by the router or for want \
         of memory; cold starts: of finished invocations; slowdown = latency / the \
         function's warm time alone on an idle server; global latency increase = mean \
         slowdown − 1; utilisation: busy cores over the run, per server; cost: the \
         finished invocations' executions (first run to finish) priced as AWS \
         Lambda's.</p>\n",
    );
    if rows
        .iter()
        .any(|r| r.node_dropped.is_some() || r.os_switches.is_some())
    {
        inside(out, rows, policies);
    }
}

/// What node or OS servers measured inside them, a row per router.
fn inside(out: &mut String, rows: &[ClusterRow], policies: &Palette) {
    out.push_str(
        "<div class=\"numbers\"><table class=\"main inside\"><thead><tr><th>router</th>\
         <th>node deadline<br>misses</th><th>node<br>drops</th><th>node preemptions<br>\
         per invocation</th><th>OS switches<br>per invocation</th><th>OS preemptions<br>\
         per invocation</th></tr></thead><tbody>",
    );
    let dash = || "–".to_string();
    let fixed = |v: Option<f64>| v.map_or_else(dash, |v| format!("{v:.3}"));
    for r in rows {
        let i = policies.index(&r.policy);
        put!(
            out,
            "<tr class=\"p{i}\"><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            policies.swatch(&r.policy),
            escape(&r.policy),
            r.node_miss_ratio
                .map_or_else(dash, |v| Unit::Share.shown(v)),
            r.node_dropped.map_or_else(dash, |v| count(v as f64)),
            fixed(r.node_preemptions),
            fixed(r.os_switches),
            fixed(r.os_preemptions),
        );
    }
    out.push_str(
        "</tbody></table></div>\n<p class=\"note\">Inside the servers: node deadline \
         misses: of the invocations that started on a node server, finished after their \
         deadline there or dropped by its node policy; OS switches: context switches per \
         invocation (its exit is one); OS preemptions: of those, the kernel taking its \
         core away.</p>\n",
    );
}

/// `metric` across routers: a bar per row, its value above it, a dash
/// where the row has none.
fn bars(out: &mut String, rows: &[ClusterRow], metric: &BarMetric, policies: &Palette) {
    let values: Vec<Option<f64>> = rows
        .iter()
        .map(|r| (metric.value)(r).filter(|v| v.is_finite()))
        .collect();
    let plotted = || values.iter().flatten().map(|&v| metric.unit.plotted(v));
    let max = plotted().fold(0.0, f64::max);
    let least = plotted().filter(|&v| v > 0.0).reduce(f64::min);
    let (y, log) = value_scale(least, max);
    let frame = Frame {
        width: PANEL
            .0
            .max(BAR_MARGIN.0 + BAR_MARGIN.1 + BAND * rows.len() as f64),
        height: PANEL.1 + BAR_MARGIN.3 - MARGIN.3,
        margin: BAR_MARGIN,
        x: Scale::Linear {
            lo: 0.0,
            hi: rows.len().max(1) as f64,
        },
        y,
    };
    put!(
        out,
        "<figure class=\"chart\" data-kind=\"{}\">",
        metric.kind
    );
    frame.open(out, metric.title);
    let y_ticks = if values.iter().any(Option::is_some) {
        let suffix = if metric.unit == Unit::Share { "%" } else { "" };
        value_ticks(&frame.y, frame.plot_height(), suffix)
    } else {
        Vec::new()
    };
    frame.axes(
        out,
        (&[], false),
        &y_ticks,
        "",
        &axis_title(metric.title, log),
    );
    if rows.is_empty() {
        frame.no_data(out, "no router");
    } else if values.iter().all(Option::is_none) {
        frame.no_data(out, "no value");
    }
    let band = frame.px(1.0) - frame.px(0.0);
    let base = frame.py(frame.y.start());
    for (k, (r, v)) in rows.iter().zip(&values).enumerate() {
        let i = policies.index(&r.policy);
        let centre = frame.px(k as f64 + 0.5);
        let name = escape(&r.policy);
        let label_y = base + 12.0;
        put!(
            out,
            "<text class=\"pol p{i}\" x=\"{centre:.1}\" y=\"{label_y:.1}\" \
             text-anchor=\"end\" transform=\"rotate(-35 {centre:.1} {label_y:.1})\">{}\
             <title>{name}</title></text>",
            escape(&truncate(&r.policy, NAME_CHARS))
        );
        let Some(v) = *v else {
            put!(
                out,
                "<text class=\"val pol p{i}\" x=\"{centre:.1}\" y=\"{:.1}\" \
                 text-anchor=\"middle\">–<title>{name}: no value</title></text>",
                base - 4.0
            );
            continue;
        };
        let top = frame.py(metric.unit.plotted(v));
        let shown = metric.unit.shown(v);
        put!(
            out,
            "<rect {} x=\"{:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\">\
             <title>{name}: {shown}</title></rect>\
             <text class=\"val pol p{i}\" x=\"{centre:.1}\" y=\"{:.1}\" \
             text-anchor=\"middle\">{shown}</text>",
            policies.fill_attrs(&r.policy),
            centre - band * 0.35,
            band * 0.7,
            (base - top).max(0.5),
            top - 4.0,
        );
    }
    Frame::close(out);
    out.push_str("</figure>\n");
}

/// `series` with runs of consecutive points averaged so that at most
/// [`MAX_LINE_POINTS`] remain (each run timed at its first point), and how
/// many points each run averages; non-finite points are left out.
fn thinned(series: &[LoadPoint]) -> (Vec<LoadPoint>, usize) {
    let finite: Vec<LoadPoint> = series
        .iter()
        .copied()
        .filter(|p| p.at_s.is_finite() && p.mean.is_finite() && p.variance.is_finite())
        .collect();
    let k = finite.len().div_ceil(MAX_LINE_POINTS).max(1);
    let points = finite
        .chunks(k)
        .map(|run| {
            let n = run.len() as f64;
            LoadPoint {
                at_s: run[0].at_s,
                mean: run.iter().map(|p| p.mean).sum::<f64>() / n,
                variance: run.iter().map(|p| p.variance).sum::<f64>() / n,
            }
        })
        .collect();
    (points, k)
}

/// One reading of the published loads (`kind`, `title`) against simulated
/// time: a line per router, a marker where a router has a single point.
fn load_chart(
    out: &mut String,
    rows: &[ClusterRow],
    policies: &Palette,
    (kind, title): (&str, &str),
    value: fn(&LoadPoint) -> f64,
) {
    let series: Vec<(&ClusterRow, Vec<LoadPoint>, usize)> = rows
        .iter()
        .map(|r| {
            let (points, k) = thinned(&r.load_series);
            (r, points, k)
        })
        .collect();
    let points = || series.iter().flat_map(|(_, p, _)| p);
    let end = points().map(|p| p.at_s).fold(0.0, f64::max);
    let top = points().map(value).fold(0.0, f64::max);
    // A log axis reaches a decade below the least of the routers' means:
    // their lines' bodies show, brief dips to zero sit on the bottom.
    let least = series
        .iter()
        .filter(|(_, p, _)| !p.is_empty())
        .map(|(_, p, _)| p.iter().map(value).sum::<f64>() / p.len() as f64)
        .filter(|&m| m > 0.0)
        .reduce(f64::min);
    let (y, log) = value_scale(least.map(|m| m / 10.0), top);
    let frame = Frame {
        width: WIDE_PANEL.0,
        height: WIDE_PANEL.1,
        margin: LOAD_MARGIN,
        x: Scale::zero_to(end),
        y,
    };
    let empty = points().next().is_none();
    put!(out, "<figure class=\"chart\" data-kind=\"{kind}\">");
    frame.open(out, &format!("{title} against time"));
    let (x_ticks, y_ticks) = if empty {
        (Vec::new(), Vec::new())
    } else {
        (
            tick_labels(&frame.x.ticks(0.0)),
            value_ticks(&frame.y, frame.plot_height(), ""),
        )
    };
    frame.axes(
        out,
        (&x_ticks, true),
        &y_ticks,
        "simulated time (s)",
        &axis_title(title, log),
    );
    if empty {
        frame.no_data(out, "no load publication recorded");
    }
    for (r, points, _) in &series {
        let name = escape(&r.policy);
        if let [p] = points.as_slice() {
            put!(
                out,
                "<circle {} cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\"><title>{name}</title></circle>",
                policies.fill_attrs(&r.policy),
                frame.px(p.at_s),
                frame.py(value(p)),
            );
        } else if !points.is_empty() {
            let d = frame.path(points.iter().map(|p| (p.at_s, value(p))));
            put!(
                out,
                "<path {} d=\"{d}\"><title>{name}</title></path>",
                policies.line_attrs(&r.policy),
            );
        }
    }
    Frame::close(out);
    let mut notes: Vec<String> = Vec::new();
    let most = series.iter().map(|(_, _, k)| *k).max().unwrap_or(1);
    if most > 1 {
        notes.push(format!(
            "Each point averages up to {most} consecutive samples, to keep at most {} \
             per line.",
            count(MAX_LINE_POINTS as f64)
        ));
    }
    let missing: Vec<&str> = series
        .iter()
        .filter(|(_, p, _)| p.is_empty())
        .map(|(r, _, _)| r.policy.as_str())
        .collect();
    if !empty && !missing.is_empty() {
        notes.push(format!("No publication recorded: {}.", missing.join(", ")));
    }
    if !notes.is_empty() {
        put!(out, "<figcaption>{}</figcaption>", escape(&notes.join(" ")));
    }
    out.push_str("</figure>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{ClusterUsage, Collector};
    use serde_json::json;

    /// A row of `policy` with hand-set numbers and `points` load points.
    fn row(policy: &str, scale: f64, points: usize) -> ClusterRow {
        let usage = ClusterUsage {
            load_variance: 0.01 * scale,
            utilisation: vec![0.5, 0.25 * scale],
            load_series: (0..points)
                .map(|k| LoadPoint {
                    at_s: 5.0 * k as f64,
                    mean: 0.5,
                    variance: 0.001 * scale * k as f64,
                })
                .collect(),
            ..ClusterUsage::default()
        };
        let mut r = ClusterRow::new(&Collector::new(policy).finish(), &usage);
        r.invocations = 1000;
        r.dropped = (10.0 * scale) as u64;
        r.cold_ratio = Some(0.02 * scale);
        r.global_increase = Some(0.1 * scale);
        r.slowdown_p50 = Some(1.0 + scale);
        r.slowdown_p99 = Some(3.0 * scale);
        r.function_slowdown_p50 = Some(1.5 * scale);
        r
    }

    fn page(rows: &[ClusterRow]) -> String {
        render_cluster_html("cluster <run>", &json!({"servers": 8}), rows)
    }

    /// The markup of the figure of `kind`.
    fn figure<'a>(html: &'a str, kind: &str) -> &'a str {
        let start = html
            .find(&format!("<figure class=\"chart\" data-kind=\"{kind}\">"))
            .unwrap_or_else(|| panic!("no {kind} chart"));
        let len = html[start..].find("</figure>").unwrap();
        &html[start..start + len]
    }

    #[test]
    fn the_servers_own_measures_get_a_table_only_where_a_row_has_them() {
        let plain = page(&[row("ch-rlu", 1.0, 3)]);
        assert!(!plain.contains("class=\"main inside\""));
        assert!(plain.contains("<th>cost<br>(USD)</th>"));
        let mut node = row("ch-rlu", 1.0, 3);
        node.node_miss_ratio = Some(0.25);
        node.node_dropped = Some(3);
        node.cost_usd = Some(0.5);
        let html = page(&[node, row("random", 2.0, 3)]);
        let inside = &html[html.find("class=\"main inside\"").expect("an inside table")..];
        assert!(inside.contains("<td>25%</td><td>3</td>"), "{inside}");
        assert!(html.contains("<td>$0.5000</td>"), "{html}");
    }

    #[test]
    fn every_bar_chart_has_a_bar_per_router_in_its_colour() {
        let rows = [
            row("ch-rlu", 1.0, 3),
            row("random", 2.0, 3),
            row("ch-bl", 3.0, 3),
        ];
        let html = page(&rows);
        for metric in &BARS {
            let chart = figure(&html, metric.kind);
            assert_eq!(chart.matches("<rect").count(), 3, "{}", metric.kind);
            for (i, r) in rows.iter().enumerate() {
                assert!(chart.contains(&format!("class=\"pol p{i}\" fill=\"")));
                assert!(chart.contains(&format!("<title>{}: ", r.policy)));
            }
        }
        assert!(figure(&html, "drops").contains("<title>random: 2%</title>"));
        assert!(figure(&html, "global-increase").contains("<title>ch-bl: 30%</title>"));
        assert!(figure(&html, "function-slowdown-p50").contains("<title>ch-rlu: 1.5</title>"));
        assert_eq!(html.matches("<tr class=\"p").count(), 3, "a table row each");
        assert!(html.contains("<th>servers</th><td>8</td>"));
    }

    #[test]
    fn values_far_apart_go_on_a_log_axis_and_close_ones_on_a_linear_one() {
        let mut rows = [row("ch-rlu", 1.0, 3), row("openwhisk", 2.0, 3)];
        rows[1].load_variance = 36.0;
        rows[1].load_series[1].variance = 36.0;
        let html = page(&rows);
        assert!(figure(&html, "load-variance").contains("mean load variance (log scale)"));
        assert!(figure(&html, "load-variance-time").contains("(log scale)"));
        assert!(!figure(&html, "cold-ratio").contains("(log scale)"));
        assert!(!figure(&html, "load-mean-time").contains("(log scale)"));
        let far = figure(&html, "load-variance");
        assert!(
            far.contains(">0.01</text>") && far.contains(">10</text>"),
            "{far}"
        );
    }

    #[test]
    fn nested_settings_are_indented_lists() {
        let settings = json!({"workload": {"name": "azure-functions", "length": {"seconds": 600}},
                              "servers": 8, "empty": {}});
        let html = render_cluster_html("t", &settings, &[]);
        assert!(html.contains(
            "<th>workload</th><td><table class=\"kv\"><tr><th>name</th><td>azure-functions</td>"
        ));
        assert!(
            html.contains(
                "<th>length</th><td><table class=\"kv\"><tr><th>seconds</th><td>600</td>"
            )
        );
        assert!(html.contains("<th>servers</th><td>8</td>"));
        assert!(html.contains("<th>empty</th><td>none</td>"));
    }

    #[test]
    fn a_router_without_a_value_gets_a_dash_not_a_bar() {
        let mut rows = [row("ch-rlu", 1.0, 0), row("openwhisk", 1.0, 0)];
        rows[1].function_slowdown_p50 = None;
        let html = page(&rows);
        let chart = figure(&html, "function-slowdown-p50");
        assert_eq!(chart.matches("<rect").count(), 1);
        assert!(chart.contains("<title>openwhisk: no value</title>"));
        let none = page(&[]);
        assert!(figure(&none, "cold-ratio").contains("no router"));
    }

    #[test]
    fn names_and_title_are_escaped() {
        let html = page(&[row("a<b&\"c'", 1.0, 2)]);
        assert!(html.contains("a&lt;b&amp;&quot;c&#39;"));
        assert!(!html.contains("a<b"));
        assert!(html.contains("<title>cluster &lt;run&gt;</title>"));
        assert!(!html.contains("<run>"));
    }

    #[test]
    fn same_rows_give_the_same_bytes() {
        let rows = [row("ch-rlu", 1.0, 5000), row("least-loaded", 2.0, 7)];
        assert_eq!(page(&rows), page(&rows));
    }

    #[test]
    fn load_charts_draw_a_line_per_router_and_say_when_there_is_none() {
        let html = page(&[row("ch-rlu", 1.0, 4), row("random", 2.0, 0)]);
        let chart = figure(&html, "load-variance-time");
        assert_eq!(chart.matches("<path class=\"line pol p0\"").count(), 1);
        assert!(!chart.contains("class=\"line pol p1\""));
        assert!(chart.contains("No publication recorded: random."));
        assert!(!chart.contains("no load publication recorded"));

        let html = page(&[row("ch-rlu", 1.0, 0), row("random", 2.0, 0)]);
        for kind in ["load-variance-time", "load-mean-time"] {
            let chart = figure(&html, kind);
            assert!(chart.contains("no load publication recorded"), "{kind}");
            assert!(!chart.contains("<path"), "{kind}");
        }

        let html = page(&[row("ch-rlu", 1.0, 1)]);
        assert!(figure(&html, "load-mean-time").contains("<circle class=\"pol p0\""));
    }

    #[test]
    fn long_series_are_averaged_down_and_bad_points_left_out() {
        let mut series: Vec<LoadPoint> = (0..3 * MAX_LINE_POINTS)
            .map(|k| LoadPoint {
                at_s: k as f64,
                mean: (k % 3) as f64,
                variance: 1.0,
            })
            .collect();
        series.push(LoadPoint {
            at_s: 1.0,
            mean: f64::NAN,
            variance: 0.0,
        });
        let (points, k) = thinned(&series);
        assert_eq!((points.len(), k), (MAX_LINE_POINTS, 3));
        assert_eq!(
            points[1],
            LoadPoint {
                at_s: 3.0,
                mean: 1.0,
                variance: 1.0
            }
        );
        let mut r = row("ch-rlu", 1.0, 0);
        r.load_series = series;
        let chart = page(&[r]);
        assert!(figure(&chart, "load-variance-time").contains("averages up to 3"));
    }
}
