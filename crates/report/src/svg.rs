//! Chart primitives for inline SVG: text escaping, number formatting, scales with
//! tick choice, and a [`Frame`] that draws a chart's box, grid, axes and titles
//! and maps data to pixels.
//!
//! Everything is written into a `String` with fixed-precision numbers, so the
//! same data gives the same bytes. Text that may come from user data goes
//! through [`escape`]; [`Frame`] escapes every label it is given.

use std::fmt::Write;

/// Appends formatted text to a `String` (writing to a `String` cannot fail).
macro_rules! put {
    ($out:expr, $($arg:tt)*) => {{
        let _ = ::std::fmt::Write::write_fmt($out, format_args!($($arg)*));
    }};
}
pub(crate) use put;

/// `text` with `&`, `<`, `>`, `"` and `'` replaced by character references: safe
/// as HTML or SVG text and inside quoted attributes.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` cut to `max` characters, an ellipsis marking the cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// `v` with at most `decimals` decimals, trailing zeros (and point) removed.
pub(crate) fn trim(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".to_string() } else { s }
}

/// `v` to `digits` significant digits, trailing zeros removed: a quantity
/// that may be small (`0.0082` GB-s) or large (`1234`) on the same chart.
pub(crate) fn significant(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return trim(v, 0);
    }
    let decimals = (digits - 1 - v.abs().log10().floor() as i32).max(0);
    trim(v, decimals as usize)
}

/// Labels for linear-axis `ticks` (evenly spaced, as [`Scale::ticks`] makes
/// them) with as many decimals as their step needs: a step of 0.25 ms in
/// seconds needs five, where a fixed three made ticks share labels.
pub(crate) fn tick_labels(ticks: &[f64]) -> Vec<Tick> {
    let step = match ticks {
        [a, b, ..] => b - a,
        _ => 1.0,
    };
    let decimals = (0..12)
        .find(|&d| {
            let scaled = step * 10f64.powi(d);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
        })
        .unwrap_or(12) as usize;
    ticks.iter().map(|&v| (v, trim(v, decimals))).collect()
}

/// A duration in ms as a short label with its unit: `500 µs`, `20 ms`, `1.5 s`.
pub(crate) fn duration_ms(ms: f64) -> String {
    if ms == 0.0 {
        "0".to_string()
    } else if ms < 1.0 {
        format!("{} µs", trim(ms * 1000.0, 1))
    } else if ms < 1000.0 {
        format!("{} ms", trim(ms, 2))
    } else {
        format!("{} s", trim(ms / 1000.0, 3))
    }
}

/// A count with thousands separated by thin spaces: `15 000`.
pub(crate) fn count(v: f64) -> String {
    let digits = trim(v, 2);
    let (int, frac) = digits.split_once('.').unwrap_or((&digits, ""));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i).is_multiple_of(3) {
            grouped.push('\u{2009}');
        }
        grouped.push(c);
    }
    if frac.is_empty() {
        grouped
    } else {
        format!("{grouped}.{frac}")
    }
}

/// A map from data values to 0..1 along an axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scale {
    /// `lo` → 0, `hi` → 1, linearly.
    Linear {
        /// Value at the start of the axis.
        lo: f64,
        /// Value at the end of the axis.
        hi: f64,
    },
    /// Logarithmic; both bounds positive, whole decades (or 2×, 5× of them).
    Log {
        /// Value at the start of the axis.
        lo: f64,
        /// Value at the end of the axis.
        hi: f64,
    },
}

/// The 1-2-5 step nearest above `rough`.
fn nice_step(rough: f64) -> f64 {
    let magnitude = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= rough * 0.999_999)
        .unwrap_or(10.0 * magnitude)
}

impl Scale {
    /// From 0 to a round value at or above `max` (1 if `max` is not positive).
    pub(crate) fn zero_to(max: f64) -> Scale {
        if !(max > 0.0 && max.is_finite()) {
            return Scale::Linear { lo: 0.0, hi: 1.0 };
        }
        let step = nice_step(max / 5.0);
        Scale::Linear {
            lo: 0.0,
            hi: (max / step - 1e-9).ceil().max(1.0) * step,
        }
    }

    /// Log scale covering `min..=max` (both clamped to at least `floor`),
    /// widened to whole decades, or to 1-2-5 steps when that is tighter.
    pub(crate) fn log(min: f64, max: f64, floor: f64) -> Scale {
        let min = if min.is_finite() {
            min.max(floor)
        } else {
            floor
        };
        let max = if max.is_finite() { max.max(min) } else { min };
        let down = |v: f64| {
            let d = 10f64.powf(v.log10().floor());
            [5.0, 2.0, 1.0]
                .into_iter()
                .map(|m| m * d)
                .find(|&s| s <= v * 1.000_001)
                .unwrap_or(d)
        };
        let up = |v: f64| {
            let d = 10f64.powf(v.log10().floor());
            [1.0, 2.0, 5.0, 10.0]
                .into_iter()
                .map(|m| m * d)
                .find(|&s| s >= v * 0.999_999)
                .unwrap_or(10.0 * d)
        };
        let (lo, mut hi) = (down(min), up(max));
        if hi <= lo {
            hi = up(lo * 1.5);
        }
        Scale::Log { lo, hi }
    }

    /// The value at the start of the axis: a bar chart's base.
    pub(crate) fn start(&self) -> f64 {
        match *self {
            Scale::Linear { lo, .. } | Scale::Log { lo, .. } => lo,
        }
    }

    /// Where `v` falls, 0 at the start of the axis and 1 at the end, clamped.
    pub(crate) fn unit(&self, v: f64) -> f64 {
        let u = match *self {
            Scale::Linear { lo, hi } => (v - lo) / (hi - lo),
            Scale::Log { lo, hi } => (v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln()),
        };
        if u.is_finite() {
            u.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// Tick values, ascending. Linear: 1-2-5 steps, about 5. Log: decades, then
    /// 2× and 5×, then the other multiples, each kept only if it is at least
    /// `min_gap` (a fraction of the axis) from every tick already kept.
    pub(crate) fn ticks(&self, min_gap: f64) -> Vec<f64> {
        match *self {
            Scale::Linear { lo, hi } => {
                let step = nice_step((hi - lo) / 5.0);
                let n = ((hi - lo) / step + 1e-9).floor() as usize;
                (0..=n).map(|i| lo + i as f64 * step).collect()
            }
            Scale::Log { lo, hi } => {
                let first = lo.log10().floor() as i32;
                let last = hi.log10().ceil() as i32;
                let tiers: [&[f64]; 3] = [&[1.0], &[2.0, 5.0], &[3.0, 4.0, 6.0, 7.0, 8.0, 9.0]];
                let mut ticks: Vec<f64> = Vec::new();
                for tier in tiers {
                    for e in first..=last {
                        for m in tier {
                            let v = m * 10f64.powi(e);
                            let inside = v >= lo * 0.999_999 && v <= hi * 1.000_001;
                            let (u, gap) = (self.unit(v), min_gap - 1e-9);
                            if inside && ticks.iter().all(|&t| (self.unit(t) - u).abs() >= gap) {
                                ticks.push(v);
                            }
                        }
                    }
                }
                ticks.sort_by(f64::total_cmp);
                ticks
            }
        }
    }
}

/// A labelled tick: a data value and its text.
pub(crate) type Tick = (f64, String);

/// A chart's canvas: size, margins around the plot area, and its two scales.
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    /// Width of the whole chart, px.
    pub width: f64,
    /// Height of the whole chart, px.
    pub height: f64,
    /// Margins (left, right, top, bottom) around the plot area, px.
    pub margin: (f64, f64, f64, f64),
    /// Horizontal scale.
    pub x: Scale,
    /// Vertical scale (0 at the bottom).
    pub y: Scale,
}

impl Frame {
    /// Width of the plot area, px.
    pub(crate) fn plot_width(&self) -> f64 {
        self.width - self.margin.0 - self.margin.1
    }

    /// Height of the plot area, px.
    pub(crate) fn plot_height(&self) -> f64 {
        self.height - self.margin.2 - self.margin.3
    }

    /// Pixel column of data value `v`.
    pub(crate) fn px(&self, v: f64) -> f64 {
        let (left, right, _, _) = self.margin;
        left + self.x.unit(v) * (self.width - left - right)
    }

    /// Pixel row of data value `v`.
    pub(crate) fn py(&self, v: f64) -> f64 {
        let (_, _, top, bottom) = self.margin;
        self.height - bottom - self.y.unit(v) * (self.height - top - bottom)
    }

    /// Opens the `<svg>` element, with `title` (escaped) as its accessible name
    /// and heading.
    pub(crate) fn open(&self, out: &mut String, title: &str) {
        let (w, h) = (self.width, self.height);
        let title = escape(title);
        put!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{title}\">\
             <title>{title}</title>\
             <text class=\"ct\" x=\"{x:.1}\" y=\"16\">{title}</text>",
            x = self.margin.0,
        );
    }

    /// `what` (escaped) in the middle of the chart: why its plot area is
    /// empty.
    pub(crate) fn no_data(&self, out: &mut String, what: &str) {
        put!(
            out,
            "<text class=\"empty\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            self.width / 2.0,
            self.height / 2.0,
            escape(what)
        );
    }

    /// Closes the `<svg>` element.
    pub(crate) fn close(out: &mut String) {
        out.push_str("</svg>\n");
    }

    /// Grid lines at the ticks (`x_grid` for vertical ones), the axis lines, the
    /// tick labels (escaped) and the axis titles (escaped).
    pub(crate) fn axes(
        &self,
        out: &mut String,
        (x_ticks, x_grid): (&[Tick], bool),
        y_ticks: &[Tick],
        x_title: &str,
        y_title: &str,
    ) {
        let (left, right, top, bottom) = self.margin;
        let (x0, x1) = (left, self.width - right);
        let (y0, y1) = (self.height - bottom, top);
        out.push_str("<g class=\"grid\">");
        for (v, _) in y_ticks {
            let y = self.py(*v);
            put!(
                out,
                "<line x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>"
            );
        }
        if x_grid {
            for (v, _) in x_ticks {
                let x = self.px(*v);
                put!(
                    out,
                    "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0:.1}\" y2=\"{y1:.1}\"/>"
                );
            }
        }
        out.push_str("</g><g class=\"axis\">");
        put!(
            out,
            "<line x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{y0:.1}\" y2=\"{y0:.1}\"/>\
             <line x1=\"{x0:.1}\" x2=\"{x0:.1}\" y1=\"{y0:.1}\" y2=\"{y1:.1}\"/>"
        );
        for (v, label) in x_ticks {
            let x = self.px(*v);
            put!(
                out,
                "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0:.1}\" y2=\"{:.1}\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                y0 + 4.0,
                y0 + 16.0,
                escape(label)
            );
        }
        for (v, label) in y_ticks {
            let y = self.py(*v);
            put!(
                out,
                "<line x1=\"{:.1}\" x2=\"{x0:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                x0 - 4.0,
                x0 - 6.0,
                y + 4.0,
                escape(label)
            );
        }
        put!(
            out,
            "<text class=\"at\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            (x0 + x1) / 2.0,
            self.height - 6.0,
            escape(x_title)
        );
        if !y_title.is_empty() {
            let (cx, cy) = (12.0, (y0 + y1) / 2.0);
            put!(
                out,
                "<text class=\"at\" x=\"{cx}\" y=\"{cy:.1}\" text-anchor=\"middle\" \
                 transform=\"rotate(-90 {cx} {cy:.1})\">{}</text>",
                escape(y_title)
            );
        }
        out.push_str("</g>");
    }

    /// SVG path data through `points` (data coordinates), to 0.1 px; consecutive
    /// points on the same pixel are dropped.
    pub(crate) fn path(&self, points: impl IntoIterator<Item = (f64, f64)>) -> String {
        let mut d = String::new();
        let mut last = None;
        for (x, y) in points {
            let p = (format!("{:.1}", self.px(x)), format!("{:.1}", self.py(y)));
            if last.as_ref() == Some(&p) {
                continue;
            }
            let _ = write!(
                d,
                "{}{},{}",
                if last.is_none() { "M" } else { "L" },
                p.0,
                p.1
            );
            last = Some(p);
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<script>alert("x&y")</script> 'q'"#),
            "&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt; &#39;q&#39;"
        );
        assert_eq!(escape("plain/path.csv"), "plain/path.csv");
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(trim(2.50, 2), "2.5");
        assert_eq!(trim(3.0, 2), "3");
        assert_eq!(trim(-0.0001, 2), "0");
        assert_eq!(duration_ms(0.5), "500 µs");
        assert_eq!(duration_ms(20.0), "20 ms");
        assert_eq!(duration_ms(1500.0), "1.5 s");
        assert_eq!(count(15000.0), "15\u{2009}000");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(1234567.5), "1\u{2009}234\u{2009}567.5");
        assert_eq!(significant(0.0082, 2), "0.0082");
        assert_eq!(significant(12.34, 3), "12.3");
        assert_eq!(significant(1234.6, 3), "1235");
        assert_eq!(significant(0.0, 3), "0");
        let labels = |ticks: &[f64]| -> Vec<String> {
            tick_labels(ticks).into_iter().map(|(_, l)| l).collect()
        };
        assert_eq!(
            labels(&[0.0, 0.00025, 0.0005, 0.00075, 0.001]),
            ["0", "0.00025", "0.0005", "0.00075", "0.001"]
        );
        assert_eq!(labels(&[0.0, 20.0, 40.0]), ["0", "20", "40"]);
        assert_eq!(labels(&[0.0, 2.5, 5.0]), ["0", "2.5", "5"]);
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }

    #[test]
    fn linear_scale_rounds_up_and_ticks_in_steps() {
        let s = Scale::zero_to(0.93);
        assert_eq!(s, Scale::Linear { lo: 0.0, hi: 1.0 });
        assert_eq!(
            s.ticks(0.0),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        assert_eq!(Scale::zero_to(2000.0).ticks(0.0).last(), Some(&2000.0));
        assert_eq!(Scale::zero_to(0.0), Scale::Linear { lo: 0.0, hi: 1.0 });
        assert_eq!(s.unit(0.5), 0.5);
        assert_eq!(s.unit(7.0), 1.0);
    }

    #[test]
    fn log_scale_widens_to_round_values() {
        let s = Scale::log(12.0, 3400.0, 1e-3);
        assert_eq!(
            s,
            Scale::Log {
                lo: 10.0,
                hi: 5000.0
            }
        );
        // 2.7 decades: decades first, then 2× and 5× where they do not crowd.
        assert_eq!(s.ticks(0.3), vec![10.0, 100.0, 1000.0]);
        assert_eq!(
            s.ticks(0.1),
            vec![
                10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0
            ]
        );
        assert_eq!(s.ticks(0.2), vec![10.0, 100.0, 1000.0, 5000.0]);
        let narrow = Scale::log(21.0, 29.0, 1e-3);
        assert_eq!(narrow, Scale::Log { lo: 20.0, hi: 50.0 });
        assert_eq!(narrow.ticks(0.15), vec![20.0, 30.0, 40.0, 50.0]);
        let point = Scale::log(20.0, 20.0, 1e-3);
        assert!(matches!(point, Scale::Log { lo, hi } if lo == 20.0 && hi == 50.0));
        assert_eq!(Scale::log(0.0, 0.0, 0.001).unit(0.0), 0.0);
    }

    #[test]
    fn frame_maps_and_paths() {
        let f = Frame {
            width: 200.0,
            height: 100.0,
            margin: (50.0, 50.0, 20.0, 30.0),
            x: Scale::Linear { lo: 0.0, hi: 10.0 },
            y: Scale::Linear { lo: 0.0, hi: 1.0 },
        };
        assert_eq!(
            (f.px(0.0), f.px(10.0), f.py(0.0), f.py(1.0)),
            (50.0, 150.0, 70.0, 20.0)
        );
        assert_eq!(
            f.path([(0.0, 0.0), (0.001, 0.0), (10.0, 1.0)]),
            "M50.0,70.0L150.0,20.0"
        );
    }
}
