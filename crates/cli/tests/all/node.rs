//! `faasched node simulate` and `node capacity` as a user runs them: their
//! outputs, determinism, a request file, and errors on bad input.

use crate::common::{ok, stderr_of_failure, workload_csv};
use serde_json::Value;

/// `field` of the `all` row of `policy` in a summary.json.
fn all(summary: &Value, policy: &str, field: &str) -> f64 {
    summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["policy"] == policy && r["function"] == "all")
        .and_then(|r| r[field].as_f64())
        .unwrap_or_else(|| panic!("no {field} for {policy}"))
}

/// On the exponential workload at 80% load, SledgeScale's early binding by
/// expected wait with EDF workers keeps the slowdown tail far below round
/// robin's with 1 ms quanta (every request ends, none dropped).
#[test]
fn sledgescale_keeps_the_slowdown_tail_below_round_robins() {
    let out = ok(&[
        "node",
        "simulate",
        "-n",
        "30000",
        "-p",
        "sledgescale,rr",
        "--json",
    ]);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["schema_version"], 1);
    assert_eq!(s["settings"]["workload"]["name"], "exponential");
    assert_eq!(s["settings"]["workload"]["rate_rps"], 48000.0);
    for p in ["sledgescale", "rr"] {
        assert_eq!(all(&s, p, "requests"), 30000.0);
        assert_eq!(all(&s, p, "dropped"), 0.0);
    }
    let (ss, rr) = (
        all(&s, "sledgescale", "slowdown_p999"),
        all(&s, "rr", "slowdown_p999"),
    );
    assert!(ss * 2.0 < rr, "p99.9 slowdown: sledgescale {ss}, rr {rr}");
}

#[test]
fn out_dir_holds_the_files_and_a_seed_gives_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, seed: &str| {
        let d = dir.path().join(name);
        let args = [
            "node",
            "simulate",
            "-w",
            "sd-vbs",
            "--load",
            "0.6",
            "-n",
            "5000",
            "-p",
            "sledgescale,darc,shinjuku-mq",
            "--seed",
            seed,
            "-o",
            d.to_str().unwrap(),
        ];
        ok(&args);
        ["summary.json", "summary.csv", "report.html"]
            .map(|f| std::fs::read(d.join(f)).unwrap_or_else(|e| panic!("{f}: {e}")))
    };
    let a = run("a", "7");
    assert_eq!(a, run("b", "7"));
    assert_ne!(a[0], run("c", "8")[0]);
    let csv = String::from_utf8(a[1].clone()).unwrap();
    assert!(csv.starts_with("rate_rps,policy,function,"));
    // Per function: sift, segmentation and classification under each policy.
    assert_eq!(csv.lines().count(), 1 + 3 * 4);
}

#[test]
fn a_request_file_runs_as_it_is_and_a_bad_row_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let good = workload_csv(
        dir.path(),
        "good.csv",
        "0,a,0,c100,128,\n1,b,10,c2000,128,5000\n2,a,20,c100,128,\n3,a,1000,c50,128,\n",
    );
    let good = good.to_str().unwrap();
    let out = ok(&[
        "node",
        "simulate",
        "-w",
        good,
        "-p",
        "sledgescale,srpt",
        "--json",
    ]);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(all(&s, "srpt", "requests"), 4.0);
    // Four requests over 1 ms of arrivals.
    assert_eq!(s["loads"][0]["rate_rps"], 4000.0);
    let err = stderr_of_failure(&["node", "simulate", "-w", good, "--rate", "100"]);
    assert!(err.contains("file's arrivals"), "{err}");

    let bad = workload_csv(
        dir.path(),
        "bad.csv",
        "0,a,0,c100,128,\n1,a,5,c10;i20,128,\n",
    );
    let err = stderr_of_failure(&["node", "simulate", "-w", bad.to_str().unwrap()]);
    assert!(
        err.contains("bad.csv:3") && err.contains("`phases`"),
        "{err}"
    );
}

#[test]
fn bad_options_are_refused_naming_them() {
    let err = stderr_of_failure(&["node", "simulate", "-p", "sledgescale,nope"]);
    assert!(err.contains("`nope`") && err.contains("darc"), "{err}");
    let err = stderr_of_failure(&["node", "simulate", "--estimate", "noisy=2"]);
    assert!(
        err.contains("--estimate") && err.contains("`noisy=2`: ") && err.contains("[0, 1]"),
        "{err}"
    );
    let err = stderr_of_failure(&["node", "simulate", "--load", "0"]);
    assert!(err.contains("--load") && err.contains("above 0"), "{err}");
    let err = stderr_of_failure(&["node", "simulate", "--load", "11"]);
    assert!(
        err.contains("--load 11") && err.contains("at most 10"),
        "{err}"
    );
    let err = stderr_of_failure(&["node", "simulate", "--deadline", "nosuch=2x"]);
    assert!(err.contains("nosuch"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let costs = dir.path().join("costs.toml");
    std::fs::write(&costs, "dispatch_bass = 10\n").unwrap();
    let err = stderr_of_failure(&["node", "simulate", "--costs", costs.to_str().unwrap()]);
    assert!(
        err.contains("costs.toml") && err.contains("dispatch_bass"),
        "{err}"
    );
}

/// Several loads make a sweep: one entry per load, in order, and the
/// report draws each metric against the offered load.
#[test]
fn several_loads_make_a_sweep_drawn_against_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("sweep");
    let args = [
        "node",
        "simulate",
        "-w",
        "bimodal-high",
        "--load",
        "0.5,0.9",
        "-n",
        "3000",
        "-p",
        "sledgescale,darc",
        "-o",
        d.to_str().unwrap(),
        "--json",
    ];
    let out = ok(&args);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rates: Vec<f64> = s["loads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["rate_rps"].as_f64().unwrap())
        .collect();
    assert_eq!(rates.len(), 2);
    assert!(rates[0] < rates[1], "{rates:?}");
    assert_eq!(
        s["settings"]["workload"]["rate_rps"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    assert!(
        html.contains("data-kind=\"slowdown-p999\" data-scope=\"all\""),
        "no curve"
    );
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
    // The page draws every probe the searches read.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let probes: usize = s["policies"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["seeds"].as_array().unwrap())
        .flat_map(|seed| seed["probes"].as_array().unwrap())
        .filter(|p| !p["value"].is_null())
        .count();
    assert!(probes > 0);
    assert_eq!(html.matches("<circle").count(), probes);
    assert!(html.contains("p99.9 latency against the offered load"));
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
