//! `faasched node capacity` as a user runs it: its outputs, their
//! determinism, and errors on bad input.

use serde_json::Value;
use std::process::{Command, Output};

fn faasched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn ok(args: &[&str]) -> Output {
    let out = faasched(args);
    assert!(
        out.status.success(),
        "faasched {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr_of_failure(args: &[&str]) -> String {
    let out = faasched(args);
    assert!(!out.status.success(), "faasched {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A small search: one worker, `fixed` 10 µs requests, 2,000 a probe.
const SMALL: &[&str] = &[
    "node",
    "capacity",
    "--workload",
    "fixed",
    "--workers",
    "1",
    "--requests",
    "2000",
    "--seeds",
    "2",
    "--policy",
    "sledgescale,rr",
    "--target",
    "p99.9-latency=1ms",
];

#[test]
fn capacity_json_and_files_agree_and_repeat() {
    let json = ok(&[SMALL, &["--json"]].concat());
    let s: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(s["schema_version"], 1);
    assert_eq!(s["faasched_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(s["settings"]["seeds"], serde_json::json!([1, 2]));
    assert_eq!(s["settings"]["search"]["target"], "p99.9-latency=1ms");
    let policies = s["policies"].as_array().unwrap();
    let names: Vec<&str> = policies
        .iter()
        .map(|p| p["policy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sledgescale", "rr"]);
    for p in policies {
        let (median, min, max) = (
            p["capacity_rps"].as_f64().unwrap(),
            p["min_rps"].as_f64().unwrap(),
            p["max_rps"].as_f64().unwrap(),
        );
        // One worker serves 100,000 fixed 10 µs requests a second; a 1 ms
        // tail holds somewhere below that and fails at twice it.
        assert!(
            0.0 < min && min <= median && median <= max && max < 200_000.0,
            "{p}"
        );
        for seed in p["seeds"].as_array().unwrap() {
            let probes = seed["probes"].as_array().unwrap();
            assert!(probes.iter().all(|p| p["requests"] == 2000), "{seed}");
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cap");
    let table = ok(&[SMALL, &["--out", out.to_str().unwrap()]].concat());
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.starts_with("capacity at p99.9-latency=1ms"),
        "{table}"
    );
    assert!(
        table.contains("\nsledgescale ") && table.contains("\nrr "),
        "{table}"
    );
    let written = std::fs::read(out.join("summary.json")).unwrap();
    assert_eq!(written, json.stdout, "same seeds, same bytes");
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("policy,capacity_rps,min_rps,max_rps,capacity_load,seeds")
    );
    assert!(lines.next().unwrap().starts_with("sledgescale,"));
    assert!(lines.next().unwrap().starts_with("rr,"));
}

#[test]
fn capacity_refuses_bad_input_naming_it() {
    let with = |extra: &[&str]| {
        let mut args = vec!["node", "capacity", "--workload", "fixed"];
        args.extend_from_slice(extra);
        stderr_of_failure(&args)
    };
    let e = with(&["--target", "p99.9-latency=10"]);
    assert!(e.contains("--target") && e.contains("give a unit"), "{e}");
    let e = with(&["--target", "p95-slowdown=3"]);
    assert!(e.contains("`p95`"), "{e}");
    let e = with(&["--target", "miss-rate=1%", "--max-dropped", "5"]);
    assert!(e.contains("--max-dropped") && e.contains("`5`"), "{e}");
    let e = with(&["--target", "miss-rate=1%", "--precision", "0"]);
    assert!(e.contains("--precision 0"), "{e}");
    let e = with(&["--target", "miss-rate=1%", "--policy", "nope"]);
    assert!(e.contains("nope"), "{e}");
    let e = stderr_of_failure(&[
        "node",
        "capacity",
        "--workload",
        "Cargo.toml",
        "--target",
        "miss-rate=1%",
    ]);
    assert!(e.contains("built-in"), "{e}");
}
