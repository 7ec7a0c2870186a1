//! The output files: schema, row order, streaming CSV, determinism, the table.

use faasched_report::os::{
    Collector, InvocationsWriter, Metric, PolicySummary, SUMMARY_SCHEMA_VERSION, Scope, Summary,
    read_summary_rows, render_table, write_outputs,
};
use faasched_report::{Error, Staged};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

fn policy(name: &str, sim_only: bool, skip: usize) -> PolicySummary {
    let mut c = Collector::new(name, sim_only);
    for o in crate::common::five().iter().skip(skip) {
        c.record(o);
    }
    c.finish(0.5)
}

fn summary() -> Summary {
    Summary {
        // "srpt" sorts after "cfs" but is listed first: output keeps the given order.
        policies: vec![policy("srpt", true, 0), policy("cfs", false, 3)],
        workload: json!({"name": "hand-made", "invocations": 5, "seed": 1}),
        machine: json!({"cores": 2, "fair": "eevdf", "hz": 250}),
    }
}

/// Writes `summary`'s files into `dir` and puts them in place.
fn write(dir: &Path, summary: &Summary) {
    let mut staged = Staged::new();
    write_outputs(dir, summary, &mut staged).unwrap();
    staged.commit().unwrap();
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

fn set<'a>(names: &[&'a str]) -> BTreeSet<&'a str> {
    names.iter().copied().collect()
}

#[test]
fn summary_json_has_the_contract_schema() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nested/out");
    write(&out, &summary());
    let text = fs::read_to_string(out.join("summary.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();

    let top: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        top,
        [
            "schema_version",
            "faasched_version",
            "rows",
            "policies",
            "workload",
            "machine"
        ]
    );
    let head = format!(
        "{{\n  \"schema_version\": 1,\n  \"faasched_version\": \"{}\",\n  \"rows\": [\n",
        env!("CARGO_PKG_VERSION")
    );
    assert!(text.starts_with(&head), "{text}");
    assert_eq!(v["schema_version"], SUMMARY_SCHEMA_VERSION);
    assert_eq!(summary().to_json(), v, "--json prints the file's JSON");
    assert_eq!(v["workload"]["name"], "hand-made");
    assert_eq!(v["machine"]["cores"], 2);

    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 5 * 5);
    let row_keys = set(&[
        "policy", "group", "metric", "count", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms",
        "max_ms",
    ]);
    let groups = ["all", "G1", "G2", "G3", "G4"];
    let metrics = ["turnaround", "response", "execution", "waiting", "slowdown"];
    let mut i = 0;
    for p in ["srpt", "cfs"] {
        for g in groups {
            for m in metrics {
                let row = &rows[i];
                i += 1;
                assert_eq!(keys(row), row_keys);
                assert_eq!(
                    (row["policy"].as_str(), row["group"].as_str()),
                    (Some(p), Some(g))
                );
                assert_eq!(row["metric"], m);
                assert!(row["count"].is_u64());
            }
        }
    }
    // srpt: G1 has 3, G2 2, G3 and G4 none; statistics of empty groups are null.
    let g1_turnaround = &rows[5];
    assert_eq!(g1_turnaround["count"], 3);
    assert_eq!(g1_turnaround["max_ms"], 22.0);
    let g3 = &rows[15];
    assert_eq!(
        (g3["group"].as_str(), g3["count"].as_u64()),
        (Some("G3"), Some(0))
    );
    for k in ["mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"] {
        assert!(g3[k].is_null(), "{k}");
    }

    let policies = &v["policies"];
    assert_eq!(keys(policies), set(&["srpt", "cfs"]));
    assert!(text.find("\"srpt\": {").unwrap() < text.find("\"cfs\": {").unwrap());
    for p in ["srpt", "cfs"] {
        let entry = &policies[p];
        for k in [
            "sim_only",
            "cost_usd",
            "voluntary_switches_per_invocation",
            "involuntary_switches_per_invocation",
            "utilisation",
        ] {
            assert!(entry.get(k).is_some(), "{p}.{k}");
        }
        assert_eq!(entry["utilisation"], 0.5);
        assert_eq!(entry["billing"], "execution");
    }
    assert_eq!(policies["srpt"]["sim_only"], true);
    assert_eq!(policies["cfs"]["sim_only"], false);
    assert_eq!(policies["srpt"]["invocations"], 5);
    assert_eq!(policies["srpt"]["voluntary_switches_per_invocation"], 2.0);
    assert_eq!(policies["cfs"]["involuntary_switches_per_invocation"], 4.0);
    let cost = policies["srpt"]["cost_usd"].as_f64().unwrap();
    let want = 242_176.0 / 1_024_000.0 * 0.0000166667 + 5.0 * 0.2e-6;
    assert!((cost - want).abs() < 1e-15, "{cost} vs {want}");
}

#[test]
fn summary_csv_is_flat_rows_with_the_contract_header() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &summary());
    let text = fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "policy,group,metric,count,mean_ms,p50_ms,p90_ms,p99_ms,p999_ms,max_ms"
    );
    assert_eq!(lines.len(), 1 + 2 * 5 * 5);
    assert!(lines[1].starts_with("srpt,all,turnaround,5,"));
    assert!(lines[6].starts_with("srpt,G1,turnaround,3,"));
    assert!(lines[26].starts_with("cfs,all,turnaround,2,"));
    // cfs saw only the two G2 outcomes: G1 rows are empty cells.
    assert_eq!(lines[31], "cfs,G1,turnaround,0,,,,,,");
    assert!(lines.iter().all(|l| l.split(',').count() == 10));
}

#[test]
fn rows_read_back_equal_the_rows_written() {
    let dir = tempfile::tempdir().unwrap();
    let s = summary();
    write(dir.path(), &s);
    let rows = read_summary_rows(&dir.path().join("summary.json")).unwrap();
    assert_eq!(rows, s.rows().collect::<Vec<_>>());
    assert_eq!(
        (rows[4].group, rows[4].metric),
        (Scope::All, Metric::Slowdown)
    );
}

#[test]
fn invocations_csv_streams_one_row_per_outcome_and_policy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("invocations.csv");
    let mut staged = Staged::new();
    let mut w = InvocationsWriter::create(&path, &mut staged).unwrap();
    for p in ["srpt", "cfs"] {
        for o in crate::common::five() {
            w.write(p, &o).unwrap();
        }
    }
    w.finish().unwrap();
    staged.commit().unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "policy,id,function,group,arrival_us,first_run_us,finish_us,cpu_us,io_us,\
         voluntary_switches,involuntary_switches,memory_mb"
    );
    assert_eq!(lines.len(), 1 + 2 * 5);
    assert_eq!(
        lines[2],
        "srpt,2,fn-even,G1,0,2000,22000,10000,5000,3,2,256"
    );
    assert_eq!(
        lines[3],
        "srpt,3,fn-odd,G1,10000,10000,11200,1200,0,1,0,128"
    );
    assert_eq!(
        lines[10],
        "cfs,5,fn-odd,G2,50000,70000,250000,120000,20000,4,3,1024"
    );
}

#[test]
fn invocations_csv_replaces_the_file_only_when_committed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("invocations.csv");
    fs::write(&path, "earlier\n").unwrap();
    let mut staged = Staged::new();
    let mut w = InvocationsWriter::create(&path, &mut staged).unwrap();
    w.write("cfs", &crate::common::five()[0]).unwrap();
    drop((w, staged)); // the run failed
    assert_eq!(fs::read_to_string(&path).unwrap(), "earlier\n");
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "partial file left"
    );

    let mut staged = Staged::new();
    let mut w = InvocationsWriter::create(&path, &mut staged).unwrap();
    w.write("cfs", &crate::common::five()[0]).unwrap();
    w.finish().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "earlier\n");
    staged.commit().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 2);
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "partial file left"
    );
}

#[test]
fn invocations_csv_truncates_ns_to_us_and_has_a_header_when_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("invocations.csv");
    let mut staged = Staged::new();
    let w = InvocationsWriter::create(&path, &mut staged).unwrap();
    w.finish().unwrap();
    staged.commit().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 1);

    let mut o = crate::common::five().remove(0);
    o.finish += 999; // 11 ms + 999 ns: still 11000 µs
    let mut staged = Staged::new();
    let mut w = InvocationsWriter::create(&path, &mut staged).unwrap();
    w.write("cfs", &o).unwrap();
    w.finish().unwrap();
    staged.commit().unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.lines().nth(1),
        Some("cfs,1,fn-odd,G1,0,1000,11000,10000,0,1,0,128")
    );
}

fn read_all(dir: &Path) -> Vec<Vec<u8>> {
    ["summary.json", "summary.csv"]
        .map(|f| fs::read(dir.join(f)).unwrap())
        .to_vec()
}

#[test]
fn outputs_are_byte_for_byte_deterministic() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write(a.path(), &summary());
    write(b.path(), &summary());
    assert_eq!(read_all(a.path()), read_all(b.path()));
    // Writing again over the same files gives the same bytes too.
    let first = read_all(a.path());
    write(a.path(), &summary());
    assert_eq!(read_all(a.path()), first);
}

#[test]
fn duplicate_policy_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = summary();
    s.policies.push(policy("cfs", false, 0));
    let err = write_outputs(dir.path(), &s, &mut Staged::new()).unwrap_err();
    assert!(matches!(err, Error::DuplicatePolicy { ref policy } if policy == "cfs"));
    assert!(!dir.path().join("summary.json").exists());
}

#[test]
fn io_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    fs::write(&file, "x").unwrap();
    let err = write_outputs(&file, &summary(), &mut Staged::new()).unwrap_err();
    assert!(
        matches!(err, Error::Io { ref path, .. } if path == &file),
        "{err:?}"
    );
    assert!(err.to_string().contains("not-a-dir"));

    let missing = dir.path().join("missing/invocations.csv");
    let err = InvocationsWriter::create(&missing, &mut Staged::new()).unwrap_err();
    assert!(err.to_string().contains("missing/invocations.csv"), "{err}");
}

#[test]
fn table_names_policies_and_groups_within_100_columns() {
    let table = render_table(&summary());
    println!("{table}");
    for needle in [
        "srpt *", "cfs", "all", "G1", "G2", "G3", "G4", "mean_ms", "cost_usd",
    ] {
        assert!(table.contains(needle), "{needle} missing:\n{table}");
    }
    assert!(table.contains("* sim-only"));
    assert!(table.contains(
        "groups by CPU demand: G1 up to 50 ms, G2 up to 200 ms, G3 up to 400 ms, G4 above 400 ms\n"
    ));
    assert!(table.lines().all(|l| l.chars().count() <= 100), "{table}");
    // Columns align: every data line of the srpt block has the same length.
    let lines: Vec<&str> = table.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("policy")).unwrap();
    let block = &lines[header + 1..header + 6];
    assert!(block[0].starts_with("srpt *"));
    assert!(block.iter().all(|l| l.len() == block[0].len()), "{table}");
}
