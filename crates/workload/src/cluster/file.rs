//! Cluster invocations from a workload CSV (v1, [`crate::csv`]): a row is one
//! invocation of the function its `function` names in a [`FunctionTable`].
//!
//! 1. Rows are parsed and checked by [`crate::csv::Reader`] (sorted arrivals,
//!    unique ids, well-formed phases).
//! 2. A row's work is the sum of its CPU phases (`c<µs>`); its I/O phases add
//!    nothing (the cluster level models the CPU a function needs warm, and its
//!    cold start through the table). A row without CPU is refused.
//! 3. Its function must be in the table: the table gives the memory and the
//!    warm and cold times, so the row's `memory_mb` and `deadline_us` are not
//!    used.
//! 4. Invocations are numbered 0, 1, 2, ... in row order (arrival order); the
//!    row's `id` names it in errors only.

use super::table::FunctionTable;
use crate::csv::Reader;
use crate::{Error, Result};
use faasched_model::cluster::{Invocation, InvocationId};
use faasched_model::{Nanos, Phase};
use std::iter::FusedIterator;
use std::path::{Path, PathBuf};

/// A workload CSV's rows as cluster invocations, streamed (one row in memory
/// at a time); after the first error, nothing more.
pub struct FileInvocations {
    reader: Reader,
    path: PathBuf,
    /// Table id of each function id the reader has interned.
    ids: Vec<Option<faasched_model::FunctionId>>,
    table: FunctionTable,
    next_id: u64,
    done: bool,
}

impl FileInvocations {
    /// Opens `path` (checking its header) to stream its rows as invocations of
    /// `table`'s functions.
    pub fn open(path: &Path, table: &FunctionTable) -> Result<FileInvocations> {
        Ok(FileInvocations {
            reader: Reader::open(path)?,
            path: path.to_path_buf(),
            ids: Vec::new(),
            table: table.clone(),
            next_id: 0,
            done: false,
        })
    }

    /// The table the rows' functions are looked up in.
    pub fn table(&self) -> &FunctionTable {
        &self.table
    }

    fn read_next(&mut self) -> Result<Option<Invocation>> {
        let Some(row) = self.reader.next().transpose()? else {
            return Ok(None);
        };
        let line = self.reader.line();
        let error = |field: &str, message: String| Error::parse(&self.path, line, field, message);
        let i = row.function.id.0 as usize;
        if self.ids.len() <= i {
            self.ids.resize(i + 1, None);
            self.ids[i] = self.table.find(&row.function.name).map(|p| p.function);
        }
        let Some(function) = self.ids[i] else {
            return Err(error(
                "function",
                format!(
                    "row {}: no function `{}` in the function table ({} functions)",
                    row.id,
                    row.function.name,
                    self.table.len()
                ),
            ));
        };
        let work = row
            .phases
            .iter()
            .map(|p| match *p {
                Phase::Cpu(ns) => ns,
                Phase::Io(_) => 0,
            })
            .try_fold(0 as Nanos, Nanos::checked_add)
            .unwrap_or(Nanos::MAX);
        if work == 0 {
            return Err(error(
                "phases",
                format!(
                    "row {}: no CPU phase: a cluster invocation needs CPU (`c<µs>`)",
                    row.id
                ),
            ));
        }
        let id = InvocationId(self.next_id);
        self.next_id += 1;
        Ok(Some(Invocation {
            id,
            function,
            arrival: row.arrival,
            work,
        }))
    }
}

impl Iterator for FileInvocations {
    type Item = Result<Invocation>;

    fn next(&mut self) -> Option<Result<Invocation>> {
        if self.done {
            return None;
        }
        let next = self.read_next().transpose();
        self.done = !matches!(next, Some(Ok(_)));
        next
    }
}

impl FusedIterator for FileInvocations {}
