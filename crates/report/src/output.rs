//! What every level's output files share: `summary.json` written as pretty
//! JSON and `summary.csv` with a header from its rows' fields, both staged;
//! the version every file names; and the `policies` map of a summary, keyed
//! by names that must be distinct.

use crate::staged::Staged;
use crate::{Error, Result};
use serde::{Serialize, Serializer};
use std::io::{BufWriter, Write};
use std::path::Path;

/// The version that wrote a file, its `faasched_version` key: the
/// workspace's, which the `faasched` binary shares.
pub(crate) const FAASCHED_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Per-policy entries as a JSON object keyed by the policy's name, in the
/// order given: a level's `policies` in `summary.json`.
pub(crate) struct ByPolicy<'a, T, E> {
    /// The summaries, names distinct (see [`distinct`]).
    pub(crate) policies: &'a [T],
    /// A summary's name and what the map holds for it.
    pub(crate) entry: fn(&'a T) -> (&'a str, E),
}

impl<T, E: Serialize> Serialize for ByPolicy<'_, T, E> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_map(self.policies.iter().map(self.entry))
    }
}

/// [`Error::DuplicatePolicy`] for the first of `names` seen twice: a
/// [`ByPolicy`] map needs its keys unique.
pub(crate) fn distinct<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen: Vec<&str> = Vec::new();
    for name in names {
        if seen.contains(&name) {
            return Err(Error::DuplicatePolicy {
                policy: name.to_string(),
            });
        }
        seen.push(name);
    }
    Ok(())
}

/// Creates `dir` (and its parents, through [`Staged::create_dir`]) and writes
/// `summary.json` (`json`) and `summary.csv` (`rows`) in it, staged: they
/// take their places at `staged`'s commit.
pub(crate) fn write_summary<T: Serialize>(
    dir: &Path,
    json: &serde_json::Value,
    rows: impl IntoIterator<Item = T>,
    staged: &mut Staged,
) -> Result<()> {
    staged.create_dir(dir)?;
    write_json(&dir.join("summary.json"), json, staged)?;
    write_csv(&dir.join("summary.csv"), rows, staged)
}

/// Writes `value` as pretty JSON and a newline to `path`, staged: every
/// level's summary.json (`node load`'s too), and the cluster's timing.json.
pub fn write_json(path: &Path, value: &serde_json::Value, staged: &mut Staged) -> Result<()> {
    let mut out = BufWriter::new(staged.create(path)?);
    serde_json::to_writer_pretty(&mut out, value).map_err(|e| Error::json(path, e))?;
    out.write_all(b"\n")
        .and_then(|()| out.flush())
        .map_err(|e| Error::io(path, e))
}

/// Writes `rows` as CSV with a header from the first's fields to `path`,
/// staged.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_keep_their_order_and_a_repeated_name_is_refused() {
        let names = ["srpt", "cfs"];
        let map = ByPolicy {
            policies: &names,
            entry: |n| (*n, n.len()),
        };
        assert_eq!(
            serde_json::to_string(&map).unwrap(),
            r#"{"srpt":4,"cfs":3}"#
        );
        assert!(distinct(names).is_ok());
        let err = distinct(["a", "b", "a"]).unwrap_err();
        assert!(matches!(err, Error::DuplicatePolicy { policy } if policy == "a"));
    }
}
