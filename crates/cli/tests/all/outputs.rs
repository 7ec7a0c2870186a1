//! Where the binary's output files go: devices and FIFOs written through,
//! links kept, a file where a directory goes named as such, the leftovers
//! of a killed run cleared by the next, and summary.json's versions.

use serde_json::Value;
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn faasched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_faasched"))
}

fn run(args: &[&str]) -> Output {
    faasched().args(args).output().expect("the binary runs")
}

fn ok(args: &[&str]) -> Output {
    let out = run(args);
    assert!(
        out.status.success(),
        "faasched {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A small `workload generate` writing to `to`.
fn generate(to: &Path) -> Vec<String> {
    let to = to.to_str().unwrap().to_string();
    ["workload", "generate", "-n", "50", "-c", "4", "-o", &to]
        .map(String::from)
        .to_vec()
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A PID no process has: one past the kernel's limit.
fn dead_pid() -> u32 {
    let max: u32 = fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    max + 1
}

#[test]
fn generate_to_a_character_device_leaves_it_a_character_device() {
    let dir = tempfile::tempdir().unwrap();
    // A twin of /dev/null (character device 1:3); making one needs root.
    let null = dir.path().join("null");
    let made = Command::new("mknod")
        .arg(&null)
        .args(["c", "1", "3"])
        .output();
    if !made.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: mknod needs root");
        return;
    }
    ok(&args(&generate(&null)));
    let t = fs::symlink_metadata(&null).unwrap().file_type();
    assert!(t.is_char_device(), "{t:?}");
    assert_eq!(names(dir.path()), ["null"]);
}

#[test]
fn generate_to_a_fifo_writes_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let reader = Command::new("cat")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = run(&args(&generate(&fifo)));
    let mut reader = reader;
    let still_a_fifo = fs::metadata(&fifo).is_ok_and(|m| m.file_type().is_fifo());
    if !out.status.success() || !still_a_fifo {
        // Nothing wrote to the FIFO: its reader still waits for a writer.
        let _ = reader.kill();
    }
    let read = reader.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8(read.stdout).unwrap();
    assert!(csv.starts_with("id,function,arrival_us,"), "{csv}");
    assert_eq!(csv.lines().count(), 51);
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(names(dir.path()), ["pipe"]);
}

#[test]
fn a_link_to_standard_output_writes_to_it() {
    let dir = tempfile::tempdir().unwrap();
    // What /dev/stdout is, made here so that a wrong answer breaks only
    // this test's link: a link through /proc to the process's descriptor 1.
    let link = dir.path().join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &link).unwrap();
    // Standard output a file opened for appending, as a shell's `>>` does.
    let file = dir.path().join("out.txt");
    fs::write(&file, "before\n").unwrap();
    let stdout = fs::OpenOptions::new().append(true).open(&file).unwrap();
    let status = faasched()
        .args(args(&generate(&link)))
        .stdout(stdout)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("before\nid,function,"), "{text}");
    assert_eq!(text.lines().count(), 1 + 51);
    assert_eq!(names(dir.path()), ["out.txt", "stdout"]);
}

#[test]
fn a_link_to_a_file_stays_and_the_file_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    fs::create_dir(&real).unwrap();
    fs::write(real.join("w.csv"), "old\n").unwrap();
    let link = dir.path().join("w.csv");
    std::os::unix::fs::symlink("real/w.csv", &link).unwrap();
    ok(&args(&generate(&link)));
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    let csv = fs::read_to_string(real.join("w.csv")).unwrap();
    assert_eq!(csv.lines().count(), 51);
    assert_eq!(names(&real), ["w.csv"]);
}

#[test]
fn out_naming_a_file_says_it_is_not_a_directory_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("results");
    fs::write(&file, "mine\n").unwrap();
    let path = file.to_str().unwrap();
    for args in [
        &["simulate", "-n", "50", "--out", path][..],
        &["experiment", "alps-io", "-n", "50", "--out", path],
    ] {
        let out = run(args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let want = format!("{path}: not a directory (a regular file is there)");
        assert!(err.contains(&want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "no run's table: {out:?}");
        assert_eq!(fs::read_to_string(&file).unwrap(), "mine\n");
    }

    // And the other way round: a directory where the file goes.
    let err = run(&args(&generate(dir.path())));
    let err = String::from_utf8_lossy(&err.stderr);
    assert!(err.contains("a directory is there"), "{err}");
}

#[test]
fn leftovers_of_a_dead_process_go_and_a_live_ones_stay() {
    let dir = tempfile::tempdir().unwrap();
    let (dead, live) = (dead_pid(), std::process::id());
    let leftovers = |pid: u32| {
        [
            format!(".w.csv.faasched-partial.{pid}"),
            format!(".faasched-partial-dir.{pid}"),
        ]
    };
    for name in leftovers(dead).iter().chain(&leftovers(live)) {
        fs::write(dir.path().join(name), "").unwrap();
    }
    ok(&args(&generate(&dir.path().join("w.csv"))));
    let mut want: Vec<String> = leftovers(live).to_vec();
    want.push("w.csv".into());
    want.sort();
    assert_eq!(names(dir.path()), want);
}

#[test]
fn a_run_killed_outright_is_cleared_up_by_the_next() {
    let root = tempfile::tempdir().unwrap();
    let out: PathBuf = root.path().join("made/run");
    let out_arg = out.to_str().unwrap();
    // Long enough to be killed part-way most of the time; the checks hold
    // however far it got.
    let mut child = faasched()
        .args(["simulate", "-n", "2000000", "--out", out_arg])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Killed once invocations.csv is being written (or once the run ends).
    let writing = || {
        fs::read_dir(&out).is_ok_and(|d| {
            d.flatten().any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".invocations.csv.")
            })
        })
    };
    while !writing() && child.try_wait().unwrap().is_none() {
        std::thread::yield_now();
    }
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    for dir in [root.path().join("made"), out.clone()] {
        for name in names(&dir) {
            let of_the_run = name.ends_with(&format!(".{pid}"));
            assert!(
                of_the_run || name == "run" || !name.starts_with('.'),
                "{name}"
            );
        }
    }

    ok(&["simulate", "-n", "50", "--out", out_arg]);
    assert_eq!(
        names(&out),
        [
            "invocations.csv",
            "report.html",
            "summary.csv",
            "summary.json"
        ]
    );
    assert_eq!(names(&root.path().join("made")), ["run"]);
}

#[test]
fn summary_json_names_its_schema_and_faasched_versions_first() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    ok(&["simulate", "-n", "50", "--out", out.to_str().unwrap()]);
    let text = fs::read_to_string(out.join("summary.json")).unwrap();
    let head = format!(
        "{{\n  \"schema_version\": 1,\n  \"faasched_version\": \"{}\",\n  \"rows\": [",
        env!("CARGO_PKG_VERSION")
    );
    assert!(text.starts_with(&head), "{}", &text[..200]);
    // --json prints the same object.
    let printed = ok(&["simulate", "-n", "50", "--json"]).stdout;
    let (file, printed): (Value, Value) = (
        serde_json::from_str(&text).unwrap(),
        serde_json::from_slice(&printed).unwrap(),
    );
    assert_eq!(file, printed);
}
