//! An experiment's result table: text for the terminal, CSV for tools.
//!
//! Cells are strings formatted by the experiment (so the text and the CSV show
//! the same digits). The leading `keys` columns name the row (workload, load,
//! policy, ...); in the text form a key that repeats the row above is left
//! blank and a change in the first key starts a new block.

use anyhow::{Context, Result};
use faasched_report::Staged;
use std::fmt::Write as _;
use std::path::Path;

/// Printed for a statistic of an empty scope.
pub const NONE: &str = "-";

/// Rows of cells under named columns.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Column names, as the CSV header spells them.
    pub columns: Vec<&'static str>,
    /// How many leading columns are keys (left-aligned, blanked when repeated).
    pub keys: usize,
    /// One entry per row, as many cells as columns.
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the table: units, footnotes.
    pub notes: Vec<String>,
}

impl Table {
    /// An empty table with these columns, the first `keys` of them keys.
    pub fn new(columns: &[&'static str], keys: usize) -> Table {
        Table {
            columns: columns.to_vec(),
            keys,
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Appends a row; it must have a cell per column.
    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.columns.len(), "a cell per column");
        self.rows.push(row);
    }

    /// The aligned text form.
    pub fn render(&self) -> String {
        let shown: Vec<Vec<&str>> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let above = i.checked_sub(1).map(|j| &self.rows[j]);
                // A key is blanked while it and every key before it repeat.
                let mut same = above.is_some();
                row.iter()
                    .enumerate()
                    .map(|(col, cell)| {
                        if col < self.keys {
                            same &= above.is_some_and(|a| a[col] == *cell);
                            if same {
                                return "";
                            }
                        }
                        cell.as_str()
                    })
                    .collect()
            })
            .collect();
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let header: Vec<&str> = self.columns.clone();
        self.line(&mut out, &header, &widths);
        for (i, row) in shown.iter().enumerate() {
            if i > 0 && self.keys > 0 && self.rows[i][0] != self.rows[i - 1][0] {
                out.push('\n');
            }
            self.line(&mut out, row, &widths);
        }
        for note in &self.notes {
            let _ = writeln!(out, "{note}");
        }
        out
    }

    fn line(&self, out: &mut String, cells: &[&str], widths: &[usize]) {
        let mut text = String::new();
        for (col, (cell, &w)) in cells.iter().zip(widths).enumerate() {
            if col > 0 {
                text.push_str("  ");
            }
            if col < self.keys {
                let _ = write!(text, "{cell:<w$}");
            } else {
                let _ = write!(text, "{cell:>w$}");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }

    /// Writes the CSV form (header, then every row with its keys) as the
    /// file `staged` puts at `path`.
    pub fn write_csv(&self, path: &Path, staged: &mut Staged) -> Result<()> {
        let mut w = csv::Writer::from_writer(staged.create(path)?);
        w.write_record(&self.columns)
            .and_then(|()| self.rows.iter().try_for_each(|r| w.write_record(r)))
            .and_then(|()| w.flush().map_err(Into::into))
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// `v` with `decimals` decimals, or [`NONE`].
pub fn fixed(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| NONE.to_string(), |v| format!("{v:.decimals$}"))
}

/// `v / base` as a signed percentage (`+12.3%`), or [`NONE`] without both.
/// A change that rounds to nothing is `+0.0%` whatever its sign: `-0.0%`
/// would read as a loss.
pub fn change(v: Option<f64>, base: Option<f64>) -> String {
    match (v, base) {
        (Some(v), Some(b)) if b > 0.0 => {
            let pct = (v / b - 1.0) * 100.0;
            let pct = if (pct * 10.0).round() == 0.0 {
                0.0
            } else {
                pct
            };
            format!("{pct:+.1}%")
        }
        _ => NONE.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_signed_and_never_minus_zero() {
        assert_eq!(change(Some(112.34), Some(100.0)), "+12.3%");
        assert_eq!(change(Some(90.0), Some(100.0)), "-10.0%");
        assert_eq!(change(Some(99.96), Some(100.0)), "+0.0%");
        assert_eq!(change(Some(100.04), Some(100.0)), "+0.0%");
        assert_eq!(change(Some(99.94), Some(100.0)), "-0.1%");
        assert_eq!(change(Some(1.0), Some(0.0)), NONE);
        assert_eq!(change(None, Some(1.0)), NONE);
    }

    fn sample() -> Table {
        let mut t = Table::new(&["workload", "policy", "mean_ms"], 2);
        for (w, p, m) in [
            ("huawei", "cfs", "10.00"),
            ("huawei", "srpt", "7.50"),
            ("azure", "cfs", "100.00"),
        ] {
            t.push(vec![w.into(), p.into(), m.into()]);
        }
        t.notes.push("mean_ms: turnaround".into());
        t
    }

    #[test]
    fn text_blanks_repeated_keys_and_separates_blocks() {
        let text = sample().render();
        assert_eq!(
            text,
            "workload  policy  mean_ms\n\
             huawei    cfs       10.00\n\
             \x20         srpt       7.50\n\
             \n\
             azure     cfs      100.00\n\
             mean_ms: turnaround\n"
        );
    }

    #[test]
    fn csv_keeps_every_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let mut staged = Staged::new();
        sample().write_csv(&path, &mut staged).unwrap();
        staged.commit().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "workload,policy,mean_ms\nhuawei,cfs,10.00\nhuawei,srpt,7.50\nazure,cfs,100.00\n"
        );
        let err = sample()
            .write_csv(&dir.path().join("missing/t.csv"), &mut Staged::new())
            .unwrap_err();
        assert!(format!("{err:#}").contains("missing/t.csv"), "{err:#}");
    }

    #[test]
    fn changes_and_missing_values() {
        assert_eq!(change(Some(75.0), Some(100.0)), "-25.0%");
        assert_eq!(change(Some(1.0), None), NONE);
        assert_eq!(fixed(None, 2), NONE);
        assert_eq!(fixed(Some(1.0 / 3.0), 2), "0.33");
    }
}
