//! `faasched experiment NAME`: the papers' experiments as canned, seeded runs.

use crate::os::args::count;
use anyhow::Result;
use clap::Args as ClapArgs;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use faasched_lab::cluster::experiment::{run_cluster_cases, write_cluster_files};
use faasched_lab::experiment::{self, Cases, Name, Settings};
use faasched_lab::interrupt;
use faasched_lab::node::experiment::{
    run_capacity_cases, run_node_cases, write_capacity_files, write_node_files,
};
use faasched_lab::node::figures::capacity_table;
use faasched_lab::{out, outln};
use faasched_report::{REPORT_HTML, Staged};
use std::path::PathBuf;

/// Reproduce a paper's experiment: canned, seeded runs and their table.
///
/// A fixed set of workloads, machines and policies, seeded, printing its
/// table.
///
/// Every experiment is deterministic: the same seed gives the same bytes. Each
/// runs its simulations on all of this machine's cores (the results do not
/// depend on how many). docs/EXPERIMENTS.md sets each table beside the paper's
/// numbers.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Which experiment.
    #[arg(value_parser = names())]
    name: Name,
    /// Write table.txt, table.csv, report.html and a summary per case here. Files are written as hidden .NAME.faasched-partial.PID and renamed into
    /// place together once all are written; what a killed run leaves is removed
    /// by the next run writing into DIR.
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Invocations per run instead of the experiment's own (the paper's)
    /// number; smaller is faster and noisier.
    #[arg(long, short = 'n', value_parser = count)]
    invocations: Option<u64>,
    /// Seed of every workload and random choice.
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
    /// Print the experiment's cases (workloads, machines, policies and their
    /// parameters) as JSON instead of running them.
    #[arg(long, conflicts_with_all = ["cases", "out"])]
    plan: bool,
    /// The folder of a day of the Azure Functions 2019 trace, for
    /// alps-real (its invocations, durations and memory files; the day and
    /// the minutes are the ones the files hold).
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
    /// Run the cases in this JSON file (as `--plan` prints them, edited)
    /// instead of the experiment's own, and print the experiment's table of
    /// them. The file says every workload's size, seed and trace, so
    /// `--invocations`, `--seed` and `--trace` are refused with it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["invocations", "seed", "trace"])]
    cases: Option<PathBuf>,
}

/// The experiments' names, each with what it reproduces.
fn names() -> impl TypedValueParser<Value = Name> {
    let values = Name::ALL.map(|n| PossibleValue::new(n.spelled()).help(n.about()));
    PossibleValuesParser::new(values).map(|s| {
        Name::ALL
            .into_iter()
            .find(|n| n.spelled() == s)
            .expect("a possible value is a name")
    })
}

impl Args {
    pub fn execute(self) -> Result<()> {
        let settings = Settings {
            invocations: self.invocations,
            seed: self.seed,
            trace: self.trace.clone(),
            cache: None,
        };
        let name = self.name.spelled();
        let plan = match &self.cases {
            Some(path) => match self.name.plan(&settings)? {
                Cases::Os(_) => Cases::Os(experiment::read_cases(path)?),
                Cases::Node(_) => Cases::Node(experiment::read_cases(path)?),
                Cases::Capacity(_) => Cases::Capacity(experiment::read_cases(path)?),
                Cases::Cluster(_) => Cases::Cluster(experiment::read_cases(path)?),
            },
            None => self.name.plan(&settings)?,
        };
        if self.plan {
            return outln!("{}", serde_json::to_string_pretty(&plan)?);
        }
        // A directory that cannot be made is found before the runs, not
        // after them.
        let mut staged = Staged::new();
        if let Some(dir) = &self.out {
            staged.create_dir(dir)?;
        }
        interrupt::catch()?;
        let text = match plan {
            Cases::Os(cases) => {
                let ran = experiment::run_cases(cases)?;
                let table = self.name.table(&ran);
                let text = table.render();
                if let Some(dir) = &self.out {
                    interrupt::check()?;
                    experiment::write_files(staged, dir, name, &ran, &table, &text)?;
                }
                text
            }
            Cases::Node(cases) => {
                let ran = run_node_cases(cases)?;
                let table = self.name.node_table(&ran);
                let text = table.render();
                if let Some(dir) = &self.out {
                    interrupt::check()?;
                    write_node_files(staged, dir, name, &ran, &table, &text)?;
                }
                text
            }
            Cases::Capacity(cases) => {
                let ran = run_capacity_cases(cases)?;
                let table = capacity_table(&ran);
                let text = table.render();
                if let Some(dir) = &self.out {
                    interrupt::check()?;
                    write_capacity_files(staged, dir, name, &ran, &table, &text)?;
                }
                text
            }
            Cases::Cluster(cases) => {
                let ran = run_cluster_cases(cases)?;
                let table = self.name.cluster_table(&ran);
                let text = table.render();
                if let Some(dir) = &self.out {
                    interrupt::check()?;
                    write_cluster_files(staged, dir, name, &ran, &table, &text)?;
                }
                text
            }
        };
        out!("{text}")?;
        if let Some(dir) = &self.out {
            outln!(
                "wrote table.txt, table.csv, {REPORT_HTML} and a summary per case to {}",
                dir.display()
            )?;
        }
        Ok(())
    }
}
