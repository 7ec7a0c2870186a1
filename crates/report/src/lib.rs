//! Metrics, percentiles, per-group summaries, cost, and the output files of a run.
//!
//! The flow for one run:
//!
//! 1. per policy, a [`Collector`] takes every [`Outcome`](faasched_model::Outcome)
//!    ([`Collector::record`], constant memory) and, if asked, an
//!    [`InvocationsWriter`] streams them to `invocations.csv`;
//! 2. [`Collector::finish`] turns the collector into a [`PolicySummary`];
//! 3. the summaries, with free-form workload and machine descriptions, form a
//!    [`Summary`], which [`write_outputs`] writes as `summary.json` and
//!    `summary.csv` and [`render_table`] shows on a terminal;
//! 4. one or more summaries, each a [`Section`] of a [`Report`], become one
//!    self-contained `report.html` ([`render_html`], [`write_report`]): turnaround
//!    CDFs and percentiles per group, context switches, cost and completions
//!    over time, one colour per policy.
//!
//! The files of one run are written under hidden names and put in place
//! together ([`Staged`]), so a run that fails leaves an earlier run's files
//! as they were.
//!
//! Vocabulary (turnaround, response, execution, waiting, slowdown, groups, cost)
//! follows docs/OUTPUTS.md. Percentiles are nearest-rank, from a log-bucketed
//! [`Histogram`] (exact below 2048, within 0.049% above).

mod charts;
pub mod cluster;
mod cost;
pub mod fidelity;
mod histogram;
mod html;
mod metrics;
pub mod node;
mod output;
mod staged;
mod svg;
mod table;
mod timeline;

pub use cost::{
    BILLED_DURATION, BILLING_GRANULARITY, Cost, USD_PER_GB_SECOND, USD_PER_MILLION_REQUESTS,
    billed_ms,
};
pub use histogram::{EXACT_BELOW, Histogram, SUB_BITS};
pub use html::{REPORT_HTML, Report, Section, render_html, write_report};
pub use metrics::{
    CDF_STEPS_PER_OCTAVE, CdfPoint, Collector, Metric, PolicySummary, REPORT_SCALE, Scope,
    ScopeSummary, Stats,
};
pub use output::{
    INVOCATIONS_CSV_HEADER, InvocationsWriter, Row, SUMMARY_CSV_HEADER, SUMMARY_SCHEMA_VERSION,
    Summary, read_summary_rows, write_outputs,
};
pub use staged::Staged;
pub use table::render_table;
pub use timeline::{COMPLETION_BUCKETS, Completions, FIRST_BUCKET_WIDTH};

use std::path::{Path, PathBuf};

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failure writing or reading report files; every variant on a file names it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O failure on a file or directory.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A CSV file could not be written.
    #[error("{}: {source}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: csv::Error,
    },
    /// A JSON file could not be written or parsed.
    #[error("{}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: serde_json::Error,
    },
    /// Two policies of one summary share a name (the `policies` map needs unique keys).
    #[error("policy `{policy}` appears twice in the summary")]
    DuplicatePolicy {
        /// The repeated name.
        policy: String,
    },
}

impl Error {
    fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn csv(path: &Path, source: csv::Error) -> Error {
        Error::Csv {
            path: path.to_path_buf(),
            source,
        }
    }

    fn json(path: &Path, source: serde_json::Error) -> Error {
        Error::Json {
            path: path.to_path_buf(),
            source,
        }
    }
}
