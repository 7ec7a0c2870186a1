//! The page every level's `report.html` is, which each level fills with its
//! own panels: one self-contained file (inline CSS and SVG, no script, no
//! external resource).
//!
//! A page is:
//!
//! 1. a sticky header: the title and the legend, one colour and line style
//!    per policy of the page's [`Palette`] (sim-only policies dashed and
//!    badged), with a checkbox each that hides the policy in every chart and
//!    table (CSS `:has`, no script; without it every policy shows);
//! 2. the level's panels: its settings ([`Page::settings`]: a line per
//!    setting, nested objects as indented lists, floats to four significant
//!    digits, long values wrapped), headings, tables and charts, written into
//!    [`Page::body`];
//! 3. a footer: the terms the level's panels use, and where the numbers come
//!    from.
//!
//! The same inputs give the same bytes: no clock, no hash-map order, and
//! numbers printed at fixed precision. Text from user data (titles, policy
//! names, settings) is escaped.

use crate::Result;
use crate::chart::Palette;
use crate::staged::Staged;
use crate::svg::{escape, put, significant};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The file every level's report is written to.
pub const REPORT_HTML: &str = "report.html";

/// The stylesheet of every page. Policy colours are inline attributes; the
/// rules that hide a policy are generated per policy by [`toggles`].
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
.desc>table{min-width:0}
section{scroll-margin-top:96px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
table.kv{max-width:100%}
table.kv td,table.kv th{padding:1px 10px 1px 0;text-align:left;vertical-align:top}
table.kv th{color:var(--muted);font-weight:500;white-space:nowrap}
table.kv td{overflow-wrap:anywhere}
table.kv table.kv{border-collapse:separate;border-spacing:0;border-left:2px solid var(--line);padding-left:8px;margin:0 0 3px}
table.kv caption{text-align:left;font-weight:600;padding-bottom:2px}
.numbers{overflow-x:auto}
table.main th,table.main td{padding:4px 7px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
table.main th:first-child,table.main td:first-child{text-align:left}
table.main thead th{background:var(--soft);font-weight:600;vertical-align:bottom}
table.main tr.fn td{color:var(--muted)}
table.main tr.fn td:first-child{padding-left:28px}
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

/// The sim-only badge, beside a policy that needs a mechanism only the
/// simulator has.
pub(crate) const SIM_ONLY: &str = "<span class=\"badge\" title=\"needs a mechanism a stock \
                                   Linux kernel lacks; exists only in the simulator\">sim \
                                   only</span>";

/// A page being written (see the module docs): opened with its header,
/// filled with a level's panels, finished with its footer.
#[derive(Debug)]
pub(crate) struct Page {
    out: String,
}

impl Page {
    /// Opens a page titled `title` (escaped here) for the policies of
    /// `palette`: the document head with the stylesheet and the rules that
    /// hide each policy, the header with the title and the legend, and the
    /// start of the body.
    pub(crate) fn open(title: &str, palette: &Palette) -> Page {
        let mut out = String::with_capacity(64 * 1024);
        let title = escape(title);
        put!(
            &mut out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{title}</title>\n<style>\n{CSS}"
        );
        toggles(&mut out, palette.len());
        put!(
            &mut out,
            "</style>\n</head>\n<body>\n<header class=\"top\">\n<h1>{title}</h1>\n"
        );
        legend(&mut out, palette);
        out.push_str("</header>\n<main>\n");
        Page { out }
    }

    /// The run's settings under their heading, as [`description`] lists them.
    pub(crate) fn settings(&mut self, settings: &Value) {
        self.out.push_str("<h2>Settings</h2>\n");
        description(&mut self.out, None, settings);
        self.out.push('\n');
    }

    /// The body so far, for the level's panels.
    pub(crate) fn body(&mut self) -> &mut String {
        &mut self.out
    }

    /// The finished page: the body closed, then the footer with `terms`
    /// (HTML: the level's words defined, escaped where they hold user text;
    /// none if empty) and where the page's numbers come from.
    pub(crate) fn finish(mut self, terms: &str) -> String {
        self.out.push_str("</main>\n<footer>");
        if !terms.is_empty() {
            put!(&mut self.out, "<p><strong>Terms.</strong> {terms}</p>");
        }
        self.out.push_str(
            "<p>Written by faasched from the same data as summary.json; the same inputs \
             give the same bytes.</p></footer>\n</body>\n</html>\n",
        );
        self.out
    }
}

/// Writes a rendered page as `report.html` into `dir` (created if missing,
/// through [`Staged::create_dir`]), staged: it takes its place at `staged`'s
/// commit. Returns the file's path. Errors name the file (or the directory).
pub(crate) fn write(dir: &Path, html: &str, staged: &mut Staged) -> Result<PathBuf> {
    staged.create_dir(dir)?;
    let path = dir.join(REPORT_HTML);
    staged.write(&path, html.as_bytes())?;
    Ok(path)
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

/// The legend: a checkbox per policy of `palette`, with its swatch, name and
/// (sim-only) badge.
fn legend(out: &mut String, palette: &Palette) {
    out.push_str("<div class=\"legend\" role=\"group\" aria-label=\"policies\">");
    for (i, name, sim_only) in palette.iter() {
        put!(
            out,
            "<label><input type=\"checkbox\" id=\"show-p{i}\" checked>{}{}{}</label>",
            palette.swatch(name),
            escape(name),
            if sim_only { SIM_ONLY } else { "" }
        );
    }
    let dashed = if palette.any_sim_only() {
        "; dashed lines: sim-only policies"
    } else {
        ""
    };
    put!(
        out,
        "<span class=\"hint\">untick a policy to hide it in every chart and table{dashed}\
         </span></div>\n"
    );
}

/// A free-form description (a run's settings, a workload, a machine) as a
/// key/value table, under `caption` if given: a row per key of an object,
/// nested objects as indented tables of their own, so that every setting
/// reads as a line rather than a run of JSON; any other value is one cell.
pub(crate) fn description(out: &mut String, caption: Option<&str>, value: &Value) {
    out.push_str("<table class=\"kv\">");
    if let Some(caption) = caption {
        put!(out, "<caption>{}</caption>", escape(caption));
    }
    match value {
        Value::Object(map) if !map.is_empty() => rows(out, map),
        other => {
            out.push_str("<tr><td>");
            cell(out, other);
            out.push_str("</td></tr>");
        }
    }
    out.push_str("</table>");
}

/// A row per key of `map`: the key, then its value as [`cell`] writes it.
fn rows(out: &mut String, map: &serde_json::Map<String, Value>) {
    for (k, v) in map {
        put!(out, "<tr><th>{}</th><td>", escape(k));
        cell(out, v);
        out.push_str("</td></tr>");
    }
}

/// A value in a key/value table: an object as a nested table, an array
/// holding objects as a nested table per element, anything else as
/// [`text`].
fn cell(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push_str("<table class=\"kv\">");
            rows(out, map);
            out.push_str("</table>");
        }
        Value::Array(items) if items.iter().any(Value::is_object) => {
            for item in items {
                match item {
                    Value::Object(_) => cell(out, item),
                    other => put!(out, "<div>{}</div>", escape(&text(other))),
                }
            }
        }
        other => out.push_str(&escape(&text(other))),
    }
}

/// Significant digits a setting's float is shown to: enough to tell
/// settings apart, few enough to read (`0.3333`, not `0.3333333333333333`).
const SETTING_DIGITS: i32 = 4;

/// A value as text: strings bare, integers and booleans as they are, floats
/// to [`SETTING_DIGITS`] significant digits (never fewer than their integer
/// digits), `null` as a dash, an empty array or object as `none`, an array
/// as its items comma-separated (nested arrays bracketed), an object inside
/// one as braced `key: value` pairs.
fn text(value: &Value) -> String {
    let nested = |v: &Value| match v {
        Value::Array(items) if !items.is_empty() => format!("[{}]", text(v)),
        Value::Object(map) if !map.is_empty() => format!("{{{}}}", text(v)),
        _ => text(v),
    };
    match value {
        Value::Null => "–".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => significant(f, SETTING_DIGITS),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "none".to_string(),
        Value::Object(map) if map.is_empty() => "none".to_string(),
        Value::Array(items) => items.iter().map(nested).collect::<Vec<_>>().join(", "),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}: {}", nested(v)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page(palette: &Palette) -> String {
        let mut page = Page::open("a <title>", palette);
        page.settings(&json!({"seed": 1}));
        page.body().push_str("<h2>panel</h2>\n");
        page.finish("x = y")
    }

    #[test]
    fn a_page_is_head_header_panels_and_footer_in_order() {
        let html = page(&Palette::of(["cfs", "fifo"]));
        let at = |what: &str| html.find(what).unwrap_or_else(|| panic!("no {what}"));
        assert!(html.starts_with("<!DOCTYPE html>\n"));
        assert!(html.ends_with("</html>\n"));
        assert!(at("<title>a &lt;title&gt;</title>") < at("<h1>a &lt;title&gt;</h1>"));
        assert!(at("#show-p1:not(:checked)") < at("</style>"));
        assert!(at("id=\"show-p1\"") < at("<main>"));
        assert!(at("<h2>Settings</h2>") < at("<h2>panel</h2>"));
        assert!(at("<h2>panel</h2>") < at("<footer><p><strong>Terms.</strong> x = y</p>"));
        assert!(!html.contains("show-p2") && !html.contains("sim-only"));
        assert!(!html.contains("<title>a <title>"));
    }

    #[test]
    fn sim_only_policies_are_badged_and_the_legend_says_they_are_dashed() {
        let mut palette = Palette::of(["cfs"]);
        palette.add("srpt", true);
        let html = page(&palette);
        assert_eq!(html.matches("class=\"badge\"").count(), 1);
        assert!(html.contains("dashed lines: sim-only policies"));
        assert!(page(&Palette::default()).contains("</html>"));
        assert!(!Page::open("t", &palette).finish("").contains("Terms."));
    }

    /// The markup `description` gives `value`.
    fn described(value: &Value) -> String {
        let mut out = String::new();
        description(&mut out, None, value);
        out
    }

    #[test]
    fn settings_read_as_key_value_lines_with_nested_objects_indented() {
        let html = described(&json!({
            "workload": {"name": "azure <functions>", "length": {"seconds": 600.0}},
            "seed": 12345,
            "load": 0.333333333,
            "cost_usd": 0.0000166667,
            "capacity_rps": 123456.789,
            "minutes": [480, 540],
            "rate_per_s": [[0.0, 1.5], [60.0, 2.25]],
            "nodes": [{"node": "a:1", "cold_starts": 3}, {"node": "b:2", "cold_starts": 0}],
            "errors": {},
            "memory_wait_s": null,
            "fresh": true,
        }));
        assert!(html.starts_with(
            "<table class=\"kv\"><tr><th>workload</th><td>\
             <table class=\"kv\"><tr><th>name</th><td>azure &lt;functions&gt;</td></tr>\
             <tr><th>length</th><td><table class=\"kv\"><tr><th>seconds</th><td>600</td>"
        ));
        for line in [
            "<th>seed</th><td>12345</td>",
            "<th>load</th><td>0.3333</td>",
            "<th>cost_usd</th><td>0.00001667</td>",
            "<th>capacity_rps</th><td>123457</td>",
            "<th>minutes</th><td>480, 540</td>",
            "<th>rate_per_s</th><td>[0, 1.5], [60, 2.25]</td>",
            "<th>node</th><td>b:2</td>",
            "<th>errors</th><td>none</td>",
            "<th>memory_wait_s</th><td>–</td>",
            "<th>fresh</th><td>true</td>",
        ] {
            assert!(html.contains(line), "{line} in {html}");
        }
        assert_eq!(html.matches("<table class=\"kv\">").count(), 5);
        assert!(
            !html.contains('{') && !html.contains("\":"),
            "no JSON: {html}"
        );
        assert_eq!(
            described(&json!(null)),
            "<table class=\"kv\"><tr><td>–</td></tr></table>"
        );
        assert_eq!(text(&json!([{"a": [1.0, {}]}, 2])), "{a: [1, none]}, 2");
    }

    #[test]
    fn writes_report_html_and_names_the_file_on_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut staged = Staged::new();
        let path = write(&dir.path().join("out"), "<p>", &mut staged).unwrap();
        staged.commit().unwrap();
        assert_eq!(path, dir.path().join("out").join(REPORT_HTML));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "<p>");
        // A file where the directory should be.
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "x").unwrap();
        let err = write(&blocker, "<p>", &mut Staged::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("file") && err.contains("not a directory"),
            "{err}"
        );
        std::fs::create_dir_all(dir.path().join("d").join(REPORT_HTML)).unwrap();
        let err = write(&dir.path().join("d"), "<p>", &mut Staged::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains(REPORT_HTML), "{err}");
    }
}
