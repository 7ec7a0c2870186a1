//! Metrics, percentiles, cost, and the output files of a run, for each level
//! of faasched: [`os`] (steering policies over one machine's cores), [`node`]
//! (dispatch policies over a node's workers) and [`cluster`] (routers and
//! keep-alive policies over servers).
//!
//! Each level turns its outcomes into per-policy summaries with a collector of
//! its own, in memory independent of their number, and writes its own
//! `summary.json`, `summary.csv` and `report.html`. What the levels share sits
//! at this crate's root: the log-bucketed [`Histogram`] their percentiles come
//! from (nearest-rank; exact below 2048, within 0.049% above) and the
//! [`Stats`] they report, the fixed point slowdowns are recorded in, the staged
//! writing of a run's files, the terminal table's alignment, and the
//! reports' page skeleton, palette and SVG primitives, which each level
//! fills with its own panels.
//!
//! The files of one run are written under hidden names and put in place
//! together ([`Staged`]), so a run that fails leaves an earlier run's files
//! as they were.

mod chart;
pub mod cluster;
pub mod cost;
mod histogram;
pub mod node;
pub mod os;
mod output;
mod page;
mod staged;
mod stats;
mod svg;
mod table;

pub use histogram::{EXACT_BELOW, Histogram, SUB_BITS};
pub use output::write_json;
pub use page::REPORT_HTML;
pub use staged::Staged;
pub use stats::Stats;

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
