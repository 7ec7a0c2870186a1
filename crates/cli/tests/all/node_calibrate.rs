//! `faasched node calibrate` as a user runs it: the costs file it writes
//! is the one `node simulate --costs` reads, as TOML and as JSON, and a
//! path it cannot write is refused naming it. Few samples keep it fast; no
//! assertion depends on what the machine measured beyond every cost being
//! positive.

use crate::common::{ok, stderr_of_failure};
use serde_json::Value;

/// Samples per cost: enough to exercise every measurement, few enough for a
/// debug build.
const SAMPLES: &str = "20";

/// The cost keys of a costs file, read as JSON.
const KEYS: [&str; 9] = [
    "dispatch_base",
    "dispatch_per_worker",
    "idle_pull",
    "preempt_signal",
    "preempt_latency",
    "context_switch",
    "sandbox_setup",
    "wake",
    "quantum_tick",
];

#[test]
fn the_costs_written_are_the_costs_a_simulation_runs_with() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["costs.toml", "costs.json"] {
        let path = dir.path().join(name);
        let path = path.to_str().unwrap();
        let out = ok(&["node", "calibrate", "--samples", SAMPLES, "--out", path]);
        let table = String::from_utf8(out.stdout).unwrap();
        assert!(table.contains("dispatch_base") && table.contains("how measured"));
        assert!(table.contains(&format!("wrote {path}")), "{table}");
        let out = ok(&[
            "node",
            "simulate",
            "-n",
            "2000",
            "-p",
            "sledgescale",
            "--costs",
            path,
            "--json",
        ]);
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
        let costs = &summary["settings"]["costs"];
        for key in KEYS {
            let v = costs[key].as_u64().unwrap_or(0);
            assert!(v > 0, "{name}: {key} = {}", costs[key]);
        }
        assert_eq!(costs["poll"], false, "{name}");
    }
    let text = std::fs::read_to_string(dir.path().join("costs.toml")).unwrap();
    assert!(
        text.starts_with('#') && text.contains("# kernel: "),
        "{text}"
    );
}

#[test]
fn json_prints_every_cost_beside_its_default() {
    let out = ok(&[
        "node",
        "calibrate",
        "--samples",
        SAMPLES,
        "--json",
        "--poll",
    ]);
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = c["rows"].as_array().unwrap();
    let costs: Vec<&str> = rows.iter().map(|r| r["cost"].as_str().unwrap()).collect();
    assert_eq!(costs, KEYS);
    for r in rows {
        let measured = r["measured_ns"].as_f64().unwrap();
        assert!(measured.is_finite() && measured > 0.0, "{r}");
        assert!(r["default_ns"].as_u64().unwrap() > 0, "{r}");
    }
    assert_eq!(c["costs"]["poll"], true);
    assert!(c["polled_wake_ns"].as_u64().unwrap() > 0);
}

#[test]
fn a_path_it_cannot_write_is_refused_naming_it() {
    let err = stderr_of_failure(&["node", "calibrate", "--out", "costs.yaml"]);
    assert!(err.contains("costs.yaml") && err.contains(".toml"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/costs.toml");
    let missing = missing.to_str().unwrap();
    let err = stderr_of_failure(&["node", "calibrate", "--samples", "1", "--out", missing]);
    assert!(err.contains(missing), "{err}");
    let taken = dir.path().join("taken.json");
    std::fs::create_dir(&taken).unwrap();
    let taken = taken.to_str().unwrap();
    let err = stderr_of_failure(&["node", "calibrate", "--samples", "1", "--out", taken]);
    assert!(err.contains(taken), "{err}");
    assert!(std::path::Path::new(taken).is_dir());
    let err = stderr_of_failure(&["node", "calibrate", "--samples", "0"]);
    assert!(err.contains("--samples"), "{err}");
}
