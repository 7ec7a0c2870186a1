//! `faasched fn`: the function suite from the command line, as the launcher
//! and a user run it.

use crate::common::stderr_of_failure;
use serde_json::Value;
use std::process::Command;

/// Runs `faasched` with `args`, which must succeed; its stdout.
fn ok(args: &[&str]) -> String {
    String::from_utf8(crate::common::ok(args).stdout).unwrap()
}

#[test]
fn list_names_every_function_with_its_parameter_and_unit() {
    let out = ok(&["fn", "list"]);
    for name in ["fib", "bfs", "mst", "pagerank", "features", "float", "io"] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{name} "))),
            "{name} missing:\n{out}"
        );
    }
    assert_eq!(out.matches("(default ").count(), 7, "{out}");
    assert_eq!(out.matches("unit: ").count(), 7, "{out}");
}

#[test]
fn a_run_prints_its_checksum_and_times() {
    let run: Value = serde_json::from_str(&ok(&["fn", "fib", "--n", "20", "--json"])).unwrap();
    assert_eq!(run["function"], "fib");
    assert_eq!(run["n"], 20);
    assert_eq!(run["checksum"], 6765);
    assert!(run["cpu_ms"].as_f64().unwrap() >= 0.0);
    assert!(run["wall_ms"].as_f64().unwrap() >= 0.0);
    let text = ok(&["fn", "fib", "-n", "10"]);
    assert!(text.starts_with("fib n=10 checksum=55 cpu="), "{text}");
}

#[test]
fn a_plan_runs_silently_and_waits() {
    assert_eq!(ok(&["fn", "fib", "--plan", "u3;i1000;u2"]), "");
    let run: Value =
        serde_json::from_str(&ok(&["fn", "io", "--plan", "u3;i20000;u2", "--json"])).unwrap();
    assert_eq!(run["plan"], "u3;i20000;u2");
    assert!(run.get("n").is_none(), "{run}");
    let (cpu, wall) = (
        run["cpu_ms"].as_f64().unwrap(),
        run["wall_ms"].as_f64().unwrap(),
    );
    assert!(
        wall >= 20.0 && cpu < wall - 10.0,
        "cpu {cpu} ms, wall {wall} ms"
    );
}

#[test]
fn bad_input_fails_and_says_why() {
    let e = stderr_of_failure(&["fn", "fib", "--plan", "u3;x5"]);
    assert!(e.contains("bad step 2 \"x5\""), "{e}");
    let e = stderr_of_failure(&["fn", "fib", "--plan", "u3;"]);
    assert!(e.contains("bad step 2 \"\""), "{e}");
    let e = stderr_of_failure(&["fn", "fibonacci"]);
    assert!(
        e.contains("fib, bfs, mst, pagerank, features, float, io"),
        "{e}"
    );
    let e = stderr_of_failure(&["fn", "fib", "--n", "3", "--plan", "u1"]);
    assert!(e.contains("cannot be used with"), "{e}");
    let e = stderr_of_failure(&["fn", "fib", "--n", "51"]);
    assert!(e.contains("at most 50"), "{e}");
}

#[test]
fn calibrate_writes_a_loadable_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cal.json");
    let out = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args(["fn", "calibrate", "--quick", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("[8/8] io"));
    let c = faasched_live::os::unit_cpu::Calibration::load(&path).unwrap();
    assert!(
        stdout.contains(&format!("calibration {} saved to", c.id)),
        "{stdout}"
    );
    assert!(c.startup_ns > 0);
    // Every other CPU this test may use was kept busy.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(c.neighbours, cpus - 1);
    assert!(
        stdout.contains(&format!("measured with {} other CPU(s) busy", cpus - 1)),
        "{stdout}"
    );
    for f in &c.functions {
        assert!(f.unit_ns > 0 && !f.points.is_empty(), "{f:?}");
        assert!(
            stdout.contains(&format!("\n{:<9} ", f.kind.name())),
            "{stdout}"
        );
    }
}
