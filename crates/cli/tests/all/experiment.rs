//! `faasched experiment`: every experiment runs (small), writes its files, and
//! the same seed gives the same bytes.

use std::path::Path;
use std::process::Command;

fn experiment(name: &str, invocations: &str, out: &Path) -> String {
    let result = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args(["experiment", name, "--invocations", invocations, "--out"])
        .arg(out)
        .output()
        .expect("the binary runs");
    assert!(
        result.status.success(),
        "experiment {name} failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    String::from_utf8(result.stdout).unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every experiment, with the number of rows its table has: cases × variants
/// (× classes for alps-io; one row per minimum for alps-window-min).
const EXPERIMENTS: [(&str, usize, &[&str]); 7] = [
    ("alps-load", 6 * 7, &["huawei-90", "azure-70"]),
    (
        "alps-ablation",
        4 * 5,
        &["huawei-90-alps-kernel", "azure-90-alps"],
    ),
    ("alps-sensitivity", 19, &["huawei-90"]),
    ("alps-io", 2 * 4 * 3, &["mixed-io-90", "mixed-io-90-cfs"]),
    ("hybrid-cost", 2 * 11, &["azure-90", "azure-120"]),
    ("srpt-noise", 6, &["huawei-90"]),
    (
        "alps-window-min",
        5,
        &["huawei-80-2cores-seed1", "huawei-80-2cores-seed20"],
    ),
];

#[test]
fn every_experiment_writes_its_table_report_and_summaries() {
    let dir = tempfile::tempdir().unwrap();
    for (name, rows, cases) in EXPERIMENTS {
        let out = dir.path().join(name);
        let printed = experiment(name, "300", &out);
        let table = read(&out.join("table.txt"));
        assert!(printed.starts_with(&table), "{name}: prints its table.txt");
        let csv = read(&out.join("table.csv"));
        assert_eq!(csv.lines().count(), 1 + rows, "{name}: table.csv\n{csv}");
        assert!(read(&out.join("report.html")).contains("</html>"));
        for case in cases {
            let summary = read(&out.join(case).join("summary.json"));
            assert!(summary.contains("\"rows\""), "{name}/{case}");
        }
    }
}

#[test]
fn alps_io_reports_each_class_and_the_gain_alps_io_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let printed = experiment("alps-io", "2000", dir.path());
    for class in ["io-1", "io-2", "cpu-3", "cpu-4"] {
        assert!(
            printed.contains(&format!(" {class} ")),
            "{class}:\n{printed}"
        );
    }
    assert!(printed.contains("alps-io keeps"), "{printed}");
    let report = read(&dir.path().join("report.html"));
    assert!(
        report.contains("function io-1 only"),
        "a report section per class"
    );
    // A class's section counts its own invocations (the four share 2000),
    // and the whole workload's beside them.
    let sections = report
        .matches("<th>all_invocations</th><td>2000</td>")
        .count();
    assert_eq!(sections, 4 * 2, "two cases, four classes");
    let whole = report.matches("<th>invocations</th><td>2000</td>").count();
    assert_eq!(whole, 2, "only the cases' own sections hold all 2000");
}

#[test]
fn same_seed_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    experiment("srpt-noise", "500", &a);
    experiment("srpt-noise", "500", &b);
    for file in ["table.csv", "report.html", "huawei-90/summary.json"] {
        assert_eq!(read(&a.join(file)), read(&b.join(file)), "{file}");
    }
}

/// `--plan` prints the cases as data; `--cases` runs them back, giving the
/// same table as the experiment itself; a malformed file is named with the
/// line of its fault.
#[test]
fn an_experiments_cases_are_data_that_run_back() {
    let dir = tempfile::tempdir().unwrap();
    let faasched = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_faasched"))
            .args(args)
            .output()
            .unwrap()
    };
    let plan = faasched(&["experiment", "srpt-noise", "-n", "300", "--plan"]);
    assert!(plan.status.success());
    let cases = dir.path().join("cases.json");
    std::fs::write(&cases, &plan.stdout).unwrap();
    let own = faasched(&["experiment", "srpt-noise", "-n", "300"]);
    let back = faasched(&[
        "experiment",
        "srpt-noise",
        "--cases",
        cases.to_str().unwrap(),
    ]);
    assert!(
        back.status.success(),
        "{}",
        String::from_utf8_lossy(&back.stderr)
    );
    assert_eq!(back.stdout, own.stdout);
    let text = String::from_utf8(plan.stdout).unwrap();
    std::fs::write(&cases, text.replacen("\"label\"", "\"lable\"", 1)).unwrap();
    let bad = faasched(&[
        "experiment",
        "srpt-noise",
        "--cases",
        cases.to_str().unwrap(),
    ]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("cases.json")
            && err.contains("unknown field `lable`")
            && err.contains("line "),
        "{err}"
    );
}
