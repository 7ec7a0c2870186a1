//! What the `faasched` binary's test files share: running it, and the
//! inputs they write.

// Each test file is its own crate and uses part of this.
#![allow(dead_code)]

pub mod server;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `faasched` with `args`.
pub fn faasched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Runs `faasched` with `args`, which must succeed.
pub fn ok(args: &[&str]) -> Output {
    let out = faasched(args);
    assert!(
        out.status.success(),
        "faasched {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `faasched` with `args`, which must fail; its stderr.
pub fn stderr_of_failure(args: &[&str]) -> String {
    let out = faasched(args);
    assert!(!out.status.success(), "faasched {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A workload CSV `name` in `dir`: the header, then `rows`.
pub fn workload_csv(dir: &Path, name: &str, rows: &str) -> PathBuf {
    let path = dir.join(name);
    let header = "id,function,arrival_us,phases,memory_mb,deadline_us\n";
    std::fs::write(&path, format!("{header}{rows}")).unwrap();
    path
}
