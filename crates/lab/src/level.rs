//! What an experiment is at every level, and the one runner of them all.
//!
//! An experiment is data: a list of cases (a workload on a machine of one
//! level, and the policies it runs under), serde values that `faasched
//! experiment NAME --plan` prints and `--cases FILE` reads back. A level
//! says how a case is checked, which independent jobs it is made of (a
//! policy's run, at one load, with one seed), how one job runs, how a
//! case's results are gathered and what files they leave ([`Level`]). The
//! rest is shared: the cases checked before anything runs ([`run`]), every
//! job of every case spread over rayon's pool under one progress bar,
//! each result given back to its case, and the files
//! written together ([`write_files`]): `table.txt`, `table.csv` and a
//! directory per case.
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

/// A level whose experiments the runner runs: its cases, the jobs each is
/// made of, how one runs, and what files a case leaves.
pub trait Level {
    /// A case as `--plan` prints it and `--cases FILE` holds it.
    type Case: Serialize + DeserializeOwned + Sync;
    /// A case checked and resolved once, before anything runs: its
    /// policies looked up, its workload made.
    type Ready: Sync;
    /// What one job measured.
    type Measured: Send + Serialize + DeserializeOwned;
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
    /// Checks and resolves a case; [`run`] names the case in the error.
    fn ready(case: &Self::Case) -> Result<Self::Ready>;
    /// The case's jobs, each named as progress and errors show it (after
    /// the case's slug).
    fn jobs(case: &Self::Case, ready: &Self::Ready) -> Vec<String>;
    /// Runs the case's job `job` (an index into [`Level::jobs`]).
    fn measure(case: &Self::Case, ready: &Self::Ready, job: usize) -> Result<Self::Measured>;
    /// The case's result, from what each of its jobs measured, in job
    /// order.
    fn gather(
        case: Self::Case,
        ready: Self::Ready,
        measured: Vec<Self::Measured>,
    ) -> Result<Self::Ran>;
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

/// Runs `cases` at level `L`: every case checked before anything runs
/// (refusing no cases at all, a slug that is no plain file name, as it
/// names the case's directory under `--out`, or that two cases share),
/// then every job of every case in parallel; the results in case order.
pub fn run<L: Level>(cases: Vec<L::Case>) -> Result<Vec<L::Ran>> {
    let prepared = Prepared::<L>::new(cases)?;
    let measured = prepared.measure();
    prepared.finish(measured)
}

/// Measures one case of a sweep whose cases run on other machines: the
/// case checked and made ready as [`run`] does, its jobs in parallel;
/// what each measured, in job order, for [`gather`].
pub fn measure<L: Level>(case: L::Case) -> Result<Vec<L::Measured>> {
    Prepared::<L>::new(vec![case])?
        .measure()
        .into_iter()
        .collect()
}

/// The results of `cases` from what each case's jobs measured
/// ([`measure`], case by case, anywhere): the same as [`run`] gives, as
/// each job is deterministic and the cases are gathered here as there.
/// Refuses results whose number is not the case's jobs'.
pub fn gather<L: Level>(
    cases: Vec<L::Case>,
    measured: Vec<Vec<L::Measured>>,
) -> Result<Vec<L::Ran>> {
    if measured.len() != cases.len() {
        bail!(
            "{} cases but the results of {}",
            cases.len(),
            measured.len()
        );
    }
    let prepared = Prepared::<L>::new(cases)?;
    for ((case, labels), m) in prepared.cases.iter().zip(&prepared.labels).zip(&measured) {
        if m.len() != labels.len() {
            bail!(
                "case {}: {} results for its {} jobs",
                L::slug(case),
                m.len(),
                labels.len()
            );
        }
    }
    prepared.finish(measured.into_iter().flatten().map(Ok).collect())
}

/// Cases checked and made ready, with their jobs' labels: where a run,
/// a sweep's case and a sweep's gathering all start.
struct Prepared<L: Level> {
    cases: Vec<L::Case>,
    ready: Vec<L::Ready>,
    labels: Vec<Vec<String>>,
}

impl<L: Level> Prepared<L> {
    /// Refuses no cases, a slug that is no plain file name or that two
    /// cases share, and a case its level cannot make ready.
    fn new(cases: Vec<L::Case>) -> Result<Prepared<L>> {
        check_slugs::<L>(&cases)?;
        let ready = cases
            .iter()
            .map(|case| L::ready(case).with_context(|| format!("case {}", L::slug(case))))
            .collect::<Result<Vec<_>>>()?;
        let labels = cases
            .iter()
            .zip(&ready)
            .map(|(c, r)| L::jobs(c, r))
            .collect();
        Ok(Prepared {
            cases,
            ready,
            labels,
        })
    }

    /// Every job of every case, in parallel; what each measured, in job
    /// order (case by case).
    fn measure(&self) -> Vec<Result<L::Measured>> {
        let jobs: Vec<(usize, usize)> = self
            .labels
            .iter()
            .enumerate()
            .flat_map(|(c, jobs)| (0..jobs.len()).map(move |j| (c, j)))
            .collect();
        let name =
            |c: usize, j: usize| format!("{} {}", L::slug(&self.cases[c]), self.labels[c][j]);
        in_parallel(
            &jobs,
            |&(c, j)| name(c, j),
            |&(c, j)| {
                L::measure(&self.cases[c], &self.ready[c], j).with_context(|| {
                    format!("case {}, {}", L::slug(&self.cases[c]), self.labels[c][j])
                })
            },
        )
    }

    /// The cases' results from what their jobs measured, in job order.
    fn finish(self, measured: Vec<Result<L::Measured>>) -> Result<Vec<L::Ran>> {
        let mut measured = measured.into_iter();
        self.cases
            .into_iter()
            .zip(self.ready)
            .zip(self.labels)
            .map(|((case, ready), labels)| {
                let of_case = measured
                    .by_ref()
                    .take(labels.len())
                    .collect::<Result<_>>()?;
                L::gather(case, ready, of_case)
            })
            .collect()
    }
}

/// Refuses no cases at all, and a case slug that is no plain file name
/// or that two cases share.
pub fn check_slugs<L: Level>(cases: &[L::Case]) -> Result<()> {
    if cases.is_empty() {
        bail!("no cases to run");
    }
    for (i, case) in cases.iter().enumerate() {
        check_slug(L::slug(case), cases[..i].iter().map(L::slug))?;
    }
    Ok(())
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
fn in_parallel<J: Sync, M: Send>(
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

    /// A level whose case squares its numbers, one job each, and refuses
    /// 13 when it runs.
    struct Squares;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Numbers {
        slug: String,
        numbers: Vec<u64>,
    }

    impl Level for Squares {
        type Case = Numbers;
        type Ready = u64;
        type Measured = u64;
        type Ran = (String, Vec<u64>, u64);

        fn slug(case: &Numbers) -> &str {
            &case.slug
        }

        fn title(case: &Numbers) -> &str {
            &case.slug
        }

        fn case(_: &Self::Ran) -> &Numbers {
            unreachable!("not written")
        }

        fn ready(case: &Numbers) -> Result<u64> {
            match case.numbers.is_empty() {
                true => bail!("no numbers"),
                false => Ok(case.numbers.len() as u64),
            }
        }

        fn jobs(case: &Numbers, _: &u64) -> Vec<String> {
            case.numbers.iter().map(|n| format!("number {n}")).collect()
        }

        fn measure(case: &Numbers, _: &u64, job: usize) -> Result<u64> {
            match case.numbers[job] {
                13 => bail!("unlucky"),
                n => Ok(n * n),
            }
        }

        fn gather(case: Numbers, ready: u64, measured: Vec<u64>) -> Result<Self::Ran> {
            Ok((case.slug, measured, ready))
        }

        fn write(_: &Self::Ran, _: &Path, _: &str, _: &mut Staged) -> Result<()> {
            Ok(())
        }
    }

    fn numbers(slug: &str, numbers: &[u64]) -> Numbers {
        Numbers {
            slug: slug.into(),
            numbers: numbers.to_vec(),
        }
    }

    #[test]
    fn each_case_gets_its_own_jobs_results_in_order() {
        let ran = run::<Squares>(vec![
            numbers("a", &[1, 2, 3]),
            numbers("b", &[4]),
            numbers("c", &[5, 6]),
        ])
        .unwrap();
        assert_eq!(
            ran,
            [
                ("a".to_string(), vec![1, 4, 9], 3),
                ("b".to_string(), vec![16], 1),
                ("c".to_string(), vec![25, 36], 2),
            ]
        );
    }

    #[test]
    fn errors_name_the_case_and_the_job() {
        let err = |cases| format!("{:#}", run::<Squares>(cases).unwrap_err());
        let e = err(vec![numbers("a", &[1]), numbers("b", &[])]);
        assert_eq!(e, "case b: no numbers");
        let e = err(vec![numbers("a", &[1]), numbers("b", &[2, 13])]);
        assert_eq!(e, "case b, number 13: unlucky");
        // The slugs are checked before any case is made ready.
        let e = err(vec![numbers("a", &[]), numbers("a", &[1])]);
        assert_eq!(e, "two cases have the slug `a`");
    }

    #[test]
    fn jobs_come_back_in_their_order() {
        let jobs: Vec<u64> = (0..100).collect();
        let squares = in_parallel(&jobs, |j| j.to_string(), |j| j * j);
        assert_eq!(squares, jobs.iter().map(|j| j * j).collect::<Vec<_>>());
    }
}
