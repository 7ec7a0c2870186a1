//! Azure Functions invocation trace 2021 (Zhang et al., SOSP'21).
//!
//! Reads one CSV file (the dataset's `AzureFunctionsInvocationTraceForTwoWeeksJan2021.txt`)
//! with the header `app,func,end_timestamp,duration`: one row per invocation,
//! `end_timestamp` and `duration` in seconds (floats) since the trace's start.
//! Columns are found by header name; both numbers must be finite and
//! non-negative.
//!
//! How the trace becomes invocations:
//!
//! - A function is keyed by (app, func): the func hash is unique only within its
//!   app (DSLab keys by func alone; we do not).
//! - An invocation starts at `end_timestamp − duration`. With a window `a..b`
//!   (seconds, in the trace's time), the invocations starting in `[a, b)` are kept
//!   and arrive at `start − a`; without one, all are kept and arrive at
//!   `start − earliest start` (the earliest of the whole file, so sampling
//!   functions does not shift arrivals). Arrivals are rounded to the nanosecond.
//!   Rows need not be sorted.
//! - CPU demand = `duration`, clamped to at least 1 ms.
//! - Memory: the trace has none. Every invocation gets `memory_mb` (by default
//!   [`DEFAULT_MEMORY_MB`]). DSLab draws each app's memory from the Burr fit of
//!   "Serverless in the Wild" (c = 11.652, k = 0.221, λ = 107.083 MB) instead;
//!   we keep one constant so that memory never varies with the seed.
//! - Randomness is used only to sample functions; [`Trace::skipped`] is always 0.

use super::table::Table;
use super::{
    Arrivals, Builder, DEFAULT_MAX_INVOCATIONS, DEFAULT_MEMORY_MB, Trace, check_size, cpu_from_ms,
    ns_from_secs,
};
use crate::{Error, Result};
use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;

/// What to read from the Azure Functions 2021 trace.
#[derive(Clone, Debug)]
pub struct Options {
    /// The trace file.
    pub file: PathBuf,
    /// Keep invocations starting in this window, in seconds of the trace's time.
    /// By default (`None`) all of them.
    pub window: Option<Range<f64>>,
    /// Keep this many functions, sampled uniformly among those invoked in the
    /// window. By default (`None`) all of them.
    pub functions: Option<usize>,
    /// Memory of every invocation, in MB. By default [`DEFAULT_MEMORY_MB`].
    pub memory_mb: u32,
    /// Seed of every random choice. By default 0.
    pub seed: u64,
    /// Refuse to keep more invocations than this. By default
    /// [`DEFAULT_MAX_INVOCATIONS`].
    pub max_invocations: u64,
}

impl Options {
    /// Reads `file`, with every other option at its default.
    pub fn new(file: impl Into<PathBuf>) -> Options {
        Options {
            file: file.into(),
            window: None,
            functions: None,
            memory_mb: DEFAULT_MEMORY_MB,
            seed: 0,
            max_invocations: DEFAULT_MAX_INVOCATIONS,
        }
    }

    fn check(&self) -> Result<()> {
        match &self.window {
            Some(w) if !(w.start.is_finite() && w.end.is_finite() && w.start < w.end) => Err(
                Error::invalid("window", format!("{w:?}: want finite start < end")),
            ),
            _ => Ok(()),
        }
    }
}

/// One kept row: the function's index in trace order, start and duration (s).
struct Row {
    function: usize,
    start: f64,
    duration: f64,
}

/// Reads the Azure Functions 2021 trace (see the module docs).
pub fn read(opts: &Options) -> Result<Trace> {
    opts.check()?;
    let (hashes, rows) = read_rows(opts)?;
    let origin = match &opts.window {
        Some(w) => w.start,
        None => rows.iter().map(|r| r.start).fold(f64::INFINITY, f64::min),
    };

    let mut builder = Builder::new(opts.seed, Arrivals::default());
    let candidates: Vec<usize> = (0..hashes.len()).collect();
    let mut functions = vec![None; hashes.len()];
    for i in builder.sample(candidates, opts.functions) {
        if let (Some(slot), Some(hash)) = (functions.get_mut(i), hashes.get(i)) {
            *slot = Some(builder.function(hash));
        }
    }
    for row in &rows {
        if let Some(Some(function)) = functions.get(row.function) {
            let arrival = ns_from_secs(row.start - origin);
            let cpu = cpu_from_ms(row.duration * 1e3);
            builder.push(function, arrival, cpu, opts.memory_mb);
        }
    }
    Ok(builder.finish(0))
}

/// The rows starting in the window, and the func hash of each function they
/// invoke, in order of first sight.
fn read_rows(opts: &Options) -> Result<(Vec<String>, Vec<Row>)> {
    let mut table = Table::open(&opts.file)?;
    let app = table.column("app")?;
    let func = table.column("func")?;
    let end = table.column("end_timestamp")?;
    let duration = table.column("duration")?;
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut hashes = Vec::new();
    let mut rows = Vec::new();
    while let Some(row) = table.next_row()? {
        let (end, duration) = (row.f64(end)?, row.f64(duration)?);
        let start = end - duration;
        if opts.window.as_ref().is_some_and(|w| !w.contains(&start)) {
            continue;
        }
        check_size(rows.len() as u64 + 1, opts.max_invocations)?;
        let key = (row.str(app).to_owned(), row.str(func).to_owned());
        let function = *index.entry(key).or_insert_with(|| {
            hashes.push(row.str(func).to_owned());
            hashes.len() - 1
        });
        rows.push(Row {
            function,
            start,
            duration,
        });
    }
    Ok((hashes, rows))
}
