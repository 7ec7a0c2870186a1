//! `faasched cluster compare` as a user runs it: each router live over
//! fresh `node serve` processes, then simulated with the costs measured, on
//! a run short enough for a test. Every assertion holds however slow the
//! machine is.

use crate::common::{ok, stderr_of_failure};

#[test]
fn compare_sets_each_routers_live_run_beside_its_simulation() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmp");
    let printed = ok(&[
        "cluster",
        "compare",
        "-p",
        "ch-rlu,least-loaded",
        "--clients",
        "2",
        "--seconds",
        "2",
        "--time-scale",
        "0.001",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8(printed.stdout).unwrap();
    assert!(
        stdout.starts_with("each cell: simulated / live\n"),
        "{stdout}"
    );
    for by in ["global_increase_pct", "cold_pct", "load_variance"] {
        assert!(stdout.contains(&format!("by {by}: simulated ")), "{stdout}");
    }
    let stderr = String::from_utf8(printed.stderr).unwrap();
    assert!(stderr.contains("costs measured: warm "), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("compare.json")).unwrap()).unwrap();
    let rows = json["comparison"]["rows"].as_array().unwrap();
    let routers: Vec<&str> = rows.iter().map(|r| r["router"].as_str().unwrap()).collect();
    assert_eq!(routers, ["ch-rlu", "least-loaded"]);
    // Both worlds ran: every live run starts from cold nodes, and so does
    // every simulated one.
    for r in rows {
        for world in ["sim", "live"] {
            assert!(r[world]["invocations"].as_u64().unwrap() >= 1, "{r}");
            assert!(r[world]["cold_pct"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    // The simulator was told what was measured, on the paper's clock: the
    // transport a thousand times the live one at scale 0.001.
    let costs = &json["costs"];
    assert!(costs["transport_calls"].as_u64().unwrap() >= 2, "{costs}");
    let live_ms = costs["transport_ns"].as_f64().unwrap() / 1e6;
    let sim_ms = json["sim_settings"]["transport_ms"].as_f64().unwrap_or(0.0);
    assert!(
        (sim_ms - live_ms * 1_000.0).abs() < 1e-6 * sim_ms.max(1.0),
        "{json}"
    );
    assert_eq!(json["sim_settings"]["servers"], 2);
    assert_eq!(json["sim_settings"]["workload"]["clients"], 2);
    for file in [
        "compare.csv",
        "sim/summary.json",
        "sim/report.html",
        "live/summary.json",
        "live/summary.csv",
    ] {
        assert!(out.join(file).is_file(), "{file}");
    }
}

#[test]
fn compare_refuses_bad_options_before_running_anything() {
    for (args, says) in [
        (&["-p", "nope"][..], "nope"),
        (&["--time-scale", "2"][..], "--time-scale"),
        (&["--workload", "azure-functions"][..], "--workload"),
    ] {
        let mut all = vec!["cluster", "compare", "--seconds", "1"];
        all.extend_from_slice(args);
        let e = stderr_of_failure(&all);
        assert!(e.contains(says), "{args:?}: {e}");
    }
}
