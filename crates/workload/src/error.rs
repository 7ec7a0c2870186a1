//! The workload crate's error: every failure on user data names where it happened.

use std::path::{Path, PathBuf};

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failure reading, writing or generating a workload.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A malformed row or cell in an input file.
    #[error("{}:{line}: field `{field}`: {message}", file.display())]
    Parse {
        /// The file being read.
        file: PathBuf,
        /// 1-based line number in that file.
        line: u64,
        /// The column (or logical field) at fault.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// An I/O failure on a file or directory.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A workload that names neither a built-in nor a usable file, or a
    /// file that cannot be run as asked (empty, or not rescalable).
    #[error("{0}")]
    Unusable(String),
    /// A parameter outside its valid range (load, cores, fractions, ...).
    #[error("invalid {what}: {message}")]
    Invalid {
        /// The parameter.
        what: String,
        /// Why it is invalid.
        message: String,
    },
}

impl Error {
    /// A parse error at `file:line`, field `field`.
    pub fn parse(file: &Path, line: u64, field: &str, message: impl Into<String>) -> Error {
        Error::Parse {
            file: file.to_path_buf(),
            line,
            field: field.to_string(),
            message: message.into(),
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// An invalid parameter.
    pub fn invalid(what: &str, message: impl Into<String>) -> Error {
        Error::Invalid {
            what: what.to_string(),
            message: message.into(),
        }
    }
}
