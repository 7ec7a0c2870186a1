//! The operating-system level's `report.html`: the shared [`page`](crate::page)
//! with a section per run configuration.
//!
//! After the header (title, legend) come:
//!
//! 1. a contents list when there are several sections;
//! 2. per [`Section`]: the workload and machine descriptions, a table of the main
//!    numbers, then the charts of [`charts`](super::charts): turnaround CDFs and
//!    percentile bars per scope (all, G1..G4), context switches, cost, and
//!    completions over time;
//! 3. the footer, defining the terms.

use super::charts;
use super::metrics::{Metric, PolicySummary, Scope};
use super::output::Summary;
use crate::Result;
use crate::chart::Palette;
use crate::page::{self, Page, SIM_ONLY, description};
use crate::staged::Staged;
use crate::svg::{count, escape, put, trim};
use std::path::{Path, PathBuf};

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
    page::write(dir, &render_html(report), staged)
}

/// Renders the whole page (see the module docs).
pub fn render_html(report: &Report) -> String {
    let mut palette = Palette::default();
    for p in report.sections.iter().flat_map(|s| &s.summary.policies) {
        palette.add(&p.policy, p.sim_only);
    }
    let mut page = Page::open(&report.title, &palette);
    let out = page.body();
    if report.sections.len() > 1 {
        out.push_str("<nav class=\"toc\"><strong>Sections:</strong> ");
        for (i, s) in report.sections.iter().enumerate() {
            put!(out, "<a href=\"#s{}\">{}</a>", i + 1, escape(&s.title));
        }
        out.push_str("</nav>\n");
    }
    for (i, s) in report.sections.iter().enumerate() {
        section(out, i + 1, s, &palette);
    }
    page.finish(&terms(report.sections.iter().any(|s| s.summary.is_live())))
}

fn section(out: &mut String, n: usize, s: &Section, palette: &Palette) {
    let summary = &s.summary;
    put!(
        out,
        "<section id=\"s{n}\">\n<h2>{}</h2>\n<div class=\"desc\">",
        escape(&s.title)
    );
    description(out, Some("Workload"), &summary.workload);
    description(out, Some("Machine"), &summary.machine);
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

/// A number to 2 decimals, or a dash.
fn decimals2(v: Option<f64>) -> String {
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
    put!(
        out,
        "<tr class=\"p{i}\"><td>{}{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
         <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}%</td><td>{}</td><td>{}</td></tr>",
        palette.swatch(&p.policy),
        escape(&p.policy),
        if p.sim_only {
            format!(" {SIM_ONLY}")
        } else {
            String::new()
        },
        count(all.count as f64),
        decimals2(t.map(|s| s.mean)),
        decimals2(t.map(|s| s.p50)),
        decimals2(t.map(|s| s.p90)),
        decimals2(t.map(|s| s.p99)),
        decimals2(t.map(|s| s.p999)),
        decimals2(slowdown),
        decimals2(all.voluntary_per_invocation()),
        decimals2(all.involuntary_per_invocation()),
        trim(p.utilisation * 100.0, 1),
        format!("{:.2}", all.cost.billed_gb_s()),
        charts::usd(all.cost.usd()),
    );
}

/// The terms of the page, and where its times come from: the simulator,
/// or also the machine when a section is `live`.
fn terms(live: bool) -> String {
    let times = if live {
        "Times of live runs are measured on the machine; the others are simulated."
    } else {
        "Times are simulated, not measured on a machine."
    };
    format!(
        "turnaround = finish − arrival; execution = finish − first run (the billed \
         duration); slowdown = turnaround / (CPU + I/O). Groups by CPU demand (ALPS \
         Table 1): G1 ≤ 50 ms, G2 50–200 ms, G3 200–400 ms, G4 &gt; 400 ms. Percentiles \
         are nearest-rank from log-bucketed histograms (within 0.05%); CDF curves are \
         exact at their points, on a grid of 1/16 of a power of two. {times}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::Collector;
    use faasched_model::{Function, FunctionId, Group, MS, Outcome};
    use serde_json::json;

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
