//! The node level's `report.html`; its layout is in the [`node`](super)
//! module's documentation.

use super::metrics::{ALL, PolicySummary, ScopeSummary};
use super::output::Summary;
use crate::Result;
use crate::chart::{MARGIN, PANEL, Palette, Y_TICK_GAP};
use crate::page::{self, Page};
use crate::staged::Staged;
use crate::svg::{Frame, Scale, Tick, count, duration_ms, escape, put, tick_labels, trim};
use std::path::{Path, PathBuf};

/// How a metric's values are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// A time in µs, on a log axis labelled with units.
    Latency,
    /// A ratio, on a log axis.
    Ratio,
    /// A share 0..=1, on a linear axis in percent.
    Share,
}

/// A metric the report charts.
#[derive(Clone, Copy, Debug)]
pub struct ChartMetric {
    /// The figure's `data-kind`.
    pub kind: &'static str,
    /// Its name in headings and axis titles.
    pub title: &'static str,
    /// How it is drawn.
    pub axis: Axis,
    /// Its value in a scope; `None` when the scope has nothing to cover.
    pub value: fn(&ScopeSummary) -> Option<f64>,
}

/// The charted metrics, in page order.
pub const METRICS: [ChartMetric; 3] = [
    ChartMetric {
        kind: "latency-p999",
        title: "p99.9 latency",
        axis: Axis::Latency,
        value: |s| s.latency.map(|t| t.p999),
    },
    ChartMetric {
        kind: "slowdown-p999",
        title: "p99.9 slowdown",
        axis: Axis::Ratio,
        value: |s| s.slowdown.map(|t| t.p999),
    },
    ChartMetric {
        kind: "miss-rate",
        title: "deadline miss rate",
        axis: Axis::Share,
        value: |s| s.miss_rate(),
    },
];

/// The smallest latency a log axis shows, ms (100 ns).
const LATENCY_FLOOR_MS: f64 = 1e-4;

/// The smallest slowdown a log axis shows.
const RATIO_FLOOR: f64 = 0.1;

/// Writes `report.html` for `summary` into `dir` (created if missing, through
/// [`Staged::create_dir`]), staged: it takes its place at `staged`'s commit.
/// Returns the file's path. Errors name the file (or the directory).
pub fn write_report(
    dir: &Path,
    title: &str,
    summary: &Summary,
    staged: &mut Staged,
) -> Result<PathBuf> {
    page::write(dir, &render_html(title, summary), staged)
}

/// The policies of a summary in order of first appearance.
fn palette(summary: &Summary) -> Palette {
    Palette::of(
        summary
            .loads
            .iter()
            .flat_map(|l| &l.policies)
            .map(|p| p.policy.as_str()),
    )
}

/// The scopes of a summary: `all`, then each function in order of first
/// appearance.
fn scopes(summary: &Summary) -> Vec<&str> {
    let mut names = vec![ALL];
    for s in summary
        .loads
        .iter()
        .flat_map(|l| &l.policies)
        .flat_map(|p| &p.scopes)
    {
        if !names.contains(&s.scope.as_str()) {
            names.push(&s.scope);
        }
    }
    names
}

/// The distinct offered rates, ascending.
fn rates(summary: &Summary) -> Vec<f64> {
    let mut rates: Vec<f64> = summary.loads.iter().map(|l| l.rate).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    rates
}

/// Renders the whole page (see the module docs).
pub fn render_html(title: &str, summary: &Summary) -> String {
    let policies = palette(summary);
    let mut page = Page::open(title, &policies);
    page.settings(&summary.settings);
    let out = page.body();

    let sweep = rates(summary).len() > 1;
    if sweep {
        out.push_str(
            "<h2>Against offered load</h2>\n<p class=\"note\">Per policy, the p99.9 \
             latency and slowdown (log axes) and the share of requests that missed \
             their deadline or were dropped, at each offered rate.</p>\n",
        );
        for scope in scopes(summary) {
            put!(
                out,
                "<h3>{}</h3>\n<div class=\"charts\">\n",
                scope_heading(scope)
            );
            for metric in &METRICS {
                curves(out, summary, scope, metric, &policies);
            }
            out.push_str("</div>\n");
        }
    }
    for load in &summary.loads {
        put!(out, "<h2>Offered {} requests/s</h2>\n", count(load.rate));
        main_table(out, &load.policies, &policies);
        if !sweep {
            out.push_str("<div class=\"charts\">\n");
            let scopes = scopes(summary);
            for metric in &METRICS {
                bars(out, &load.policies, &scopes, metric, &policies);
            }
            out.push_str("</div>\n");
        }
    }
    page.finish(
        "latency = response sent − request received; slowdown = latency / the \
         request's work; a request misses its deadline when it finishes after arrival + \
         relative deadline, or is dropped; the miss rate counts misses over all \
         requests. Percentiles are nearest-rank from log-bucketed histograms (exact \
         below 2048 ns, within 0.05% above).",
    )
}

fn scope_heading(scope: &str) -> String {
    if scope == ALL {
        "All requests".to_string()
    } else {
        format!("Function {}", escape(scope))
    }
}

fn main_table(out: &mut String, loaded: &[PolicySummary], policies: &Palette) {
    out.push_str(
        "<div class=\"numbers\"><table class=\"main\"><thead><tr><th>policy / function</th>\
         <th>requests</th><th>dropped</th><th>missed</th><th>mean<br>latency</th>\
         <th>p50<br>latency</th><th>p99<br>latency</th><th>p99.9<br>latency</th>\
         <th>max<br>latency</th>\
         <th>p50<br>slowdown</th><th>p99.9<br>slowdown</th><th>finished<br>per s</th>\
         <th>preempt.<br>per req.</th><th>busy<br>workers / disp.</th></tr></thead><tbody>",
    );
    let fixed = |v: Option<f64>, decimals: usize| {
        v.map_or_else(|| "–".to_string(), |v| format!("{v:.decimals$}"))
    };
    let latency = |us: Option<f64>| us.map_or_else(|| "–".to_string(), |us| duration_ms(us / 1e3));
    let percent =
        |v: Option<f64>| v.map_or_else(|| "–".to_string(), |v| format!("{}%", trim(v * 100.0, 2)));
    for p in loaded {
        let i = policies.index(&p.policy);
        for (k, s) in p.scopes.iter().enumerate() {
            let (class, name, busy) = if k == 0 {
                (
                    String::new(),
                    format!("{}{}", policies.swatch(&p.policy), escape(&p.policy)),
                    format!(
                        "{} / {}",
                        percent(p.usage.mean_worker()),
                        percent(p.usage.mean_dispatcher())
                    ),
                )
            } else {
                (" fn".to_string(), escape(&s.scope), String::new())
            };
            put!(
                out,
                "<tr class=\"p{i}{class}\"><td>{name}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{busy}</td></tr>",
                count(s.requests as f64),
                count(s.dropped as f64),
                percent(s.miss_rate()),
                latency(s.latency.map(|t| t.mean)),
                latency(s.latency.map(|t| t.p50)),
                latency(s.latency.map(|t| t.p99)),
                latency(s.latency.map(|t| t.p999)),
                latency(s.latency.map(|t| t.max)),
                fixed(s.slowdown.map(|t| t.p50), 2),
                fixed(s.slowdown.map(|t| t.p999), 2),
                fixed(s.throughput, 0),
                fixed(s.preemptions_per_request(), 2),
            );
        }
    }
    out.push_str(
        "</tbody></table></div>\n<p class=\"note\">missed: finished after the deadline \
         or dropped, of all requests; latency and slowdown over finished requests; busy: \
         mean utilisation of the policy's workers and dispatchers.</p>\n",
    );
}

/// The value axis `axis` over `values`, and its labelled ticks (none
/// without values).
pub(super) fn value_axis(axis: Axis, values: &[f64], frame_height: f64) -> (Scale, Vec<Tick>) {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let gap = Y_TICK_GAP / (frame_height - MARGIN.2 - MARGIN.3);
    let (scale, ticks) = match axis {
        Axis::Latency => {
            let scale = Scale::log(lo / 1e3, hi / 1e3, LATENCY_FLOOR_MS);
            let ticks = scale
                .ticks(gap)
                .into_iter()
                .map(|v| (v, duration_ms(v)))
                .collect();
            (scale, ticks)
        }
        Axis::Ratio => {
            let scale = Scale::log(lo, hi, RATIO_FLOOR);
            let ticks = scale
                .ticks(gap)
                .into_iter()
                .map(|v| (v, trim(v, 2)))
                .collect();
            (scale, ticks)
        }
        Axis::Share => {
            let scale = Scale::zero_to(hi * 100.0);
            let ticks = tick_labels(&scale.ticks(0.0))
                .into_iter()
                .map(|(v, l)| (v, format!("{l}%")))
                .collect();
            (scale, ticks)
        }
    };
    (scale, if values.is_empty() { Vec::new() } else { ticks })
}

/// A value as `axis` plots it: ms for latency, percent for a share.
pub(super) fn plotted(axis: Axis, v: f64) -> f64 {
    match axis {
        Axis::Latency => v / 1e3,
        Axis::Ratio => v,
        Axis::Share => v * 100.0,
    }
}

/// A value as a tooltip shows it.
pub(super) fn shown(axis: Axis, v: f64) -> String {
    match axis {
        Axis::Latency => duration_ms(v / 1e3),
        Axis::Ratio => trim(v, 2),
        Axis::Share => format!("{}%", trim(v * 100.0, 2)),
    }
}

/// The axes of a chart against the offered rate: counts along the bottom,
/// `y_ticks` up the side, titled `y_title` (with the scale when it is a log
/// one).
pub(super) fn rate_axes(
    out: &mut String,
    frame: &Frame,
    axis: Axis,
    y_ticks: &[Tick],
    y_title: &str,
) {
    let x_ticks: Vec<Tick> = frame
        .x
        .ticks(0.0)
        .into_iter()
        .map(|v| (v, count(v)))
        .collect();
    let log = if axis == Axis::Share {
        ""
    } else {
        " (log scale)"
    };
    frame.axes(
        out,
        (&x_ticks, true),
        y_ticks,
        "offered load (requests/s)",
        &format!("{y_title}{log}"),
    );
}

/// A policy's name and its points (offered rate, value) by ascending rate.
type Series<'a> = (&'a str, Vec<(f64, Option<f64>)>);

/// `metric` of one scope against the offered rate: a line per policy with a
/// marker at each rate, broken where the policy has no value.
fn curves(
    out: &mut String,
    summary: &Summary,
    scope: &str,
    metric: &ChartMetric,
    policies: &Palette,
) {
    let series: Vec<Series> = policies
        .iter()
        .map(|(_, name, _)| {
            let mut points: Vec<(f64, Option<f64>)> = summary
                .loads
                .iter()
                .filter_map(|l| {
                    let p = l.policies.iter().find(|p| p.policy == name)?;
                    Some((l.rate, p.scope(scope).and_then(metric.value)))
                })
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            (name, points)
        })
        .collect();
    let values: Vec<f64> = series
        .iter()
        .flat_map(|(_, s)| s.iter().filter_map(|&(_, v)| v))
        .collect();
    let max_rate = summary.loads.iter().map(|l| l.rate).fold(0.0, f64::max);
    let (y, y_ticks) = value_axis(metric.axis, &values, PANEL.1);
    let frame = Frame {
        width: PANEL.0,
        height: PANEL.1,
        margin: MARGIN,
        x: Scale::zero_to(max_rate),
        y,
    };
    put!(
        out,
        "<figure class=\"chart\" data-kind=\"{}\" data-scope=\"{}\">",
        metric.kind,
        escape(scope)
    );
    frame.open(out, &format!("{} · {}", metric.title, scope));
    rate_axes(out, &frame, metric.axis, &y_ticks, metric.title);
    if values.is_empty() {
        frame.no_data(out, "no value at any rate");
    }
    for (name, points) in &series {
        // One subpath per run of rates with a value.
        let mut d = String::new();
        for run in points.split(|(_, v)| v.is_none()) {
            d.push_str(
                &frame.path(
                    run.iter()
                        .filter_map(|&(r, v)| Some((r, plotted(metric.axis, v?)))),
                ),
            );
        }
        if !d.is_empty() {
            put!(
                out,
                "<path {} d=\"{d}\"><title>{}</title></path>",
                policies.line_attrs(name),
                escape(name)
            );
        }
        for &(rate, v) in points {
            let Some(v) = v else { continue };
            put!(
                out,
                "<circle {} cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\"><title>{} at {} requests/s: {}</title></circle>",
                policies.fill_attrs(name),
                frame.px(rate),
                frame.py(plotted(metric.axis, v)),
                escape(name),
                trim(rate, 3),
                shown(metric.axis, v)
            );
        }
    }
    Frame::close(out);
    out.push_str("</figure>\n");
}

/// `metric` at one offered rate: a group of bars per scope (`scopes`), a bar
/// per policy of `loaded`.
fn bars(
    out: &mut String,
    loaded: &[PolicySummary],
    scopes: &[&str],
    metric: &ChartMetric,
    policies: &Palette,
) {
    let value = |p: &PolicySummary, scope: &str| p.scope(scope).and_then(metric.value);
    let values: Vec<f64> = loaded
        .iter()
        .flat_map(|p| scopes.iter().filter_map(|s| value(p, s)))
        .collect();
    let (y, y_ticks) = value_axis(metric.axis, &values, PANEL.1);
    let frame = Frame {
        width: PANEL.0.max(120.0 + 90.0 * scopes.len() as f64),
        height: PANEL.1,
        margin: MARGIN,
        x: Scale::Linear {
            lo: 0.0,
            hi: scopes.len() as f64,
        },
        y,
    };
    put!(
        out,
        "<figure class=\"chart\" data-kind=\"{}\">",
        metric.kind
    );
    frame.open(out, metric.title);
    let x_ticks: Vec<Tick> = scopes
        .iter()
        .enumerate()
        .map(|(i, s)| (i as f64 + 0.5, s.to_string()))
        .collect();
    frame.axes(out, (&x_ticks, false), &y_ticks, "function", metric.title);
    if values.is_empty() {
        frame.no_data(out, "no value");
    }
    let band = frame.px(1.0) - frame.px(0.0);
    let bar = band * 0.84 / loaded.len().max(1) as f64;
    let base = frame.py(frame.y.start());
    for (k, scope) in scopes.iter().enumerate() {
        for (j, p) in loaded.iter().enumerate() {
            let Some(v) = value(p, scope) else { continue };
            let x = frame.px(k as f64) + band * 0.08 + j as f64 * bar;
            let top = frame.py(plotted(metric.axis, v));
            put!(
                out,
                "<rect {} x=\"{x:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\">\
                 <title>{} {}: {}</title></rect>",
                policies.fill_attrs(&p.policy),
                (bar - 1.0).max(1.0),
                (base - top).max(0.5),
                escape(&p.policy),
                escape(scope),
                shown(metric.axis, v)
            );
        }
    }
    Frame::close(out);
    out.push_str("</figure>\n");
}
