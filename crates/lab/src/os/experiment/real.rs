//! ALPS and its baselines on real arrivals: a day of the public Azure
//! Functions 2019 trace, imported inside the run, rescaled to loads 0.8, 0.9
//! and 1.0 on 24 and 56 cores (the built-in workloads' Poisson arrivals
//! leave little to schedule; a real day has bursts, hundreds of functions
//! and demands spread over orders of magnitude).
//!
//! The trace's minutes are split in two halves ([`Part`]): every parameter
//! of the policies is chosen on the first (tuning) and judged on the second
//! as well (held out), which nothing was tuned on. From each, two subsets:
//! its first invocations as they are, and those of at most [`SHORT`] of CPU
//! (the long tail removed), each written once as a
//! workload CSV in the user's cache (`$XDG_CACHE_HOME/faasched/alps-real`,
//! else `~/.cache/...`), named by what it was made from (the trace files'
//! paths, sizes and modification times, the day, minutes, seed, size and
//! faasched's version), so that `--plan` names a file that a later run
//! finds again and a changed trace is imported anew; every case reads it.

use super::stats::{find, label, mean, stat};
use super::{Case, Ran, Variant};
use crate::level::Settings;
use crate::os::run::Kernel;
use crate::output::write_workload;
use crate::table::{NONE, Table, change, fixed};
use anyhow::{Context, Result, bail};
use faasched_model::{Group, MS, Nanos};
use faasched_report::Staged;
use faasched_report::os::{Metric, PolicySummary, Scope};
use faasched_workload::traces::azure2019;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

/// Invocations per run: the trace's first, by arrival.
const INVOCATIONS: u64 = 50_000;
/// The short subset's bound on an invocation's CPU demand.
const SHORT: Nanos = 4_000 * MS;
/// The machines.
const CORES: [usize; 2] = [24, 56];
/// The loads the arrivals are rescaled to.
const LOADS: [f64; 3] = [0.8, 0.9, 1.0];
/// The policies, cfs first (every change is against it).
pub(super) const POLICIES: [&str; 13] = [
    "cfs",
    "fifo",
    "sfs",
    "alps",
    "alps-kernel",
    "hybrid",
    "las",
    "alps-las",
    "gittins",
    "gittins-rt",
    "sfs-alps",
    "sfs-gittins",
    "srpt",
];

/// Which half of the trace's minutes a case is drawn from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Part {
    /// The first half: what parameters are chosen on.
    Tuning,
    /// The second half: never tuned on.
    HeldOut,
}

impl Part {
    const BOTH: [Part; 2] = [Part::Tuning, Part::HeldOut];

    /// As case slugs begin.
    fn slug(self) -> &'static str {
        match self {
            Part::Tuning => "tuning",
            Part::HeldOut => "held-out",
        }
    }

    /// Its half of `minutes` (the earlier half one minute shorter when
    /// their count is odd); at least two minutes are needed.
    fn minutes(self, minutes: &RangeInclusive<u32>) -> RangeInclusive<u32> {
        let (first, last) = (*minutes.start(), *minutes.end());
        let second_half = first + (last - first).div_ceil(2);
        match self {
            Part::Tuning => first..=second_half - 1,
            Part::HeldOut => second_half..=last,
        }
    }
}

/// One case per part, subset, machine and load, the tuning part's first.
pub fn cases(s: &Settings) -> Result<Vec<Case>> {
    let Some(dir) = &s.trace else {
        bail!(
            "alps-real needs --trace DIR: the folder of a day of the Azure Functions 2019 trace \
             (docs/GUIDE.md, \"Production traces\")"
        );
    };
    let day = azure2019::first_day(dir).context("--trace")?;
    let minutes = azure2019::header_minutes(dir, day)?;
    if minutes.start() == minutes.end() {
        bail!(
            "{}: day {day} holds minute {} alone; alps-real splits the minutes into a tuning \
             and a held-out half, which takes at least 2",
            dir.display(),
            minutes.start()
        );
    }
    let n = s.invocations.unwrap_or(INVOCATIONS);
    if n < 2 {
        bail!("alps-real: --invocations {n}: a case rescales arrivals, which takes at least 2");
    }
    let cache = match &s.cache {
        Some(dir) => dir.join("alps-real"),
        None => cache_dir()?,
    };
    let mut cases = Vec::new();
    for part in Part::BOTH {
        let minutes = part.minutes(&minutes);
        let files = import(dir, day, minutes.clone(), s.seed, n, &cache)?;
        for (subset, file) in [("all", &files.0), ("short", &files.1)] {
            for cores in CORES {
                for load in LOADS {
                    let percent = (load * 100.0).round();
                    let what = match subset {
                        "all" => "every invocation".to_string(),
                        _ => format!("invocations of at most {} s", SHORT / 1_000 / MS),
                    };
                    cases.push(Case {
                        title: format!(
                            "Azure 2019 day {day}, minutes {}..{} ({}), {what}, at {percent}% \
                             load on {cores} cores",
                            minutes.start(),
                            minutes.end(),
                            part.slug()
                        ),
                        slug: format!("{}-{subset}-{cores}-{percent}", part.slug()),
                        workload: faasched_workload::Choice {
                            workload: file.display().to_string(),
                            cores,
                            load: Some(load),
                            invocations: None,
                            seed: s.seed,
                        },
                        kernel: Kernel::default(),
                        variants: POLICIES.map(Variant::plain).to_vec(),
                        by_function: false,
                    });
                }
            }
        }
    }
    Ok(cases)
}

/// Imports the day's `minutes` from `dir` and writes the first `n`
/// invocations of each subset as a workload CSV in `cache` (unless an
/// earlier run wrote the same): the files of every invocation and of the
/// short ones.
fn import(
    dir: &Path,
    day: u32,
    minutes: RangeInclusive<u32>,
    seed: u64,
    n: u64,
    cache: &Path,
) -> Result<(PathBuf, PathBuf)> {
    let range = minutes.clone();
    let mut options = azure2019::Options::new(dir, day);
    options.minutes = Some(minutes.clone());
    options.seed = seed;
    let mut key = DefaultHasher::new();
    (env!("CARGO_PKG_VERSION"), day, minutes, seed, n).hash(&mut key);
    for path in options.files() {
        let meta =
            std::fs::metadata(&path).with_context(|| format!("reading {}", path.display()))?;
        let canonical = path.canonicalize().unwrap_or(path);
        (canonical, meta.len(), meta.modified().ok()).hash(&mut key);
    }
    let stem = format!("{:016x}", key.finish());
    let (all, short) = (
        cache.join(format!("{stem}-all.csv")),
        cache.join(format!("{stem}-short.csv")),
    );
    if all.is_file() && short.is_file() {
        return Ok((all, short));
    }
    let trace = azure2019::read(&options)?;
    let every: Vec<_> = trace.invocations.iter().take(n as usize).collect();
    let shorts: Vec<_> = (trace.invocations.iter())
        .filter(|i| i.cpu_demand() <= SHORT)
        .take(n as usize)
        .collect();
    for (what, subset) in [
        ("invocations", &every),
        ("invocations of at most 4 s", &shorts),
    ] {
        if subset.len() < 2 {
            bail!(
                "{}, day {day}, minutes {}..{}: {} {what}; a case rescales arrivals, which \
                 takes at least 2",
                dir.display(),
                range.start(),
                range.end(),
                subset.len()
            );
        }
    }
    let mut staged = Staged::new();
    staged.create_dir(cache)?;
    write_workload(&all, every.into_iter().map(Ok), &mut staged)?;
    write_workload(&short, shorts.into_iter().map(Ok), &mut staged)?;
    staged.commit()?;
    Ok((all, short))
}

/// Where the imported subsets are kept: the user's own cache, never a
/// directory others may write into.
fn cache_dir() -> Result<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let cache = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| Path::new(&home).join(".cache")))
        .context("alps-real keeps the imported trace in a cache: set XDG_CACHE_HOME or HOME")?;
    Ok(cache.join("faasched").join("alps-real"))
}

/// Per case and policy: mean turnaround, its change against cfs and the
/// share of srpt's gain over cfs it takes, G1's and G4's mean, the mean and
/// longest wait for a first run; then, per part, each policy's least share
/// over the part's cases, so that what holds where it was tuned and what
/// holds where it was not read apart.
pub fn table(ran: &[Ran]) -> Table {
    let mut t = Table::new(
        &[
            "case",
            "policy",
            "mean_ms",
            "vs_cfs",
            "of_srpt",
            "G1_mean",
            "G4_mean",
            "resp_mean",
            "resp_max",
        ],
        2,
    );
    for r in ran {
        let cfs = find(&r.summary.policies, "cfs");
        for p in &r.summary.policies {
            let response = |pick: fn(&faasched_report::Stats) -> f64| {
                fixed(stat(p, Scope::All, Metric::Response, pick), 2)
            };
            t.push(vec![
                r.case.slug.clone(),
                label(p),
                fixed(mean(p, Scope::All), 2),
                change(mean(p, Scope::All), cfs.and_then(|c| mean(c, Scope::All))),
                share_label(of_srpt(r, p)),
                fixed(mean(p, Scope::Group(Group::G1)), 2),
                fixed(mean(p, Scope::Group(Group::G4)), 2),
                response(|s| s.mean),
                response(|s| s.max),
            ]);
        }
    }
    t.notes.push(
        "case: part (tuning: the first half of the trace's minutes; held-out: the second)-\
         subset (all, or short: at most 4 s of CPU)-cores-load%; times in ms; vs_cfs: mean \
         turnaround against cfs; of_srpt: the share of srpt's gain over cfs it takes; resp: \
         wait for the first run"
            .into(),
    );
    for part in Part::BOTH {
        let prefix = format!("{}-", part.slug());
        let of_part: Vec<&Ran> = ran
            .iter()
            .filter(|r| r.case.slug.starts_with(&prefix))
            .collect();
        let Some(first) = of_part.first() else {
            continue;
        };
        let least: Vec<String> = first
            .summary
            .policies
            .iter()
            .filter(|p| !matches!(p.policy.as_str(), "cfs" | "srpt"))
            .map(|p| {
                let shares = of_part
                    .iter()
                    .map(|r| find(&r.summary.policies, &p.policy).and_then(|q| of_srpt(r, q)));
                let least = shares
                    .collect::<Option<Vec<f64>>>()
                    .and_then(|s| s.into_iter().reduce(f64::min));
                format!("{} {}", p.policy, share_label(least))
            })
            .collect();
        t.notes.push(format!(
            "{}, least of_srpt over its {} cases: {}",
            part.slug(),
            of_part.len(),
            least.join(", ")
        ));
    }
    t
}

/// The share of srpt's gain over cfs in mean turnaround that `p` takes in
/// `r`: 1 for srpt's, 0 for cfs's, below 0 for worse than cfs; `None` where
/// either is missing or srpt gains nothing.
fn of_srpt(r: &Ran, p: &PolicySummary) -> Option<f64> {
    let mean_of = |name| find(&r.summary.policies, name).and_then(|q| mean(q, Scope::All));
    share_of_gain(mean_of("cfs")?, mean_of("srpt")?, mean(p, Scope::All)?)
}

/// The share of the gain from `base` to `best` that `own` takes; `None`
/// where `best` gains nothing.
fn share_of_gain(base: f64, best: f64, own: f64) -> Option<f64> {
    (base > best).then(|| (base - own) / (base - best))
}

/// A share as a whole percentage.
fn share_label(share: Option<f64>) -> String {
    share.map_or_else(|| NONE.to_string(), |s| format!("{:.0}%", s * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_of_the_oracles_gain_by_hand() {
        // cfs 1000 ms, srpt 600 ms: 800 ms takes half the 400 ms gain.
        assert_eq!(share_of_gain(1000.0, 600.0, 800.0), Some(0.5));
        assert_eq!(share_of_gain(1000.0, 600.0, 1000.0), Some(0.0));
        assert_eq!(share_of_gain(1000.0, 600.0, 1200.0), Some(-0.5));
        assert_eq!(share_label(Some(0.5)), "50%");
        // No gain to share.
        assert_eq!(share_of_gain(600.0, 600.0, 500.0), None);
        assert_eq!(share_label(None), NONE);
    }

    #[test]
    fn the_minutes_split_in_halves_the_earlier_shorter_when_odd() {
        assert_eq!(Part::Tuning.minutes(&(480..=959)), 480..=719);
        assert_eq!(Part::HeldOut.minutes(&(480..=959)), 720..=959);
        assert_eq!(Part::Tuning.minutes(&(1..=3)), 1..=1);
        assert_eq!(Part::HeldOut.minutes(&(1..=3)), 2..=3);
        assert_eq!(Part::Tuning.minutes(&(5..=6)), 5..=5);
        assert_eq!(Part::HeldOut.minutes(&(5..=6)), 6..=6);
    }
}
