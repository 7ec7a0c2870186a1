//! A CSV table with a header row, read row by row, whose cells parse into numbers
//! with errors that name the file, the 1-based line and the column.

use crate::{Error, Result};
use csv::StringRecord;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The largest number a trace's cell may hold. No field comes near it
/// (timestamps in seconds are about 10^6, durations in milliseconds at most
/// about 10^5, memory in MB about 10^4), and below it every conversion to
/// nanoseconds (at most 10^18), and an arrival plus a duration, stay far
/// within `u64`: a larger value is an error, not a time that saturates at
/// the top of `u64`. A workload that ends past
/// [`TIME_LIMIT`](faasched_model::TIME_LIMIT) is refused where it is
/// written or rescaled.
const MAX_VALUE: f64 = 1e9;

/// An open CSV file whose first row is its header.
pub(super) struct Table {
    path: PathBuf,
    reader: csv::Reader<File>,
    header: StringRecord,
    record: StringRecord,
}

impl Table {
    /// Opens `path` and reads its header, whose names must not repeat: a
    /// repeated column (a function of a wide table, a minute) would be two
    /// values for one thing, and neither can be chosen.
    pub(super) fn open(path: &Path) -> Result<Table> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut table = Table {
            path: path.to_path_buf(),
            reader: csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .from_reader(file),
            header: StringRecord::new(),
            record: StringRecord::new(),
        };
        if !table.read()? {
            return Err(Error::parse(path, 1, "header", "empty file, no header"));
        }
        std::mem::swap(&mut table.header, &mut table.record);
        table.expect_unique_names()?;
        Ok(table)
    }

    /// The header's column names.
    pub(super) fn header(&self) -> &StringRecord {
        &self.header
    }

    /// The index of the column named `name`; an error naming it if there is none.
    pub(super) fn column(&self, name: &str) -> Result<usize> {
        self.header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| self.missing(name))
    }

    /// The indices of the columns named `names`, in order; an error naming the
    /// first that is missing. Looks the names up in a map, for wide headers.
    pub(super) fn columns<S: AsRef<str>>(
        &self,
        names: impl IntoIterator<Item = S>,
    ) -> Result<Vec<usize>> {
        let index: HashMap<&str, usize> = (0..).zip(&self.header).map(|(i, n)| (n, i)).collect();
        names
            .into_iter()
            .map(|name| {
                let name = name.as_ref();
                index.get(name).copied().ok_or_else(|| self.missing(name))
            })
            .collect()
    }

    fn missing(&self, name: &str) -> Error {
        Error::parse(&self.path, 1, name, "column missing from the header")
    }

    /// Fails unless the header starts with exactly `names`.
    pub(super) fn expect_prefix(&self, names: &[&str]) -> Result<()> {
        if self
            .header
            .iter()
            .take(names.len())
            .eq(names.iter().copied())
        {
            return Ok(());
        }
        let found: Vec<&str> = self.header.iter().take(names.len()).collect();
        Err(Error::parse(
            &self.path,
            1,
            "header",
            format!(
                "expected it to start with `{}`, found `{}`",
                names.join(","),
                found.join(",")
            ),
        ))
    }

    /// Fails if a column name appears twice in the header.
    fn expect_unique_names(&self) -> Result<()> {
        let mut seen = HashMap::new();
        for (i, name) in self.header.iter().enumerate() {
            if let Some(first) = seen.insert(name, i) {
                return Err(Error::parse(
                    &self.path,
                    1,
                    name,
                    format!("column {} repeats the name of column {}", i + 1, first + 1),
                ));
            }
        }
        Ok(())
    }

    /// The next data row, checked to have as many fields as the header.
    pub(super) fn next_row(&mut self) -> Result<Option<Row<'_>>> {
        if !self.read()? {
            return Ok(None);
        }
        let row = Row {
            path: &self.path,
            line: self.record.position().map_or(0, |p| p.line()),
            header: &self.header,
            record: &self.record,
        };
        row.check_len()?;
        Ok(Some(row))
    }

    fn read(&mut self) -> Result<bool> {
        self.reader
            .read_record(&mut self.record)
            .map_err(|e| crate::csv::csv_error(&self.path, e))
    }
}

/// One data row of a [`Table`].
pub(super) struct Row<'a> {
    path: &'a Path,
    line: u64,
    header: &'a StringRecord,
    record: &'a StringRecord,
}

impl Row<'_> {
    /// An error at this row, in column `col`.
    pub(super) fn error(&self, col: usize, message: impl Into<String>) -> Error {
        let field = self.header.get(col).unwrap_or("record");
        Error::parse(self.path, self.line, field, message)
    }

    fn check_len(&self) -> Result<()> {
        let (found, want) = (self.record.len(), self.header.len());
        if found == want {
            return Ok(());
        }
        // Names the first missing column, or the record if it has extra fields.
        Err(self.error(
            found,
            format!("expected {want} fields as in the header, found {found}"),
        ))
    }

    /// The text of column `col`.
    pub(super) fn str(&self, col: usize) -> &str {
        self.record.get(col).unwrap_or_default()
    }

    /// A finite number in `0..=`[`MAX_VALUE`]; `None` for an empty cell.
    pub(super) fn opt_f64(&self, col: usize) -> Result<Option<f64>> {
        let text = self.str(col);
        if text.is_empty() {
            return Ok(None);
        }
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => {
                if v > MAX_VALUE {
                    return Err(self.error(
                        col,
                        format!(
                            "`{text}` is too large: no field of a trace goes past {MAX_VALUE:e}"
                        ),
                    ));
                }
                Ok(Some(v))
            }
            _ => Err(self.error(
                col,
                format!("`{text}` is not a finite, non-negative number"),
            )),
        }
    }

    /// A finite number in `0..=`[`MAX_VALUE`]; an empty cell is an error.
    pub(super) fn f64(&self, col: usize) -> Result<f64> {
        self.opt_f64(col)?
            .ok_or_else(|| self.error(col, "empty, expected a number"))
    }

    /// A non-negative whole number (`3` or `3.0`, as pandas writes counts in
    /// columns that have gaps); `None` for an empty cell.
    pub(super) fn opt_count(&self, col: usize) -> Result<Option<u64>> {
        let text = self.str(col);
        if text.is_empty() {
            return Ok(None);
        }
        parse_count(text)
            .map(Some)
            .ok_or_else(|| self.error(col, format!("`{text}` is not a non-negative whole number")))
    }

    /// A non-negative whole number; an empty cell is an error.
    pub(super) fn count(&self, col: usize) -> Result<u64> {
        self.opt_count(col)?
            .ok_or_else(|| self.error(col, "empty, expected a whole number"))
    }
}

/// `3` or `3.0` (a whole, finite, non-negative float below 2^64) as a `u64`.
fn parse_count(text: &str) -> Option<u64> {
    if let Ok(n) = text.parse::<u64>() {
        return Some(n);
    }
    let v = text.parse::<f64>().ok()?;
    let whole = v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 2f64.powi(64);
    // In range and whole: the cast is exact.
    whole.then_some(v as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_count;

    #[test]
    fn counts_accept_whole_floats_only() {
        assert_eq!(parse_count("3"), Some(3));
        assert_eq!(parse_count("3.0"), Some(3));
        assert_eq!(parse_count("1e3"), Some(1000));
        assert_eq!(parse_count("-0"), Some(0));
        for bad in ["-1", "2.5", "NaN", "inf", "x", "1e30"] {
            assert_eq!(parse_count(bad), None, "{bad}");
        }
    }
}
