//! `faasched cluster gateway` as a user runs it: two real `faasched node
//! serve` processes on loopback ports and a gateway in front of them,
//! invoked through the gateway, scraped, and stopped by SIGTERM. No
//! assertion depends on timing; a process that never answers fails the
//! test after a generous cap instead of hanging it.

mod common;

use common::server::{CAP, Server, call};
use std::process::Command;
use std::time::{Duration, Instant};

fn node() -> Server {
    Server::start(&[
        "node",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--load-period-ms",
        "20",
        "--memory-mb",
        "1024",
        "--functions",
        "functionbench",
        "--time-scale",
        "0.001",
    ])
}

#[test]
fn a_gateway_routes_over_two_node_runtimes_and_sigterm_drains_it() {
    let nodes = [node(), node()];
    let load = call(nodes[0].addr, "GET", "/load", &[]);
    assert_eq!(load.status, 200, "{}", load.body);
    let report: serde_json::Value = serde_json::from_str(&load.body).unwrap();
    assert_eq!(
        (report["cores"].as_u64(), report["memory_mb"].as_u64()),
        (Some(1), Some(1024))
    );
    assert!(
        report["load"].is_f64() && report["seq"].is_u64(),
        "{report}"
    );

    let names: Vec<String> = nodes.iter().map(|n| n.addr.to_string()).collect();
    let gateway = Server::start(&[
        "cluster",
        "gateway",
        "--listen",
        "127.0.0.1:0",
        "--policy",
        "ch-rlu",
        "--workload",
        "functionbench",
        "--period-ms",
        "20",
        "--node",
        &names[0],
        "--node",
        &names[1],
    ]);
    let label = [("x-faasched-function", "aes-encryption-0")];
    let mut by_node = [0u64; 2];
    let mut cold = [0u64; 2];
    for _ in 0..10 {
        let a = call(gateway.addr, "POST", "/invoke/spin?us=100", &label);
        assert_eq!(a.status, 200, "{}", a.body);
        let node = a.header("x-faasched-node").unwrap();
        let i = names.iter().position(|n| n == node).unwrap();
        by_node[i] += 1;
        cold[i] += u64::from(a.header("x-faasched-cold") == Some("1"));
        assert!(a.header("x-faasched-runtime-us").is_some());
    }
    // One after another, a node's first invocation of the function starts
    // its container cold and the rest find it warm.
    assert_eq!(cold, by_node.map(|n| n.min(1)), "{by_node:?}");
    let unknown = call(gateway.addr, "POST", "/invoke/spin?us=100", &[]);
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert!(unknown.body.contains("spin"), "{}", unknown.body);

    // Both nodes are up once the gateway polled them.
    let start = Instant::now();
    let metrics = loop {
        let m = call(gateway.addr, "GET", "/metrics", &[]).body;
        if names
            .iter()
            .all(|n| m.contains(&format!("faasched_gateway_node_up{{node=\"{n}\"}} 1")))
        {
            break m;
        }
        assert!(start.elapsed() < CAP, "nodes never up:\n{m}");
        std::thread::sleep(Duration::from_millis(10));
    };
    for (i, n) in names.iter().enumerate() {
        for line in [
            format!(
                "faasched_gateway_node_requests_total{{node=\"{n}\"}} {}",
                by_node[i]
            ),
            format!(
                "faasched_gateway_node_cold_starts_total{{node=\"{n}\"}} {}",
                cold[i]
            ),
        ] {
            assert!(
                metrics.lines().any(|l| l == line),
                "no {line:?} in\n{metrics}"
            );
        }
    }
    assert!(
        metrics.contains("faasched_gateway_decision_seconds_count 10"),
        "{metrics}"
    );
    let status: serde_json::Value =
        serde_json::from_str(&call(gateway.addr, "GET", "/status", &[]).body).unwrap();
    assert_eq!(status["gateway"]["policy"], "ch-rlu");
    assert_eq!(status["invocations"]["received"], 10);

    let (ok, rest) = gateway.stop();
    assert!(ok, "{rest}");
    assert!(
        rest.contains("stopped by SIGTERM; 10 invocations received, 10 answered"),
        "{rest}"
    );
    assert!(rest.contains("decision p50"), "{rest}");
    for node in nodes {
        let (ok, rest) = node.stop();
        assert!(ok, "{rest}");
    }
}

#[test]
fn a_gateway_refuses_bad_options_naming_them() {
    let out = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args([
            "cluster",
            "gateway",
            "--node",
            "nowhere",
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nowhere"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args([
            "cluster",
            "gateway",
            "--node",
            "127.0.0.1:1",
            "--policy",
            "best",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("ch-rlu"), "{err}");
}
