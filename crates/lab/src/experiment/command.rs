//! `faasched experiment NAME`: an experiment's cases, its own or a file's,
//! printed as a plan or run, their table printed and (with a directory)
//! written with every case's files.

use super::{Experiment, Name, Of};
use crate::level::{self, Level, Settings, read_cases, write_files};
use crate::{interrupt, out, outln};
use anyhow::Result;
use faasched_report::{REPORT_HTML, Staged};
use std::path::PathBuf;

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
}

/// Plans the experiment (or reads a file's cases), then prints the plan
/// or runs it.
pub fn run(o: Options) -> Result<()> {
    match o.name.experiment() {
        Of::Os(e) => execute(&e, o),
        Of::Node(e) => execute(&e, o),
        Of::Capacity(e) => execute(&e, o),
        Of::Cluster(e) => execute(&e, o),
    }
}

/// [`run`] at the experiment's level.
fn execute<L: Level>(e: &Experiment<L>, o: Options) -> Result<()> {
    let cases: Vec<L::Case> = match &o.cases {
        Some(path) => read_cases(path)?,
        None => e.plan(&o.settings)?,
    };
    let out = match o.action {
        Action::Plan => return outln!("{}", serde_json::to_string_pretty(&cases)?),
        Action::Run { out } => out,
    };
    // A directory that cannot be made is found before the runs, not
    // after them.
    let mut staged = Staged::new();
    if let Some(dir) = &out {
        staged.create_dir(dir)?;
    }
    interrupt::catch()?;
    let ran = level::run::<L>(cases)?;
    let table = (e.table)(&ran);
    let text = table.render();
    if let Some(dir) = &out {
        interrupt::check()?;
        write_files::<L>(staged, dir, o.name.spelled(), &ran, &table, &text)?;
    }
    out!("{text}")?;
    if let Some(dir) = &out {
        outln!(
            "wrote table.txt, table.csv, {REPORT_HTML} and a summary per case to {}",
            dir.display()
        )?;
    }
    Ok(())
}
