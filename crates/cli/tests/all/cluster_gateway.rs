//! `faasched cluster gateway` as a user runs it: two real `faasched node
//! serve` processes on loopback ports and a gateway in front of them,
//! invoked through the gateway, scraped, and stopped by SIGTERM. No
//! assertion depends on timing; a process that never answers fails the
//! test after a generous cap instead of hanging it.

use crate::common::server::{CAP, Server, call, cluster_node, cluster_node_with};
use std::process::Command;
use std::time::{Duration, Instant};

/// A token of the control plane, as `openssl rand -hex 16` would make.
const TOKEN: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

#[test]
fn a_gateway_routes_over_two_node_runtimes_and_sigterm_drains_it() {
    let nodes = [cluster_node(), cluster_node()];
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
    // Several workers sharing a core report their load over the core.
    let shared = cluster_node_with(&["--workers", "4", "--load-cores", "1"]);
    let report: serde_json::Value =
        serde_json::from_str(&call(shared.addr, "GET", "/load", &[]).body).unwrap();
    assert_eq!(report["cores"].as_u64(), Some(1), "{report}");
    let unshared = cluster_node_with(&["--workers", "4"]);
    let report: serde_json::Value =
        serde_json::from_str(&call(unshared.addr, "GET", "/load", &[]).body).unwrap();
    assert_eq!(report["cores"].as_u64(), Some(4), "{report}");

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
        "--time-scale",
        "0.001",
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

/// A gateway given no node learns one that registers itself, presenting
/// the token both were given, routes to it, and forgets it when the node
/// says it leaves on SIGTERM; without the token nobody else changes the
/// gateway's nodes or the node's code.
#[test]
fn a_node_registers_with_a_gateway_given_none_and_leaves_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let token_file = token_file.to_str().unwrap();
    let gateway = Server::start(&[
        "cluster",
        "gateway",
        "--listen",
        "127.0.0.1:0",
        "--period-ms",
        "20",
        "--time-scale",
        "0.001",
        "--token-file",
        token_file,
    ]);
    let label = [("x-faasched-function", "aes-encryption-0")];
    let a = call(gateway.addr, "POST", "/invoke/spin?us=100", &label);
    assert_eq!(a.status, 503, "{}", a.body);
    assert!(a.body.contains("no node up"), "{}", a.body);

    let gw = gateway.addr.to_string();
    let node = cluster_node_with(&["--register", &gw, "--token-file", token_file]);
    let name = node.addr.to_string();
    let stranger = call(gateway.addr, "PUT", "/nodes/127.0.0.1:1", &[]);
    assert_eq!(stranger.status, 401, "{}", stranger.body);
    let module = br#"(module (func (export "run") (param i64) (result i64) (i64.const 0)))"#;
    let bearer = format!("Bearer {TOKEN}");
    let mut client = node.connect();
    let code = client.call("POST", "/register/zero", module);
    assert_eq!(code.status, 401, "{}", code.body);
    // Refused before its body was read, the connection may be closed: a
    // new one.
    let mut client = node.connect();
    client.send_with(
        "POST",
        "/register/zero",
        &[("authorization", &bearer)],
        module,
    );
    assert_eq!(client.receive().status, 201);
    let status_until = |what: &str, done: &dyn Fn(&serde_json::Value) -> bool| {
        let start = Instant::now();
        loop {
            let body = call(gateway.addr, "GET", "/status", &[]).body;
            let status: serde_json::Value = serde_json::from_str(&body).unwrap();
            if done(&status) {
                return status;
            }
            assert!(start.elapsed() < CAP, "never {what}: {status}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let status = status_until("the node registered", &|s| {
        s["nodes"][0]["node"] == name.as_str() && s["nodes"][0]["up"] == true
    });
    assert_eq!(status["nodes"][0]["membership"], "registered");
    let a = call(gateway.addr, "POST", "/invoke/spin?us=100", &label);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.header("x-faasched-node"), Some(name.as_str()));

    let (ok, rest) = node.stop();
    assert!(ok, "{rest}");
    let status = status_until("the node gone", &|s| {
        s["nodes"].as_array().is_some_and(Vec::is_empty)
    });
    assert_eq!(status["membership"]["leaves"], 1, "{status}");
    let (ok, rest) = gateway.stop();
    assert!(ok, "{rest}");
    assert!(
        rest.contains("stopped by SIGTERM; 2 invocations received, 2 answered"),
        "{rest}"
    );
    assert!(
        rest.contains("node registrations") && rest.contains("1 left"),
        "{rest}"
    );
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
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short");
    std::fs::write(&short, "abc\n").unwrap();
    let short = short.to_str().unwrap().to_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args(["cluster", "gateway", "--listen", "127.0.0.1:0"])
        .args(["--token-file", &short])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("--token-file: the token file")
            && err.contains("at least 32"),
        "{err}"
    );
    // Others could reach it, and no token guards it: refused, before
    // anything listens.
    for command in [&["node", "serve"][..], &["cluster", "gateway"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_faasched"))
            .args(command)
            .args(["--listen", "0.0.0.0:0"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success()
                && err.contains("--listen 0.0.0.0:0: others can reach this address")
                && err.contains("--no-token"),
            "{command:?}: {err}"
        );
    }
    for (args, named) in [
        (
            &["--register", "nowhere"][..],
            "gateway address \"nowhere\"",
        ),
        (
            &["--register", "127.0.0.1:1", "--advertise", "a b:1"][..],
            "\"a b:1\"",
        ),
        (&["--advertise", "127.0.0.1:2"][..], "--register"),
        (
            &["--token-file", "/nonexistent/token"][..],
            "--token-file: reading the token file /nonexistent/token",
        ),
        (
            &["--token-file", short.as_str()][..],
            "at least 32 characters",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_faasched"))
            .args(["node", "serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(named),
            "{args:?}: {err}"
        );
    }
}

/// `cluster up` starts its nodes, each a process, and the gateway in front;
/// invocations go through; SIGTERM stops the gateway and then every node,
/// and none is left.
#[test]
fn cluster_up_serves_through_its_own_nodes_and_leaves_none_behind() {
    let up = Server::start(&[
        "cluster",
        "up",
        "--nodes",
        "2",
        "--listen",
        "127.0.0.1:0",
        "--period-ms",
        "50",
        "--time-scale",
        "0.001",
    ]);
    let pids: Vec<u32> = up
        .preamble
        .iter()
        .filter_map(|l| l.split("(pid ").nth(1))
        .map(|rest| rest.split([',', ')']).next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{:?}", up.preamble);
    let label = [("x-faasched-function", "json-parsing-3")];
    let answers: Vec<_> = (0..3)
        .map(|_| call(up.addr, "POST", "/invoke/spin?us=5", &label))
        .collect();
    for a in &answers {
        assert_eq!(a.status, 200, "{}", a.body);
    }
    // One node has it: its first invocation starts cold, the rest are warm.
    let cold: Vec<_> = answers
        .iter()
        .map(|a| a.header("x-faasched-cold"))
        .collect();
    assert_eq!(cold, [Some("1"), Some("0"), Some("0")]);
    let (ok, rest) = up.stop();
    assert!(ok, "{rest}");
    assert!(rest.contains("2 node(s) stopped, 2 cleanly"), "{rest}");
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "node {pid} left behind"
        );
    }
}

/// The whole cluster under TLS: a node serving TLS only, a second that
/// registers with the gateway over TLS, a gateway that serves TLS and
/// speaks it to its nodes, and `cluster load` and `node load` calling
/// through it trusting the test's CA. Plain HTTP on a TLS port gets no
/// HTTP answer.
#[test]
fn a_cluster_serves_and_speaks_tls_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = crate::common::certificates(dir.path());
    let (ca, cert, key) = (
        ca.to_str().unwrap(),
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
    );
    let tls = ["--tls-cert", cert, "--tls-key", key];
    let static_node = cluster_node_with(&tls);
    let static_addr = static_node.addr.to_string();
    let gateway = Server::start(&[
        "cluster",
        "gateway",
        "--listen",
        "127.0.0.1:0",
        "--period-ms",
        "20",
        "--time-scale",
        "0.001",
        "--node",
        &static_addr,
        "--tls-cert",
        cert,
        "--tls-key",
        key,
        "--tls-ca",
        ca,
    ]);
    let gw = gateway.addr.to_string();
    let registered = cluster_node_with(&[&tls[..], &["--register", &gw, "--tls-ca", ca]].concat());
    let registered_addr = registered.addr.to_string();

    // Plain HTTP to a TLS listener: no HTTP answer.
    for addr in [gateway.addr, static_node.addr] {
        use std::io::{Read, Write};
        let mut plain = std::net::TcpStream::connect(addr).unwrap();
        plain.set_read_timeout(Some(CAP)).unwrap();
        plain
            .write_all(b"GET /status HTTP/1.1\r\nhost: x\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        let _ = plain.read_to_end(&mut answer);
        assert!(!answer.starts_with(b"HTTP/"), "{addr}: {answer:?}");
    }

    let load = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_faasched"))
            .args([
                "cluster",
                "load",
                "--target",
                &gw,
                "--clients",
                "2",
                "--seconds",
                "1",
                "--time-scale",
                "0.001",
                "--json",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    // Both nodes serve: the registered one joins within the first second
    // (its first registration goes out as it starts listening).
    let start = Instant::now();
    let summary = loop {
        let out = load(&["--tls-ca", ca]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let nodes: Vec<String> = summary["settings"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["node"].as_str().unwrap().to_string())
            .collect();
        if nodes.contains(&registered_addr) && nodes.contains(&static_addr) {
            break summary;
        }
        assert!(start.elapsed() < CAP, "never both nodes: {summary}");
    };
    let row = &summary["policies"][0];
    assert_eq!(row["invocations"], row["finished"], "{summary}");

    // A client speaking plain HTTP to the TLS gateway is answered nothing.
    let plain = load(&[]);
    let summary: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    let row = &summary["policies"][0];
    assert_eq!(row["finished"], 0, "{summary}");
    assert!(row["invocations"].as_u64().unwrap() > 0, "{summary}");

    // node load over TLS to the node itself.
    let out = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args([
            "node",
            "load",
            "--target",
            &static_addr,
            "--closed",
            "2",
            "--seconds",
            "0.3",
            "--json",
            "--tls-ca",
            ca,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(summary["requests"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(summary["requests"], summary["answered"], "{summary}");

    let (ok, rest) = registered.stop();
    assert!(ok, "{rest}");
    let (ok, rest) = gateway.stop();
    assert!(ok, "{rest}");
}

/// One node given twice under two spellings of its address is one entry:
/// its first poll says the same node id at both, and the second address
/// leaves the table.
#[test]
fn a_static_node_given_twice_is_one_node() {
    let node = cluster_node();
    let port = node.addr.port();
    let (first, again) = (format!("127.0.0.1:{port}"), format!("localhost:{port}"));
    let gateway = Server::start(&[
        "cluster",
        "gateway",
        "--listen",
        "127.0.0.1:0",
        "--period-ms",
        "20",
        "--time-scale",
        "0.001",
        "--node",
        &first,
        "--node",
        &again,
    ]);
    let status: serde_json::Value =
        serde_json::from_str(&call(gateway.addr, "GET", "/status", &[]).body).unwrap();
    let nodes: Vec<&str> = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, [first.as_str()], "{status}");
    assert_eq!(status["membership"]["aliases"], 1, "{status}");
    let metrics = call(gateway.addr, "GET", "/metrics", &[]).body;
    assert!(
        metrics.contains("faasched_gateway_node_aliases_total 1\n"),
        "{metrics}"
    );
    let (ok, rest) = gateway.stop();
    assert!(ok, "{rest}");
}

/// The gateway forwards an invocation's body and query as sent: a WASI
/// command on the node reads the body through it, and a query that is no
/// `run` function's integers reaches it (the node, not the gateway,
/// checks what a function takes).
#[test]
fn a_gateway_forwards_the_body_and_query_to_its_node() {
    let node = cluster_node();
    let mut c = node.connect();
    let registered = c.call("POST", "/register/echo", crate::common::CGI_ECHO.as_bytes());
    assert_eq!(registered.status, 201, "{}", registered.body);
    let name = node.addr.to_string();
    let gateway = Server::start(&[
        "cluster",
        "gateway",
        "--listen",
        "127.0.0.1:0",
        "--workload",
        "functionbench",
        "--time-scale",
        "0.001",
        "--node",
        &name,
    ]);
    let mut g = gateway.connect();
    g.send_with(
        "POST",
        "/invoke/echo?a=1&b=text",
        &[("x-faasched-function", "aes-encryption-0")],
        b"carried through the gateway",
    );
    let echoed = g.receive();
    assert_eq!(echoed.status, 201, "{}", echoed.body);
    assert!(
        echoed.body.ends_with("carried through the gateway"),
        "{}",
        echoed.body
    );
    assert!(
        echoed.body.lines().any(|l| l == "QUERY_STRING=a=1&b=text"),
        "{}",
        echoed.body
    );
    assert_eq!(echoed.header("x-faasched-node"), Some(name.as_str()));
}
