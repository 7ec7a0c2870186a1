//! What every level's output files share: `summary.json` written as pretty
//! JSON and `summary.csv` with a header from its rows' fields, both staged.

use crate::staged::Staged;
use crate::{Error, Result};
use serde::Serialize;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes `value` as pretty JSON and a newline to `path`, staged: every
/// level's summary.json.
pub(crate) fn write_json(
    path: &Path,
    value: &serde_json::Value,
    staged: &mut Staged,
) -> Result<()> {
    let mut out = BufWriter::new(staged.create(path)?);
    serde_json::to_writer_pretty(&mut out, value).map_err(|e| Error::json(path, e))?;
    out.write_all(b"\n")
        .and_then(|()| out.flush())
        .map_err(|e| Error::io(path, e))
}

/// Writes `rows` as CSV with a header from the first's fields to `path`,
/// staged: every level's summary.csv.
pub(crate) fn write_csv<T: Serialize>(
    path: &Path,
    rows: impl IntoIterator<Item = T>,
    staged: &mut Staged,
) -> Result<()> {
    let mut out = csv::Writer::from_writer(BufWriter::new(staged.create(path)?));
    for row in rows {
        out.serialize(row).map_err(|e| Error::csv(path, e))?;
    }
    out.flush().map_err(|e| Error::io(path, e))
}
