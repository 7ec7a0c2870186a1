//! `faasched node load` against a minimal HTTP/1.1 server in the test: its
//! outputs, its errors and its help.

use crate::common::{faasched, interrupt, ok, stderr_of_failure};
use faasched_model::SEC;
use faasched_workload::node::{Deadlines, Estimate, Length, Params, Workload};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A server that answers every request with a 200 at once, keeping each
/// connection alive, one thread per connection; it lives as long as the
/// test process.
fn serve() -> SocketAddr {
    serve_counting().0
}

/// [`serve`], with the count of requests it received.
fn serve_counting() -> (SocketAddr, Arc<AtomicU64>) {
    serve_as(Reply::default())
}

/// How the test's server answers.
#[derive(Clone, Default)]
struct Reply {
    /// A 503 `overloaded` instead of a 200.
    overloaded: bool,
    /// Each answer takes this long, one at a time across the connections:
    /// a server of one worker.
    serial: Option<Duration>,
}

/// A server that answers as `reply` says; with the count of requests it
/// received.
fn serve_as(reply: Reply) -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let counted = count.clone();
    let worker = Arc::new(std::sync::Mutex::new(()));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            let (counted, reply, worker) = (counted.clone(), reply.clone(), worker.clone());
            std::thread::spawn(move || answer(stream, &counted, &reply, &worker));
        }
    });
    (addr, count)
}

/// Answers the requests of one connection until it closes.
fn answer(stream: TcpStream, count: &AtomicU64, reply: &Reply, worker: &std::sync::Mutex<()>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut length = 0;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => {
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        count.fetch_add(1, Ordering::SeqCst);
        if let Some(busy) = reply.serial {
            let _one_at_a_time = worker.lock().unwrap();
            std::thread::sleep(busy);
        }
        let response = match reply.overloaded {
            false => {
                "HTTP/1.1 200 OK\r\ncontent-length: 4\r\nx-faasched-runtime-us: 3\r\n\
                 x-faasched-cpu-us: 2\r\nx-faasched-preemptions: 0\r\n\r\ndone"
            }
            true => {
                "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\
                 x-faasched-error: overloaded\r\n\r\nfull"
            }
        };
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// The arrivals of `node simulate`'s stream, µs (rounded down).
fn arrivals_us(workload: &str, rate: f64, seconds: f64, seed: u64) -> Vec<u64> {
    let params = Params {
        rate_per_s: rate,
        length: Length::Duration((seconds * SEC as f64).round() as u64),
        seed,
        deadlines: Deadlines::default(),
        estimate: Estimate::Exact,
    };
    Workload::builtin(workload)
        .unwrap()
        .requests(&params)
        .unwrap()
        .map(|r| r.arrival / 1_000)
        .collect()
}

#[test]
fn outputs_hold_one_row_per_request_of_the_stream() {
    let target = serve().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("load");
    let args = [
        "node",
        "load",
        "--target",
        &target,
        "-w",
        "bimodal-high",
        "--rate",
        "500",
        "--seconds",
        "0.2",
        "--seed",
        "7",
        "--out",
        out.to_str().unwrap(),
    ];
    let stdout = String::from_utf8(ok(&args).stdout).unwrap();
    assert!(
        stdout.contains("image-classify") && stdout.contains("p99_us"),
        "{stdout}"
    );
    assert!(
        stdout.contains("wrote requests.csv, workload.csv, summary.json"),
        "{stdout}"
    );
    let arrivals = arrivals_us("bimodal-high", 500.0, 0.2, 7);
    let csv = std::fs::read_to_string(out.join("requests.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("id,function,intended_us,sent_us,done_us,latency_us,runtime_us,cpu_us,status,error")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), arrivals.len());
    for (i, (row, arrival)) in rows.iter().zip(&arrivals).enumerate() {
        assert_eq!(row[0], i.to_string());
        assert_eq!(row[2], arrival.to_string());
        assert_eq!((row[6], row[7], row[8], row[9]), ("3", "2", "200", ""));
    }
    // workload.csv: the run as a workload, each request's work the CPU
    // time the node said (2 µs here), which the simulator runs.
    let workload = out.join("workload.csv");
    let text = std::fs::read_to_string(&workload).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("id,function,arrival_us,phases,memory_mb,deadline_us")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), arrivals.len());
    for (row, arrival) in rows.iter().zip(&arrivals) {
        assert_eq!((row[2], row[3]), (arrival.to_string().as_str(), "c2"));
    }
    let simulated: Value = serde_json::from_slice(
        &ok(&[
            "node",
            "simulate",
            "-w",
            workload.to_str().unwrap(),
            "-p",
            "sledgescale",
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    assert!(simulated.to_string().contains("sledgescale"), "{simulated}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["requests"], arrivals.len());
    assert_eq!(summary["answered"], arrivals.len());
    assert_eq!(summary["end"], "completed");
    assert_eq!(summary["settings"]["workload"], "bimodal-high");
    assert_eq!(summary["settings"]["connections"], 16);
    assert!(summary["latency_us"]["p99"].as_u64().is_some(), "{summary}");
    assert_eq!(summary["schema_version"], 1);
    // The simulator's metrics of the same run: every request answered, so
    // finished, none dropped; `all` first, then each function, whose
    // requests add up.
    let metrics = summary["metrics"].as_array().unwrap();
    let all = &metrics[0];
    assert_eq!(
        (&all["function"], &all["policy"]),
        (&json!("all"), &json!("live"))
    );
    assert_eq!(all["rate_rps"], 500.0);
    assert_eq!(all["requests"], arrivals.len());
    assert_eq!(
        (&all["finished"], &all["dropped"]),
        (&all["requests"], &json!(0))
    );
    assert!(
        all["latency_p99_us"].as_f64().is_some_and(|l| l > 0.0),
        "{all}"
    );
    let names: Vec<&str> = metrics[1..]
        .iter()
        .map(|m| m["function"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["image-resize", "image-classify"]);
    let per_function: u64 = metrics[1..]
        .iter()
        .map(|m| m["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(per_function, arrivals.len() as u64);
}

#[test]
fn closed_loop_prints_its_summary_as_json() {
    let target = serve().to_string();
    let args = [
        "node",
        "load",
        "--target",
        &target,
        "--closed",
        "2",
        "--seconds",
        "0.1",
        "--json",
    ];
    let summary: Value = serde_json::from_slice(&ok(&args).stdout).unwrap();
    assert_eq!(summary["mode"], "closed");
    assert_eq!(summary["connections"], 2);
    assert_eq!(summary["requests"], summary["answered"]);
    assert!(summary["answered"].as_u64().unwrap() >= 1, "{summary}");
}

/// `--function` and `--body` send the colocated workload's streams to real
/// functions (what the server answers is all it checks); bad ones are
/// refused before anything is sent, naming the option.
#[test]
fn real_functions_are_sent_and_bad_ones_refused_by_name() {
    let (addr, count) = serve_counting();
    let target = addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("input.json");
    std::fs::write(&body, "{\"n\": 3}").unwrap();
    let body = format!("short={}", body.display());
    let base = [
        "node",
        "load",
        "--target",
        &target,
        "-w",
        "colocated",
        "--rate",
        "200",
        "--seconds",
        "0.2",
    ];
    let mapped = [
        "--function",
        "short=hello-http",
        "--function",
        "long=primes-http?n=300000",
        "--body",
        &body,
        "--json",
    ];
    let summary: Value =
        serde_json::from_slice(&ok(&[&base[..], &mapped].concat()).stdout).unwrap();
    assert!(summary["requests"].as_u64().unwrap() >= 1, "{summary}");
    assert_eq!(summary["requests"], summary["answered"], "{summary}");
    assert_eq!(summary["answered"], count.load(Ordering::SeqCst));
    let calls = &summary["settings"]["calls"];
    assert_eq!(calls["short"]["call"], "hello-http", "{calls}");
    assert_eq!(calls["short"]["body_bytes"], 8, "{calls}");
    assert_eq!(calls["long"]["call"], "primes-http?n=300000", "{calls}");
    assert_eq!(calls["long"]["body_bytes"], 0, "{calls}");
    let sent = count.load(Ordering::SeqCst);
    let big = dir.path().join("big");
    std::fs::write(&big, vec![0u8; (1 << 20) + 1]).unwrap();
    let big = format!("short={}", big.display());
    for (extra, expect) in [
        (vec!["--function", "tiny=fib"], "short, long"),
        (
            vec!["--function", "short=fib", "--function", "short=noop"],
            "given twice",
        ),
        (vec!["--function", "short=a/b"], "--function"),
        (vec!["--function", "short=fib?n=1 2"], "' '"),
        (
            vec!["--function", "short=fib", "--body", &big],
            "1048576 bytes",
        ),
        (vec!["--body", &body], "--body"),
    ] {
        let e = stderr_of_failure(&[&base[..], &extra].concat());
        assert!(e.contains(expect), "{extra:?}: {e}");
        assert!(
            e.contains(if extra.contains(&"--body") {
                "--body"
            } else {
                "--function"
            }),
            "{e}"
        );
    }
    // Nothing was sent for them.
    assert_eq!(count.load(Ordering::SeqCst), sent);
}

/// `node load -w fixed --rate R --seconds 1` against `target`: its stderr.
fn load_stderr(target: SocketAddr, rate: &str) -> String {
    let out = ok(&[
        "node",
        "load",
        "--target",
        &target.to_string(),
        "-w",
        "fixed",
        "--rate",
        rate,
        "--seconds",
        "1",
    ]);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_load_says_why_requests_failed_and_when_it_was_above_the_targets_capacity() {
    // A target that keeps up: no warning, no failures.
    let err = load_stderr(serve(), "100");
    assert!(!err.contains("warning") && !err.contains("failed"), "{err}");
    // Every request refused: the count, the kind and what to try.
    let (full, _) = serve_as(Reply {
        overloaded: true,
        ..Reply::default()
    });
    let err = load_stderr(full, "100");
    let lines: Vec<&str> = err.lines().collect();
    let failed = lines
        .iter()
        .position(|l| l.contains(" calls failed: overloaded "));
    let failed = failed.unwrap_or_else(|| panic!("{err}"));
    assert!(
        lines[failed + 1].starts_with("  overloaded: no room for it"),
        "{err}"
    );
    // One request at a time, 10 ms each, at most 100/s: offered 300/s is
    // above it (answered well under the offer, whatever the machine).
    let (slow, _) = serve_as(Reply {
        serial: Some(Duration::from_millis(10)),
        ..Reply::default()
    });
    let err = load_stderr(slow, "300");
    assert!(
        err.contains("warning: offered")
            && err.contains("the load is above what the target serves"),
        "{err}"
    );
}

#[test]
fn a_dead_target_fails_naming_it() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let out = faasched(&[
        "node",
        "load",
        "--target",
        &addr,
        "--rate",
        "100",
        "--seconds",
        "1",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("cannot connect to {addr}")), "{err}");
}

#[test]
fn bad_flags_are_named() {
    let t = ["node", "load", "--target", "127.0.0.1:9"];
    let err = |extra: &[&str]| stderr_of_failure(&[&t[..], extra].concat());
    assert!(err(&["--rate", "100", "--seconds", "0"]).contains("--seconds"));
    assert!(err(&["--rate", "0"]).contains("--rate"));
    assert!(err(&["--rate", "100", "--connections", "0"]).contains("--connections"));
    assert!(err(&["--rate", "100", "--closed", "2"]).contains("--closed"));
    assert!(err(&[]).contains("--rate"));
    assert!(err(&["--rate", "100", "-w", "nope"]).contains("bimodal-high"));
    let e = stderr_of_failure(&["node", "load", "--target", "localhost", "--rate", "1"]);
    assert!(e.contains("HOST:PORT"), "{e}");
}

#[test]
fn help_teaches_the_open_loop() {
    let help = String::from_utf8(ok(&["node", "load", "--help"]).stdout).unwrap();
    for needle in ["coordinated omission", "--closed", "HOST:PORT", "Ctrl-C"] {
        assert!(help.contains(needle), "{needle}");
    }
}

#[test]
fn ctrl_c_stops_the_run_and_still_writes_what_it_measured() {
    let (addr, count) = serve_counting();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("load");
    let child = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args([
            "node",
            "load",
            "--target",
            &addr.to_string(),
            "--rate",
            "200",
        ])
        .args(["--seconds", "600", "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: a run that never reaches the server is killed, not waited on.
    let give_up = Instant::now() + Duration::from_secs(60);
    while count.load(Ordering::SeqCst) < 10 && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(10));
    }
    let output = interrupt(child, give_up, "faasched node load");
    assert_eq!(output.status.code(), Some(1));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("interrupted by signal 2"), "{err}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["end"], "interrupted");
    let requests = summary["requests"].as_u64().unwrap();
    assert!(requests >= 10, "{summary}");
    let rows = std::fs::read_to_string(out.join("requests.csv"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(rows as u64, requests + 1);
}
