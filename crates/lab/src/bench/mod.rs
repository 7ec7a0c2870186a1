//! What `faasched bench` measures, and how it prints it: the simulator's
//! speed, the ALPS learner's time per lesson, the agent's CPU per
//! invocation, as medians of repeated runs, the live node runtime's and
//! the gateway's latencies, and a CPU watch's promptness.

#[cfg(feature = "live")]
pub mod agent;
pub mod cluster;
#[cfg(feature = "live")]
pub mod gateway;
pub mod instructions;
pub mod learn;
pub mod node;
#[cfg(feature = "live")]
pub mod runtime;
pub mod sim;
#[cfg(feature = "live")]
pub mod watch;

use anyhow::{Result, anyhow, bail};
use instructions::Instructions;
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

/// A job run several times: the median of its runs and the last one's
/// result.
struct Timed<T> {
    /// Wall time of one run, s.
    wall_s: f64,
    /// User-space instructions of one run, where a hardware counter exists
    /// ([`instructions`]).
    instructions: Option<u64>,
    last: T,
}

/// Runs `f` `runs` times (at least once), timing each run and, with a
/// `counter`, counting its instructions: a count that fails to read ends
/// the counting (every run's or none's), never the bench. The counter's
/// own calls stay outside the wall time.
fn median_wall<T>(
    runs: u32,
    mut counter: Option<Instructions>,
    mut f: impl FnMut() -> Result<T>,
) -> Result<Timed<T>> {
    let mut walls = Vec::new();
    let mut counts = Vec::new();
    let mut last = None;
    let mut timed = || {
        let t = Instant::now();
        let r = f();
        (r, t.elapsed().as_secs_f64())
    };
    for _ in 0..runs.max(1) {
        let (r, wall) = match counter.as_mut() {
            Some(c) => {
                let (r, n) = c.count(&mut timed);
                match n {
                    Ok(n) => counts.push(n),
                    Err(_) => {
                        counter = None;
                        counts.clear();
                    }
                }
                r
            }
            None => timed(),
        };
        walls.push(wall);
        last = Some(r?);
    }
    Ok(Timed {
        wall_s: median(walls),
        instructions: (!counts.is_empty()).then(|| {
            counts.sort_unstable();
            counts[counts.len() / 2]
        }),
        last: last.expect("at least one run"),
    })
}

/// The median of `v` (the upper one of an even count); NaN if empty.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// How many times as many as its short run the memory check's long run
/// has.
pub const LONGER: u64 = 4;

/// An engine whose speed a bench times: the policies of its catalogue, and
/// one run of one of them over a generated stream.
trait Engine {
    /// A policy of the catalogue.
    type Policy: Copy;
    /// What a run counted.
    type Stats;
    /// What a stream is counted in: `requests`, `invocations`.
    const UNIT: &'static str;

    /// The policy whose memory is checked: the headline.
    fn headline(&self) -> Result<Self::Policy>;
    /// Every policy, in catalogue order.
    fn policies(&self) -> Vec<Self::Policy>;
    /// Whether a stream of `n` can be generated.
    fn stream(&self, n: u64) -> Result<()>;
    /// One run of `policy` over a stream of `n`, every outcome dropped as
    /// it comes; an error unless every one finished or was dropped.
    fn run(&self, policy: Self::Policy, n: u64) -> Result<Self::Stats>;
}

/// The engine benches' memory check: the peak resident memory after a
/// short and after a long run of the same job.
#[derive(Debug)]
struct Peaks {
    /// The short run's length.
    short_n: u64,
    /// The long run's: [`LONGER`] times the short one's.
    long_n: u64,
    /// The peak after the short run, MiB; `None` where it cannot be read.
    short: Option<f64>,
    /// The peak after the long run.
    long: Option<f64>,
    /// The long run's peak over the short one's.
    growth: Option<f64>,
}

/// Checks memory on the headline policy (`memory` gets it), then times
/// every policy `runs` times on a stream of `n`, handing each its median
/// wall time and its last run's stats as they come. The memory check
/// comes first in the process: a high-water mark only rises, so a later
/// check would read an earlier, larger run's peak; a long run that cannot
/// be made is refused before anything runs.
fn speeds<E: Engine>(
    engine: &E,
    runs: u32,
    n: u64,
    memory: impl FnOnce(&Peaks) -> Result<()>,
    mut each: impl FnMut(E::Policy, Timed<E::Stats>) -> Result<()>,
) -> Result<Peaks> {
    let unit = E::UNIT;
    let long_n = n.checked_mul(LONGER).ok_or_else(|| {
        anyhow!("the memory check's run of {LONGER} × {n} {unit} overflows a count")
    })?;
    engine
        .stream(long_n)
        .map_err(|e| anyhow!("the memory check's run of {long_n} {unit}: {e}"))?;
    let headline = engine.headline()?;
    engine.run(headline, n)?;
    let short = peak_rss_mib();
    engine.run(headline, long_n)?;
    let long = peak_rss_mib();
    let peaks = Peaks {
        short_n: n,
        long_n,
        short,
        long,
        growth: short.zip(long).map(|(s, l)| l - s),
    };
    memory(&peaks)?;
    for policy in engine.policies() {
        let counter = Instructions::open().ok();
        each(
            policy,
            median_wall(runs, counter, || engine.run(policy, n))?,
        )?;
    }
    Ok(peaks)
}

/// Refuses a run of `name` over `n` of `unit` in which `arrived` arrived
/// and not every one finished or was dropped.
fn check_ended(
    name: &str,
    unit: &str,
    n: u64,
    arrived: u64,
    finished: u64,
    dropped: u64,
) -> Result<()> {
    if arrived != n || finished + dropped != n {
        bail!(
            "{name}: of {n} {unit} {arrived} arrived, {finished} finished and {dropped} were dropped"
        );
    }
    Ok(())
}

/// VmHWM of this process from /proc/self/status, in MiB (Linux only).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// An engine of two policies whose streams end at `longest`, recording
    /// its runs.
    struct Fake {
        longest: u64,
        runs: RefCell<Vec<(u8, u64)>>,
    }

    impl Engine for Fake {
        type Policy = u8;
        type Stats = u64;
        const UNIT: &'static str = "things";

        fn headline(&self) -> Result<u8> {
            Ok(1)
        }

        fn policies(&self) -> Vec<u8> {
            vec![1, 2]
        }

        fn stream(&self, n: u64) -> Result<()> {
            if n > self.longest {
                bail!("past the clock");
            }
            Ok(())
        }

        fn run(&self, policy: u8, n: u64) -> Result<u64> {
            self.runs.borrow_mut().push((policy, n));
            Ok(n)
        }
    }

    fn fake(longest: u64) -> Fake {
        Fake {
            longest,
            runs: RefCell::new(Vec::new()),
        }
    }

    /// The headline runs short, then long, before every policy is timed,
    /// each as many times as asked.
    #[test]
    fn memory_is_checked_on_the_headline_before_the_speeds() {
        let e = fake(1_000);
        let mut timed = Vec::new();
        let peaks = speeds(
            &e,
            3,
            10,
            |_| Ok(()),
            |p, t| {
                timed.push((p, t.last));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!((peaks.short_n, peaks.long_n), (10, 40));
        let mut expected = vec![(1, 10), (1, 40)];
        expected.extend([(1, 10); 3]);
        expected.extend([(2, 10); 3]);
        assert_eq!(*e.runs.borrow(), expected);
        assert_eq!(timed, [(1, 10), (2, 10)]);
    }

    /// A length whose memory check could not be generated is refused at
    /// once, naming that run, before the shorter runs start.
    #[test]
    fn a_memory_check_past_the_stream_is_refused_before_anything_runs() {
        let e = fake(1_000);
        let mut told = false;
        let err = speeds(
            &e,
            1,
            300,
            |_| {
                told = true;
                Ok(())
            },
            |_, _| Ok(()),
        )
        .unwrap_err()
        .to_string();
        assert!(!told && e.runs.borrow().is_empty());
        assert!(err.contains("memory check's run of 1200 things"), "{err}");
        let err = speeds(&e, 1, u64::MAX, |_| Ok(()), |_, _| Ok(())).unwrap_err();
        assert!(err.to_string().contains("overflows"), "{err}");
    }

    #[test]
    fn a_run_that_lost_some_of_its_stream_is_refused() {
        check_ended("p", "requests", 10, 10, 7, 3).unwrap();
        let err = check_ended("p", "requests", 10, 10, 7, 2).unwrap_err();
        assert_eq!(
            err.to_string(),
            "p: of 10 requests 10 arrived, 7 finished and 2 were dropped"
        );
        assert!(check_ended("p", "requests", 10, 9, 7, 2).is_err());
    }
}
