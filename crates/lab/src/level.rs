//! What an experiment is at every level, and the one runner of them all.
//!
//! An experiment is data: a list of cases (a workload on a machine of one
//! level, and the policies it runs under), serde values that `faasched
//! experiment NAME --plan` prints and `--cases FILE` reads back. A level
//! says how its cases run and what files each leaves ([`Level`]); the rest
//! is shared: the slugs checked before anything runs ([`run`]), the jobs
//! spread over rayon's pool under one progress bar ([`in_parallel`]), and
//! the files written together ([`write_files`]): `table.txt`, `table.csv`
//! and a directory per case.
//!
//! Runs are independent and each is deterministic, and results are
//! gathered in job order, so the output does not depend on the thread
//! count.

use crate::progress;
use crate::table::Table;
use anyhow::{Context, Result, bail};
use faasched_report::Staged;
use faasched_workload::Choice;
use rayon::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// A level whose experiments the runner runs: its cases, how they run and
/// what files each leaves.
pub trait Level {
    /// A case as `--plan` prints it and `--cases FILE` holds it.
    type Case: Serialize + DeserializeOwned;
    /// What one case measured.
    type Ran;
    /// Whether `--invocations` and `--trace` reach its cases: the OS
    /// level's workloads take them; the others run workloads of their own
    /// length.
    const SIZED: bool = false;

    /// The case's directory under `--out`, and its key in the table.
    fn slug(case: &Self::Case) -> &str;
    /// The case's heading in its report.
    fn title(case: &Self::Case) -> &str;
    /// The case a result is of.
    fn case(ran: &Self::Ran) -> &Self::Case;
    /// Runs every case (each checked before anything runs), results in
    /// case order. [`run`] has checked that there are cases and that their
    /// slugs are plain and distinct.
    fn run(cases: Vec<Self::Case>) -> Result<Vec<Self::Ran>>;
    /// Stages a case's files in `dir`, its report headed `title`.
    fn write(ran: &Self::Ran, dir: &Path, title: &str, staged: &mut Staged) -> Result<()>;
    /// Stages the files of all the cases together in `dir`, headed
    /// `title`: by default none.
    fn write_all(ran: &[Self::Ran], dir: &Path, title: &str, staged: &mut Staged) -> Result<()> {
        let _ = (ran, dir, title, staged);
        Ok(())
    }
}

/// Settings every experiment takes from the command line.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Invocations per run instead of the experiment's own number.
    pub invocations: Option<u64>,
    /// Seed of every workload and random choice.
    pub seed: u64,
    /// The folder of a production trace's day, for the experiments that
    /// run one.
    pub trace: Option<PathBuf>,
    /// Where an imported trace is kept between runs. By default the user's
    /// cache (`$XDG_CACHE_HOME/faasched`, else `~/.cache/faasched`).
    pub cache: Option<PathBuf>,
}

impl Settings {
    /// A built-in workload: `invocations` unless overridden.
    pub fn workload(&self, name: &str, cores: usize, load: f64, invocations: u64) -> Choice {
        Choice {
            workload: name.to_string(),
            cores,
            load: Some(load),
            invocations: Some(self.invocations.unwrap_or(invocations)),
            seed: self.seed,
        }
    }
}

/// Runs `cases` at level `L`, refusing first no cases at all, and a slug
/// that is no plain file name (it names the case's directory under
/// `--out`) or that two cases share (one directory).
pub fn run<L: Level>(cases: Vec<L::Case>) -> Result<Vec<L::Ran>> {
    if cases.is_empty() {
        bail!("no cases to run");
    }
    for (i, case) in cases.iter().enumerate() {
        check_slug(L::slug(case), cases[..i].iter().map(L::slug))?;
    }
    L::run(cases)
}

/// Refuses a case slug that is no plain file name (it names the case's
/// directory under `--out`) or that an earlier case of the run has (two
/// cases, one directory).
fn check_slug<'a>(slug: &str, earlier: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if slug.is_empty() || slug.starts_with('.') || !slug.chars().all(plain) {
        bail!(
            "case slug `{slug}`: a slug names the case's directory, so it takes letters, \
             digits, `-`, `_` and `.` only, and does not start with `.`"
        );
    }
    if earlier.into_iter().any(|e| e == slug) {
        bail!("two cases have the slug `{slug}`");
    }
    Ok(())
}

/// Runs `run` on every job in parallel on rayon's pool, under one progress
/// bar that shows each job's `label` as it starts; the results in job
/// order.
pub fn in_parallel<J: Sync, M: Send>(
    jobs: &[J],
    label: impl Fn(&J) -> String + Sync,
    run: impl Fn(&J) -> M + Sync,
) -> Vec<M> {
    let bar = progress::runs("experiment", jobs.len() as u64);
    let measured = jobs
        .par_iter()
        .map(|job| {
            bar.set_message(label(job));
            let m = run(job);
            bar.inc(1);
            m
        })
        .collect();
    bar.finish_and_clear();
    measured
}

/// The cases in the JSON file at `path` (as `--plan` prints them); errors
/// name it, and the line and column of what is wrong.
pub fn read_cases<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}", path.display()))
}

/// Writes experiment `name`'s files into `dir`: `table.txt` (`text`),
/// `table.csv`, each case's in its directory and the level's over all
/// cases, put in place together once written with what `staged` holds
/// (the directory, made before the runs so that one that cannot be made
/// is found at once).
pub fn write_files<L: Level>(
    mut staged: Staged,
    dir: &Path,
    name: &str,
    ran: &[L::Ran],
    table: &Table,
    text: &str,
) -> Result<()> {
    staged.write(&dir.join("table.txt"), text.as_bytes())?;
    table.write_csv(&dir.join("table.csv"), &mut staged)?;
    let title = format!("faasched experiment {name}");
    for r in ran {
        let case = L::case(r);
        let heading = format!("{title}: {}", L::title(case));
        L::write(r, &dir.join(L::slug(case)), &heading, &mut staged)?;
    }
    L::write_all(ran, dir, &title, &mut staged)?;
    Ok(staged.commit()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_name_plain_distinct_directories() {
        for slug in ["../escaped", "/tmp/x", "", ".hidden", "a/b"] {
            let err = check_slug(slug, []).unwrap_err().to_string();
            assert!(err.contains(&format!("case slug `{slug}`")), "{err}");
        }
        let err = check_slug("a", ["b", "a"]).unwrap_err().to_string();
        assert!(err.contains("two cases have the slug `a`"), "{err}");
        check_slug("all-24-80.v2_x", ["all-24-80"]).unwrap();
    }

    #[test]
    fn jobs_come_back_in_their_order() {
        let jobs: Vec<u64> = (0..100).collect();
        let squares = in_parallel(&jobs, |j| j.to_string(), |j| j * j);
        assert_eq!(squares, jobs.iter().map(|j| j * j).collect::<Vec<_>>());
    }
}
