//! An experiment swept over other machines: its cases sent out one by
//! one, each measured where it lands, and the measurements gathered
//! here into the table and files `faasched experiment NAME --out DIR`
//! writes, byte for byte.
//!
//! The engine that moves the cases (Dask, in the Python package) sees
//! only text and bytes: [`cases`] gives each case as the JSON `--plan`
//! prints, [`measure`] turns one into the bytes of what its jobs
//! measured, and [`finish`] takes every case's bytes back. The bytes are
//! CBOR, which keeps every float exactly (NaN included), and name the
//! faasched version, the experiment and the case that made them, so that
//! results of another version, experiment or case are refused rather
//! than gathered. Each job is deterministic and [`level::gather`] puts
//! them together as a local run does, so where each case ran does not
//! change a byte (except what a run measures of the machine itself, such
//! as a cluster case's `timing.json`, which differs between local runs
//! too).

use super::command::{publish, staged_dir};
use super::{AtLevel, Experiment, Name};
use crate::level::{self, Level, Settings};
use crate::progress;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// The version whose measurements a gathering takes.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What one case's jobs measured, as it travels back.
#[derive(Serialize, Deserialize)]
struct Shard<M> {
    faasched: String,
    experiment: Name,
    slug: String,
    measured: Vec<M>,
}

/// The experiment's cases, each as one line of JSON: its own for
/// `settings`, or those of `file`'s text (a cases file, as `--plan`
/// prints them), checked as a run checks them.
pub fn cases(name: Name, settings: &Settings, file: Option<&str>) -> Result<Vec<String>> {
    name.with(Cases { settings, file })
}

struct Cases<'a> {
    settings: &'a Settings,
    file: Option<&'a str>,
}

impl AtLevel for Cases<'_> {
    type Output = Result<Vec<String>>;

    fn at<L: Level>(self, e: &Experiment<L>) -> Result<Vec<String>> {
        let cases: Vec<L::Case> = match self.file {
            Some(text) => serde_json::from_str(text).context("the cases")?,
            None => e.plan(self.settings)?,
        };
        level::check_slugs::<L>(&cases)?;
        cases
            .iter()
            .map(|c| Ok(serde_json::to_string(c)?))
            .collect()
    }
}

/// Runs `cases` (lines as [`cases`] gives them) here, every job of every
/// case in parallel, into `out` if given: what `faasched experiment NAME
/// --cases FILE --out DIR` prints, for the sweep's local run.
pub fn run(name: Name, cases: &[String], out: Option<&Path>) -> Result<String> {
    name.with(Run { cases, out })
}

struct Run<'a> {
    cases: &'a [String],
    out: Option<&'a Path>,
}

impl AtLevel for Run<'_> {
    type Output = Result<String>;

    fn at<L: Level>(self, e: &Experiment<L>) -> Result<String> {
        let cases = parse::<L>(self.cases)?;
        let staged = staged_dir(self.out)?;
        let ran = level::run::<L>(cases)?;
        publish(e, &ran, self.out, staged)
    }
}

/// Each of `lines` as a case of level `L`; an error names the case by
/// its place.
fn parse<L: Level>(lines: &[String]) -> Result<Vec<L::Case>> {
    lines
        .iter()
        .enumerate()
        .map(|(i, text)| serde_json::from_str(text).with_context(|| format!("case {}", i + 1)))
        .collect()
}

/// Measures one case (one of [`cases`]' lines) of experiment `name`: the
/// bytes for [`finish`].
pub fn measure(name: Name, case: &str) -> Result<Vec<u8>> {
    name.with(Measure { case })
}

struct Measure<'a> {
    case: &'a str,
}

impl AtLevel for Measure<'_> {
    type Output = Result<Vec<u8>>;

    fn at<L: Level>(self, e: &Experiment<L>) -> Result<Vec<u8>> {
        let case: L::Case = serde_json::from_str(self.case).context("the case")?;
        let slug = L::slug(&case).to_string();
        let shard = Shard {
            faasched: VERSION.to_string(),
            experiment: e.name,
            slug,
            measured: level::measure::<L>(case)?,
        };
        let mut bytes = Vec::new();
        ciborium::into_writer(&shard, &mut bytes)?;
        Ok(bytes)
    }
}

/// Gathers what [`measure`] made of each of `cases` (in their order) into
/// the experiment's table, written with every case's files into `out` if
/// given, as `faasched experiment NAME --out DIR` writes them; what that
/// command prints.
pub fn finish<B: AsRef<[u8]>>(
    name: Name,
    cases: &[String],
    shards: &[B],
    out: Option<&Path>,
) -> Result<String> {
    name.with(Finish { cases, shards, out })
}

struct Finish<'a, B> {
    cases: &'a [String],
    shards: &'a [B],
    out: Option<&'a Path>,
}

impl<B: AsRef<[u8]>> AtLevel for Finish<'_, B> {
    type Output = Result<String>;

    fn at<L: Level>(self, e: &Experiment<L>) -> Result<String> {
        if self.shards.len() != self.cases.len() {
            bail!(
                "{} cases but the results of {}",
                self.cases.len(),
                self.shards.len()
            );
        }
        let staged = staged_dir(self.out)?;
        let cases = parse::<L>(self.cases)?;
        let mut measured = Vec::with_capacity(cases.len());
        for (case, bytes) in cases.iter().zip(self.shards) {
            let slug = L::slug(case).to_string();
            let shard: Shard<L::Measured> = ciborium::from_reader(bytes.as_ref())
                .with_context(|| format!("case {slug}: its results are no faasched results"))?;
            if shard.faasched != VERSION {
                bail!(
                    "case {slug}: measured by faasched {}, gathered by {VERSION}: install one \
                     version on every machine of the sweep",
                    shard.faasched
                );
            }
            if (shard.experiment, shard.slug.as_str()) != (e.name, slug.as_str()) {
                bail!(
                    "case {slug}: the results given are of case {} of {}",
                    shard.slug,
                    shard.experiment.spelled()
                );
            }
            measured.push(shard.measured);
        }
        let ran = level::gather::<L>(cases, measured)?;
        publish(e, &ran, self.out, staged)
    }
}

/// Hands experiment `name` to `python -m faasched.sweep` (the
/// interpreter `$FAASCHED_PYTHON`, else `python3`), which becomes this
/// process, so that nothing is left behind and its exit status is the
/// command's: `faasched experiment NAME --dask SCHEDULER`. Returns only
/// if the interpreter could not be run.
pub fn hand_over(
    name: Name,
    settings: &Settings,
    cases: Option<&Path>,
    scheduler: &str,
    out: Option<&Path>,
) -> Result<()> {
    let python = std::env::var_os("FAASCHED_PYTHON").unwrap_or_else(|| "python3".into());
    let mut command = Command::new(&python);
    command.args([
        "-m",
        "faasched.sweep",
        name.spelled(),
        "--scheduler",
        scheduler,
    ]);
    if let Some(out) = out {
        command.arg("--out").arg(out);
    }
    if let Some(n) = settings.invocations {
        command.arg("--invocations").arg(n.to_string());
    }
    if let Some(trace) = &settings.trace {
        command.arg("--trace").arg(trace);
    }
    match cases {
        Some(cases) => command.arg("--cases").arg(cases),
        None => command.arg("--seed").arg(settings.seed.to_string()),
    };
    if progress::is_quiet() {
        command.arg("--quiet");
    }
    let err = command.exec();
    bail!(
        "running {} for --dask: {err}; --dask needs Python with faasched's package and \
         dask.distributed (pip install ./python 'dask[distributed]'), or $FAASCHED_PYTHON \
         naming such an interpreter",
        python.to_string_lossy()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    /// `name`'s plan with `edit` applied to each case: a small sweep.
    fn small(name: Name, settings: &Settings, edit: impl Fn(&mut Value)) -> String {
        let mut plan: Vec<Value> = cases(name, settings, None)
            .unwrap()
            .iter()
            .map(|c| serde_json::from_str(c).unwrap())
            .collect();
        plan.iter_mut().for_each(edit);
        serde_json::to_string(&plan).unwrap()
    }

    /// Every file under `dir`, by path below it.
    fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
        let mut all = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let key = path.strip_prefix(dir).unwrap().display().to_string();
                    all.insert(key, std::fs::read(&path).unwrap());
                }
            }
        }
        all
    }

    /// The same cases swept case by case, in reverse order (as a
    /// distributed engine may finish them), give the local run's printout
    /// and files, byte for byte; `timing.json`, the machine's own speed,
    /// is left out.
    fn sweeps_as_it_runs_here(name: Name, file: &str) {
        let tmp = tempfile::tempdir().unwrap();
        let (here, there) = (tmp.path().join("here"), tmp.path().join("there"));
        let lines = cases(name, &Settings::default(), Some(file)).unwrap();
        let printed = run(name, &lines, Some(&here)).unwrap();
        let mut shards: Vec<_> = lines
            .iter()
            .rev()
            .map(|c| measure(name, c).unwrap())
            .collect();
        shards.reverse();
        let swept = finish(name, &lines, &shards, Some(&there)).unwrap();
        let strip = |t: &str, d: &Path| t.replace(&d.display().to_string(), "DIR");
        assert_eq!(strip(&printed, &here), strip(&swept, &there));
        let (mut a, mut b) = (files(&here), files(&there));
        for f in [&mut a, &mut b] {
            f.retain(|k, _| !k.ends_with("timing.json"));
        }
        assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
        for (k, v) in &a {
            assert!(v == &b[k], "{name:?}: {k} differs");
        }
        assert!(a.contains_key("table.csv") && a.len() > 3, "{:?}", a.keys());
    }

    #[test]
    fn an_os_sweep_gives_the_local_bytes() {
        let settings = Settings {
            invocations: Some(300),
            seed: 3,
            ..Settings::default()
        };
        let file = small(Name::HybridCost, &settings, |_| {});
        sweeps_as_it_runs_here(Name::HybridCost, &file);
    }

    #[test]
    fn a_node_sweep_gives_the_local_bytes() {
        let file = small(Name::SledgescaleLognormal, &Settings::default(), |c| {
            c["options"]["seconds"] = json!(0.2);
            c["offered"]["loads"] = json!([0.5, 0.9]);
        });
        sweeps_as_it_runs_here(Name::SledgescaleLognormal, &file);
    }

    #[test]
    fn a_capacity_sweep_gives_the_local_bytes() {
        let file = small(Name::SledgescaleFixed, &Settings::default(), |c| {
            c["options"]["seconds"] = json!(0.05);
            c["seeds"] = json!(1);
            c["policies"] = json!(["sledgescale", "darc"]);
        });
        sweeps_as_it_runs_here(Name::SledgescaleFixed, &file);
    }

    #[test]
    fn a_cluster_sweep_gives_the_local_bytes() {
        let file = small(Name::ChrluSim, &Settings::default(), |c| {
            c["options"]["seconds"] = json!(30.0);
            c["options"]["invocations"] = json!(3000);
            c["options"]["servers"] = json!(4);
        });
        sweeps_as_it_runs_here(Name::ChrluSim, &file);
    }

    #[test]
    fn results_of_another_case_experiment_or_version_are_refused() {
        let settings = Settings {
            invocations: Some(100),
            seed: 1,
            ..Settings::default()
        };
        let lines = cases(Name::AlpsLoad, &settings, None).unwrap();
        let lines = &lines[..2];
        let shards: Vec<_> = lines
            .iter()
            .map(|c| measure(Name::AlpsLoad, c).unwrap())
            .collect();
        let err = |name, lines: &[String], shards: &[Vec<u8>]| {
            format!("{:#}", finish(name, lines, shards, None).unwrap_err())
        };
        let swapped = [shards[1].clone(), shards[0].clone()];
        let e = err(Name::AlpsLoad, lines, &swapped);
        assert!(e.contains("the results given are of case"), "{e}");
        let e = err(Name::AlpsLoad, lines, &shards[..1]);
        assert_eq!(e, "2 cases but the results of 1");
        let e = err(
            Name::AlpsLoad,
            lines,
            &[shards[0].clone(), b"junk".to_vec()],
        );
        assert!(e.contains("its results are no faasched results"), "{e}");
        let e = err(Name::AlpsAblation, lines, &shards);
        assert!(e.contains("of alps-load"), "{e}");
        let mut old: Shard<crate::os::experiment::Measured> =
            ciborium::from_reader(shards[0].as_slice()).unwrap();
        old.faasched = "0.0.1".into();
        let mut bytes = Vec::new();
        ciborium::into_writer(&old, &mut bytes).unwrap();
        let e = err(Name::AlpsLoad, lines, &[bytes, shards[1].clone()]);
        assert!(e.contains("measured by faasched 0.0.1"), "{e}");
        finish(Name::AlpsLoad, lines, &shards, None).unwrap();
    }

    #[test]
    fn a_sweeps_cases_are_refused_before_they_are_sent() {
        let e = cases(Name::AlpsLoad, &Settings::default(), Some("[]")).unwrap_err();
        assert_eq!(e.to_string(), "no cases to run");
        let e = cases(Name::AlpsLoad, &Settings::default(), Some("[{]")).unwrap_err();
        assert!(format!("{e:#}").starts_with("the cases: "), "{e:#}");
        assert_eq!(
            Name::parse("alps-lod")
                .unwrap_err()
                .to_string()
                .split(':')
                .next(),
            Some("no experiment `alps-lod`")
        );
    }
}
