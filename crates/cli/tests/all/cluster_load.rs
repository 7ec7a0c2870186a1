//! `faasched cluster load` as a user runs it: two real `faasched node
//! serve` processes and a gateway in front of them on loopback ports,
//! loaded by four closed-loop clients for 2 s, or by the open loop of
//! Fig. 10's rising burst for its first 0.3 s. Every assertion is a count
//! that holds however slow the machine is.

use crate::common::server::{Server, cluster_node};
use crate::common::{ok, stderr_of_failure};

#[test]
fn clients_load_a_live_cluster_and_write_the_simulators_outputs() {
    let (nodes, names, gateway) = cluster();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let target = gateway.addr.to_string();
    let printed = ok(&[
        "cluster",
        "load",
        "--target",
        &target,
        "--clients",
        "4",
        "--seconds",
        "2",
        "--time-scale",
        "0.001",
        "--label",
        "ch-rlu",
        "--drain-ms",
        "120000",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8(printed.stdout).unwrap();
    assert!(stdout.contains("ch-rlu"), "{stdout}");
    let stderr = String::from_utf8(printed.stderr).unwrap();
    assert!(stderr.contains("time scale 0.001"), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let settings = &summary["settings"];
    assert_eq!(settings["live"], true);
    assert_eq!(settings["target"], target.as_str());
    assert_eq!(settings["end"], "completed");
    let row = &summary["policies"][0];
    let invocations = row["invocations"].as_u64().unwrap();
    let finished = row["finished"].as_u64().unwrap();
    let errors: u64 = settings["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    // Each client's first call is due within the first second of think
    // time scaled down, so is sent.
    assert!(invocations >= 4, "{summary}");
    assert_eq!(invocations, finished + errors, "{summary}");
    assert_eq!(row["dropped"].as_u64(), Some(errors));
    let cold = row["cold_starts"].as_u64().unwrap();
    assert!(cold >= 1 && cold <= invocations, "{summary}");
    // Each answered call came from one of the two nodes.
    let per_node: u64 = settings["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            assert!(
                names.contains(&n["node"].as_str().unwrap().to_string()),
                "{n}"
            );
            n["invocations"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(per_node, finished);
    let requests = std::fs::read_to_string(out.join("requests.csv")).unwrap();
    let mut lines = requests.lines();
    assert_eq!(
        lines.next(),
        Some("id,client,function,sent_us,done_us,status,node,cold,runtime_us,error")
    );
    assert_eq!(lines.count() as u64, invocations);
    for file in ["summary.csv", "report.html"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    drop(gateway);
    drop(nodes);
}

/// Two nodes behind a CH-RLU gateway: the nodes, their addresses and the
/// gateway.
fn cluster() -> ([Server; 2], Vec<String>, Server) {
    let nodes = [cluster_node(), cluster_node()];
    let names: Vec<String> = nodes.iter().map(|n| n.addr.to_string()).collect();
    let gateway = Server::start(&[
        "cluster",
        "gateway",
        "--listen",
        "127.0.0.1:0",
        "--policy",
        "ch-rlu",
        "--period-ms",
        "20",
        "--node",
        &names[0],
        "--node",
        &names[1],
    ]);
    (nodes, names, gateway)
}

#[test]
fn the_rising_burst_is_sent_open_loop_and_every_call_counted() {
    let (nodes, names, gateway) = cluster();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rising");
    let target = gateway.addr.to_string();
    let printed = ok(&[
        "cluster",
        "load",
        "--target",
        &target,
        "--workload",
        "functionbench-rising",
        "--clients",
        "4",
        "--seconds",
        "0.3",
        "--time-scale",
        "0.01",
        "--label",
        "ch-rlu",
        "--drain-ms",
        "120000",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8(printed.stderr).unwrap();
    assert!(stderr.contains("over 4 connections"), "{stderr}");
    assert!(
        stderr.contains("ch-rlu: calls sent late by p50"),
        "{stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let settings = &summary["settings"];
    assert_eq!(settings["workload"]["name"], "functionbench-rising");
    assert_eq!(settings["connections"], 4);
    assert!(settings.get("clients").is_none(), "{settings}");
    assert_eq!(settings["end"], "completed");
    assert!(settings["sent_late_us"]["max"].is_number(), "{settings}");
    let row = &summary["policies"][0];
    let invocations = row["invocations"].as_u64().unwrap();
    let finished = row["finished"].as_u64().unwrap();
    let errors: u64 = settings["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    // At 2 invocations/s of the paper's time, the first 30 s of it (0.3 s
    // here) hold calls; every one is answered or an error.
    assert!(invocations >= 1, "{summary}");
    assert_eq!(invocations, finished + errors, "{summary}");
    let per_node: u64 = settings["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            assert!(
                names.contains(&n["node"].as_str().unwrap().to_string()),
                "{n}"
            );
            n["invocations"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(per_node, finished);
    let requests = std::fs::read_to_string(out.join("requests.csv")).unwrap();
    let mut lines = requests.lines();
    assert_eq!(
        lines.next(),
        Some("id,client,function,sent_us,done_us,status,node,cold,runtime_us,error,intended_us")
    );
    let mut rows = 0;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 11, "{line}");
        // Sent at or after its time in the schedule, which is before 0.3 s.
        let (sent, intended): (u64, u64) = (cells[3].parse().unwrap(), cells[10].parse().unwrap());
        assert!(sent >= intended && intended < 300_000, "{line}");
        rows += 1;
    }
    assert_eq!(rows, invocations);
    drop(gateway);
    drop(nodes);
}

#[test]
fn bad_options_are_named() {
    for (args, option) in [
        (
            &["--target", "127.0.0.1:1", "--clients", "0"][..],
            "--clients",
        ),
        (
            &["--target", "127.0.0.1:1", "--time-scale", "2"][..],
            "--time-scale",
        ),
        (
            &["--target", "127.0.0.1:1", "--workload", "azure-functions"][..],
            "--workload",
        ),
        (&["--target", "nowhere"][..], "--target"),
        (
            &[
                "--target",
                "127.0.0.1:1",
                "--workload",
                "functionbench-rising",
                "--clients",
                "0",
            ][..],
            "--clients",
        ),
        (
            &[
                "--target",
                "127.0.0.1:1",
                "--workload",
                "functionbench-rising",
                "--time-scale",
                "0",
            ][..],
            "--time-scale",
        ),
    ] {
        let mut all = vec!["cluster", "load", "--seconds", "1"];
        all.extend_from_slice(args);
        let e = stderr_of_failure(&all);
        assert!(e.contains(option), "{option}: {e}");
    }
}

/// `cluster replay` runs each router over fresh nodes with the same
/// clients and sets their rows side by side in `cluster simulate`'s files.
#[test]
fn cluster_replay_runs_each_router_over_fresh_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("replay");
    let printed = ok(&[
        "cluster",
        "replay",
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
    assert!(stdout.contains("wrote summary.json"), "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let settings = &summary["settings"];
    assert_eq!(
        settings["routers"],
        serde_json::json!(["ch-rlu", "least-loaded"])
    );
    let rows = summary["policies"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(names, ["ch-rlu", "least-loaded"]);
    for (row, run) in rows.iter().zip(settings["per_router"].as_array().unwrap()) {
        assert_eq!(run["router"], row["policy"]);
        assert_eq!(run["end"], "completed", "{run}");
        let invocations = row["invocations"].as_u64().unwrap();
        // Every run starts from cold nodes: its first call is cold.
        assert!(invocations >= 2, "{row}");
        assert!(row["cold_starts"].as_u64().unwrap() >= 1, "{row}");
        let per_node: u64 = run["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["invocations"].as_u64().unwrap())
            .sum();
        assert_eq!(per_node, row["finished"].as_u64().unwrap(), "{run}");
    }
    for file in ["summary.csv", "report.html"] {
        assert!(out.join(file).is_file(), "{file}");
    }
}

/// `cluster replay --workload functionbench-rising` sends each router the
/// same open-loop calls.
#[test]
fn cluster_replay_sends_the_rising_burst() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("replay");
    let printed = ok(&[
        "cluster",
        "replay",
        "-p",
        "ch-rlu",
        "--workload",
        "functionbench-rising",
        "--clients",
        "4",
        "--seconds",
        "0.3",
        "--time-scale",
        "0.01",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8(printed.stderr).unwrap();
    assert!(
        stderr.contains("ch-rlu: calls sent late by p50"),
        "{stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let settings = &summary["settings"];
    assert_eq!(settings["workload"]["name"], "functionbench-rising");
    let run = &settings["per_router"][0];
    assert_eq!(run["end"], "completed", "{run}");
    assert!(run["sent_late_us"]["p99"].is_number(), "{run}");
    let row = &summary["policies"][0];
    let invocations = row["invocations"].as_u64().unwrap();
    let errors: u64 = run["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(invocations >= 1, "{row}");
    assert_eq!(invocations, row["finished"].as_u64().unwrap() + errors);
}

/// `cluster replay --deploy --calls`: every FunctionBench function's calls
/// go to a real C function (each copy of `matrix-multiply` to `matrix`,
/// the rest to `hello` with a body), compiled once into the cache before
/// the nodes start (and found there by the next run), and every call is
/// answered by it: a call sent to `spin` with a body, or to a function
/// the nodes lack, would be an error.
#[test]
fn cluster_replay_sends_real_functions_from_a_calls_file() {
    let dir = tempfile::tempdir().unwrap();
    let Some(deploy) = crate::common::deploy_dir(dir.path(), &["matrix", "hello"]) else {
        return;
    };
    std::fs::write(dir.path().join("in.txt"), "some bytes").unwrap();
    let mut calls = String::from("[matrix-multiply]\ncall = \"matrix?n=8\"\n");
    for f in [
        "web-serving",
        "ml-inference-cnn",
        "disk-bench-dd",
        "sklearn-regression",
        "aes-encryption",
        "video-encoding",
        "json-parsing",
    ] {
        calls += &format!("[{f}]\ncall = \"hello?name={f}\"\nbody = \"in.txt\"\n");
    }
    let file = dir.path().join("calls.toml");
    std::fs::write(&file, calls).unwrap();
    let cache = dir.path().join("cache");
    let replay = |out: &str| {
        let out = dir.path().join(out);
        let printed = ok(&[
            "cluster",
            "replay",
            "-p",
            "ch-rlu",
            "--nodes",
            "1",
            "--clients",
            "2",
            "--seconds",
            "2",
            "--time-scale",
            "0.001",
            "--deploy",
            deploy.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
            "--calls",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        (String::from_utf8(printed.stderr).unwrap(), summary)
    };
    let (stderr, summary) = replay("first");
    // Compiled once, before the nodes start, and only then.
    assert_eq!(stderr.matches("function(s) in").count(), 1, "{stderr}");
    assert!(
        stderr.contains("2 function(s) in") && stderr.contains("2 compiled, 0 already there"),
        "{stderr}"
    );
    let settings = &summary["settings"];
    assert_eq!(settings["calls"]["matrix-multiply"]["call"], "matrix?n=8");
    assert_eq!(settings["calls"]["json-parsing"]["body_bytes"], 10);
    // What the real functions cost was measured first, in process.
    for label in ["matrix-multiply", "json-parsing"] {
        let call = &settings["calls"][label];
        assert!(call["warm_ms"].as_f64().unwrap() > 0.0, "{call}");
        assert!(call["load_ms"].as_f64().unwrap() > 0.0, "{call}");
        assert!(
            stderr.contains(&format!("{label} (")) && stderr.contains("ms of CPU warm"),
            "{stderr}"
        );
    }
    let run = &settings["per_router"][0];
    assert_eq!(run["end"], "completed", "{run}");
    assert_eq!(run["errors"], serde_json::json!({}), "{run}");
    let row = &summary["policies"][0];
    assert!(row["invocations"].as_u64().unwrap() >= 2, "{row}");
    assert_eq!(row["dropped"], 0, "{row}");
    assert!(row["cold_starts"].as_u64().unwrap() >= 1, "{row}");
    let (stderr, _) = replay("second");
    assert!(stderr.contains("0 compiled, 2 already there"), "{stderr}");
    // Real calls need functions for the nodes to serve.
    let e = stderr_of_failure(&["cluster", "replay", "--calls", file.to_str().unwrap()]);
    assert!(e.contains("give --deploy DIR"), "{e}");
}

/// A node with no memory for any container answers every call 503
/// `overloaded`; the load says how many failed, the kind, and what to
/// try.
#[test]
fn a_load_that_fails_says_why() {
    let node = Server::start(&[
        "node",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--memory-mb",
        "1",
        "--functions",
        "functionbench",
        "--time-scale",
        "0.001",
    ]);
    let printed = ok(&[
        "cluster",
        "load",
        "--target",
        &node.addr.to_string(),
        "--clients",
        "2",
        "--seconds",
        "0.5",
        "--time-scale",
        "0.001",
    ]);
    let stderr = String::from_utf8(printed.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    let failed = lines
        .iter()
        .position(|l| l.contains(" calls failed: overloaded "))
        .unwrap_or_else(|| panic!("{stderr}"));
    // Every call failed, and the one kind is explained.
    let (n, calls) = lines[failed]
        .split_once(" calls failed")
        .unwrap()
        .0
        .split_once(" of ")
        .unwrap();
    assert_eq!(n, calls, "{stderr}");
    assert!(
        lines[failed + 1].starts_with("  overloaded: no room for it"),
        "{stderr}"
    );
}
