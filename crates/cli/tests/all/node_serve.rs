//! `faasched node serve` as a user runs it: a real process on a loopback
//! port, its answers, its faults, a preemption, and a clean SIGTERM. No
//! assertion depends on timing; a serve that never answers fails the test
//! after a generous cap instead of hanging it.

use crate::common::server::{Server, call};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `faasched node serve` on a free loopback port, with `args`.
fn serve(args: &[&str]) -> Server {
    Server::start(&[&["node", "serve", "--listen", "127.0.0.1:0"][..], args].concat())
}

#[test]
fn functions_answer_faults_are_contained_and_sigterm_stops_cleanly() {
    let serve = serve(&["--cpu-limit-ms", "200", "--memory-limit-mib", "2"]);
    let mut c = serve.connect();

    let fib = c.call("POST", "/invoke/fib?n=25", b"");
    assert_eq!((fib.status, fib.body.as_str()), (200, "75025\n"));
    assert!(fib.header("x-faasched-cpu-us").is_some());
    let resize = c.call("POST", "/invoke/resize?w=64&h=48", b"");
    assert_eq!(resize.status, 200, "{}", resize.body);

    let unknown = c.call("POST", "/invoke/nothing", b"");
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.header("x-faasched-error"), Some("unknown-function"));
    let bad = c.call("POST", "/invoke/fib?k=3", b"");
    assert_eq!(bad.status, 400, "{}", bad.body);

    let trap = br#"(module (func (export "run") (param i64) (result i64) unreachable))"#;
    assert_eq!(c.call("POST", "/register/trap", trap).status, 201);
    let forever = br#"(module (func (export "run") (param i64) (result i64) (loop $l (br $l)) (i64.const 0)))"#;
    assert_eq!(c.call("POST", "/register/forever", forever).status, 201);
    let grow = br#"(module (memory 1) (func (export "run") (param i64) (result i64)
        (loop $l (br_if $l (i32.ne (memory.grow (i32.const 1)) (i32.const -1)))) (i64.const 0)))"#;
    assert_eq!(c.call("POST", "/register/grow", grow).status, 201);
    let malformed = c.call("POST", "/register/broken", b"(module (func");
    assert_eq!(malformed.status, 400, "{}", malformed.body);

    for (path, status, kind) in [
        ("/invoke/trap", 500, "trap"),
        ("/invoke/forever", 504, "timeout"),
        ("/invoke/grow", 500, "memory"),
    ] {
        let a = c.call("POST", path, b"");
        assert_eq!(a.status, status, "{path}: {}", a.body);
        assert_eq!(a.header("x-faasched-error"), Some(kind), "{path}");
        // The worker survived: the next request runs.
        let next = c.call("POST", "/invoke/fib?n=10", b"");
        assert_eq!((next.status, next.body.as_str()), (200, "55\n"));
    }

    let metrics = c.call("GET", "/metrics", b"").body;
    let value = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {metrics}"))
    };
    // The unknown function and the bad argument were refused on arrival,
    // before they were queued: not accepted.
    let accepted = value("faasched_ingress_invocations_accepted_total ");
    assert_eq!(accepted, 8);
    assert_eq!(
        value("faasched_ingress_invocations_answered_total "),
        accepted
    );
    assert_eq!(value("faasched_node_completed_total "), 5);

    let (clean, rest) = serve.stop();
    assert!(clean, "{rest}");
    assert!(rest.contains("stopped by SIGTERM"), "{rest}");
    assert!(rest.contains("0 left unanswered"), "{rest}");
}

/// A client that floods one worker with long spins does not starve the
/// others: by default a node holds a function to its fair share of a
/// backlog of 2 s per worker, so of twelve 300 ms spins three are admitted
/// and the rest are refused at once, 503 `over-share` with `Retry-After`,
/// while a `fib` sent behind them is answered.
#[test]
fn a_flood_of_one_function_is_refused_past_its_share_and_others_run() {
    let serve = serve(&[]);
    let mut spins: Vec<_> = (0..12).map(|_| serve.connect()).collect();
    for c in &mut spins {
        c.send("POST", "/invoke/spin?us=300000", b"");
    }
    let mut other = serve.connect();
    let fib = other.call("POST", "/invoke/fib?n=25", b"");
    assert_eq!((fib.status, fib.body.as_str()), (200, "75025\n"));
    let answers: Vec<_> = spins.iter_mut().map(|c| c.receive()).collect();
    let refused: Vec<_> = answers.iter().filter(|a| a.status == 503).collect();
    assert_eq!(
        refused.len(),
        9,
        "{:?}",
        answers.iter().map(|a| &a.body).collect::<Vec<_>>()
    );
    for a in &refused {
        assert_eq!(
            a.header("x-faasched-error"),
            Some("over-share"),
            "{}",
            a.body
        );
        assert_eq!(a.header("retry-after"), Some("1"));
    }
    assert!(answers.iter().all(|a| a.status == 200 || a.status == 503));
    let metrics = other.call("GET", "/metrics", b"").body;
    assert!(
        metrics.contains("faasched_node_refused_total{reason=\"over-share\"} 9"),
        "{metrics}"
    );
    let (clean, rest) = serve.stop();
    assert!(clean, "{rest}");
}

/// A node holds at most `--max-modules` registered modules; removing one
/// makes room, and its name is unknown again.
#[test]
fn registered_modules_are_bounded_and_removed() {
    let serve = serve(&["--max-modules", "1"]);
    let mut c = serve.connect();
    let add_one = br#"(module (func (export "run") (param i64) (result i64)
        (i64.add (local.get 0) (i64.const 1))))"#;
    assert_eq!(c.call("POST", "/register/a", add_one).status, 201);
    let full = c.call("POST", "/register/b", add_one);
    assert_eq!(full.status, 400, "{}", full.body);
    assert!(
        full.body.contains("holds 1 registered modules"),
        "{}",
        full.body
    );
    let builtin = c.call("DELETE", "/functions/fib", b"");
    assert_eq!(builtin.status, 400, "{}", builtin.body);
    assert!(builtin.body.contains("built in"), "{}", builtin.body);
    let removed = c.call("DELETE", "/functions/a", b"");
    assert_eq!(
        (removed.status, removed.body.as_str()),
        (200, "removed a\n")
    );
    assert_eq!(c.call("POST", "/invoke/a?arg=1", b"").status, 404);
    assert_eq!(c.call("POST", "/register/b", add_one).status, 201);
    let b = c.call("POST", "/invoke/b?arg=41", b"");
    assert_eq!((b.status, b.body.as_str()), (200, "42\n"));
    let (clean, rest) = serve.stop();
    assert!(clean, "{rest}");
}

/// A node given an invocation token answers only the invocations that
/// present it: `node load --token-file` does, a load without it is
/// refused.
#[test]
fn invocations_need_the_token_a_load_presents() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("invoke.token");
    std::fs::write(&token, "0f1e2d3c4b5a69788796a5b4c3d2e1f0\n").unwrap();
    let token = token.to_str().unwrap();
    let serve = serve(&["--invoke-token-file", token]);
    let target = serve.addr.to_string();
    let load = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "node",
            "load",
            "--target",
            &target,
            "--closed",
            "2",
            "--seconds",
            "0.2",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = Command::new(env!("CARGO_BIN_EXE_faasched"))
            .args(&args)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    };
    let with = load(&["--token-file", token]);
    assert!(with["answered"].as_u64().unwrap() >= 1, "{with}");
    assert_eq!(with["requests"], with["answered"], "{with}");
    let without = load(&[]);
    assert!(without["requests"].as_u64().unwrap() >= 1, "{without}");
    assert_eq!(without["answered"], 0, "{without}");
    let (clean, rest) = serve.stop();
    assert!(clean, "{rest}");
}

#[test]
fn sledgescale_preempts_a_long_spin_for_an_urgent_request() {
    let serve = serve(&["--policy", "sledgescale"]);
    let mut long = serve.connect();
    let mut urgent = serve.connect();
    // Half a second of spin with a 10 s deadline, then a no-op due in 1 ms
    // once the spin runs: the dispatcher preempts the spin for it.
    let deadline = "x-faasched-deadline-us";
    long.send_with(
        "POST",
        "/invoke/spin?us=500000",
        &[(deadline, "10000000")],
        b"",
    );
    let mut status = serve.connect();
    let mut busy = false;
    for _ in 0..10_000 {
        let s = status.call("GET", "/status", b"").body;
        if s.contains("\"busy_workers\":1") {
            busy = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(busy, "the spin never started");
    urgent.send_with("POST", "/invoke/noop", &[(deadline, "1000")], b"");
    let quick = urgent.receive();
    assert_eq!(quick.status, 200);
    assert_eq!(quick.header("x-faasched-preemptions"), Some("0"));
    let slow = long.receive();
    assert_eq!(slow.status, 200);
    assert_eq!(slow.header("x-faasched-preemptions"), Some("1"));
    let (clean, rest) = serve.stop();
    assert!(clean, "{rest}");
}

#[test]
fn a_client_that_leaves_frees_its_sandbox() {
    // 100 s of spin with room for it in the CPU limit: only the client's
    // leaving can end it within the test's cap.
    let serve = serve(&["--cpu-limit-ms", "200000"]);
    let mut gone = serve.connect();
    gone.send_with(
        "POST",
        "/invoke/spin?us=100000000",
        &[("x-faasched-deadline-us", "1000000000")],
        b"",
    );
    let mut watch = serve.connect();
    let mut wait_for = |what: &str| {
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if watch.call("GET", "/status", b"").body.contains(what) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    };
    assert!(wait_for("\"busy_workers\":1"), "the spin never started");
    drop(gone);
    assert!(wait_for("\"in_flight\":0"), "the spin still runs");
    let metrics = watch.call("GET", "/metrics", b"").body;
    assert!(
        metrics.contains("faasched_ingress_client_disconnects_total 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("faasched_node_failed_total 1\n"),
        "{metrics}"
    );
    let next = watch.call("POST", "/invoke/fib?n=10", b"");
    assert_eq!((next.status, next.body.as_str()), (200, "55\n"));
    let (clean, rest) = serve.stop();
    assert!(clean, "{rest}");
}

/// A node with containers: a function's first request starts its container
/// cold, the next finds it warm, a function outside the table runs without
/// one; /metrics and /status count them.
#[test]
fn a_node_with_containers_answers_cold_then_warm() {
    let serve = serve(&[
        "--functions",
        "functionbench",
        "--time-scale",
        "0.001",
        "--memory-mb",
        "512",
        "--keep-alive",
        "lru",
    ]);
    let mut client = serve.connect();
    let mut cold = |label: &str| {
        client.send_with(
            "POST",
            "/invoke/spin?us=100",
            &[("x-faasched-function", label)],
            b"",
        );
        let answer = client.receive();
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.header("x-faasched-cold").unwrap().to_string()
    };
    assert_eq!(cold("web-serving-0"), "1");
    assert_eq!(cold("web-serving-0"), "0");
    assert_eq!(cold("not-in-the-table"), "0");
    let mut watch = serve.connect();
    let metrics = watch.call("GET", "/metrics", b"").body;
    for line in [
        "faasched_node_cold_starts_total 1\n",
        "faasched_node_warm_starts_total 1\n",
        "faasched_node_container_memory_mb 256\n",
    ] {
        assert!(metrics.contains(line), "{line}: {metrics}");
    }
    let status = watch.call("GET", "/status", b"").body;
    assert!(status.contains("\"keep_alive\":\"lru\""), "{status}");
    let (clean, rest) = serve.stop();
    assert!(clean, "{rest}");
}

/// `node serve --config -`, as `cluster up` starts its nodes: the whole
/// configuration as JSON on stdin, every option named; once listening, one
/// JSON line on stdout naming an address that answers, and no "listening
/// on" line meant for people on stderr. JSON with a misspelt or missing
/// option is refused, naming it; a flag beside `--config` is refused.
#[test]
fn a_node_configured_by_json_on_stdin_says_in_json_where_it_listens() {
    let config = serde_json::json!({
        "listen": "127.0.0.1:0",
        "policy": "jsq",
        "dispatchers": 1,
        "workers": 2,
        "workload": null,
        "deadline": "*=10x",
        "estimate": "exact",
        "preempt_test": "paper",
        "drain_s": 10.0,
        "memory_mb": 512,
        "containers": {
            "functions": "functionbench",
            "time_scale": 0.001,
            "keep_alive": "lru",
            "cold_wait": 1.0
        },
        "load_period_ms": 20,
        "load_cores": 1,
        "register": null,
        "host": {
            "cpus": [],
            "poll": false,
            "cpu_limit_ns": 1_000_000_000,
            "memory_limit_bytes": 64 << 20,
            "max_sandboxes": 128,
            "spin_steps_per_ms": null
        }
    });
    let serve = Server::configured(&config.to_string());
    let label = [("x-faasched-function", "web-serving-0")];
    let first = call(serve.addr, "POST", "/invoke/spin?us=100", &label);
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.header("x-faasched-cold"), Some("1"));
    let status = call(serve.addr, "GET", "/status", &[]).body;
    assert!(status.contains("\"keep_alive\":\"lru\""), "{status}");
    let (clean, rest) = serve.stop();
    assert!(clean, "{rest}");
    assert!(!rest.contains("listening on"), "{rest}");
    assert!(rest.contains("stopped by SIGTERM"), "{rest}");

    let mut misspelt = config.clone();
    misspelt["wrokers"] = misspelt["workers"].take();
    misspelt.as_object_mut().unwrap().remove("workers");
    let mut missing = config.clone();
    missing["host"]
        .as_object_mut()
        .unwrap()
        .remove("cpu_limit_ns");
    for (bad, named) in [
        (misspelt.to_string(), "unknown field `wrokers`"),
        (missing.to_string(), "missing field `cpu_limit_ns`"),
        ("{\"listen\": ".to_string(), "--config -"),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_faasched"))
            .args(["node", "serve", "--config", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(bad.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}");
        assert!(
            err.contains("--config -") && err.contains(named),
            "{bad}: {err}"
        );
        assert!(out.stdout.is_empty(), "{bad}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args(["node", "serve", "--config", "-", "--workers", "2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("'--config <FILE>' cannot be used with"),
        "{err}"
    );
}

/// `bench runtime` refuses a debug build; a release build runs a tiny bench
/// and prints every measurement, for both modes.
#[test]
fn bench_runtime_refuses_debug_and_reports_each_measurement() {
    let out = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args([
            "bench",
            "runtime",
            "--round-trips",
            "20",
            "--requests",
            "50",
        ])
        .args(["--window", "4", "--preemptions", "2", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if cfg!(debug_assertions) {
        assert!(!out.status.success());
        assert!(
            err.contains("release build") && err.contains("bench runtime"),
            "{err}"
        );
        return;
    }
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sandbox_setup"]["count"], 20);
    let modes: Vec<&str> = v["modes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["sleeping", "polling"]);
    for m in v["modes"].as_array().unwrap() {
        assert_eq!(m["noop"]["count"], 20);
        assert_eq!(m["noop_http"]["count"], 20);
        assert_eq!(m["preempting_noop"]["count"], 2);
        assert_eq!(m["switch"]["count"], 2);
        assert!(m["noop_per_s"].as_f64().unwrap() > 0.0);
    }
}
