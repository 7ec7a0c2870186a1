//! `faasched bench cluster` as a user runs it: refused in a debug build,
//! whose numbers would mislead; in a release build, the shape of its JSON
//! on a tiny run.

use crate::common::{faasched, ok, stderr_of_failure};
use serde_json::Value;

/// Every router of the cluster catalogue, in its order.
fn routers() -> Vec<&'static str> {
    faasched_lab::cluster::catalog::ROUTERS
        .iter()
        .map(|s| s.name)
        .collect()
}

#[test]
fn help_describes_the_cluster_bench() {
    let out = ok(&["bench", "cluster", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("Usage") && help.contains("--invocations"),
        "{help}"
    );
    assert!(help.contains("ch-rlu first"), "{help}");
}

#[test]
fn zero_invocations_or_samples_are_refused_naming_the_flag() {
    let err = stderr_of_failure(&["bench", "cluster", "--invocations", "0"]);
    assert!(
        err.contains("--invocations") && err.contains("must be at least 1"),
        "{err}"
    );
    let err = stderr_of_failure(&["bench", "cluster", "--samples", "0"]);
    assert!(err.contains("--samples"), "{err}");
}

/// A debug build refuses to time anything; a release build runs a tiny
/// bench and prints every router's speed and decision time, ch-rlu first.
#[test]
fn debug_is_refused_and_release_prints_every_router() {
    let args = [
        "bench",
        "cluster",
        "--runs",
        "1",
        "--invocations",
        "1000",
        "--samples",
        "2",
        "--json",
    ];
    if cfg!(debug_assertions) {
        let out = faasched(&args);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("release build") && err.contains("bench cluster"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
        return;
    }
    let out = ok(&args);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["memory"]["router"], "ch-rlu");
    assert_eq!(v["memory"]["short_invocations"], 1000);
    assert_eq!(v["memory"]["long_invocations"], 4000);
    let names = |key: &str, field: &str| -> Vec<String> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[field].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names("routers", "router"), routers());
    assert_eq!(names("decisions", "router"), routers());
    for r in v["routers"].as_array().unwrap() {
        assert_eq!(r["invocations"], 1000);
        assert_eq!(
            (r["servers"].as_u64(), r["cores"].as_u64()),
            (Some(100), Some(4))
        );
        assert_eq!(r["keep_alive"], "greedy-dual");
        assert!(r["invocations_per_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["events"].as_u64().unwrap() >= 1000, "{r}");
    }
    assert_eq!(v["view"]["servers"], 100);
    for d in v["decisions"].as_array().unwrap() {
        assert_eq!(
            (d["samples"].as_u64(), d["per_sample"].as_u64()),
            (Some(2), Some(1000))
        );
        assert!(d["median_ns"].as_f64().unwrap() > 0.0, "{d}");
    }
}

/// `--export` writes the bench's job, in any build: the function table, the
/// invocations as a workload CSV, and the cluster; our own cluster
/// simulator reads the two CSVs back as the same job.
#[test]
fn export_writes_the_job_that_cluster_simulate_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("job");
    let d = dir.to_str().unwrap();
    let out = ok(&[
        "bench",
        "cluster",
        "--invocations",
        "500",
        "--seed",
        "3",
        "--export",
        d,
    ]);
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("500 invocations") && err.contains(d), "{err}");

    let job: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cluster.json")).unwrap()).unwrap();
    assert_eq!(
        (&job["servers"], &job["cores"], &job["memory_mb"]),
        (&Value::from(100), &Value::from(4), &Value::from(8192))
    );
    assert_eq!(
        (&job["invocations"], &job["seed"], &job["functions"]),
        (&Value::from(500), &Value::from(3), &Value::from(1000))
    );
    assert_eq!(job["keep_alive"], "greedy-dual");

    let table = std::fs::read_to_string(dir.join("functions.csv")).unwrap();
    let mut lines = table.lines();
    assert_eq!(lines.next(), Some("name,memory_mb,warm_ms,cold_ms"));
    assert_eq!(lines.count(), 1000);
    let stream = std::fs::read_to_string(dir.join("invocations.csv")).unwrap();
    let mut lines = stream.lines();
    assert_eq!(
        lines.next(),
        Some("id,function,arrival_us,phases,memory_mb,deadline_us")
    );
    assert_eq!(lines.count(), 500);

    let table = dir.join("functions.csv");
    let stream = dir.join("invocations.csv");
    let out = ok(&[
        "cluster",
        "simulate",
        "--workload",
        stream.to_str().unwrap(),
        "--table",
        table.to_str().unwrap(),
        "--servers",
        "100",
        "--cores",
        "4",
        "--memory-gb",
        "8",
        "--policy",
        "least-loaded",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v.to_string();
    assert!(
        text.contains("least-loaded") && text.contains("500"),
        "{text}"
    );
}

/// `--export` times nothing, so the timing flags beside it are refused by
/// name, and a file where the directory should be is refused naming it.
#[test]
fn export_refuses_timing_flags_and_a_file_for_its_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("job");
    let d = d.to_str().unwrap();
    let err = stderr_of_failure(&["bench", "cluster", "--export", d, "--json"]);
    assert!(err.contains("--export") && err.contains("--json"), "{err}");
    let err = stderr_of_failure(&["bench", "cluster", "--export", d, "--runs", "3"]);
    assert!(err.contains("--runs"), "{err}");

    let file = tmp.path().join("taken");
    std::fs::write(&file, "not a directory").unwrap();
    let f = file.to_str().unwrap();
    let err = stderr_of_failure(&["bench", "cluster", "--invocations", "10", "--export", f]);
    assert!(err.contains(f) && err.contains("not a directory"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory");
}
