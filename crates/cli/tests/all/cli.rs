//! The `faasched` binary as a user runs it: defaults, outputs, determinism, and
//! errors on bad input.

use crate::common::{ok, stderr_of_failure, workload_csv};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../workload/tests/fixtures")
}

/// Mean turnaround (ms) of `group` under `policy` in a summary.json.
fn mean(summary: &Value, policy: &str, group: &str) -> f64 {
    summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["policy"] == policy && r["group"] == group && r["metric"] == "turnaround")
        .and_then(|r| r["mean_ms"].as_f64())
        .unwrap_or_else(|| panic!("no turnaround row for {policy} {group}"))
}

#[test]
fn default_run_shows_the_papers_policies_apart_and_says_what_ran() {
    let out = ok(&["simulate", "--json"]);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = s["policies"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for p in ["cfs", "sfs", "alps", "gittins", "srpt"] {
        assert!(names.contains(&p), "{p} not run: {names:?}");
    }
    assert_eq!(s["workload"]["name"], "huawei");
    assert_eq!(s["workload"]["invocations"], 15000);
    assert_eq!(s["machine"]["cores"], 8);
    // Where they differ: the oracle below every stock policy, and each of
    // the papers' policies below cfs by more than a percent.
    let cfs = mean(&s, "cfs", "all");
    let srpt = mean(&s, "srpt", "all");
    for p in ["sfs", "alps", "gittins"] {
        let m = mean(&s, p, "all");
        assert!(
            srpt < m && m < 0.99 * cfs,
            "{p} {m}, cfs {cfs}, srpt {srpt}"
        );
    }
    assert_eq!(s["policies"]["srpt"]["sim_only"], true);
    assert_eq!(s["policies"]["cfs"]["sim_only"], false);
    // The table is headed by what ran, and ends with each policy against
    // cfs.
    let table = String::from_utf8(ok(&["simulate", "-n", "300", "-p", "cfs,srpt"]).stdout).unwrap();
    let last = table.lines().last().unwrap();
    assert!(
        last.starts_with("mean turnaround against cfs: srpt -"),
        "{table}"
    );
    assert_eq!(
        table.lines().next(),
        Some(
            "huawei at 90% load on 8 cores, 300 invocations; kernel: faasched model \
             (simulated), EEVDF, HZ 250, 3.5 µs a context switch"
        )
    );
}

#[test]
fn the_papers_machine_orders_g1_like_alps_fig_1() {
    let out = ok(&["simulate", "-c", "56", "-p", "cfs,fifo,srpt", "--json"]);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (srpt, cfs, fifo) = (
        mean(&s, "srpt", "G1"),
        mean(&s, "cfs", "G1"),
        mean(&s, "fifo", "G1"),
    );
    assert!(
        srpt < cfs && cfs < fifo,
        "G1 means: srpt {srpt}, cfs {cfs}, fifo {fifo}"
    );
}

#[test]
fn out_dir_has_the_three_files_and_same_seed_gives_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        let d = dir.path().join(name);
        ok(&[
            "simulate",
            "-w",
            "azure",
            "-p",
            "cfs,srpt",
            "-c",
            "8",
            "-l",
            "0.7",
            "-n",
            "2000",
            "-s",
            "7",
            "-o",
            d.to_str().unwrap(),
        ]);
        d
    };
    let (a, b) = (run("a"), run("b"));
    for f in ["summary.json", "summary.csv", "invocations.csv"] {
        let (x, y) = (
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
        );
        assert!(x == y, "{f} differs between identical runs");
    }
    let csv = std::fs::read_to_string(a.join("invocations.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "policy,id,function,group,arrival_us,first_run_us,finish_us,cpu_us,io_us,voluntary_switches,involuntary_switches,memory_mb"
        )
    );
    assert_eq!(lines.count(), 2 * 2000);
    let s: Value = serde_json::from_slice(&std::fs::read(a.join("summary.json")).unwrap()).unwrap();
    let rows = s["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 5 * 5, "policies × groups × metrics");
    for key in [
        "policy", "group", "metric", "count", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms",
        "max_ms",
    ] {
        assert!(rows[0].get(key).is_some(), "row lacks {key}");
    }
    for key in [
        "sim_only",
        "cost_usd",
        "voluntary_switches_per_invocation",
        "involuntary_switches_per_invocation",
        "utilisation",
    ] {
        assert!(
            s["policies"]["cfs"].get(key).is_some(),
            "policy entry lacks {key}"
        );
    }
    let util = s["policies"]["cfs"]["utilisation"].as_f64().unwrap();
    assert!((0.6..0.8).contains(&util), "utilisation {util} at load 0.7");
    let summary_csv = std::fs::read_to_string(a.join("summary.csv")).unwrap();
    assert!(
        summary_csv
            .starts_with("policy,group,metric,count,mean_ms,p50_ms,p90_ms,p99_ms,p999_ms,max_ms")
    );
}

#[test]
fn generated_file_simulates_as_is_or_rescaled() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huawei.csv");
    let f = file.to_str().unwrap();
    ok(&[
        "workload", "generate", "-w", "huawei", "-c", "4", "-l", "0.9", "-n", "500", "-o", f,
    ]);
    let built_in: Value = serde_json::from_slice(
        &ok(&[
            "simulate", "-w", "huawei", "-c", "4", "-l", "0.9", "-n", "500", "-p", "cfs", "--json",
        ])
        .stdout,
    )
    .unwrap();
    let from_file: Value = serde_json::from_slice(
        &ok(&["simulate", "-w", f, "-c", "4", "-p", "cfs", "--json"]).stdout,
    )
    .unwrap();
    // Generators emit whole microseconds, the file format's resolution, so a
    // written workload is the built-in exactly.
    assert_eq!(
        built_in["rows"], from_file["rows"],
        "a written workload simulates like its generator"
    );
    let rescaled: Value = serde_json::from_slice(
        &ok(&[
            "simulate", "-w", f, "-c", "4", "-l", "0.5", "-p", "cfs", "--json",
        ])
        .stdout,
    )
    .unwrap();
    assert!(
        mean(&rescaled, "cfs", "all") < mean(&from_file, "cfs", "all"),
        "lower load, less waiting"
    );
    assert!(rescaled["workload"]["rescaled_by"].as_f64().unwrap() > 1.0);
    // `--out` names the output file too, as it names the directory elsewhere.
    let again = dir.path().join("again.csv");
    let a = again.to_str().unwrap();
    ok(&[
        "workload", "generate", "-w", "huawei", "-c", "4", "-l", "0.9", "-n", "500", "--out", a,
    ]);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(&again).unwrap()
    );
}

#[test]
fn imports_each_trace_format() {
    let dir = tempfile::tempdir().unwrap();
    let fx = fixtures();
    let cases: [(&str, PathBuf, &[&str]); 3] = [
        ("azure-2019", fx.join("azure2019"), &["--day", "1"]),
        ("azure-2021", fx.join("azure2021/trace.csv"), &[]),
        ("huawei-2023", fx.join("huawei2023"), &["--days", "0..1"]),
    ];
    for (format, input, extra) in cases {
        let out = dir.path().join(format!("{format}.csv"));
        let mut args = vec![
            "workload",
            "import",
            format,
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        ok(&args);
        let sim = ok(&[
            "simulate",
            "-w",
            out.to_str().unwrap(),
            "-c",
            "2",
            "-p",
            "cfs,srpt",
            "--json",
        ]);
        let s: Value = serde_json::from_slice(&sim.stdout).unwrap();
        assert!(
            s["rows"][0]["count"].as_u64().unwrap() > 0,
            "{format}: nothing simulated"
        );
    }
}

/// `simulate` of workload file `w` on one core under cfs, into `out`.
fn simulate_into<'a>(w: &'a Path, out: &'a Path) -> [&'a str; 9] {
    let (w, out) = (w.to_str().unwrap(), out.to_str().unwrap());
    ["simulate", "-w", w, "-c", "1", "-p", "cfs", "-o", out]
}

/// Simulates `earlier` into `out`, calls `between`, then simulates `later`
/// into `out`, which must fail. Returns its error, having checked that the
/// earlier run's files are as they were and that no partial file is left.
fn fails_keeping_earlier_files(
    out: &Path,
    earlier: &Path,
    later: &Path,
    between: impl FnOnce(&Path),
) -> String {
    ok(&simulate_into(earlier, out));
    between(out);
    let files = ["invocations.csv", "summary.json", "summary.csv"].map(|f| out.join(f));
    let before = files.clone().map(|f| std::fs::read_to_string(f).unwrap());
    let err = stderr_of_failure(&simulate_into(later, out));
    assert_eq!(files.map(|f| std::fs::read_to_string(f).unwrap()), before);
    assert_eq!(
        std::fs::read_dir(out).unwrap().count(),
        4,
        "no partial file left"
    );
    err
}

#[test]
fn malformed_workload_csv_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = workload_csv(dir.path(), "bad.csv", "0,f,0,c100,128,\n1,f,5,x12,128,\n");
    // An earlier run's outputs in `--out` survive the failed run untouched.
    let earlier = workload_csv(dir.path(), "earlier.csv", "0,f,0,c100,128,\n");
    let out = dir.path().join("out");
    let err = fails_keeping_earlier_files(&out, &earlier, &bad, |_| {});
    assert!(err.contains("bad.csv:3") && err.contains("phases"), "{err}");
}

#[test]
fn a_run_whose_summary_cannot_be_written_leaves_the_earlier_files() {
    let dir = tempfile::tempdir().unwrap();
    let earlier = workload_csv(dir.path(), "earlier.csv", "0,f,0,c100,128,\n");
    let later = workload_csv(
        dir.path(),
        "later.csv",
        "0,f,0,c200,128,\n1,f,5,c100,128,\n",
    );
    // The report's place is taken: the later run simulates, then cannot put
    // its last file in place.
    let out = dir.path().join("out");
    let err = fails_keeping_earlier_files(&out, &earlier, &later, |out| {
        let report = out.join("report.html");
        std::fs::remove_file(&report).unwrap();
        std::fs::create_dir(&report).unwrap();
    });
    assert!(err.contains("report.html"), "{err}");
}

#[test]
fn a_workload_drawn_past_the_time_limit_is_refused_by_generate_and_simulate() {
    // One invocation at a load whose expected span is within the limit, but
    // seed 1's first gap is past it.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.csv");
    let gen_args = ["-w", "huawei", "-l", "7.4e-11", "-n", "1", "-s", "1"];
    let mut generate = vec!["workload", "generate"];
    generate.extend(gen_args);
    generate.extend(["-o", out.to_str().unwrap()]);
    let err = stderr_of_failure(&generate);
    assert!(
        err.contains("load and invocations") && err.contains("208 days"),
        "{err}"
    );
    // Nothing written, not even a partial file.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let mut simulate = vec!["simulate", "-p", "fifo"];
    simulate.extend(gen_args);
    let err = stderr_of_failure(&simulate);
    assert!(
        err.contains("load and invocations") && err.contains("208 days"),
        "{err}"
    );
    // A negative load is a value, refused by name, not an unknown flag.
    let out = out.to_str().unwrap();
    let err = stderr_of_failure(&["workload", "generate", "-l", "-1", "-o", out]);
    assert!(err.contains("--load") && err.contains("above 0"), "{err}");
}

#[test]
fn a_negative_number_is_refused_by_its_flag_not_as_an_unknown_argument() {
    for (args, names) in [
        (&["simulate", "--alps-alpha", "-1"][..], "alps.alpha"),
        (&["simulate", "-s", "-1"], "--seed"),
        (&["simulate", "--hz", "-3"], "--hz"),
        (
            &["workload", "generate", "-c", "-2", "-o", "x.csv"],
            "--cores",
        ),
    ] {
        let err = stderr_of_failure(args);
        assert!(
            err.contains(names) && !err.contains("unexpected argument"),
            "{args:?}: {err}"
        );
    }
    // And a core count outside 1..=256 is refused by `workload` too.
    let err = stderr_of_failure(&["workload", "generate", "-c", "0", "-o", "x.csv"]);
    assert!(err.contains("--cores") && err.contains("1..=256"), "{err}");
}

#[test]
fn an_empty_import_names_the_flags_that_widen_it() {
    let trace = fixtures().join("azure2021/trace.csv");
    let trace = trace.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.csv");
    let out = out.to_str().unwrap();
    let far = [
        "workload",
        "import",
        "azure-2021",
        trace,
        "--seconds",
        "1e9..2e9",
    ];
    let err = stderr_of_failure(&[&far[..], &["-o", out]].concat());
    assert!(
        err.contains("widen --seconds") && !err.contains("--minutes"),
        "{err}"
    );
    let none = [
        "workload",
        "import",
        "azure-2021",
        trace,
        "--functions",
        "0",
        "-o",
        out,
    ];
    let err = stderr_of_failure(&none);
    assert!(
        err.contains("--functions") && err.contains("at least 1"),
        "{err}"
    );
}

/// Runs `faasched simulate` with `args` and `--out out`, sends it SIGTERM
/// (as a shell's `kill` does) `after_ms` into the run, and checks that it
/// stopped for it.
fn terminated(args: &[&str], out: &Path, after_ms: u64) {
    let child = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .arg("simulate")
        .args(args)
        .arg("--out")
        .arg(out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(after_ms));
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(!done.status.success(), "{err}");
    assert!(err.contains("interrupted by signal 15"), "{err}");
}

#[test]
fn a_terminated_run_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Well into the run: a debug build takes many seconds for it.
    terminated(&["-n", "5000000", "-p", "cfs"], &out, 1500);
    // Nor the directory it made for them.
    assert!(!out.exists());
}

/// A run of a few hour-long invocations has no outcome for a long while;
/// SIGTERM still stops it, and the earlier run's files stay as they were.
#[test]
fn a_signal_stops_a_run_without_outcomes_keeping_earlier_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let earlier = workload_csv(dir.path(), "earlier.csv", "0,f,0,c100,128,\n");
    ok(&simulate_into(&earlier, &out));
    let files = ["invocations.csv", "summary.json", "summary.csv"].map(|f| out.join(f));
    let before = files.clone().map(|f| std::fs::read_to_string(f).unwrap());
    // The first outcome is a simulated hour away.
    let hours = [
        "-w",
        "fixed:cpu-ms=3600000",
        "-n",
        "40",
        "-c",
        "2",
        "-p",
        "cfs",
    ];
    terminated(&hours, &out, 1000);
    assert_eq!(files.map(|f| std::fs::read_to_string(f).unwrap()), before);
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
    assert_eq!(left.len(), 4, "no partial file left: {left:?}");
}

/// A workload that offers more than the cores can serve runs, and says so.
#[test]
fn an_overloaded_machine_is_named() {
    let out = ok(&[
        "simulate", "-n", "200", "-p", "cfs", "-c", "1", "--load", "2",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "warning: the workload offers a load of 2.00 on 1 core: the machine is overloaded"
        ),
        "{err}"
    );
    let fine = ok(&[
        "simulate", "-n", "200", "-p", "cfs", "-c", "1", "--load", "0.9",
    ]);
    assert!(!String::from_utf8_lossy(&fine.stderr).contains("overloaded"));
}

#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    for args in [
        &["fn", "list"][..],
        &["simulate", "-n", "200", "-p", "cfs", "--json"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_faasched"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the first line, as `head -1` does
        // after it.
        drop(child.stdout.take());
        let done = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&done.stderr);
        assert!(done.status.success(), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn malformed_trace_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("trace.csv");
    std::fs::write(
        &bad,
        "app,func,end_timestamp,duration\na,f,10.5,0.2\na,f,oops,0.1\n",
    )
    .unwrap();
    let out = dir.path().join("o.csv");
    let err = stderr_of_failure(&[
        "workload",
        "import",
        "azure-2021",
        bad.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        err.contains("trace.csv:3") && err.contains("end_timestamp"),
        "{err}"
    );
}

#[test]
fn unknown_names_are_errors_that_list_the_choices() {
    let err = stderr_of_failure(&["simulate", "-p", "cfs,nope", "-n", "10"]);
    assert!(err.contains("nope") && err.contains("srpt"), "{err}");
    // A misspelt name is told the one it is closest to, at every level.
    let err = stderr_of_failure(&["simulate", "-p", "cfss", "-n", "10"]);
    assert!(
        err.contains("unknown policy `cfss` (did you mean `cfs`?); the policies are cfs,"),
        "{err}"
    );
    let err = stderr_of_failure(&["node", "simulate", "-p", "sledgescal", "-n", "10"]);
    assert!(
        err.contains("(did you mean `sledgescale`?); the node policies are"),
        "{err}"
    );
    let err = stderr_of_failure(&["cluster", "simulate", "-p", "chrlu", "-n", "10"]);
    assert!(err.contains("(did you mean `ch-rlu`?)"), "{err}");
    let err = stderr_of_failure(&["simulate", "-p", "cfs,fifo,cfs", "-n", "10"]);
    assert!(err.contains("policy `cfs` is listed twice"), "{err}");
    let err = stderr_of_failure(&["simulate", "-w", "no-such-workload", "-n", "10"]);
    assert!(
        err.contains("no-such-workload") && err.contains("huawei"),
        "{err}"
    );
    let err = stderr_of_failure(&["simulate", "--load=-1", "-n", "10"]);
    assert!(err.contains("load"), "{err}");
    let err = stderr_of_failure(&["simulate", "--load", "-1", "-n", "10"]);
    assert!(err.contains("--load") && err.contains("above 0"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let empty = workload_csv(dir.path(), "empty.csv", "");
    let err = stderr_of_failure(&["simulate", "-w", empty.to_str().unwrap()]);
    assert!(err.contains("has no invocations"), "{err}");
    let err = stderr_of_failure(&["simulate", "-w", empty.to_str().unwrap(), "-n", "0"]);
    assert!(err.contains("at least 1"), "{err}");
    let err = stderr_of_failure(&["simulate", "-w", "no/such.csv", "-n", "10"]);
    assert!(
        err.contains("workload file `no/such.csv`: No such file"),
        "{err}"
    );
    // A switch as long as a tick would never let a preempted task's successor run.
    let err = stderr_of_failure(&["simulate", "--context-switch-us", "4000", "-n", "10"]);
    assert!(err.contains("shorter than a tick"), "{err}");
}

#[test]
fn every_command_has_help() {
    for args in [
        vec!["--help"],
        vec!["simulate", "--help"],
        vec!["workload", "generate", "--help"],
        vec!["workload", "import", "azure-2019", "--help"],
        vec!["workload", "import", "azure-2021", "--help"],
        vec!["workload", "import", "huawei-2023", "--help"],
        vec!["bench", "sim", "--help"],
        vec!["bench", "node", "--help"],
        vec!["bench", "cluster", "--help"],
        vec!["bench", "learn", "--help"],
        vec!["node", "simulate", "--help"],
        vec!["node", "capacity", "--help"],
        vec!["cluster", "simulate", "--help"],
        vec!["experiment", "--help"],
        vec!["bench", "agent", "--help"],
        vec!["bench", "watch", "--help"],
        vec!["fn", "--help"],
        vec!["replay", "--help"],
        vec!["compare", "--help"],
        vec!["agent", "--help"],
        vec!["agent", "status", "--help"],
        vec!["exec", "--help"],
    ] {
        let out = ok(&args);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{args:?}"
        );
    }
    // Each command's long help is its own, not the one line that lists it.
    let help = |args: &[&str]| String::from_utf8_lossy(&ok(args).stdout).into_owned();
    let simulate = help(&["simulate", "--help"]);
    for spec in faasched_lab::os::catalog::CATALOG.iter() {
        let policy = spec.name;
        assert!(
            simulate.contains(&format!("  {policy}: ")),
            "{policy} missing"
        );
    }
    assert!(help(&["replay", "--help"]).contains("need the privilege for SCHED_FIFO"));
    assert!(help(&["compare", "--help"]).contains("Kolmogorov"));
    assert!(help(&["agent", "--help"]).contains("RLIMIT_RTTIME"));
    assert!(help(&["experiment", "--help"]).contains("docs/EXPERIMENTS.md"));
}

#[test]
fn policy_parameters_come_from_toml_and_flags_with_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[alps]\nwindow_ms = 1000\nalpah = 3\n").unwrap();
    let err = stderr_of_failure(&[
        "simulate",
        "--policy",
        "alps",
        "--config",
        bad.to_str().unwrap(),
    ]);
    assert!(err.contains("bad.toml") && err.contains("alpah"), "{err}");
    let range = dir.path().join("range.toml");
    std::fs::write(&range, "[alps]\ngamma = 0\n").unwrap();
    let err = stderr_of_failure(&["simulate", "--config", range.to_str().unwrap()]);
    assert!(err.contains("range.toml") && err.contains("gamma"), "{err}");
    let err = stderr_of_failure(&["simulate", "--alps-trainer", "forest"]);
    assert!(err.contains("linear-regression"), "{err}");

    // A good file and a flag on top: alps and alps-kernel learn and run.
    let good = dir.path().join("good.toml");
    std::fs::write(&good, "[alps]\nwindow_ms = 2000\ntrainer = \"ewma\"\n").unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "--policy",
            "cfs,alps,alps-kernel",
            "--invocations",
            "3000",
            "--json",
            "--config",
            good.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        serde_json::from_slice::<Value>(&ok(&args).stdout).unwrap()
    };
    let s = run(&["--alps-alpha", "1.5"]);
    assert_eq!(s["policies"]["alps"]["sim_only"], false);
    assert_eq!(s["policies"]["alps-kernel"]["sim_only"], true);
    // The summary records what each policy ran with, as the TOML table.
    for policy in ["alps", "alps-kernel"] {
        let params = &s["policies"][policy]["params"]["alps"];
        assert_eq!(params["window_ms"], 2000.0, "{policy}");
        assert_eq!(params["trainer"], "ewma", "{policy}");
        assert_eq!(params["alpha"], 1.5, "{policy}");
    }
    assert!(s["policies"]["cfs"].get("params").is_none());
    assert_ne!(
        mean(&s, "alps", "all"),
        mean(&s, "cfs", "all"),
        "alps must steer something"
    );
    assert_ne!(
        mean(&run(&[]), "alps", "all"),
        mean(&s, "alps", "all"),
        "α must matter"
    );
}

#[test]
fn zero_invocations_is_refused_naming_the_flag() {
    for args in [
        &["simulate", "-n", "0"][..],
        &["workload", "generate", "-n", "0", "-o", "/dev/null"],
        &["experiment", "alps-load", "-n", "0"],
        &["bench", "sim", "--invocations", "0"],
    ] {
        let err = stderr_of_failure(args);
        assert!(
            err.contains("--invocations") && err.contains("must be at least 1"),
            "{args:?}: {err}"
        );
    }
    let err = stderr_of_failure(&["bench", "node", "--requests", "0"]);
    assert!(
        err.contains("--requests") && err.contains("must be at least 1"),
        "{err}"
    );
}

#[test]
fn a_newcomers_first_commands_say_what_they_mean() {
    let help = |args: &[&str]| String::from_utf8_lossy(&ok(args).stdout).into_owned();
    // `node serve` runs one policy; the commands that run several say so.
    assert!(help(&["node", "serve", "--help"]).contains("The node policy to run, one of:"));
    assert!(help(&["node", "simulate", "--help"]).contains("comma-separated"));
    // The cluster level is live as well as simulated.
    assert!(help(&["--help"]).contains("live as a gateway"));
    // A partial-day sample imports without naming its minutes.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.csv");
    let partial = fixtures().join("azure2019-partial");
    ok(&[
        "workload",
        "import",
        "azure-2019",
        partial.to_str().unwrap(),
        "--day",
        "1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(std::fs::read_to_string(&out).unwrap().lines().count() > 1);
    // A count below 1 or not a number says so, naming the flag.
    for (n, says) in [
        ("-10", "must be at least 1"),
        ("ten", "expected a whole number"),
    ] {
        let err = stderr_of_failure(&["simulate", "-n", n]);
        assert!(
            err.contains("--invocations") && err.contains(says) && !err.contains("invalid digit"),
            "{n}: {err}"
        );
    }
    // A load of 0 is refused in the same words at every level.
    for level in [
        &["simulate"][..],
        &["node", "simulate"],
        &["cluster", "simulate"],
    ] {
        let mut args = level.to_vec();
        args.extend(["--load", "0"]);
        let err = stderr_of_failure(&args);
        assert!(
            err.contains("--load") && err.contains("give a fraction of the capacity above 0"),
            "{args:?}: {err}"
        );
    }
    // Every command takes --quiet, before or after its name.
    ok(&["--quiet", "simulate", "-n", "50", "-p", "cfs"]);
    ok(&[
        "workload",
        "generate",
        "-n",
        "5",
        "-q",
        "-o",
        out.to_str().unwrap(),
    ]);
    // A trace folder that is not there is named with its flag.
    let err = stderr_of_failure(&["experiment", "alps-real", "--trace", "/nonexistent/trace"]);
    assert!(
        err.contains("--trace") && err.contains("/nonexistent/trace"),
        "{err}"
    );
}
