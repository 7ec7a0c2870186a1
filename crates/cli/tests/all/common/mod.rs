//! What the `faasched` binary's test files share: running it, and the
//! inputs they write.

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

/// Sends SIGINT to `child` and waits for it to exit until `give_up`; a
/// child still running then is killed and the test fails, naming `what`.
pub fn interrupt(
    mut child: std::process::Child,
    give_up: std::time::Instant,
    what: &str,
) -> Output {
    let pidfd = faasched_sys::process::pidfd_open(child.id() as libc::pid_t).unwrap();
    faasched_sys::process::signal(&pidfd, libc::SIGINT).unwrap();
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < give_up {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    if child.try_wait().unwrap().is_none() {
        child.kill().unwrap();
        panic!("{what} did not stop on SIGINT");
    }
    child.wait_with_output().unwrap()
}

pub use faasched_live::tls::testing::certificates_in as certificates;
