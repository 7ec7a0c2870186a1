//! `faasched cluster simulate` as a user runs it: its outputs, determinism,
//! a hand-computed workload CSV, and errors on bad input.

use crate::common::{ok, stderr_of_failure, workload_csv};
use serde_json::Value;

/// The row of `policy` in a summary.json.
fn row<'a>(summary: &'a Value, policy: &str) -> &'a Value {
    summary["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["policy"] == policy)
        .unwrap_or_else(|| panic!("no row for {policy}"))
}

#[test]
fn every_default_router_sees_the_same_invocations_and_a_run_repeats() {
    let args = ["cluster", "simulate", "--seconds", "120", "--json"];
    let out = ok(&args);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["schema_version"], 1);
    assert_eq!(s["settings"]["workload"]["name"], "azure-functions");
    assert_eq!(s["settings"]["servers"], 8);
    assert_eq!(s["settings"]["keep_alive"], "greedy-dual");
    let names: Vec<&str> = s["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "ch-rlu",
            "ch-bl",
            "openwhisk",
            "least-loaded",
            "random",
            "round-robin",
            "greedy"
        ]
    );
    let n = row(&s, "ch-rlu")["invocations"].as_u64().unwrap();
    assert!(n > 1000, "{n}");
    for name in names {
        let r = row(&s, name);
        assert_eq!(r["invocations"].as_u64(), Some(n), "{name}");
        assert_eq!(
            r["finished"].as_u64().unwrap() + r["dropped"].as_u64().unwrap(),
            n,
            "{name}"
        );
    }
    assert_eq!(ok(&args).stdout, out.stdout, "same seed, same bytes");

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("out");
    let table = ok(&[
        "cluster",
        "simulate",
        "--seconds",
        "120",
        "--out",
        d.to_str().unwrap(),
    ]);
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("\nch-rlu "), "{table}");
    assert_eq!(std::fs::read(d.join("summary.json")).unwrap(), out.stdout);
    let csv = std::fs::read_to_string(d.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 8);
    assert!(csv.starts_with("policy,invocations,finished,dropped,"));

    // Every arrival is one decision of its router, one in eight timed; the
    // times go to timing.json and stderr, never into the files above.
    let timing: Value =
        serde_json::from_slice(&std::fs::read(d.join("timing.json")).unwrap()).unwrap();
    let timed = timing["policies"].as_array().unwrap();
    assert_eq!(timed.len(), 7);
    let stderr = String::from_utf8(out.stderr).unwrap();
    for t in timed {
        let name = t["policy"].as_str().unwrap();
        assert_eq!(t["decisions"].as_u64(), Some(n), "{name}");
        assert_eq!(t["timed"].as_u64(), Some(n / 8), "{name}");
        assert!(t["p50_ns"].as_u64().unwrap() <= t["max_ns"].as_u64().unwrap());
        assert!(
            stderr.contains(&format!("decision time {name} ")),
            "{stderr}"
        );
    }
}

/// summary.json of one function (warm 100 ms, cold 300 ms) invoked at 0
/// and at 1 s on one server of `cores` cores, under round-robin and LRU,
/// with `extra` flags.
fn two_invocations(cores: &str, extra: &[&str]) -> Value {
    invocations_of_f(
        "0,f,0,c100000,128,\n1,f,1000000,c100000,128,\n",
        cores,
        extra,
    )
}

/// summary.json of the workload CSV `rows` of one function (warm 100 ms,
/// cold 300 ms) on one server of `cores` cores, under round-robin and
/// LRU, with `extra` flags.
fn invocations_of_f(rows: &str, cores: &str, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("table.csv");
    std::fs::write(&table, "name,memory_mb,warm_ms,cold_ms\nf,128,100,300\n").unwrap();
    let csv = workload_csv(dir.path(), "w.csv", rows);
    let mut args = vec![
        "cluster",
        "simulate",
        "--workload",
        csv.to_str().unwrap(),
        "--table",
        table.to_str().unwrap(),
        "--servers",
        "1",
        "--cores",
        cores,
        "--memory-gb",
        "1",
        "--keep-alive",
        "lru",
        "--policy",
        "round-robin",
        "--json",
    ];
    args.extend_from_slice(extra);
    serde_json::from_slice(&ok(&args).stdout).unwrap()
}

/// On one core the first invocation starts cold (200 ms of extra CPU, then
/// its 100 ms: slowdown 3), the second reuses the container (slowdown 1).
/// The global latency increase is (3 + 1) / 2 − 1 = 100%.
#[test]
fn a_workload_csv_over_a_table_runs_as_computed_by_hand() {
    let s = two_invocations("1", &[]);
    let r = row(&s, "round-robin");
    assert_eq!(r["finished"], 2);
    assert_eq!(r["cold_starts"], 1);
    assert_eq!(r["cold_ratio"], 0.5);
    assert!(
        (r["global_increase"].as_f64().unwrap() - 1.0).abs() < 1e-9,
        "{r}"
    );
    assert!(
        (r["slowdown_mean"].as_f64().unwrap() - 2.0).abs() < 1e-9,
        "{r}"
    );
}

/// The same two invocations on a node server of two workers under
/// SledgeScale: each runs as it did on a shared core, plus the node's
/// mechanisms' costs (µs against 100 ms), well within its deadline of 10 ×
/// 100 ms; the settings name the server and the node's shape, and a
/// processor-sharing run's do not.
#[test]
fn a_workload_csv_runs_on_a_node_server_with_the_nodes_measures() {
    let s = two_invocations("2", &["--server", "node:sledgescale"]);
    assert_eq!(s["settings"]["server"], "node:sledgescale");
    assert_eq!(s["settings"]["node"]["dispatchers"], 1);
    assert_eq!(s["settings"]["node"]["workers"], 2);
    let r = row(&s, "round-robin");
    assert_eq!((&r["finished"], &r["cold_starts"]), (&2.into(), &1.into()));
    let increase = r["global_increase"].as_f64().unwrap();
    assert!(increase > 1.0 && increase < 1.001, "{r}");
    assert_eq!(r["node_miss_ratio"], 0.0);
    assert_eq!(r["node_dropped"], 0);
    assert_eq!(r["node_preemptions"], 0.0);
    let ps = two_invocations("2", &["--server", "ps"]);
    assert!(ps["settings"].get("server").is_none(), "{}", ps["settings"]);
    assert!(row(&ps, "round-robin").get("node_miss_ratio").is_none());
    // Due 1.5 warm times after it reaches the node, the cold one (three
    // warm times of CPU there) is late; the warm one is not.
    let tight = two_invocations(
        "2",
        &["--server", "node:sledgescale", "--deadline-factor", "1.5"],
    );
    assert_eq!(tight["settings"]["node"]["deadline_factor"], 1.5);
    assert_eq!(row(&tight, "round-robin")["node_miss_ratio"], 0.5);
}

/// Node servers pay the costs of a `--node-costs` file: with none, the two
/// invocations run as on shared cores (100%, as computed by hand above); a
/// 50 ms sandbox set-up before each one's first run makes their latencies
/// 350 and 150 ms, slowdowns 3.5 and 1.5: (3.5 + 1.5) / 2 − 1 = 150%.
#[test]
fn node_servers_pay_the_costs_a_file_gives_them() {
    let dir = tempfile::tempdir().unwrap();
    let costs = |name: &str, sandbox_setup: u64| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!(
                "dispatch_base = 0\ndispatch_per_worker = 0\nidle_pull = 0\npreempt_signal = 0\n\
                 preempt_latency = 0\ncontext_switch = 0\nsandbox_setup = {sandbox_setup}\n\
                 wake = 0\nquantum_tick = 0\npoll = true\n"
            ),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    let increase = |file: &str| {
        let s = two_invocations("2", &["--server", "node:sledgescale", "--node-costs", file]);
        (
            row(&s, "round-robin")["global_increase"].as_f64().unwrap(),
            s["settings"]["node"]["costs"]["sandbox_setup"].clone(),
        )
    };
    let (free, setup) = increase(&costs("free.toml", 0));
    assert!((free - 1.0).abs() < 1e-9, "{free}");
    assert_eq!(setup, 0);
    let (slow, setup) = increase(&costs("slow.toml", 50_000_000));
    assert!((slow - 1.5).abs() < 1e-9, "{slow}");
    assert_eq!(setup, 50_000_000);
}

/// Node servers admit under the node's bounds: three invocations at the
/// same instant on one worker, at most two held, leave the third dropped
/// by its node; unbounded, all three finish.
#[test]
fn node_servers_admit_under_the_bounds_given() {
    let rows = "0,f,0,c100000,128,\n1,f,0,c100000,128,\n2,f,0,c100000,128,\n";
    let run = |extra: &[&str]| {
        let mut args = vec!["--server", "node:sledgescale"];
        args.extend_from_slice(extra);
        invocations_of_f(rows, "1", &args)
    };
    let bounded = run(&["--max-queued", "2"]);
    assert_eq!(bounded["settings"]["node"]["admission"]["max_queued"], 2);
    let r = row(&bounded, "round-robin");
    assert_eq!(
        (&r["finished"], &r["node_dropped"]),
        (&2.into(), &1.into()),
        "{r}"
    );
    let free = run(&[]);
    assert!(free["settings"]["node"].get("admission").is_none());
    let r = row(&free, "round-robin");
    assert_eq!(
        (&r["finished"], &r["node_dropped"]),
        (&3.into(), &0.into()),
        "{r}"
    );
}

/// The same two invocations on an OS server of one core under the stock
/// kernel: each runs alone on its core, as on a shared one, plus a context
/// switch's 3.5 µs (against 300 and 100 ms); each switches away once, as
/// it exits, and is never preempted. The settings name the server and the
/// kernel.
#[test]
fn a_workload_csv_runs_on_an_os_server_with_the_kernels_measures() {
    let s = two_invocations("1", &["--server", "os:cfs"]);
    assert_eq!(s["settings"]["server"], "os:cfs");
    assert_eq!(s["settings"]["kernel"]["cores"], 1);
    assert_eq!(s["settings"]["kernel"]["fair_class"], "eevdf");
    let r = row(&s, "round-robin");
    assert_eq!((&r["finished"], &r["cold_starts"]), (&2.into(), &1.into()));
    let increase = r["global_increase"].as_f64().unwrap();
    assert!(increase > 1.0 && increase < 1.0001, "{r}");
    assert_eq!(r["os_switches"], 1.0);
    assert_eq!(r["os_preemptions"], 0.0);
    assert!(r.get("node_miss_ratio").is_none(), "{r}");
    let ps = two_invocations("1", &[]);
    assert!(row(&ps, "round-robin").get("os_switches").is_none());
}

/// OS servers run the kernel the kernel flags give: without a context
/// switch's cost the two invocations run exactly as on a shared core
/// (100%), and the settings record the kernel as run.
#[test]
fn os_servers_run_the_kernel_the_flags_give() {
    let s = two_invocations(
        "1",
        &[
            "--server",
            "os:cfs",
            "--context-switch-us",
            "0",
            "--hz",
            "100",
            "--fair",
            "cfs",
        ],
    );
    let kernel = &s["settings"]["kernel"];
    assert_eq!(
        (
            &kernel["context_switch_us"],
            &kernel["hz"],
            &kernel["fair_class"]
        ),
        (&0.0.into(), &100.into(), &"cfs".into())
    );
    let increase = row(&s, "round-robin")["global_increase"].as_f64().unwrap();
    assert!((increase - 1.0).abs() < 1e-12, "{increase}");
}

#[test]
fn bad_input_is_refused_naming_it() {
    let cases: [(&[&str], &str); 20] = [
        (&["--policy", "ch-rlu,nope"], "`nope`"),
        (&["--keep-alive", "fifo"], "`fifo`"),
        (&["--workload", "/nonexistent.csv"], "/nonexistent.csv"),
        (&["--memory-gb", "0"], "--memory-gb"),
        (&["--servers", "0"], "server"),
        (&["--server", "fifo"], "or os:POLICY"),
        (&["--server", "os:nope"], "`nope`"),
        (
            &["--server", "os:cfs", "--contention", "0.1"],
            "--contention",
        ),
        (&["--server", "node:nope"], "`nope`"),
        (&["--server", "node:darc"], "reservations"),
        (
            &["--server", "node:sledgescale", "--node-dispatchers", "3"],
            "--node-dispatchers 3",
        ),
        (
            &["--server", "node:sledgescale", "--contention", "0.1"],
            "--contention",
        ),
        (
            &["--server", "node:sledgescale", "--deadline-factor", "0"],
            "--deadline-factor 0",
        ),
        (&["--deadline-factor", "3"], "only node servers"),
        (&["--node-costs", "/nonexistent.toml"], "only node servers"),
        (
            &[
                "--server",
                "node:sledgescale",
                "--node-costs",
                "/nonexistent.toml",
            ],
            "/nonexistent.toml",
        ),
        (&["--hz", "100"], "only OS servers"),
        (&["--max-queued", "2"], "only node servers admit"),
        (
            &["--server", "node:sledgescale", "--max-backlog-ms=-1"],
            "--max-backlog-ms -1",
        ),
        (
            &["--server", "os:cfs", "--context-switch-us=-1"],
            "context_switch_us",
        ),
    ];
    for (extra, expect) in cases {
        let mut args = vec!["cluster", "simulate", "--seconds", "10"];
        args.extend_from_slice(extra);
        let err = stderr_of_failure(&args);
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}
