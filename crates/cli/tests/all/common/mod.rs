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

/// A command that writes a CGI header block (`Status: 201`), then its
/// environment one variable a line, then its standard input.
pub const CGI_ECHO: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $sizes (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get" (func $get (param i32 i32) (result i32)))
  (memory (export "memory") 2)
  (data (i32.const 64) "Content-Type: text/plain\nStatus: 201\n\n")
  (func $write (param $fd i32) (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func (export "_start") (local $i i32) (local $n i32)
    (call $write (i32.const 1) (i32.const 64) (i32.const 38))
    (drop (call $sizes (i32.const 32) (i32.const 36)))
    (drop (call $get (i32.const 1024) (i32.const 4096)))
    (local.set $n (i32.load (i32.const 36)))
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (if (i32.eqz (i32.load8_u offset=4096 (local.get $i)))
        (then (i32.store8 offset=4096 (local.get $i) (i32.const 10))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $each)))
    (call $write (i32.const 1) (i32.const 4096) (local.get $n))
    (loop $more
      (i32.store (i32.const 16) (i32.const 65536))
      (i32.store (i32.const 20) (i32.const 65536))
      (drop (call $fd_read (i32.const 0) (i32.const 16) (i32.const 1) (i32.const 24)))
      (local.set $n (i32.load (i32.const 24)))
      (if (local.get $n)
        (then (call $write (i32.const 1) (i32.const 65536) (local.get $n)) (br $more))))))"#;

/// The built function `name` (scripts/build-functions), or `None` having
/// said so; required where `FAASCHED_REQUIRE_FUNCTIONS` is set (CI).
pub fn built(name: &str) -> Option<std::path::PathBuf> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/functions")
        .join(format!("{name}.wasm"));
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("FAASCHED_REQUIRE_FUNCTIONS").is_none(),
        "{} is not built (scripts/build-functions); FAASCHED_REQUIRE_FUNCTIONS is set",
        path.display()
    );
    eprintln!("skipped: {} is not built", path.display());
    None
}

/// Writes `dir/NAME.toml`, a manifest naming `module` by its path, then
/// the lines of `rest` (more of the manifest's fields).
pub fn manifest(dir: &Path, name: &str, module: &Path, rest: &str) {
    std::fs::write(
        dir.join(format!("{name}.toml")),
        format!("module = {:?}\n{rest}", module.to_str().unwrap()),
    )
    .unwrap();
}

/// A directory `--deploy` takes in `dir`: a manifest naming each built
/// function of `names`; `None` (having said so) if one is not built.
pub fn deploy_dir(dir: &Path, names: &[&str]) -> Option<PathBuf> {
    let deploy = dir.join("deploy");
    std::fs::create_dir_all(&deploy).unwrap();
    for name in names {
        manifest(&deploy, name, &built(name)?, "");
    }
    Some(deploy)
}
