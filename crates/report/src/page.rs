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
//! 2. the level's panels: its settings ([`Page::settings`]), headings, tables
//!    and charts, written into [`Page::body`];
//! 3. a footer: the terms the level's panels use, and where the numbers come
//!    from.
//!
//! The same inputs give the same bytes: no clock, no hash-map order, and
//! numbers printed at fixed precision. Text from user data (titles, policy
//! names, settings) is escaped.

use crate::Result;
use crate::chart::Palette;
use crate::staged::Staged;
use crate::svg::{escape, put};
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
section{scroll-margin-top:96px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
table.kv td,table.kv th{padding:1px 10px 1px 0;text-align:left;vertical-align:top}
table.kv th{color:var(--muted);font-weight:500}
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
    pub(crate) fn settings(&mut self, settings: &serde_json::Value) {
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

/// A JSON value as table text: strings bare, numbers and booleans as JSON,
/// `null` as a dash, arrays and objects as compact JSON.
fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "–".to_string(),
        other => other.to_string(),
    }
}

/// A free-form description (a run's settings, a workload, a machine) as a
/// key/value table, under `caption` if given: a row per key of an object,
/// or one cell holding any other value.
pub(crate) fn description(out: &mut String, caption: Option<&str>, value: &serde_json::Value) {
    out.push_str("<table class=\"kv\">");
    if let Some(caption) = caption {
        put!(out, "<caption>{}</caption>", escape(caption));
    }
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
    out.push_str("</table>");
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
