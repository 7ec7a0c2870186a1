//! The `report.html` of a capacity search: per policy, what the target read
//! at every rate the search tried, against the rate, with the target's limit
//! across, the shape of SledgeScale's Figs. 9–12 (a tail metric against the
//! offered load); and the capacities found, in a table.

use super::Axis;
use super::html::{plotted, rate_axes, shown, value_axis};
use crate::Result;
use crate::chart::{MARGIN, PANEL, Palette};
use crate::page::{self, Page};
use crate::staged::Staged;
use crate::svg::{Frame, Scale, count, escape, put, trim};
use std::path::{Path, PathBuf};

/// One rate a search tried.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CapacityProbe {
    /// Offered requests per second.
    pub rate: f64,
    /// What the target read there; `None` when nothing was there to read.
    pub value: Option<f64>,
    /// Whether the rate held (the target met, drops within their limit).
    pub holds: bool,
}

/// One policy's searches.
#[derive(Clone, Debug, PartialEq)]
pub struct CapacityCurve {
    /// The policy's name.
    pub policy: String,
    /// The capacity reported for it (the median over seeds), requests/s.
    pub capacity: f64,
    /// The spread of the seeds' capacities, requests/s.
    pub min: f64,
    /// See `min`.
    pub max: f64,
    /// Every probe of every seed.
    pub probes: Vec<CapacityProbe>,
}

/// What a capacity page shows.
#[derive(Clone, Copy, Debug)]
pub struct CapacityPage<'a> {
    /// The page's title.
    pub title: &'a str,
    /// The search's settings, as summary.json records them.
    pub settings: &'a serde_json::Value,
    /// The target as the command line spells it (`p99.9-slowdown=200`).
    pub target: &'a str,
    /// What the target reads, in words (`p99.9 slowdown`): the value axis.
    pub metric: &'a str,
    /// How the target's values are drawn (latency values in µs).
    pub axis: Axis,
    /// The target's limit, in its values' unit.
    pub limit: f64,
    /// The workers' capacity, requests/s (the table's load column).
    pub workers_capacity: f64,
    /// One per policy, in the order given.
    pub curves: &'a [CapacityCurve],
}

/// Writes the capacity page's `report.html` into `dir` (created if missing),
/// staged: it takes its place at `staged`'s commit. Returns the file's path.
pub fn write_capacity_report(
    dir: &Path,
    page: &CapacityPage,
    staged: &mut Staged,
) -> Result<PathBuf> {
    page::write(dir, &render_capacity_html(page), staged)
}

/// Renders the capacity page.
pub fn render_capacity_html(page: &CapacityPage) -> String {
    let policies = Palette::of(page.curves.iter().map(|c| c.policy.as_str()));
    let mut html = Page::open(page.title, &policies);
    html.settings(page.settings);
    let out = html.body();
    put!(out, "<h2>Capacity at {}</h2>\n", escape(page.target));
    table(out, page, &policies);
    out.push_str(
        "<h2>What each rate read</h2>\n<p class=\"note\">Every rate each seed's search \
         tried: a filled marker held, a hollow one failed (the target missed, or too \
         many requests dropped); the dashed line is the target's limit, a policy's \
         vertical line its capacity.</p>\n<div class=\"charts\">\n",
    );
    chart(out, page, &policies);
    out.push_str("</div>\n");
    html.finish("")
}

fn table(out: &mut String, page: &CapacityPage, policies: &Palette) {
    out.push_str(
        "<div class=\"numbers\"><table class=\"main\"><thead><tr><th>policy</th>\
         <th>capacity<br>requests/s</th><th>seeds' min – max</th>\
         <th>share of the<br>workers' capacity</th></tr></thead><tbody>",
    );
    for c in page.curves {
        let i = policies.index(&c.policy);
        let load = if page.workers_capacity > 0.0 {
            format!("{}%", trim(c.capacity / page.workers_capacity * 100.0, 1))
        } else {
            "–".to_string()
        };
        put!(
            out,
            "<tr class=\"p{i}\"><td>{}{}</td><td>{}</td><td>{} – {}</td><td>{load}</td></tr>",
            policies.swatch(&c.policy),
            escape(&c.policy),
            count(c.capacity.round()),
            count(c.min.round()),
            count(c.max.round()),
        );
    }
    out.push_str("</tbody></table></div>\n");
}

fn chart(out: &mut String, page: &CapacityPage, policies: &Palette) {
    let mut values: Vec<f64> = page
        .curves
        .iter()
        .flat_map(|c| c.probes.iter().filter_map(|p| p.value))
        .collect();
    values.push(page.limit);
    let max_rate = page
        .curves
        .iter()
        .flat_map(|c| c.probes.iter().map(|p| p.rate))
        .fold(0.0, f64::max);
    let (y, y_ticks) = value_axis(page.axis, &values, PANEL.1 * 1.5);
    let frame = Frame {
        width: PANEL.0 * 2.0,
        height: PANEL.1 * 1.5,
        margin: MARGIN,
        x: Scale::zero_to(max_rate),
        y,
    };
    put!(
        out,
        "<figure class=\"chart\" data-kind=\"capacity\" data-target=\"{}\">",
        escape(page.target)
    );
    frame.open(out, &format!("{} against the offered load", page.metric));
    rate_axes(out, &frame, page.axis, &y_ticks, page.metric);
    if max_rate <= 0.0 {
        frame.no_data(out, "no rate tried");
    }
    let limit_y = frame.py(plotted(page.axis, page.limit));
    put!(
        out,
        "<line class=\"target\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{limit_y:.1}\" \
         y2=\"{limit_y:.1}\" stroke=\"currentColor\" stroke-dasharray=\"6 4\">\
         <title>limit {}</title></line>",
        frame.px(0.0),
        frame.px(max_rate),
        shown(page.axis, page.limit)
    );
    let (bottom, top) = (PANEL.1 * 1.5 - MARGIN.3, MARGIN.2);
    for c in page.curves {
        let x = frame.px(c.capacity);
        put!(
            out,
            "<line {} x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{bottom:.1}\" y2=\"{top:.1}\">\
             <title>{}: capacity {} requests/s</title></line>",
            policies.line_attrs(&c.policy),
            escape(&c.policy),
            count(c.capacity.round())
        );
        let i = policies.index(&c.policy);
        let colour = policies.colour(&c.policy);
        for p in &c.probes {
            let Some(v) = p.value else { continue };
            let fill = if p.holds {
                format!("fill=\"{colour}\"")
            } else {
                format!("fill=\"none\" stroke=\"{colour}\"")
            };
            put!(
                out,
                "<circle class=\"pol p{i}\" {fill} cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\">\
                 <title>{} at {} requests/s: {} ({})</title></circle>",
                frame.px(p.rate),
                frame.py(plotted(page.axis, v)),
                escape(&c.policy),
                trim(p.rate, 3),
                shown(page.axis, v),
                if p.holds { "held" } else { "failed" }
            );
        }
    }
    Frame::close(out);
    out.push_str("</figure>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(curves: &[CapacityCurve]) -> String {
        let settings = serde_json::json!({"workload": "lognormal"});
        render_capacity_html(&CapacityPage {
            title: "capacity",
            settings: &settings,
            target: "p99.9-slowdown=200",
            metric: "p99.9 slowdown",
            axis: Axis::Ratio,
            limit: 200.0,
            workers_capacity: 600.0,
            curves,
        })
    }

    #[test]
    fn every_probe_is_a_marker_filled_when_it_held_and_each_capacity_a_row() {
        let curves = [
            CapacityCurve {
                policy: "sledgescale".into(),
                capacity: 300.0,
                min: 290.0,
                max: 310.0,
                probes: vec![
                    CapacityProbe {
                        rate: 300.0,
                        value: Some(3.0),
                        holds: true,
                    },
                    CapacityProbe {
                        rate: 600.0,
                        value: Some(900.0),
                        holds: false,
                    },
                    CapacityProbe {
                        rate: 450.0,
                        value: None,
                        holds: false,
                    },
                ],
            },
            CapacityCurve {
                policy: "a<b".into(),
                capacity: 0.0,
                min: 0.0,
                max: 0.0,
                probes: vec![],
            },
        ];
        let html = page(&curves);
        assert_eq!(html.matches("<circle").count(), 2);
        assert_eq!(html.matches("fill=\"none\"").count(), 1);
        assert!(html.contains("sledgescale at 300 requests/s: 3 (held)"));
        assert!(html.contains("sledgescale at 600 requests/s: 900 (failed)"));
        assert!(html.contains("<td>50%</td>"));
        assert!(html.contains("a&lt;b") && !html.contains("a<b"));
        assert!(html.contains("<title>limit 200</title>"));
        assert_eq!(html, page(&curves), "same inputs, same bytes");
    }

    #[test]
    fn a_search_with_no_probe_says_so() {
        let html = page(&[]);
        assert!(html.contains("no rate tried"));
    }
}
