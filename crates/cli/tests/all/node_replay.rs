//! `faasched node replay` and `node compare` as a user runs them: a live
//! node runtime per policy, fed the requests `node simulate` runs, with the
//! same outputs. No assertion depends on timing: the tests check what was
//! sent, answered and written, never how fast.

use crate::common::{interrupt, ok, stderr_of_failure};
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

fn row<'a>(summary: &'a Value, policy: &str, function: &str) -> &'a Value {
    rows(summary, policy)
        .into_iter()
        .find(|r| r["function"] == function)
        .unwrap_or_else(|| panic!("no row of {function} under {policy}"))
}

fn all(summary: &Value, policy: &str, field: &str) -> f64 {
    row(summary, policy, "all")[field]
        .as_f64()
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
    assert!(settings["live"]["spin_steps_per_ms"].as_u64().unwrap() > 0);
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

/// `--function` runs the workload's requests on a built-in instead of
/// `spin`: every one answered, summarised under its workload function.
#[test]
fn a_replay_runs_a_workload_on_a_built_in_function() {
    let json = ok(&[
        &["node", "replay", "--json", "-p", "rr"][..],
        &RUN,
        &["--function", "fixed=fib?n=10"],
    ]
    .concat());
    let live: Value = serde_json::from_slice(&json.stdout).unwrap();
    let requests = all(&live, "rr", "requests");
    assert!(requests > 50.0, "{requests}");
    assert_eq!(all(&live, "rr", "finished"), requests);
    assert_eq!(all(&live, "rr", "dropped"), 0.0);
    let functions: Vec<&Value> = rows(&live, "rr")
        .into_iter()
        .map(|r| &r["function"])
        .collect();
    assert_eq!(functions, ["all", "fixed"]);
    // A label the workload lacks is refused before anything runs.
    let e =
        stderr_of_failure(&[&["node", "replay"][..], &RUN, &["--function", "short=fib"]].concat());
    assert!(
        e.contains("--function") && e.contains("functions are fixed"),
        "{e}"
    );
}

/// `--deploy` serves real functions beside the built-ins, in process:
/// every request of the workload runs the C command `hello` (compiled
/// once into --cache-dir) and is answered; without it the first request
/// names the function the node lacks.
#[test]
fn a_replay_runs_a_workload_on_a_deployed_function() {
    let dir = tempfile::tempdir().unwrap();
    let Some(deploy) = crate::common::deploy_dir(dir.path(), &["hello"]) else {
        return;
    };
    let cache = dir.path().join("cache");
    let real = [
        "--function",
        "fixed=hello?name=replay",
        "--deploy",
        deploy.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ];
    let out = ok(&[&["node", "replay", "--json", "-p", "rr"][..], &RUN, &real].concat());
    let live: Value = serde_json::from_slice(&out.stdout).unwrap();
    let requests = all(&live, "rr", "requests");
    assert!(requests > 50.0, "{requests}");
    assert_eq!(all(&live, "rr", "finished"), requests);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 compiled, 0 already there"), "{stderr}");
    let e = stderr_of_failure(&[&["node", "replay"][..], &RUN, &real[..2]].concat());
    assert!(e.contains("hello"), "{e}");
}

/// `node compare --function --deploy`: a workload whose work is a real
/// function's (as `node load --out` writes one) runs simulated with that
/// work and live on the function itself: every request answered in both
/// worlds, the simulated ones taking at least their 40 µs.
#[test]
fn compare_runs_a_workload_of_a_real_functions_work_on_the_function() {
    let dir = tempfile::tempdir().unwrap();
    let Some(deploy) = crate::common::deploy_dir(dir.path(), &["hello"]) else {
        return;
    };
    let rows: String = (0..40)
        .map(|i| format!("{i},f,{},c40,128,400\n", i * 2_500))
        .collect();
    let workload = crate::common::workload_csv(dir.path(), "hello.csv", &rows);
    let out = dir.path().join("cmp");
    let args = [
        "node",
        "compare",
        "--json",
        "-p",
        "sledgescale,rr",
        "--workers",
        "1",
        "-w",
        workload.to_str().unwrap(),
        "--function",
        "f=hello?name=compare",
        "--deploy",
        deploy.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let c: Value = serde_json::from_slice(&ok(&args).stdout).unwrap();
    for row in c["comparison"]["rows"].as_array().unwrap() {
        let sim = row["sim"]["p50_us"].as_f64().unwrap();
        assert!((40.0..2_500.0).contains(&sim), "{row}");
        assert!(row["live"]["p50_us"].as_f64().unwrap() > 0.0, "{row}");
    }
    for world in ["sim", "live"] {
        let summary: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(world).join("summary.json")).unwrap(),
        )
        .unwrap();
        for policy in ["sledgescale", "rr"] {
            let f = row(&summary, policy, "f");
            assert_eq!(
                (f["requests"].as_f64(), f["finished"].as_f64()),
                (Some(40.0), Some(40.0)),
                "{world} {policy}"
            );
        }
    }
    // Without the deployment the live node lacks `hello`, and says so.
    let e = stderr_of_failure(&args[..args.len() - 4]);
    assert!(e.contains("hello"), "{e}");
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

/// Whether process `pid` has a handler for SIGINT (bit 2 of `SigCgt`).
fn catches_sigint(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .is_some_and(|mask| mask & (1 << (libc::SIGINT - 1)) != 0)
}

/// Ctrl-C in the middle of a long live run stops it at once: the queued
/// requests are cancelled, the threads joined, and no file is written.
#[test]
fn ctrl_c_stops_a_replay_and_writes_nothing() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("live");
    let child = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args([
            "node",
            "replay",
            "-w",
            "fixed",
            "--workers",
            "1",
            "--stretch",
            "100",
        ])
        .args(["--load", "3", "--seconds", "600", "-p", "sledgescale"])
        .args(["--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: a run that never gets going is killed, not waited on.
    let give_up = Instant::now() + Duration::from_secs(120);
    while !catches_sigint(child.id()) && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Overloaded three times over, requests queue up behind the worker.
    std::thread::sleep(Duration::from_millis(500));
    let output = interrupt(child, give_up, "faasched node replay");
    assert_eq!(output.status.code(), Some(1));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("interrupted by signal 2"), "{err}");
    assert!(!out.join("summary.json").exists());
}
