//! The node level's outputs: the table's text, summary.json and summary.csv,
//! and report.html.

use faasched_model::node::{RequestId, RequestInfo, RequestOutcome, WorkerId};
use faasched_model::{FunctionId, Functions, MS, US};
use faasched_report::node::{
    Collector, Load, METRICS, PolicySummary, SUMMARY_CSV_HEADER, SUMMARY_SCHEMA_VERSION, Summary,
    Usage, render_html, render_table, write_outputs, write_report,
};
use faasched_report::{Error, REPORT_HTML, Staged};
use serde_json::{Value, json};
use std::fs;

/// Function 0 `short` works 10 µs, function 1 `long` 1 ms; deadlines 10 × work.
fn functions() -> Functions {
    let mut f = Functions::new();
    f.intern("short");
    f.intern("long");
    f
}

/// A request of `function` arriving at 0, finishing after `latency` µs
/// (`None`: dropped), preempted `preemptions` times.
fn outcome(function: u32, latency: Option<u64>, preemptions: u32) -> RequestOutcome {
    let work = if function == 0 { 10 * US } else { MS };
    RequestOutcome {
        info: RequestInfo {
            id: RequestId(0),
            function: FunctionId(function),
            arrival: 0,
            deadline: 10 * work,
            estimate: work,
        },
        work,
        dispatcher: 0,
        worker: latency.map(|_| WorkerId(0)),
        first_run: latency.map(|_| 0),
        finish: latency.map(|l| l * US),
        preemptions,
    }
}

/// `policy` over `outcomes` (function, latency µs, preemptions), a 1 ms span.
fn policy(
    name: &str,
    outcomes: &[(u32, Option<u64>, u32)],
    workers: Vec<f64>,
    dispatcher: f64,
) -> PolicySummary {
    let mut c = Collector::new(name);
    for &(f, l, p) in outcomes {
        c.record(&outcome(f, l, p));
    }
    c.finish(
        &functions(),
        Usage {
            span: MS,
            workers,
            dispatchers: vec![dispatcher],
        },
    )
}

/// At `rate`: sledgescale finishes everything, one short request late;
/// darc drops one short and the long request. `stretch` multiplies latencies.
fn load(rate: f64, stretch: u64) -> Load {
    Load {
        rate,
        policies: vec![
            policy(
                "sledgescale",
                &[
                    (0, Some(10 * stretch), 0),
                    (0, Some(20 * stretch), 0),
                    (0, Some(150 * stretch), 0),
                    (1, Some(1500 * stretch), 1),
                ],
                vec![0.5, 0.7],
                0.1,
            ),
            policy(
                "darc",
                &[
                    (0, Some(10 * stretch), 0),
                    (0, Some(12 * stretch), 0),
                    (0, None, 0),
                    (1, None, 0),
                ],
                vec![0.2, 0.3],
                0.05,
            ),
        ],
    }
}

fn settings() -> Value {
    json!({"workload": "hand-made <test>", "workers": 2, "dispatchers": 1, "seconds": 0.001, "seed": 1})
}

fn single() -> Summary {
    Summary {
        settings: settings(),
        loads: vec![load(1000.0, 1)],
    }
}

fn sweep() -> Summary {
    Summary {
        settings: settings(),
        loads: vec![load(2000.0, 3), load(1000.0, 1), load(1500.0, 2)],
    }
}

#[test]
fn the_table_on_a_small_case() {
    let want = "\
p50/p99/p999: latency in µs over finished requests; sd_p999: p99.9 slowdown (latency / work);
miss_%: finished after the deadline or dropped, of all requests; rps: finished per second;
preempt: preemptions per finished request; w_util/d_util: mean worker/dispatcher busy time
policy       function  requests  dropped  miss_%  p50_us  p99_us  p999_us  sd_p999   rps  preempt  w_util_%  d_util_%
offered 1000 requests/s
sledgescale  all              4        0   25.00    20.0  1500.0   1500.0    15.00  4000     0.25      60.0      10.0
             short            3        0   33.33    20.0   150.0    150.0    15.00  3000     0.00
             long             1        0    0.00  1500.0  1500.0   1500.0     1.50  1000     1.00

darc         all              4        2   50.00    10.0    12.0     12.0     1.20  2000     0.00      25.0       5.0
             short            3        1   33.33    10.0    12.0     12.0     1.20  2000     0.00
             long             1        1  100.00       -       -        -        -     0        -
";
    let got = render_table(&single());
    assert_eq!(got, want, "\n{got}");
}

#[test]
fn summary_json_keys_and_csv_rows() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut staged = Staged::new();
    write_outputs(&out, &sweep(), &mut staged).unwrap();
    staged.commit().unwrap();

    let text = fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(text.starts_with("{\n  \"schema_version\": 1,\n  \"faasched_version\": \""));
    let json: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "schema_version",
            "faasched_version",
            "settings",
            "rows",
            "loads"
        ]
    );
    assert_eq!(json["schema_version"], SUMMARY_SCHEMA_VERSION);
    assert_eq!(json["settings"], settings());
    let rows = json["rows"].as_array().unwrap();
    // 3 rates × 2 policies × (all, short, long), in the order given.
    assert_eq!(rows.len(), 18);
    let row_keys: Vec<&str> = rows[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(row_keys.join(","), SUMMARY_CSV_HEADER);
    assert_eq!(rows[0]["rate_rps"], 2000.0);
    assert_eq!(rows[0]["policy"], "sledgescale");
    assert_eq!(rows[0]["function"], "all");
    assert_eq!(rows[3]["policy"], "darc");
    assert_eq!(rows[6]["rate_rps"], 1000.0);
    // darc's long request was dropped: no latency, a miss rate of 1.
    let long = &rows[11];
    assert_eq!(
        (&long["function"], &long["dropped"]),
        (&json!("long"), &json!(1))
    );
    assert_eq!(long["latency_p999_us"], Value::Null);
    assert_eq!(long["miss_rate"], 1.0);
    assert_eq!(rows[6]["latency_p999_us"], 1500.0);
    assert_eq!(rows[6]["throughput_rps"], 4000.0);
    assert_eq!(rows[6]["preemptions_per_request"], 0.25);

    let loads = json["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 3);
    assert_eq!(loads[1]["rate_rps"], 1000.0);
    let policies: Vec<&str> = loads[1]["policies"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(policies, ["sledgescale", "darc"]);
    assert_eq!(
        loads[1]["policies"]["sledgescale"],
        json!({
            "span_ms": 1.0,
            "worker_utilisation": [0.5, 0.7],
            "dispatcher_utilisation": [0.1],
            "mean_worker_utilisation": 0.6,
            "mean_dispatcher_utilisation": 0.1,
        })
    );

    let csv = fs::read_to_string(out.join("summary.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], SUMMARY_CSV_HEADER);
    assert_eq!(lines.len(), 1 + 18);
    assert!(
        lines[12].starts_with("1000.0,darc,long,1,0,1,1,1.0,0.0,,,,,,,,,,,"),
        "{}",
        lines[12]
    );

    // Same summary, same bytes.
    let again = dir.path().join("again");
    let mut staged = Staged::new();
    write_outputs(&again, &sweep(), &mut staged).unwrap();
    staged.commit().unwrap();
    for file in ["summary.json", "summary.csv"] {
        assert_eq!(
            fs::read(out.join(file)).unwrap(),
            fs::read(again.join(file)).unwrap()
        );
    }
}

#[test]
fn a_policy_named_twice_at_one_rate_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = single();
    let twice = s.loads[0].policies[0].clone();
    s.loads[0].policies.push(twice);
    let out = dir.path().join("run");
    let err = write_outputs(&out, &s, &mut Staged::new()).unwrap_err();
    assert!(matches!(&err, Error::DuplicatePolicy { policy } if policy == "sledgescale"));
    assert!(!out.exists());
    // The same policy at two rates is a sweep, not a duplicate.
    let mut staged = Staged::new();
    write_outputs(&out, &sweep(), &mut staged).unwrap();
}

#[test]
fn a_sweep_draws_one_curve_chart_per_metric_and_scope() {
    let html = render_html("node <sweep>", &sweep());
    for metric in METRICS {
        for scope in ["all", "short", "long"] {
            let figure = format!("data-kind=\"{}\" data-scope=\"{scope}\"", metric.kind);
            assert_eq!(html.matches(&figure).count(), 1, "{figure}");
        }
        assert_eq!(
            html.matches(&format!("data-kind=\"{}\"", metric.kind))
                .count(),
            3
        );
    }
    assert_eq!(html.matches("<figure").count(), 9);
    // A line per policy, but darc's long requests never finished: no latency
    // or slowdown line for them, a miss-rate line at 100%.
    assert_eq!(html.matches("<path class=\"line pol p0\"").count(), 9);
    assert_eq!(html.matches("<path class=\"line pol p1\"").count(), 7);
    // A marker per rate on each line.
    assert_eq!(html.matches("<circle class=\"pol p0\"").count(), 9 * 3);
    // One table per rate, in the order run.
    let at = |what: &str| html.find(what).unwrap();
    assert!(at("Offered 2\u{2009}000 requests/s") < at("Offered 1\u{2009}000 requests/s"));
    assert!(html.contains("<title>node &lt;sweep&gt;</title>"));
    assert!(html.contains("hand-made &lt;test&gt;"));
}

#[test]
fn a_single_rate_draws_one_bar_chart_per_metric() {
    let html = render_html("node", &single());
    for metric in METRICS {
        let figure = format!("<figure class=\"chart\" data-kind=\"{}\">", metric.kind);
        assert_eq!(html.matches(&figure).count(), 1, "{figure}");
    }
    assert_eq!(html.matches("<figure").count(), 3);
    assert!(!html.contains("data-scope"));
    // Bars: latency and slowdown 3 for sledgescale, 2 for darc; miss rate 3 each.
    assert_eq!(html.matches("<rect class=\"pol p0\"").count(), 9);
    assert_eq!(html.matches("<rect class=\"pol p1\"").count(), 7);
}

#[test]
fn the_report_is_self_contained_and_deterministic() {
    for summary in [single(), sweep()] {
        let html = render_html("node", &summary);
        assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
        assert!(!html.contains("<script"));
        let outside_namespaces = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        assert!(!outside_namespaces.contains("http"));
        assert!(!html.contains("url("));
        assert!(!html.contains("NaN") && !html.contains("inf"));
        assert!(html == render_html("node", &summary), "two renders differ");
    }
    let empty = render_html(
        "node",
        &Summary {
            settings: json!(null),
            loads: Vec::new(),
        },
    );
    assert!(empty.ends_with("</html>\n"));
}

#[test]
fn writes_report_html_staged() {
    let dir = tempfile::tempdir().unwrap();
    let mut staged = Staged::new();
    let path = write_report(&dir.path().join("run"), "node", &sweep(), &mut staged).unwrap();
    assert!(!path.exists(), "staged until the commit");
    staged.commit().unwrap();
    assert_eq!(path, dir.path().join("run").join(REPORT_HTML));
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        render_html("node", &sweep())
    );
}

#[test]
fn a_policy_summary_without_scopes_still_renders() {
    let mut s = single();
    s.loads[0].policies[1].scopes.clear();
    let html = render_html("node", &s);
    assert!(html.ends_with("</html>\n"));
    assert!(render_table(&s).contains("sledgescale"));
}
