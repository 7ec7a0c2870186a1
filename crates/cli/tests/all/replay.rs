//! `faasched replay` on the real kernel: outputs marked live, refusals that
//! say why, and no process left behind (or in a real-time class) when a run
//! is interrupted mid-way. These run as root in CI; the parts that need the
//! privilege for SCHED_FIFO check for it and say so when skipped.

use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn faasched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_faasched"))
}

fn run(args: &[&str]) -> Output {
    faasched().args(args).output().expect("the binary runs")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// A quick calibration in `dir`, so tests do not touch the user's cache.
fn calibration(dir: &Path) -> String {
    let path = dir.join("calibration.json");
    let out = run(&[
        "fn",
        "calibrate",
        "--quick",
        "--out",
        path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path.to_str().unwrap().to_string()
}

/// `command` (replay or compare) of `invocations` at load 0.5 on one core
/// under `policies`, with `more` arguments, a quick calibration and outputs
/// in `out` under a directory of its own: that directory (alive while held)
/// and what the command printed.
fn small_run(
    command: &str,
    invocations: &str,
    policies: &str,
    more: &[&str],
) -> (tempfile::TempDir, Output) {
    small_run_by(faasched(), command, invocations, policies, more)
}

/// [`small_run`] with `cmd` as the binary (a wrapper's command line that
/// ends in it).
fn small_run_by(
    mut cmd: Command,
    command: &str,
    invocations: &str,
    policies: &str,
    more: &[&str],
) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    let cal = calibration(dir.path());
    let out_dir = dir.path().join("out");
    let mut args = vec![
        command,
        "--invocations",
        invocations,
        "--load",
        "0.5",
        "--cores",
        "1",
        "--policy",
        policies,
        "--calibration",
        &cal,
        "--out",
        out_dir.to_str().unwrap(),
    ];
    args.extend(more);
    let out = cmd.args(&args).output().expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, out)
}

/// [`small_run`] of `replay`, and its summary.json.
fn replayed(invocations: &str, policies: &str, more: &[&str]) -> (tempfile::TempDir, Value) {
    let (dir, _) = small_run("replay", invocations, policies, more);
    let summary = std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap();
    (dir, serde_json::from_str(&summary).unwrap())
}

#[test]
fn a_short_replay_writes_the_simulators_outputs_marked_live() {
    let policies = if is_root() {
        "cfs,sfs,gittins,gittins-rt,sfs-alps,sfs-gittins"
    } else {
        "cfs"
    };
    let (dir, summary) = replayed("20", policies, &[]);
    let out_dir = dir.path().join("out");
    assert_eq!(summary["machine"]["live"], true);
    assert_eq!(summary["machine"]["cores"], 1);
    let cal_id = summary["machine"]["calibration"]
        .as_str()
        .unwrap()
        .to_string();
    for p in policies.split(',') {
        let entry = &summary["policies"][p];
        assert_eq!(entry["invocations"], 20, "{p}");
        assert_eq!(entry["sim_only"], false);
        let live = &entry["live"];
        assert_eq!(live["calibration"], cal_id.as_str());
        assert_eq!(live["launch_lateness_ms"]["count"], 20);
        assert!(live["launcher_cpu_share_of_one_core"].as_f64().unwrap() > 0.0);
    }
    if policies.contains("sfs") {
        // SFS demotes every invocation that outlives its credit; each
        // demotion is a change the kernel applied.
        let sfs = &summary["policies"]["sfs"]["live"];
        assert_eq!(
            sfs["watch_to_change_us"]["count"], sfs["attribute_changes"],
            "{sfs}"
        );
        // Each told by its CPU timer: one look per watch, none at the
        // invocations that ended within their credit.
        assert_eq!(looks(sfs, 20), sfs["watch_to_change_us"]["count"], "{sfs}");
    }
    for gittins in ["gittins", "gittins-rt"] {
        if !policies.split(',').any(|p| p == gittins) {
            continue;
        }
        // Each reads an invocation's index again at its CPU watches once
        // its functions have history (the first arrivals have none); a
        // watch changes the attributes only where the step moves.
        let g = &summary["policies"][gittins]["live"];
        let watches = g["watch_to_change_us"]["count"].as_u64().unwrap();
        assert!(watches > 0, "{gittins}: {g}");
        assert!(
            g["attribute_changes"].as_u64().unwrap() <= watches,
            "{gittins}: {g}"
        );
    }
    let rows = std::fs::read_to_string(out_dir.join("invocations.csv")).unwrap();
    assert_eq!(rows.lines().count(), 1 + 20 * policies.split(',').count());
    assert!(out_dir.join("report.html").is_file());
}

/// The looks a replay of `invocations` made for CPU watches.
fn looks(live: &Value, invocations: u64) -> u64 {
    let per = live["watch_checks_per_invocation"].as_f64().unwrap();
    (per * invocations as f64).round() as u64
}

/// With no room for a CPU timer (RLIMIT_SIGPENDING 0, set by util-linux's
/// `prlimit`), the watches are looked at instead: SFS still demotes each
/// invocation that outlives its credit, at two looks or more per watch (the
/// first comes when the task could have used its credit had it run from
/// the instant it started, and it could not have).
#[test]
fn without_cpu_timers_the_watches_are_looked_at() {
    if !is_root() {
        eprintln!("skipped: sfs's SCHED_FIFO needs root");
        return;
    }
    let mut cmd = Command::new("prlimit");
    cmd.args(["--sigpending=0", "--", env!("CARGO_BIN_EXE_faasched")]);
    let (dir, _) = small_run_by(cmd, "replay", "20", "sfs", &[]);
    let summary = std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap();
    let summary: Value = serde_json::from_str(&summary).unwrap();
    let sfs = &summary["policies"]["sfs"]["live"];
    let watches = sfs["watch_to_change_us"]["count"].as_u64().unwrap();
    assert!(watches > 0, "{sfs}");
    assert_eq!(sfs["attribute_changes"], watches, "{sfs}");
    assert!(looks(sfs, 20) >= 2 * watches, "{sfs}");
}

/// `--rounds 2`: each half of the invocations under every policy before the
/// next half, the order rotating, and every policy's summary over both.
#[test]
fn rounds_interleave_the_policies() {
    // alps needs negative nice values: root, as in CI.
    let policies = if is_root() { "cfs,alps" } else { "cfs" };
    let (dir, summary) = replayed("12", policies, &["--rounds", "2"]);
    let out_dir = dir.path().join("out");
    for p in policies.split(',') {
        let entry = &summary["policies"][p];
        assert_eq!(entry["invocations"], 12, "{p}");
        assert_eq!(entry["live"]["rounds"], 2, "{p}");
        assert_eq!(entry["live"]["launch_lateness_ms"]["count"], 12, "{p}");
    }
    // Rows come as the processes exit: per policy, the first half's ids
    // before the second's; and policy by policy, rotating.
    let rows = std::fs::read_to_string(out_dir.join("invocations.csv")).unwrap();
    let rows: Vec<(String, u64)> = rows
        .lines()
        .skip(1)
        .map(|l| {
            let mut cells = l.split(',');
            let policy = cells.next().unwrap().to_string();
            (policy, cells.next().unwrap().parse().unwrap())
        })
        .collect();
    let mut runs: Vec<(&str, Vec<u64>)> = Vec::new();
    for (p, id) in &rows {
        match runs.last_mut() {
            Some((last, ids)) if last == p => ids.push(*id),
            _ => runs.push((p, vec![*id])),
        }
    }
    // Each policy's first half, then its second: ids 0-5, then 6-11.
    let halves =
        |ids: &[u64]| ids.len() == 12 && ids.iter().enumerate().all(|(k, &i)| (k < 6) == (i < 6));
    if policies == "cfs" {
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert!(halves(&runs[0].1), "{runs:?}");
    } else {
        // cfs's first half, alps's (round 1), alps's second half and cfs's
        // (round 2, rotated): alps's two halves are one run of rows.
        let names: Vec<&str> = runs.iter().map(|r| r.0).collect();
        assert_eq!(names, ["cfs", "alps", "cfs"], "{runs:?}");
        let cfs: Vec<u64> = runs[0].1.iter().chain(&runs[2].1).copied().collect();
        assert!(halves(&cfs) && halves(&runs[1].1), "{runs:?}");
    }
}

/// `compare`: each policy simulated and replayed (here in two rounds), and
/// per policy and group the counts, the two means and their distance.
#[test]
fn compare_sets_each_policy_measured_beside_simulated() {
    let policies = if is_root() { "cfs,alps" } else { "cfs" };
    let (dir, out) = small_run("compare", "12", policies, &["--rounds", "2", "--json"]);
    let out_dir = dir.path().join("out");
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("compare.json")).unwrap())
            .unwrap();
    assert_eq!(printed, written);
    for p in policies.split(',') {
        let all = printed["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["policy"] == p && r["group"] == "all")
            .unwrap_or_else(|| panic!("{p}: {printed}"));
        assert_eq!(
            (&all["count_sim"], &all["count_live"]),
            (&12.into(), &12.into())
        );
        let ks = all["ks_distance"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&ks), "{all}");
        assert!(all["ratio_of_means"].as_f64().unwrap() > 0.0, "{all}");
        let live: Value = serde_json::from_str(
            &std::fs::read_to_string(out_dir.join("live/summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(live["policies"][p]["live"]["rounds"], 2, "{p}");
        let at_live_cpu = all["ratio_to_sim_at_live_cpu"].as_f64().unwrap();
        assert!(at_live_cpu > 0.0, "{all}");
    }
    // Every invocation of every policy in each world, by id.
    let policies: Vec<&str> = policies.split(',').collect();
    for world in ["sim", "live", "sim-at-live-cpu"] {
        let path = out_dir.join(world).join("invocations.csv");
        let text = std::fs::read_to_string(&path).unwrap();
        let mut rows: Vec<(String, u64)> = text
            .lines()
            .skip(1)
            .map(|l| {
                let mut f = l.split(',');
                (
                    f.next().unwrap().to_string(),
                    f.next().unwrap().parse().unwrap(),
                )
            })
            .collect();
        rows.sort();
        let expected: Vec<(String, u64)> = {
            let mut e: Vec<_> = policies
                .iter()
                .flat_map(|p| (0..12).map(move |id| (p.to_string(), id)))
                .collect();
            e.sort();
            e
        };
        assert_eq!(rows, expected, "{world}");
    }
}

#[test]
fn sim_only_policies_are_refused() {
    let out = run(&["replay", "--policy", "cfs,srpt", "--invocations", "5"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`srpt` exists only in the simulator"), "{err}");
    assert!(err.contains("live policies: cfs, fifo"), "{err}");
}

#[test]
fn without_privilege_it_names_the_policies_that_need_it_and_runs_none() {
    if !is_root() {
        eprintln!("skipped: needs root to run as another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = faasched()
        .args(["replay", "--policy", "cfs,fifo,alps", "--invocations", "5"])
        .env("XDG_CACHE_HOME", dir.path())
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not running anything"), "{err}");
    assert!(
        err.contains("fifo needs the real-time classes SCHED_FIFO/SCHED_RR"),
        "{err}"
    );
    assert!(err.contains("alps needs negative nice values"), "{err}");
    assert!(!err.contains("cfs needs"), "{err}");
}

/// The pids whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The fields after the command name, which is in parentheses.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        if rest.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok()) == Some(parent) {
            pids.push(pid);
        }
    }
    pids
}

/// Scheduling policy of `pid` (field 41 of /proc/PID/stat), if it exists.
fn policy_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    // Fields 3.. follow; policy is field 41.
    rest.split(' ').nth(41 - 3)?.parse().ok()
}

/// Kills `child` if a test fails with it still running.
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn interrupted_by(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let cal = calibration(dir.path());
    // Long blocking waits: the invocations are in flight when the signal comes.
    let workload = dir.path().join("w.csv");
    let mut csv = String::from("id,function,arrival_us,phases,memory_mb,deadline_us\n");
    for i in 0..4 {
        csv.push_str(&format!(
            "{i},io-1,{},c2000;i20000000;c2000,128,\n",
            i * 50_000
        ));
    }
    std::fs::write(&workload, csv).unwrap();
    let rt = is_root();
    let policy = if rt { "sfs" } else { "cfs" };
    let mut replay = Reaper(
        faasched()
            .args([
                "replay",
                "--workload",
                workload.to_str().unwrap(),
                "--policy",
                policy,
            ])
            .args(["--calibration", &cal])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let pid = replay.0.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut children = Vec::new();
    while children.len() < 4 {
        assert!(
            Instant::now() < deadline,
            "replay did not start its invocations"
        );
        std::thread::sleep(Duration::from_millis(20));
        children = children_of(pid);
    }
    if rt {
        // sfs starts every invocation SCHED_FIFO (1); they are blocked in
        // their waits, well within their credit.
        assert!(
            children.iter().all(|&c| policy_of(c) == Some(1)),
            "{children:?}"
        );
    }
    assert!(
        Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = replay.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "replay did not stop on {signal}");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(!status.success());
    let mut err = String::new();
    std::io::Read::read_to_string(replay.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(err.contains("interrupted by signal"), "{err}");
    for c in children {
        assert_eq!(
            policy_of(c),
            None,
            "invocation process {c} outlived the replay"
        );
    }
}

#[test]
fn sigint_mid_run_leaves_no_process_behind() {
    interrupted_by("-INT");
}

#[test]
fn sigterm_mid_run_leaves_no_process_behind() {
    interrupted_by("-TERM");
}
