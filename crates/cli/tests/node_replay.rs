//! `faasched node replay` and `node compare` as a user runs them: a live
//! node runtime per policy, fed the requests `node simulate` runs, with the
//! same outputs. No assertion depends on timing: the tests check what was
//! sent, answered and written, never how fast.

mod common;

use common::{ok, stderr_of_failure};
use serde_json::Value;

/// 100 µs requests (`fixed` stretched ten times) at 200 a second for half a
/// second: about a hundred requests, a light load for one worker.
const RUN: [&str; 10] = [
    "-w",
    "fixed",
    "--workers",
    "1",
    "--stretch",
    "10",
    "--rate",
    "200",
    "--seconds",
    "0.5",
];

fn rows<'a>(summary: &'a Value, policy: &str) -> Vec<&'a Value> {
    summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["policy"] == policy)
        .collect()
}

fn all(summary: &Value, policy: &str, field: &str) -> f64 {
    rows(summary, policy)
        .into_iter()
        .find(|r| r["function"] == "all")
        .and_then(|r| r[field].as_f64())
        .unwrap_or_else(|| panic!("no {field} for {policy}"))
}

/// A replay answers every request the simulation runs, once, and writes
/// the simulation's files, saying it ran live and where.
#[test]
fn a_replay_answers_every_simulated_request_and_writes_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("live");
    let policies = ["-p", "sledgescale,shinjuku"];
    let sim: Value = serde_json::from_slice(
        &ok(&[&["node", "simulate", "--json"][..], &RUN, &policies].concat()).stdout,
    )
    .unwrap();
    let text = ok(&[
        &["node", "replay", "--out", out.to_str().unwrap()][..],
        &RUN,
        &policies,
    ]
    .concat());
    let stdout = String::from_utf8(text.stdout).unwrap();
    assert!(
        stdout.contains("wrote summary.json, summary.csv, report.html"),
        "{stdout}"
    );
    for file in ["summary.json", "summary.csv", "report.html"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let live: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let requests = all(&sim, "sledgescale", "requests");
    assert!(requests > 50.0, "{requests}");
    for policy in ["sledgescale", "shinjuku"] {
        assert_eq!(all(&live, policy, "requests"), requests, "{policy}");
        assert_eq!(all(&live, policy, "finished"), requests, "{policy}");
        assert_eq!(all(&live, policy, "dropped"), 0.0, "{policy}");
        let functions: Vec<&Value> = rows(&live, policy)
            .into_iter()
            .map(|r| &r["function"])
            .collect();
        assert_eq!(functions, ["all", "fixed"], "{policy}");
    }
    let settings = &live["settings"];
    assert_eq!(settings["stretch"], 10);
    assert_eq!(settings["workload"], sim["settings"]["workload"]);
    assert!(settings.get("costs").is_none(), "{settings}");
    assert_eq!(settings["live"]["poll"], false);
    assert!(settings["live"]["online_cpus"].as_u64().unwrap() >= 1);
}

/// Compare puts each policy's numbers of both worlds side by side, ranks
/// the policies in each, and writes both worlds' files.
#[test]
fn compare_sets_both_worlds_side_by_side_and_ranks_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmp");
    let json = ok(&[
        &["node", "compare", "--json", "-p", "sledgescale,rr", "--out"][..],
        &[out.to_str().unwrap()],
        &RUN,
    ]
    .concat());
    let c: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        c,
        serde_json::from_str::<Value>(&std::fs::read_to_string(out.join("compare.json")).unwrap())
            .unwrap()
    );
    let comparison = &c["comparison"];
    assert_eq!(comparison["ranked_by"], "p99.9 slowdown");
    let policies: Vec<&str> = comparison["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(policies, ["sledgescale", "rr"]);
    for row in comparison["rows"].as_array().unwrap() {
        for world in ["sim", "live"] {
            assert!(row[world]["p99_us"].as_f64().unwrap() > 0.0, "{row}");
        }
    }
    let ranking = &comparison["rankings"][0];
    for world in ["sim", "live"] {
        let mut names: Vec<&str> = ranking[world]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["rr", "sledgescale"], "{world}");
    }
    assert!(c["sim_settings"].get("costs").is_some());
    assert!(c["live_settings"].get("live").is_some());
    let csv = std::fs::read_to_string(out.join("compare.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 2, "{csv}");
    for world in ["sim", "live"] {
        for file in ["summary.json", "summary.csv", "report.html"] {
            assert!(out.join(world).join(file).is_file(), "{world}/{file}");
        }
    }
}

#[test]
fn what_a_live_node_cannot_do_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let costs = dir.path().join("costs.toml");
    std::fs::write(&costs, "wake = 1000\n").unwrap();
    for (extra, expect) in [
        (vec!["--estimate", "noisy=0.2"], "exact or median"),
        (vec!["--assign", "random"], "--assign random"),
        (vec!["--costs", costs.to_str().unwrap()], "--costs"),
        (vec!["--stretch", "0"], "--stretch 0"),
    ] {
        let base = [
            "node",
            "replay",
            "-w",
            "fixed",
            "--rate",
            "200",
            "--seconds",
            "0.5",
        ];
        let e = stderr_of_failure(&[&base[..], &extra].concat());
        assert!(e.contains(expect), "{extra:?}: {e}");
    }
}
