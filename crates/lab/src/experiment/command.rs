//! `faasched experiment NAME`: an experiment's cases, its own or a file's,
//! printed as a plan or run, their table printed and (with a directory)
//! written with every case's files.

use super::{AtLevel, Experiment, Name, sweep};
use crate::level::{self, Level, Settings, read_cases, write_files};
use crate::{interrupt, out, outln};
use anyhow::Result;
use faasched_report::{REPORT_HTML, Staged};
use std::path::{Path, PathBuf};

/// Which experiment, with what, and what to do with it.
#[derive(Debug, Clone)]
pub struct Options {
    /// The experiment.
    pub name: Name,
    /// Its workloads' size, seed and trace.
    pub settings: Settings,
    /// A JSON file of cases to run instead of the experiment's own.
    pub cases: Option<PathBuf>,
    /// Print the plan, or run it.
    pub action: Action,
}

/// What to do with an experiment's cases.
#[derive(Debug, Clone)]
pub enum Action {
    /// Print them as JSON, running nothing.
    Plan,
    /// Run them and print their table; with a directory, write the table,
    /// the report and a summary per case there.
    Run {
        /// The directory of the files.
        out: Option<PathBuf>,
    },
    /// Run them as [`Action::Run`] does, a task a case on the Dask cluster
    /// whose scheduler is at this address (or `local`), through Python.
    Dask {
        /// The scheduler's address, or `local`.
        scheduler: String,
        /// The directory of the files.
        out: Option<PathBuf>,
    },
}

/// Plans the experiment (or reads a file's cases), then prints the plan
/// or runs it, here or on Dask.
pub fn run(o: Options) -> Result<()> {
    o.name.with(o)
}

impl AtLevel for Options {
    type Output = Result<()>;

    /// [`run`] at the experiment's level.
    fn at<L: Level>(self, e: &Experiment<L>) -> Result<()> {
        let cases = || -> Result<Vec<L::Case>> {
            match &self.cases {
                Some(path) => read_cases(path),
                None => e.plan(&self.settings),
            }
        };
        let out = match &self.action {
            Action::Plan => return outln!("{}", serde_json::to_string_pretty(&cases()?)?),
            Action::Run { out } => out.clone(),
            Action::Dask { scheduler, out } => {
                return sweep::hand_over(
                    e.name,
                    &self.settings,
                    self.cases.as_deref(),
                    scheduler,
                    out.as_deref(),
                );
            }
        };
        let cases = cases()?;
        // A directory that cannot be made is found before the runs, not
        // after them.
        let staged = staged_dir(out.as_deref())?;
        interrupt::catch()?;
        let ran = level::run::<L>(cases)?;
        out!("{}", publish(e, &ran, out.as_deref(), staged)?)
    }
}

/// A staging of files in `dir`, made at once (if there is a directory)
/// so that one that cannot be made is found before the runs.
pub fn staged_dir(dir: Option<&Path>) -> Result<Staged> {
    let mut staged = Staged::new();
    if let Some(dir) = dir {
        staged.create_dir(dir)?;
    }
    Ok(staged)
}

/// The experiment's table of `ran`, written with every case's files into
/// `out` (staged in `staged`) if given; what the command prints.
pub fn publish<L: Level>(
    e: &Experiment<L>,
    ran: &[L::Ran],
    out: Option<&Path>,
    staged: Staged,
) -> Result<String> {
    let table = (e.table)(ran);
    let mut text = table.render();
    if let Some(dir) = out {
        interrupt::check()?;
        write_files::<L>(staged, dir, e.name.spelled(), ran, &table, &text)?;
        text.push_str(&format!(
            "wrote table.txt, table.csv, {REPORT_HTML} and a summary per case to {}\n",
            dir.display()
        ));
    }
    Ok(text)
}
