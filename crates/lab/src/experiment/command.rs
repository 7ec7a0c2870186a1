//! `faasched experiment NAME`: an experiment's cases, its own or a file's,
//! printed as a plan or run, their table printed and (with a directory)
//! written with every case's files.

use super::{Cases, Name, Settings, Table, read_cases, run_cases, write_files};
use crate::cluster::experiment::{run_cluster_cases, write_cluster_files};
use crate::interrupt;
use crate::node::experiment::{
    run_capacity_cases, run_node_cases, write_capacity_files, write_node_files,
};
use crate::node::figures::capacity_table;
use crate::{out, outln};
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
}

/// Plans the experiment, then prints the plan or runs it.
pub fn run(o: Options) -> Result<()> {
    let plan = o.name.plan(&o.settings)?;
    // A file's cases, of the level the experiment's own are.
    let plan = match &o.cases {
        Some(path) => match plan {
            Cases::Os(_) => Cases::Os(read_cases(path)?),
            Cases::Node(_) => Cases::Node(read_cases(path)?),
            Cases::Capacity(_) => Cases::Capacity(read_cases(path)?),
            Cases::Cluster(_) => Cases::Cluster(read_cases(path)?),
        },
        None => plan,
    };
    let out = match o.action {
        Action::Plan => return outln!("{}", serde_json::to_string_pretty(&plan)?),
        Action::Run { out } => out,
    };
    // A directory that cannot be made is found before the runs, not
    // after them.
    let mut staged = Staged::new();
    if let Some(dir) = &out {
        staged.create_dir(dir)?;
    }
    interrupt::catch()?;
    let published = Published {
        staged,
        dir: out.as_deref(),
        name: o.name.spelled(),
    };
    let text = match plan {
        Cases::Os(cases) => published.table(run_cases(cases)?, |r| o.name.table(r), write_files),
        Cases::Node(cases) => published.table(
            run_node_cases(cases)?,
            |r| o.name.node_table(r),
            write_node_files,
        ),
        Cases::Capacity(cases) => published.table(
            run_capacity_cases(cases)?,
            capacity_table,
            write_capacity_files,
        ),
        Cases::Cluster(cases) => published.table(
            run_cluster_cases(cases)?,
            |r| o.name.cluster_table(r),
            write_cluster_files,
        ),
    }?;
    out!("{text}")?;
    if let Some(dir) = &out {
        outln!(
            "wrote table.txt, table.csv, {REPORT_HTML} and a summary per case to {}",
            dir.display()
        )?;
    }
    Ok(())
}

/// Writes an experiment's files (of any level): staged, into `dir`, headed
/// by `name`, `ran` its cases' results.
type WriteFiles<R> = fn(Staged, &Path, &str, &[R], &Table, &str) -> Result<()>;

/// Where an experiment's results go.
struct Published<'a> {
    /// What is staged already (the directory).
    staged: Staged,
    /// The directory of the files, if any.
    dir: Option<&'a Path>,
    /// The experiment's name, which heads the report.
    name: &'static str,
}

impl Published<'_> {
    /// The table of what `ran`, rendered; written with every case's files
    /// by `write` if there is a directory.
    fn table<R>(
        self,
        ran: Vec<R>,
        table: impl FnOnce(&[R]) -> Table,
        write: WriteFiles<R>,
    ) -> Result<String> {
        let table = table(&ran);
        let text = table.render();
        if let Some(dir) = self.dir {
            interrupt::check()?;
            write(self.staged, dir, self.name, &ran, &table, &text)?;
        }
        Ok(text)
    }
}
