//! The operating-system report's chart kinds, each drawn from a [`Summary`]
//! as one inline SVG in a `<figure class="chart" data-kind="...">`:
//!
//! | kind | what |
//! |---|---|
//! | `cdf` | turnaround CDF of one scope, a line per policy, log time axis |
//! | `percentiles` | p50, p90, p99, p99.9 and mean turnaround of one scope, a bar per policy, log axis |
//! | `switches` | voluntary and involuntary switches per invocation, per scope, a stacked bar per policy |
//! | `cost` | total cost in USD, a bar per policy |
//! | `completions` | cumulative finished invocations over simulated time, a line per policy |
//!
//! Every element of a policy carries the classes `pol p<i>` (its [`Palette`]
//! index), which the page's legend uses to hide it.

use super::metrics::{Metric, PolicySummary, Scope, ScopeSummary};
use super::output::Summary;
use crate::Stats;
use crate::chart::{MARGIN, PANEL, Palette, WIDE_PANEL, Y_TICK_GAP};
use crate::svg::{
    Frame, Scale, Tick, count, duration_ms, escape, put, significant, tick_labels, trim, truncate,
};
use faasched_model::MS;

/// The smallest time a log axis shows, in ms (1 µs).
const LOG_FLOOR_MS: f64 = 1e-3;

/// Characters of a policy name shown in an axis label (the full name is in the
/// tooltip and the legend).
const NAME_CHARS: usize = 14;

/// A policy's name as an axis label: truncated, `*` marking sim-only.
fn short_name(p: &PolicySummary) -> String {
    format!(
        "{}{}",
        truncate(&p.policy, NAME_CHARS),
        if p.sim_only { " *" } else { "" }
    )
}

/// The heading of a scope's panel, from the summary's first policy (every
/// policy ran the same invocations); the scope's name if there is none.
fn panel_title(summary: &Summary, scope: Scope) -> String {
    summary
        .policies
        .first()
        .map_or_else(|| scope.to_string(), |p| scope_title(p.scope(scope)))
}

/// The heading of a scope's panel: `all` or `G1 · CPU ≤ 50 ms`, and the count.
fn scope_title(s: &ScopeSummary) -> String {
    let what = match s.scope {
        Scope::All => "all invocations".to_string(),
        Scope::Group(g) => match g.range() {
            (0, Some(high)) => format!("{g:?} · CPU ≤ {} ms", high / MS),
            (low, Some(high)) => format!("{g:?} · CPU {}–{} ms", low / MS, high / MS),
            (low, None) => format!("{g:?} · CPU > {} ms", low / MS),
        },
    };
    format!("{what} · n = {}", count(s.count as f64))
}

/// Opens a figure of `kind` (and `scope`, if any).
fn open_figure(out: &mut String, kind: &str, scope: Option<Scope>) {
    match scope {
        Some(s) => put!(
            out,
            "<figure class=\"chart\" data-kind=\"{kind}\" data-scope=\"{s}\">"
        ),
        None => put!(out, "<figure class=\"chart\" data-kind=\"{kind}\">"),
    }
}

/// Closes a figure, with an (already escaped) caption if not empty.
fn close_figure(out: &mut String, caption: &str) {
    if !caption.is_empty() {
        put!(out, "<figcaption>{caption}</figcaption>");
    }
    out.push_str("</figure>\n");
}

/// Least distance between labelled ticks on a horizontal axis, px: time
/// labels are wide.
const X_TICK_GAP: f64 = 56.0;

/// Ticks of a time axis in ms, labelled with units, at least `gap` (a fraction
/// of the axis) apart.
fn time_ticks(scale: &Scale, gap: f64) -> Vec<Tick> {
    scale
        .ticks(gap)
        .into_iter()
        .map(|v| (v, duration_ms(v)))
        .collect()
}

/// The turnaround CDF of one scope: a line per policy, log time axis.
pub(crate) fn cdf(out: &mut String, summary: &Summary, scope: Scope, palette: &Palette) {
    let scopes = || {
        summary
            .policies
            .iter()
            .map(move |p| (p, p.scope(scope)))
            .filter(|(_, s)| !s.turnaround_cdf.is_empty())
    };
    let lo = scopes()
        .map(|(_, s)| s.turnaround_cdf[0].ms)
        .fold(f64::INFINITY, f64::min);
    let hi = scopes()
        .filter_map(|(_, s)| s.turnaround_cdf.last().map(|p| p.ms))
        .fold(0.0, f64::max);
    let frame = Frame {
        width: PANEL.0,
        height: PANEL.1,
        margin: (MARGIN.0, 24.0, MARGIN.2, MARGIN.3),
        x: Scale::log(lo, hi, LOG_FLOOR_MS),
        y: Scale::Linear { lo: 0.0, hi: 1.0 },
    };
    open_figure(out, "cdf", Some(scope));
    let title = panel_title(summary, scope);
    frame.open(out, &title);
    let empty = scopes().next().is_none();
    let y_ticks: Vec<Tick> = [0.0, 0.25, 0.5, 0.75, 1.0]
        .into_iter()
        .map(|v| (v, format!("{}%", trim(v * 100.0, 0))))
        .collect();
    let x_ticks = if empty {
        Vec::new()
    } else {
        time_ticks(&frame.x, X_TICK_GAP / frame.plot_width())
    };
    frame.axes(
        out,
        (&x_ticks, true),
        &y_ticks,
        "turnaround (log scale)",
        "share of invocations",
    );
    if empty {
        frame.no_data(out, "no invocations in this group");
    }
    for (p, s) in scopes() {
        let d = frame.path(s.turnaround_cdf.iter().map(|c| (c.ms, c.fraction)));
        put!(
            out,
            "<path {} d=\"{d}\"><title>{}</title></path>",
            palette.line_attrs(&p.policy),
            escape(&p.policy)
        );
    }
    Frame::close(out);
    close_figure(out, "");
}

/// One statistic of a [`Stats`].
type Pick = fn(&Stats) -> f64;

/// The turnaround statistics drawn as bars, in order.
const PERCENTILES: [(&str, Pick); 5] = [
    ("p50", |s| s.p50),
    ("p90", |s| s.p90),
    ("p99", |s| s.p99),
    ("p99.9", |s| s.p999),
    ("mean", |s| s.mean),
];

/// p50, p90, p99, p99.9 and mean turnaround of one scope: a group of bars per
/// statistic, a bar per policy, log time axis.
pub(crate) fn percentiles(out: &mut String, summary: &Summary, scope: Scope, palette: &Palette) {
    let stats: Vec<_> = summary
        .policies
        .iter()
        .filter_map(|p| p.scope(scope).stats(Metric::Turnaround).map(|s| (p, s)))
        .collect();
    let values = || {
        stats
            .iter()
            .flat_map(|(_, s)| PERCENTILES.iter().map(move |(_, f)| f(s)))
    };
    let lo = values().fold(f64::INFINITY, f64::min);
    let hi = values().fold(0.0, f64::max);
    let frame = Frame {
        width: PANEL.0,
        height: PANEL.1,
        margin: (MARGIN.0, 12.0, MARGIN.2, MARGIN.3),
        x: Scale::Linear {
            lo: 0.0,
            hi: PERCENTILES.len() as f64,
        },
        y: Scale::log(lo, hi, LOG_FLOOR_MS),
    };
    open_figure(out, "percentiles", Some(scope));
    let title = panel_title(summary, scope);
    frame.open(out, &title);
    let x_ticks: Vec<Tick> = PERCENTILES
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (i as f64 + 0.5, name.to_string()))
        .collect();
    let y_ticks = if stats.is_empty() {
        Vec::new()
    } else {
        time_ticks(&frame.y, Y_TICK_GAP / frame.plot_height())
    };
    frame.axes(
        out,
        (&x_ticks, false),
        &y_ticks,
        "turnaround statistic",
        "turnaround (log scale)",
    );
    if stats.is_empty() {
        frame.no_data(out, "no invocations in this group");
    }
    let n = summary.policies.len().max(1) as f64;
    let band = frame.px(1.0) - frame.px(0.0);
    let bar = band * 0.84 / n;
    let base = frame.py(frame.y.start());
    for (k, (stat, f)) in PERCENTILES.iter().enumerate() {
        for (j, p) in summary.policies.iter().enumerate() {
            let Some(s) = p.scope(scope).stats(Metric::Turnaround) else {
                continue;
            };
            let v = f(s);
            let x = frame.px(k as f64) + band * 0.08 + j as f64 * bar;
            let y = frame.py(v);
            put!(
                out,
                "<rect {} x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\">\
                 <title>{} {stat}: {}</title></rect>",
                palette.fill_attrs(&p.policy),
                (bar - 1.0).max(1.0),
                (base - y).max(0.5),
                escape(&p.policy),
                duration_ms(v)
            );
        }
    }
    Frame::close(out);
    close_figure(out, "");
}

/// Voluntary and involuntary switches per invocation, per scope: a stacked bar
/// per policy (voluntary pale at the bottom, involuntary solid on top).
pub(crate) fn switches(out: &mut String, summary: &Summary, palette: &Palette) {
    let per = |s: &ScopeSummary| {
        (
            s.voluntary_per_invocation().unwrap_or(0.0),
            s.involuntary_per_invocation().unwrap_or(0.0),
        )
    };
    let max = summary
        .policies
        .iter()
        .flat_map(|p| p.scopes.iter().map(per))
        .map(|(v, i)| v + i)
        .fold(0.0, f64::max);
    let frame = Frame {
        width: WIDE_PANEL.0,
        height: WIDE_PANEL.1,
        margin: (MARGIN.0, 12.0, MARGIN.2, MARGIN.3),
        x: Scale::Linear {
            lo: 0.0,
            hi: Scope::ALL.len() as f64,
        },
        y: Scale::zero_to(max),
    };
    open_figure(out, "switches", None);
    frame.open(out, "Context switches per invocation");
    let x_ticks: Vec<Tick> = Scope::ALL
        .iter()
        .map(|s| (s.index() as f64 + 0.5, s.label().to_string()))
        .collect();
    let y_ticks = tick_labels(&frame.y.ticks(0.0));
    frame.axes(
        out,
        (&x_ticks, false),
        &y_ticks,
        "group",
        "switches per invocation",
    );
    let n = summary.policies.len().max(1) as f64;
    let band = frame.px(1.0) - frame.px(0.0);
    let bar = band * 0.84 / n;
    for scope in Scope::ALL {
        for (j, p) in summary.policies.iter().enumerate() {
            let s = p.scope(scope);
            if s.count == 0 {
                continue;
            }
            let (vol, invol) = per(s);
            let x = frame.px(scope.index() as f64) + band * 0.08 + j as f64 * bar;
            let (y0, y1, y2) = (frame.py(0.0), frame.py(vol), frame.py(vol + invol));
            let w = (bar - 1.0).max(1.0);
            let name = escape(&p.policy);
            put!(
                out,
                "<g {}><rect class=\"vol\" x=\"{x:.1}\" y=\"{y1:.1}\" width=\"{w:.1}\" \
                 height=\"{:.1}\"><title>{name} {scope}: {} voluntary</title></rect>\
                 <rect x=\"{x:.1}\" y=\"{y2:.1}\" width=\"{w:.1}\" height=\"{:.1}\">\
                 <title>{name} {scope}: {} involuntary</title></rect></g>",
                palette.fill_attrs(&p.policy),
                y0 - y1,
                trim(vol, 2),
                y1 - y2,
                trim(invol, 2),
            );
        }
    }
    Frame::close(out);
    close_figure(
        out,
        "Each bar: voluntary switches (pale, bottom: the invocation blocked or exited) \
         and involuntary ones (solid, top: something else took its core).",
    );
}

/// Dollars with a `$`, to four significant digits (as the terminal table).
pub(crate) fn usd(v: f64) -> String {
    format!("${}", crate::cost::usd(v))
}

/// Total cost per policy: a horizontal bar each, labelled with dollars, billed
/// GB-seconds and the difference to the cheapest.
pub(crate) fn cost(out: &mut String, summary: &Summary, palette: &Palette) {
    let costs: Vec<f64> = summary
        .policies
        .iter()
        .map(|p| p.all().cost.usd())
        .collect();
    let max = costs.iter().copied().fold(0.0, f64::max);
    let cheapest = costs.iter().copied().fold(f64::INFINITY, f64::min);
    let n = summary.policies.len().max(1) as f64;
    let frame = Frame {
        width: WIDE_PANEL.0,
        height: (80.0 + 30.0 * n).max(150.0),
        margin: (128.0, 200.0, 28.0, 40.0),
        x: Scale::zero_to(max),
        y: Scale::Linear { lo: n, hi: 0.0 },
    };
    open_figure(out, "cost", None);
    frame.open(out, "Total cost per policy");
    let x_ticks: Vec<Tick> = frame
        .x
        .ticks(0.0)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
        .map(|(_, v)| (v, format!("${}", trim(v, 9))))
        .collect();
    let y_ticks: Vec<Tick> = summary
        .policies
        .iter()
        .enumerate()
        .map(|(i, p)| (i as f64 + 0.5, short_name(p)))
        .collect();
    frame.axes(out, (&x_ticks, true), &y_ticks, "total cost (USD)", "");
    let row = frame.py(1.0) - frame.py(0.0);
    for (i, (p, &c)) in summary.policies.iter().zip(&costs).enumerate() {
        let y = frame.py(i as f64) + row * 0.2;
        let (x0, x1) = (frame.px(0.0), frame.px(c));
        let all = p.all();
        let vs = if c <= cheapest || cheapest <= 0.0 {
            "cheapest".to_string()
        } else {
            format!("+{}%", trim((c / cheapest - 1.0) * 100.0, 2))
        };
        put!(
            out,
            "<rect {} x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\">\
             <title>{}: {}</title></rect>\
             <text class=\"val\" x=\"{:.1}\" y=\"{:.1}\">{} · {} GB-s · {vs}</text>",
            palette.fill_attrs(&p.policy),
            (x1 - x0).max(0.5),
            row * 0.6,
            escape(&p.policy),
            usd(c),
            x1 + 6.0,
            y + row * 0.3 + 4.0,
            usd(c),
            significant(all.cost.billed_gb_s(), 3),
        );
    }
    Frame::close(out);
    close_figure(
        out,
        &escape(&format!(
            "Billed duration: {} (finish − first run), rounded up to {} ms, × memory, \
             at AWS Lambda's x86 price (${}/GB-s) plus ${} per million requests.",
            crate::cost::BILLED_DURATION,
            crate::cost::BILLING_GRANULARITY / MS,
            crate::cost::USD_PER_GB_SECOND,
            crate::cost::USD_PER_MILLION_REQUESTS
        )),
    );
}

/// Cumulative finished invocations against time, simulated or (a live run's)
/// measured: a line per policy.
pub(crate) fn completions(out: &mut String, summary: &Summary, palette: &Palette) {
    let series: Vec<_> = summary
        .policies
        .iter()
        .map(|p| (p, p.completions.cumulative()))
        .collect();
    let end_s = series
        .iter()
        .filter_map(|(_, c)| c.last())
        .map(|&(t, _)| t as f64 / 1e9)
        .fold(0.0, f64::max);
    let total = series
        .iter()
        .filter_map(|(_, c)| c.last())
        .map(|&(_, n)| n as f64)
        .fold(0.0, f64::max);
    let frame = Frame {
        width: WIDE_PANEL.0,
        height: WIDE_PANEL.1,
        margin: MARGIN,
        x: Scale::zero_to(end_s),
        y: Scale::zero_to(total),
    };
    open_figure(out, "completions", None);
    let time = if summary.is_live() {
        "measured time"
    } else {
        "simulated time"
    };
    frame.open(out, &format!("Completions over {time}"));
    let x_ticks = tick_labels(&frame.x.ticks(0.0));
    // Whole invocations only: with one or two, the axis's steps are halves.
    let y_ticks: Vec<Tick> = frame
        .y
        .ticks(0.0)
        .into_iter()
        .filter(|v| v.fract() == 0.0)
        .map(|v| (v, count(v)))
        .collect();
    frame.axes(
        out,
        (&x_ticks, true),
        &y_ticks,
        &format!("{time} (s)"),
        "finished invocations",
    );
    for (p, c) in &series {
        let d = frame.path(c.iter().map(|&(t, n)| (t as f64 / 1e9, n as f64)));
        put!(
            out,
            "<path {} d=\"{d}\"><title>{}</title></path>",
            palette.line_attrs(&p.policy),
            escape(&p.policy)
        );
    }
    Frame::close(out);
    // Each policy's run has its own length, so its own bucket width.
    let widths = summary.policies.iter().map(|p| p.completions.width());
    let (least, most) = widths
        .fold(None, |range: Option<(u64, u64)>, w| {
            Some(range.map_or((w, w), |(lo, hi)| (lo.min(w), hi.max(w))))
        })
        .unwrap_or((
            super::timeline::FIRST_BUCKET_WIDTH,
            super::timeline::FIRST_BUCKET_WIDTH,
        ));
    let ms = |ns: u64| duration_ms(ns as f64 / 1e6);
    let widths = if least == most {
        ms(least)
    } else {
        format!("{} to {}, by policy", ms(least), ms(most))
    };
    close_figure(
        out,
        &escape(&format!(
            "Finishes counted in buckets of {widths} (the width doubles as a run grows, \
             to keep at most {} buckets).",
            super::timeline::COMPLETION_BUCKETS
        )),
    );
}
