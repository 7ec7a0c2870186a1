//! `report.html`: one self-contained page (inline CSS and SVG, no script, no
//! external resource) with a section per run configuration.
//!
//! A page is:
//!
//! 1. a header: the title, a contents list when there are several sections, and
//!    the legend: one colour and line style per policy (sim-only policies
//!    dashed and badged), fixed for the whole page, with a checkbox each that
//!    hides the policy in every chart (CSS `:has`, no script; without it every
//!    policy shows);
//! 2. per [`Section`]: the workload and machine descriptions, a table of the main
//!    numbers, then the charts of [`crate::charts`]: turnaround CDFs and
//!    percentile bars per scope (all, G1..G4), context switches, cost, and
//!    completions over time;
//! 3. a footer defining the terms.
//!
//! The same [`Report`] gives the same bytes: no clock, no hash-map order, and
//! numbers printed at fixed precision. Text from user data (titles, policy
//! names, descriptions) is escaped.

use crate::Result;
use crate::charts::{self, Palette};
use crate::metrics::{Metric, PolicySummary, Scope};
use crate::output::Summary;
use crate::staged::Staged;
use crate::svg::{count, escape, put, trim};
use std::path::{Path, PathBuf};

/// The file [`write_report`] writes.
pub const REPORT_HTML: &str = "report.html";

/// A report: a title and one or more sections, each one run configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The page's title.
    pub title: String,
    /// One per configuration, in page order.
    pub sections: Vec<Section>,
}

/// One run configuration of a report: a workload on a machine under several
/// policies.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// The section's heading (e.g. the workload and load).
    pub title: String,
    /// What was measured; its `workload` and `machine` describe the section.
    pub summary: Summary,
}

impl Report {
    /// A report of one section.
    pub fn single(title: &str, section_title: &str, summary: Summary) -> Report {
        Report {
            title: title.to_string(),
            sections: vec![Section {
                title: section_title.to_string(),
                summary,
            }],
        }
    }
}

/// Writes `report.html` for `report` into `dir` (created if missing, through
/// [`Staged::create_dir`]), staged: it takes its place at `staged`'s commit.
/// Returns the file's path. Errors name the file (or the directory).
pub fn write_report(dir: &Path, report: &Report, staged: &mut Staged) -> Result<PathBuf> {
    staged.create_dir(dir)?;
    let path = dir.join(REPORT_HTML);
    staged.write(&path, render_html(report).as_bytes())?;
    Ok(path)
}

/// The page's stylesheet, which the node level's page shares. Policy colours
/// are inline attributes; the rules that hide a policy are generated per
/// policy by [`toggles`].
const CSS: &str = "\
:root{color-scheme:light;--fg:#1b1f24;--muted:#59636e;--line:#d0d7de;--bg:#fff;--soft:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
header.top{position:sticky;top:0;z-index:2;background:rgba(255,255,255,.96);border-bottom:1px solid var(--line);padding:8px 16px}
h1{font-size:20px;margin:0 0 6px}
h2{font-size:18px;margin:28px 0 8px;padding-top:8px;border-top:2px solid var(--fg)}
h3{font-size:15px;margin:22px 0 6px}
main,footer{max-width:1296px;margin:0 auto;padding:0 16px}
footer{color:var(--muted);font-size:12.5px;margin:32px auto 40px;border-top:1px solid var(--line);padding-top:10px}
.legend{display:flex;flex-wrap:wrap;gap:4px 18px;align-items:center}
.legend label{display:inline-flex;align-items:center;gap:6px;cursor:pointer;white-space:nowrap}
.legend .hint{color:var(--muted);font-size:12px}
.badge{display:inline-block;font-size:11px;line-height:16px;padding:0 6px;border-radius:8px;background:#fff3cd;border:1px solid #d4a72c;color:#6b4b00;font-weight:600;white-space:nowrap}
.desc{display:flex;flex-wrap:wrap;gap:12px 40px;align-items:flex-start}
section{scroll-margin-top:96px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
table.kv td,table.kv th{padding:1px 10px 1px 0;text-align:left;vertical-align:top}
table.kv th{color:var(--muted);font-weight:500}
table.kv caption{text-align:left;font-weight:600;padding-bottom:2px}
.numbers{overflow-x:auto}
table.main th,table.main td{padding:4px 7px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
table.main th:first-child,table.main td:first-child{text-align:left}
table.main thead th{background:var(--soft);font-weight:600;vertical-align:bottom}
.sw{display:inline-block;width:22px;height:10px;vertical-align:middle;margin-right:5px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure.chart{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px;background:#fff}
figure.chart svg{display:block;max-width:100%;height:auto}
figcaption{color:var(--muted);font-size:12px;max-width:580px;padding:2px 4px 0}
svg text{font:11px system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;fill:#24292f}
svg .ct{font-size:12.5px;font-weight:600}
svg .at{font-size:11.5px;fill:#59636e}
svg .empty{font-size:13px;fill:#8c959f}
svg .val{font-size:11px}
svg .grid line{stroke:#eaeef2}
svg .axis line{stroke:#8c959f}
svg .line{fill:none;stroke-width:2;stroke-linejoin:round}
svg .vol{fill-opacity:.4}
nav.toc a{margin-right:14px}
.note{color:var(--muted);font-size:12.5px}
";

/// Opens a page (this one and the node level's): the document head with
/// [`CSS`], then `extra_css`, then the rules hiding each of the first
/// `policies` palette indices, and the top header up to its heading, `title`
/// (escaped here). The header's legend comes next.
pub(crate) fn open_page(out: &mut String, title: &str, extra_css: &str, policies: usize) {
    let title = escape(title);
    put!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>\n{CSS}{extra_css}"
    );
    toggles(out, policies);
    put!(
        out,
        "</style>\n</head>\n<body>\n<header class=\"top\">\n<h1>{title}</h1>\n"
    );
}

/// The CSS rules that hide policy `i` when its legend checkbox is unticked,
/// for each of the first `policies` palette indices.
fn toggles(out: &mut String, policies: usize) {
    for i in 0..policies {
        put!(
            out,
            "body:has(#show-p{i}:not(:checked)) .p{i}{{display:none}}\n"
        );
    }
}

/// Renders the whole page (see the module docs).
pub fn render_html(report: &Report) -> String {
    let mut palette = Palette::default();
    for s in &report.sections {
        palette.add(&s.summary);
    }
    let mut out = String::with_capacity(256 * 1024);
    open_page(&mut out, &report.title, "", palette.iter().count());
    legend(&mut out, &palette);
    out.push_str("</header>\n<main>\n");
    if report.sections.len() > 1 {
        out.push_str("<nav class=\"toc\"><strong>Sections:</strong> ");
        for (i, s) in report.sections.iter().enumerate() {
            put!(&mut out, "<a href=\"#s{}\">{}</a>", i + 1, escape(&s.title));
        }
        out.push_str("</nav>\n");
    }
    for (i, s) in report.sections.iter().enumerate() {
        section(&mut out, i + 1, s, &palette);
    }
    out.push_str("</main>\n");
    footer(
        &mut out,
        report.sections.iter().any(|s| s.summary.is_live()),
    );
    out.push_str("</body>\n</html>\n");
    out
}

/// A small line sample in a policy's colour and dash (solid on the node
/// page, which has no sim-only policies).
pub(crate) fn swatch(i: usize, sim_only: bool) -> String {
    let dash = Palette::dash(i, sim_only)
        .map(|d| format!(" stroke-dasharray=\"{d}\""))
        .unwrap_or_default();
    format!(
        "<svg class=\"sw\" width=\"22\" height=\"10\" viewBox=\"0 0 22 10\" aria-hidden=\"true\">\
         <line x1=\"0\" y1=\"5\" x2=\"22\" y2=\"5\" stroke=\"{}\" stroke-width=\"3\"{dash}/></svg>",
        Palette::colour(i)
    )
}

/// The sim-only badge.
const SIM_ONLY: &str = "<span class=\"badge\" title=\"needs a mechanism a stock Linux kernel \
                        lacks; exists only in the simulator\">sim only</span>";

fn legend(out: &mut String, palette: &Palette) {
    out.push_str("<div class=\"legend\" role=\"group\" aria-label=\"policies\">");
    for (i, name, sim_only) in palette.iter() {
        put!(
            out,
            "<label><input type=\"checkbox\" id=\"show-p{i}\" checked>{}{}{}</label>",
            swatch(i, sim_only),
            escape(name),
            if sim_only { SIM_ONLY } else { "" }
        );
    }
    out.push_str(
        "<span class=\"hint\">untick a policy to hide it in every chart; \
         dashed lines: sim-only policies</span></div>\n",
    );
}

/// A JSON value as table text: strings bare, numbers and booleans as JSON,
/// `null` as a dash, arrays and objects as compact JSON.
fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "–".to_string(),
        other => other.to_string(),
    }
}

/// A free-form description as a key/value table.
fn description(out: &mut String, caption: &str, value: &serde_json::Value) {
    put!(out, "<table class=\"kv\"><caption>{caption}</caption>");
    kv_rows(out, value);
    out.push_str("</table>");
}

/// The rows of a key/value table: one per key of an object, or one cell
/// holding any other value (the node page's settings too).
pub(crate) fn kv_rows(out: &mut String, value: &serde_json::Value) {
    match value.as_object() {
        Some(map) => {
            for (k, v) in map {
                put!(
                    out,
                    "<tr><th>{}</th><td>{}</td></tr>",
                    escape(k),
                    escape(&json_text(v))
                );
            }
        }
        None => put!(out, "<tr><td>{}</td></tr>", escape(&json_text(value))),
    }
}

fn section(out: &mut String, n: usize, s: &Section, palette: &Palette) {
    let summary = &s.summary;
    put!(
        out,
        "<section id=\"s{n}\">\n<h2>{}</h2>\n<div class=\"desc\">",
        escape(&s.title)
    );
    description(out, "Workload", &summary.workload);
    description(out, "Machine", &summary.machine);
    out.push_str("</div>\n");
    let sim_only: Vec<String> = summary
        .policies
        .iter()
        .filter(|p| p.sim_only)
        .map(|p| escape(&p.policy))
        .collect();
    if !sim_only.is_empty() {
        put!(
            out,
            "<p class=\"note\">{SIM_ONLY} {} need{} a mechanism a stock Linux kernel lacks \
             (a patched kernel or an oracle): a bound to compare against, not something \
             to deploy.</p>\n",
            sim_only.join(", "),
            if sim_only.len() == 1 { "s" } else { "" }
        );
    }
    out.push_str("<h3>Main numbers (all invocations)</h3>\n");
    main_table(out, summary, palette);

    out.push_str(
        "<h3>Turnaround CDF</h3>\n<p class=\"note\">Share of invocations finished \
         within a turnaround (finish − arrival), per group of CPU demand (ALPS Table 1); \
         further left and steeper is better.</p>\n<div class=\"charts\">\n",
    );
    for scope in Scope::ALL {
        charts::cdf(out, summary, scope, palette);
    }
    out.push_str(
        "</div>\n<h3>Turnaround percentiles</h3>\n<p class=\"note\">Nearest-rank \
         percentiles and mean of the turnaround per group; bars on a log scale \
         (hover a bar for its value).</p>\n<div class=\"charts\">\n",
    );
    for scope in Scope::ALL {
        charts::percentiles(out, summary, scope, palette);
    }
    out.push_str("</div>\n<h3>Context switches and cost</h3>\n<div class=\"charts\">\n");
    charts::switches(out, summary, palette);
    charts::cost(out, summary, palette);
    out.push_str("</div>\n<h3>Completions over time</h3>\n<div class=\"charts\">\n");
    charts::completions(out, summary, palette);
    out.push_str("</div>\n</section>\n");
}

/// Milliseconds to 2 decimals, or a dash.
fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.2}"))
}

fn main_table(out: &mut String, summary: &Summary, palette: &Palette) {
    out.push_str(
        "<div class=\"numbers\"><table class=\"main\"><thead><tr><th>policy</th>\
         <th>invocations</th><th>mean<br>ms</th><th>p50<br>ms</th><th>p90<br>ms</th>\
         <th>p99<br>ms</th><th>p99.9<br>ms</th><th>mean<br>slowdown</th>\
         <th>voluntary<br>sw./inv.</th><th>involuntary<br>sw./inv.</th>\
         <th>utilisation</th><th>billed<br>GB-s</th><th>cost<br>USD</th></tr></thead><tbody>",
    );
    for p in &summary.policies {
        row(out, p, palette);
    }
    out.push_str(
        "</tbody></table></div>\n<p class=\"note\">Times are turnaround (finish − \
         arrival) over all invocations; slowdown = turnaround / (CPU + I/O) demand; \
         sw./inv.: context switches per invocation.</p>\n",
    );
}

fn row(out: &mut String, p: &PolicySummary, palette: &Palette) {
    let i = palette.index(&p.policy);
    let all = p.all();
    let t = all.stats(Metric::Turnaround);
    let slowdown = all.stats(Metric::Slowdown).map(|s| s.mean);
    let per = |v: Option<f64>| v.map_or_else(|| "–".to_string(), |v| format!("{v:.2}"));
    put!(
        out,
        "<tr><td>{}{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
         <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}%</td><td>{}</td><td>{}</td></tr>",
        swatch(i, p.sim_only),
        escape(&p.policy),
        if p.sim_only {
            format!(" {SIM_ONLY}")
        } else {
            String::new()
        },
        count(all.count as f64),
        ms(t.map(|s| s.mean)),
        ms(t.map(|s| s.p50)),
        ms(t.map(|s| s.p90)),
        ms(t.map(|s| s.p99)),
        ms(t.map(|s| s.p999)),
        per(slowdown),
        per(all.voluntary_per_invocation()),
        per(all.involuntary_per_invocation()),
        trim(p.utilisation * 100.0, 1),
        format!("{:.2}", all.cost.billed_gb_s()),
        charts::usd(all.cost.usd()),
    );
}

/// The terms of the page, and where its times come from: the simulator,
/// or also the machine when a section is `live`.
fn footer(out: &mut String, live: bool) {
    let times = if live {
        "Times of live runs are measured on the machine; the others are simulated."
    } else {
        "Times are simulated, not measured on a machine."
    };
    put!(
        out,
        "<footer><p><strong>Terms.</strong> turnaround = finish − arrival; \
         execution = finish − first run (the billed duration); slowdown = turnaround / \
         (CPU + I/O). Groups by CPU demand (ALPS Table 1): G1 ≤ 50 ms, G2 50–200 ms, \
         G3 200–400 ms, G4 &gt; 400 ms. Percentiles are nearest-rank from log-bucketed \
         histograms (within 0.05%); CDF curves are exact at their points, on a grid of \
         1/16 of a power of two. {times}</p>\
         <p>Written by faasched from the same data as summary.json; the same inputs \
         give the same bytes.</p></footer>\n"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Collector;
    use faasched_model::{Function, FunctionId, Group, MS, Outcome};
    use serde_json::json;
    use std::fs;

    fn outcome(id: u64, group: Group, arrival: u64, turnaround: u64, cpu: u64) -> Outcome {
        Outcome {
            id,
            function: Function {
                id: FunctionId(0),
                name: "f".into(),
            },
            group,
            arrival,
            first_run: arrival + (turnaround - cpu) / 2,
            finish: arrival + turnaround,
            cpu,
            io: 0,
            voluntary_switches: 1,
            involuntary_switches: id % 3,
            memory_mb: 128,
        }
    }

    fn policy(name: &str, sim_only: bool, stretch: u64) -> PolicySummary {
        let mut c = Collector::new(name, sim_only);
        for id in 0..300 {
            let cpu = (1 + id % 40) * 12 * MS;
            let group = Group::of(cpu);
            c.record(&outcome(id, group, id * 5 * MS, cpu * stretch / 10, cpu));
        }
        c.finish(0.6)
    }

    fn summary(name: &str) -> Summary {
        Summary {
            policies: vec![
                policy("cfs", false, 14),
                policy(name, false, 12),
                policy("srpt", true, 11),
            ],
            workload: json!({"name": "/tmp/<w>&.csv", "invocations": 300, "seed": null}),
            machine: json!({"cores": 4, "fair_class": "eevdf"}),
        }
    }

    fn report() -> Report {
        Report {
            title: "faasched <test>".to_string(),
            sections: vec![
                Section {
                    title: "first".to_string(),
                    summary: summary("<b>evil</b>"),
                },
                Section {
                    title: "second".to_string(),
                    summary: summary("fifo"),
                },
            ],
        }
    }

    #[test]
    fn one_chart_of_each_kind_per_scope_and_section() {
        let html = render_html(&report());
        let kinds = |k: &str| html.matches(&format!("data-kind=\"{k}\"")).count();
        assert_eq!(kinds("cdf"), 2 * 5);
        assert_eq!(kinds("percentiles"), 2 * 5);
        assert_eq!(kinds("switches"), 2);
        assert_eq!(kinds("cost"), 2);
        assert_eq!(kinds("completions"), 2);
        for scope in Scope::ALL {
            assert_eq!(
                html.matches(&format!("data-kind=\"cdf\" data-scope=\"{scope}\""))
                    .count(),
                2
            );
        }
        // Every CDF panel draws a line per policy (G4 included: 480 ms CPU).
        assert_eq!(
            html.matches("<path class=\"line pol").count(),
            2 * (5 + 1) * 3
        );
        assert_eq!(html.matches("<svg xmlns").count(), 2 * 13);
        assert!(html.contains("<section id=\"s2\">"));
        assert!(html.contains("href=\"#s2\""));
        assert_eq!(html.matches("<section ").count(), 2);
    }

    #[test]
    fn user_text_is_escaped() {
        let html = render_html(&report());
        assert!(!html.contains("<b>evil</b>"));
        assert!(html.contains("&lt;b&gt;evil&lt;/b&gt;"));
        assert!(!html.contains("<w>"));
        assert!(html.contains("/tmp/&lt;w&gt;&amp;.csv"));
        assert!(html.contains("<title>faasched &lt;test&gt;</title>"));
        // No script, no external resource.
        assert!(!html.contains("<script"));
        let outside_namespaces = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        assert!(!outside_namespaces.contains("http"));
        assert!(!html.contains("url("));
    }

    #[test]
    fn colours_follow_the_policy_across_sections() {
        let html = render_html(&report());
        // Four distinct policies over two sections: cfs p0, <b>evil</b> p1, srpt p2, fifo p3.
        for i in 0..4 {
            assert!(html.contains(&format!("id=\"show-p{i}\"")), "p{i}");
            assert!(html.contains(&format!("#show-p{i}:not(:checked)")), "p{i}");
        }
        assert!(!html.contains("id=\"show-p4\""));
        assert!(html.contains("class=\"line pol p2\" stroke=\"#009E73\" stroke-dasharray"));
        // The legend, then per section the note and the table row.
        assert_eq!(html.matches("class=\"badge\"").count(), 1 + 2 * 2);
    }

    #[test]
    fn a_live_section_says_its_times_are_measured() {
        let simulated = render_html(&report());
        assert!(simulated.contains("Times are simulated, not measured on a machine."));
        // The chart names its time in each section (a few times each).
        let per_section = simulated.matches("Completions over simulated time").count() / 2;
        assert!(per_section > 0);
        let mut live = report();
        live.sections[1].summary.policies[0].live = Some(json!({"lateness_us": 1}));
        let live = render_html(&live);
        assert!(live.contains("Times of live runs are measured on the machine"));
        assert!(!live.contains("Times are simulated, not measured"));
        let count = |what: &str| live.matches(what).count();
        assert_eq!(count("Completions over simulated time"), per_section);
        assert_eq!(count("Completions over measured time"), per_section);
    }

    #[test]
    fn the_completions_caption_gives_each_policys_bucket_width() {
        let one = render_html(&report());
        assert!(!one.contains(", by policy ("), "equal runs, one width");
        // A run a thousand times as long has wider buckets.
        let mut c = Collector::new("slow", false);
        for id in 0..300 {
            c.record(&outcome(id, Group::G1, id * 5_000 * MS, 40 * MS, 12 * MS));
        }
        let mut mixed = report();
        mixed.sections[0].summary.policies.push(c.finish(0.6));
        let html = render_html(&mixed);
        let at = html.find("Finishes counted").unwrap();
        assert!(
            html.contains("8.39 ms to 8.59 s, by policy ("),
            "{}",
            &html[at..at + 200]
        );
    }

    #[test]
    fn same_report_same_bytes() {
        let (a, b) = (render_html(&report()), render_html(&report()));
        assert!(a == b, "two renders differ");
        assert!(!a.contains("NaN") && !a.contains("inf"));
    }

    #[test]
    fn writes_report_html_and_names_the_file_on_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut staged = Staged::new();
        let path = write_report(&dir.path().join("out"), &report(), &mut staged).unwrap();
        staged.commit().unwrap();
        assert_eq!(path, dir.path().join("out").join(REPORT_HTML));
        assert_eq!(fs::read_to_string(&path).unwrap(), render_html(&report()));
        // A file where the directory should be.
        let blocker = dir.path().join("file");
        fs::write(&blocker, "x").unwrap();
        let err = write_report(&blocker, &report(), &mut Staged::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("file"), "{err}");
        assert!(err.contains("not a directory"), "{err}");
        fs::create_dir(dir.path().join("d")).unwrap();
        fs::create_dir(dir.path().join("d").join(REPORT_HTML)).unwrap();
        let err = write_report(&dir.path().join("d"), &report(), &mut Staged::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains(REPORT_HTML), "{err}");
    }

    #[test]
    fn empty_groups_and_policies_still_render() {
        let mut s = summary("fifo");
        s.policies.push(Collector::new("idle", false).finish(0.0));
        let html = render_html(&Report::single("t", "s", s));
        assert!(!html.contains("NaN"));
        let empty = render_html(&Report::single(
            "t",
            "s",
            Summary {
                policies: Vec::new(),
                workload: json!(null),
                machine: json!({}),
            },
        ));
        assert!(empty.contains("</html>"));
        assert_eq!(empty.matches("no invocations in this group").count(), 2 * 5);
        assert!(!empty.contains("NaN"));
    }
}
