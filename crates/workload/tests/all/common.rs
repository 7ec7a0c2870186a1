//! Helpers shared by the test modules.

use faasched_model::{Function, Invocation, Nanos, Phase, Phases, SEC};
use faasched_workload::Error;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The path of a fixture, relative to `tests/fixtures`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Copies the directory tree `src` into `dst` (created if needed).
pub fn copy_dir(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    for entry in fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let target = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Asserts that `err` is a parse error at `file_name`:`line`, field `field`, and
/// that its message says so too.
pub fn assert_parse_error(err: &Error, file_name: &str, line: u64, field: &str) {
    let text = err.to_string();
    assert!(
        text.contains(file_name) && text.contains(&format!(":{line}:")),
        "`{text}` should name {file_name} line {line}"
    );
    assert!(
        text.contains(&format!("`{field}`")),
        "`{text}` should name field {field}"
    );
    match err {
        Error::Parse {
            file,
            line: l,
            field: f,
            ..
        } => {
            assert_eq!(file.file_name().unwrap(), file_name);
            assert_eq!((*l, f.as_str()), (line, field));
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

/// The single CPU phase of a trace invocation.
pub fn cpu_of(inv: &Invocation) -> Nanos {
    match inv.phases.as_slice() {
        [Phase::Cpu(ns)] => *ns,
        other => panic!("expected one CPU phase, got {other:?}"),
    }
}

/// Number of invocations per (function name, 1-based minute of the window).
pub fn per_minute(invs: &[Invocation]) -> BTreeMap<(String, u64), usize> {
    let mut counts = BTreeMap::new();
    for inv in invs {
        let minute = inv.arrival / (60 * SEC) + 1;
        *counts
            .entry((inv.function.name.to_string(), minute))
            .or_default() += 1;
    }
    counts
}

/// Asserts the trace invariants: ids `0..n` in order and arrivals sorted.
pub fn assert_sorted_with_dense_ids(invs: &[Invocation]) {
    for (i, inv) in invs.iter().enumerate() {
        assert_eq!(inv.id, i as u64);
    }
    assert!(invs.windows(2).all(|w| w[0].arrival <= w[1].arrival));
}

/// The names of the functions invoked, in order of first invocation.
pub fn names(invs: &[Invocation]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for f in invs.iter().map(|i| &i.function) {
        if !seen.iter().any(|n| **n == *f.name) {
            seen.push(f.name.to_string());
        }
    }
    seen
}

/// A CPU-bound invocation, for hand-built workloads.
pub fn cpu_invocation(id: u64, function: &Function, arrival: u64, cpu: Nanos) -> Invocation {
    Invocation {
        id,
        function: function.clone(),
        arrival,
        phases: Phases::from_buf([Phase::Cpu(cpu)]),
        memory_mb: 128,
        deadline: None,
    }
}
