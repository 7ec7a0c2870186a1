//! `report.html` as a reader sees it: written by `simulate --out`, byte-identical
//! across runs, self-contained, and rendered by headless Chromium into a page
//! that is not blank and has every chart in its DOM.
//!
//! The Chromium test needs Debian's `chromium` package at /usr/bin/chromium.
//! Without it the test says it skipped and how to install it, unless
//! `FAASCHED_REQUIRE_CHROMIUM` is set (`.ci/run` installs Chromium and sets
//! it), when it fails instead.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Where Debian's `chromium` package puts the browser.
const CHROMIUM: &str = "/usr/bin/chromium";

/// How long one Chromium run may take before it is killed.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(90);

/// The screenshot's size, px.
const WINDOW: (u32, u32) = (1280, 4000);

/// A white 1280×4000 PNG compresses to a few kB; the report's is hundreds.
const MIN_PNG_BYTES: u64 = 60_000;

/// Runs `faasched simulate` with `args` and `--out dir`; returns the report's path.
fn simulate(dir: &Path, args: &[&str]) -> PathBuf {
    let out = Command::new(env!("CARGO_BIN_EXE_faasched"))
        .arg("simulate")
        .args(args)
        .arg("--out")
        .arg(dir)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "faasched simulate {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("report.html"),
        "the message lists report.html: {stdout}"
    );
    let report = dir.join("report.html");
    assert!(report.is_file(), "{} was not written", report.display());
    report
}

/// Names the environment variable that makes Chromium required.
const REQUIRE: &str = "FAASCHED_REQUIRE_CHROMIUM";

/// Whether Chromium is there. If not, says so and how to get it, and fails
/// the test where it is required ([`REQUIRE`]).
fn has_chromium() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    let why = format!(
        "{CHROMIUM} is missing: this test renders report.html in headless Chromium. \
         Install it with `apt-get update && apt-get install -y --no-install-recommends \
         chromium` (as root; .ci/run does this in CI)."
    );
    assert!(
        std::env::var_os(REQUIRE).is_none(),
        "{why} ({REQUIRE} is set)"
    );
    eprintln!("skipped: {why}");
    false
}

/// Headless Chromium on `page` with a fresh profile in `profile`, plus `extra`
/// flags; its own process group, so a timeout can kill all of it.
fn spawn_chromium(profile: &Path, page: &Path, extra: &[String]) -> Child {
    use std::os::unix::process::CommandExt;
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={},{}", WINDOW.0, WINDOW.1))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {CHROMIUM}: {e}"))
}

/// Waits for `child` up to [`CHROMIUM_TIMEOUT`], collecting its stdout; on
/// timeout kills its process group and fails.
fn wait_bounded(mut child: Child, what: &str) -> (ExitStatus, String) {
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waiting for chromium") {
            return (status, reader.join().expect("the reader thread"));
        }
        if start.elapsed() > CHROMIUM_TIMEOUT {
            // The group is the one spawn_chromium made: its id is the child's pid.
            let _ = Command::new("kill")
                .args(["-KILL", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium ({what}) did not finish within {CHROMIUM_TIMEOUT:?}; killed");
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// (width, height) from a PNG's IHDR chunk, or `None` if `bytes` is not a PNG.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let signature = b"\x89PNG\r\n\x1a\n";
    if bytes.len() < 24 || &bytes[..8] != signature || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    Some((be(16), be(20)))
}

#[test]
fn report_html_renders_in_headless_chromium() {
    if !has_chromium() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let report = simulate(&dir.path().join("out"), &["--invocations", "2000"]);

    // The screenshot: a PNG of the window's size, far from blank.
    let shot = dir.path().join("report.png");
    let profile = tempfile::tempdir().unwrap();
    let child = spawn_chromium(
        profile.path(),
        &report,
        &[format!("--screenshot={}", shot.display())],
    );
    let (status, _) = wait_bounded(child, "screenshot");
    assert!(
        status.success(),
        "chromium --screenshot exited with {status}"
    );
    let png = std::fs::read(&shot)
        .unwrap_or_else(|e| panic!("chromium wrote no screenshot {}: {e}", shot.display()));
    assert_eq!(png_size(&png), Some(WINDOW), "a PNG of the window's size");
    assert!(
        png.len() as u64 > MIN_PNG_BYTES,
        "screenshot is {} bytes, a blank page's size (more than {MIN_PNG_BYTES} expected)",
        png.len()
    );

    // The DOM Chromium built: every chart, drawn.
    let profile = tempfile::tempdir().unwrap();
    let child = spawn_chromium(profile.path(), &report, &["--dump-dom".to_string()]);
    let (status, dom) = wait_bounded(child, "dump-dom");
    assert!(status.success(), "chromium --dump-dom exited with {status}");
    let count = |needle: &str| dom.matches(needle).count();
    for (kind, n) in [
        ("cdf", 5),
        ("percentiles", 5),
        ("switches", 1),
        ("cost", 1),
        ("completions", 1),
    ] {
        assert_eq!(
            count(&format!("data-kind=\"{kind}\"")),
            n,
            "{kind} charts in the rendered DOM"
        );
    }
    assert!(count("<svg xmlns") >= 13, "chart SVGs in the rendered DOM");
    // Default policies cfs, sfs, alps, gittins, srpt: a line each in 5 CDFs
    // and completions.
    assert_eq!(
        count("<path class=\"line pol"),
        5 * 6,
        "CDF and completion lines"
    );
    assert!(count("<rect class=\"pol") >= 5 * 5 * 5, "percentile bars");
    assert!(dom.contains("sim only"), "the sim-only badge");
    assert!(dom.contains("huawei"), "the workload description");
}

#[test]
fn report_html_is_self_contained_and_byte_identical_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "-w", "azure", "-p", "cfs,srpt", "-c", "8", "-l", "0.7", "-n", "1000",
    ];
    let a = std::fs::read(simulate(&dir.path().join("a"), &args)).unwrap();
    let b = std::fs::read(simulate(&dir.path().join("b"), &args)).unwrap();
    assert!(a == b, "report.html differs between identical runs");
    let html = String::from_utf8(a).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script"), "no script needed");
    let outside_namespaces = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for external in [
        "http:", "https:", "url(", "@import", "<link", "<img", "src=",
    ] {
        assert!(
            !outside_namespaces.contains(external),
            "report.html refers to something outside itself: {external}"
        );
    }
}
