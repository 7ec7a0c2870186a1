//! `faasched bench cluster` as a user runs it: refused in a debug build,
//! whose numbers would mislead; in a release build, the shape of its JSON
//! on a tiny run.

mod common;

use common::{faasched, ok, stderr_of_failure};
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
