//! Where a run's results go: `--out` and `--json`, as `simulate` and
//! `replay` take them.

use clap::Args as ClapArgs;
use faasched_lab::output::Outputs;
use std::path::PathBuf;

/// Where a run's results go.
#[derive(ClapArgs, Debug)]
pub struct OutputArgs {
    /// Write summary.json, summary.csv, invocations.csv and report.html (charts
    /// of the summary, one self-contained page) into this directory. Files are written as hidden .NAME.faasched-partial.PID and renamed into
    /// place together once all are written; what a killed run leaves is removed
    /// by the next run writing into DIR.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

impl OutputArgs {
    /// The outputs these flags ask for.
    pub fn outputs(&self) -> Outputs {
        Outputs {
            dir: self.out.clone(),
            json: self.json,
        }
    }
}
