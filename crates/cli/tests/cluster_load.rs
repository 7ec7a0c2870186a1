//! `faasched cluster load` as a user runs it: two real `faasched node
//! serve` processes and a gateway in front of them on loopback ports,
//! loaded by four closed-loop clients for 2 s. Every assertion is a count
//! that holds however slow the machine is.

mod common;

use common::server::{Server, cluster_node};
use common::{ok, stderr_of_failure};

#[test]
fn clients_load_a_live_cluster_and_write_the_simulators_outputs() {
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
