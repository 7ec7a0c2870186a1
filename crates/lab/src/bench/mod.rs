//! What `faasched bench` measures, and how it prints it: the simulator's
//! speed, the ALPS learner's time per lesson, the agent's CPU per
//! invocation, as medians of repeated runs, the live node runtime's and
//! the gateway's latencies, and a CPU watch's promptness.

#[cfg(feature = "live")]
pub mod agent;
pub mod cluster;
#[cfg(feature = "live")]
pub mod gateway;
pub mod learn;
pub mod node;
#[cfg(feature = "live")]
pub mod runtime;
pub mod sim;
#[cfg(feature = "live")]
pub mod watch;

use anyhow::{Result, bail};
use std::time::Instant;

/// How this binary was built, as the benches report it: `release`, or
/// `release+pgo` for the profile-guided build of `scripts/pgo-build` (which
/// sets `FAASCHED_PGO` when it compiles; a build that sets no such variable
/// is a plain one).
pub const BUILD: &str = match option_env!("FAASCHED_PGO") {
    Some(_) => "release+pgo",
    None => "release",
};

/// Refuses to time a debug build, whose numbers would mislead.
pub fn release_only(bench: &str) -> Result<()> {
    if cfg!(debug_assertions) {
        bail!("bench needs a release build: cargo run --release -- bench {bench}");
    }
    Ok(())
}

/// Runs `f` `runs` times (at least once); the median wall time of one run,
/// and the last run's result.
fn median_wall<T>(runs: u32, mut f: impl FnMut() -> Result<T>) -> Result<(f64, T)> {
    let mut timed = || -> Result<(f64, T)> {
        let t = Instant::now();
        let r = f()?;
        Ok((t.elapsed().as_secs_f64(), r))
    };
    let (wall, mut last) = timed()?;
    let mut walls = vec![wall];
    for _ in 1..runs {
        let (wall, r) = timed()?;
        walls.push(wall);
        last = r;
    }
    Ok((median(walls), last))
}

/// The median of `v` (the upper one of an even count); NaN if empty.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// VmHWM of this process from /proc/self/status, in MiB (Linux only).
/// The peak resident memory (MiB) after a short and after a long run of
/// the same job, and its growth: the engine benches' memory check, made
/// first in the process (a high-water mark only rises, so a later check
/// would read an earlier, larger run's peak).
struct Peaks {
    short: Option<f64>,
    long: Option<f64>,
    growth: Option<f64>,
}

/// Runs `run(short)` then `run(long)`, reading the peak after each.
fn memory_peaks(short: u64, long: u64, mut run: impl FnMut(u64) -> Result<()>) -> Result<Peaks> {
    run(short)?;
    let short = peak_rss_mib();
    run(long)?;
    let long = peak_rss_mib();
    Ok(Peaks {
        short,
        long,
        growth: short.zip(long).map(|(s, l)| l - s),
    })
}

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
