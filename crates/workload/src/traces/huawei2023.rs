//! Huawei Cloud 2023 traces (Joosen et al., SoCC'23; sir-lab/data-release).
//!
//! Reads, from a directory, for each selected day `d`:
//!
//! - `requests_minute/day_NN.csv` (2 digits, as the public release names them)
//!   or, if that file does not exist, `requests_minute/day_NNN.csv` (3 digits, as
//!   the private release does);
//! - `function_delay_minute/day_NN.csv` or `day_NNN.csv`, likewise.
//!
//! Both are wide CSVs with the header `day,time,<function id>...`: one row per
//! minute, `time` in whole seconds since the trace's start (absolute, so days
//! follow one another), one column per function; an empty cell means no data.
//! Counts may be written as floats (`3.0`, as pandas does for columns with gaps)
//! but must be whole; the `day` column is not read. No column name may repeat.
//! In each of the two kinds of file, `time` must increase strictly from row to
//! row across the selected days (taken in increasing order). The two
//! files of a day are matched by `time` and by function id; delay rows for
//! minutes with no requests are only used for the function's mean.
//!
//! How the trace becomes invocations:
//!
//! - Minute 1 of the selection is the first row of the first selected day's
//!   requests file; a window `A..=B` keeps the rows with
//!   `time − time₁ ∈ [(A − 1)·60, B·60)`, and arrivals are measured from the
//!   window's start (gaps between days stay gaps). A minute's count `k` is
//!   placed inside it by the chosen [`Arrivals`].
//! - CPU demand of each invocation = that minute's function delay, the mean
//!   execution time over the function's pods. The release does not state its
//!   unit; we take **milliseconds**, as Argo's `HuaweiInvocationTraceGenerator`
//!   does (an inference, unverified). An empty delay cell in a minute with
//!   requests takes the function's mean delay over the window; a function with
//!   no delay at all in the window cannot be timed, is left out and counted in
//!   [`Trace::skipped`]. Clamped to at least 1 ms.
//! - Memory: `memory_mb` for every invocation (by default [`DEFAULT_MEMORY_MB`],
//!   Huawei's smallest pool). `memory_limit_minute / instances_minute` would give
//!   a per-pod figure but is not read.
//! - The public release has `requests_minute` only, so it cannot be read: its
//!   missing `function_delay_minute` file is an error.

use super::table::{Row, Table};
use super::{
    Arrivals, Builder, DEFAULT_MAX_INVOCATIONS, DEFAULT_MEMORY_MB, Trace, check_minutes,
    check_size, cpu_from_ms,
};
use crate::{Error, Result};
use faasched_model::SEC;
use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

/// What to read from a Huawei 2023 trace.
#[derive(Clone, Debug)]
pub struct Options {
    /// Directory holding `requests_minute/` and `function_delay_minute/`.
    pub dir: PathBuf,
    /// Days to read (the numbers in the file names); order and repeats do not
    /// matter.
    pub days: Vec<u32>,
    /// 1-based minutes of the selection to keep, inclusive (see the module docs).
    /// By default (`None`) all of them.
    pub minutes: Option<RangeInclusive<u64>>,
    /// Keep this many functions, sampled uniformly. By default (`None`) all.
    pub functions: Option<usize>,
    /// How each minute's invocations are placed in it. By default
    /// [`Arrivals::Uniform`].
    pub arrivals: Arrivals,
    /// Memory of every invocation, in MB. By default [`DEFAULT_MEMORY_MB`].
    pub memory_mb: u32,
    /// Seed of every random choice. By default 0.
    pub seed: u64,
    /// Refuse to make more invocations than this. By default
    /// [`DEFAULT_MAX_INVOCATIONS`].
    pub max_invocations: u64,
}

impl Options {
    /// Reads `days` from `dir`, with every other option at its default.
    pub fn new(dir: impl Into<PathBuf>, days: impl IntoIterator<Item = u32>) -> Options {
        Options {
            dir: dir.into(),
            days: days.into_iter().collect(),
            minutes: None,
            functions: None,
            arrivals: Arrivals::default(),
            memory_mb: DEFAULT_MEMORY_MB,
            seed: 0,
            max_invocations: DEFAULT_MAX_INVOCATIONS,
        }
    }

    /// The selected days, sorted and without repeats; an error if there are none.
    fn days(&self) -> Result<Vec<u32>> {
        if let Some(m) = &self.minutes {
            check_minutes(*m.start(), *m.end(), None)?;
        }
        let mut days = self.days.clone();
        days.sort_unstable();
        days.dedup();
        if days.is_empty() {
            return Err(Error::invalid("days", "select at least one day"));
        }
        Ok(days)
    }

    /// The file of `day` in `metric/`: `day_NN.csv` if it exists, else
    /// `day_NNN.csv`.
    fn file(&self, metric: &str, day: u32) -> Result<PathBuf> {
        let dir = self.dir.join(metric);
        let short = dir.join(format!("day_{day:02}.csv"));
        let long = dir.join(format!("day_{day:03}.csv"));
        match (short.is_file(), long.is_file()) {
            (true, _) => Ok(short),
            (false, true) => Ok(long),
            (false, false) => Err(Error::io(
                &long,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no such file (nor {})", short.display()),
                ),
            )),
        }
    }
}

/// One minute with requests of one function.
struct Minute {
    /// Seconds since the trace's start.
    time: u64,
    count: u64,
    /// Mean execution time in ms, if the delay file gives it.
    delay: Option<f64>,
}

/// Everything read about one function.
#[derive(Default)]
struct Series {
    id: String,
    /// Minutes in the window with requests, by increasing time.
    minutes: Vec<Minute>,
    /// Sum and number of the delay cells in the window.
    delay_sum: f64,
    delays: u64,
}

impl Series {
    fn mean_delay(&self) -> Option<f64> {
        (self.delays > 0).then(|| self.delay_sum / self.delays as f64)
    }
}

/// The selection being read, day after day.
struct Selection<'a> {
    opts: &'a Options,
    series: Vec<Series>,
    by_id: HashMap<String, usize>,
    /// `[start, end)` of the window in seconds, set by the first row.
    window: Option<(u64, u64)>,
    /// The last row's `time` in the requests files, and in the delay files.
    last_time: Option<u64>,
    last_delay_time: Option<u64>,
}

/// Reads the selected days of a Huawei 2023 trace (see the module docs).
pub fn read(opts: &Options) -> Result<Trace> {
    let mut selection = Selection {
        opts,
        series: Vec::new(),
        by_id: HashMap::new(),
        window: None,
        last_time: None,
        last_delay_time: None,
    };
    for day in opts.days()? {
        selection.read_requests(&opts.file("requests_minute", day)?)?;
        selection.read_delays(&opts.file("function_delay_minute", day)?)?;
    }
    let window_start = selection.window.map_or(0, |(start, _)| start);
    let (timed, untimed): (Vec<Series>, Vec<Series>) = selection
        .series
        .into_iter()
        .filter(|s| !s.minutes.is_empty())
        .partition(|s| s.delays > 0);

    let mut builder = Builder::new(opts.seed, opts.arrivals);
    let selected = builder.sample(timed, opts.functions);
    let total = selected
        .iter()
        .flat_map(|s| &s.minutes)
        .fold(0u64, |sum, m| sum.saturating_add(m.count));
    check_size(total, opts.max_invocations)?;

    for series in &selected {
        let function = builder.function(&series.id);
        let mean = series.mean_delay().unwrap_or_default();
        for minute in &series.minutes {
            // time ≥ window start and time × SEC fits (checked when read).
            let start = (minute.time - window_start) * SEC;
            let cpu = cpu_from_ms(minute.delay.unwrap_or(mean));
            builder.push_minute(&function, start, minute.count, opts.memory_mb, |_| cpu);
        }
    }
    Ok(builder.finish(untimed.len()))
}

impl Selection<'_> {
    fn read_requests(&mut self, path: &Path) -> Result<()> {
        let mut table = open_wide(path)?;
        let columns = self.columns(&table, true);
        while let Some(row) = table.next_row()? {
            let time = row_time(&row, &mut self.last_time)?;
            let in_window = self.in_window(time);
            for &(col, index) in &columns {
                let count = row.opt_count(col)?.unwrap_or(0);
                if in_window
                    && count > 0
                    && let Some(series) = index
                {
                    self.series[series].minutes.push(Minute {
                        time,
                        count,
                        delay: None,
                    });
                }
            }
        }
        Ok(())
    }

    fn read_delays(&mut self, path: &Path) -> Result<()> {
        let mut table = open_wide(path)?;
        let columns = self.columns(&table, false);
        while let Some(row) = table.next_row()? {
            let time = row_time(&row, &mut self.last_delay_time)?;
            let in_window = self.within(time);
            for &(col, index) in &columns {
                let delay = row.opt_f64(col)?;
                if in_window && let (Some(delay), Some(series)) = (delay, index) {
                    self.series[series].add_delay(time, delay);
                }
            }
        }
        Ok(())
    }

    /// For each function column of `table`: its index and the series it feeds
    /// (a new one if `create`, else `None` for functions not seen before).
    fn columns(&mut self, table: &Table, create: bool) -> Vec<(usize, Option<usize>)> {
        (2..)
            .zip(table.header().iter().skip(2))
            .map(|(col, id)| {
                let series = match self.by_id.get(id) {
                    Some(&i) => Some(i),
                    None if create => {
                        self.series.push(Series {
                            id: id.to_owned(),
                            ..Series::default()
                        });
                        self.by_id.insert(id.to_owned(), self.series.len() - 1);
                        Some(self.series.len() - 1)
                    }
                    None => None,
                };
                (col, series)
            })
            .collect()
    }

    /// Whether a requests row at `time` is in the window; the first row sets it.
    fn in_window(&mut self, time: u64) -> bool {
        self.window.get_or_insert_with(|| {
            let (first, last) = self
                .opts
                .minutes
                .as_ref()
                .map_or((1, u64::MAX), |m| (*m.start(), *m.end()));
            let at = |minute: u64| time.saturating_add(minute.saturating_mul(60));
            (at(first - 1), at(last))
        });
        self.within(time)
    }

    /// Whether `time` is in the window (never, before the window is set).
    fn within(&self, time: u64) -> bool {
        self.window
            .is_some_and(|(start, end)| (start..end).contains(&time))
    }
}

impl Series {
    /// Records the delay at `time`: for the mean, and for the minute at that time.
    fn add_delay(&mut self, time: u64, delay: f64) {
        self.delay_sum += delay;
        self.delays += 1;
        if let Ok(i) = self.minutes.binary_search_by_key(&time, |m| m.time)
            && let Some(minute) = self.minutes.get_mut(i)
        {
            minute.delay = Some(delay);
        }
    }
}

fn open_wide(path: &Path) -> Result<Table> {
    let table = Table::open(path)?;
    table.expect_prefix(&["day", "time"])?;
    Ok(table)
}

/// The row's `time`, in seconds, checked to fit in `u64` nanoseconds and to
/// come after `last`, the previous row's of the same kind of file, which it
/// becomes.
fn row_time(row: &Row<'_>, last: &mut Option<u64>) -> Result<u64> {
    let time = row.count(1)?;
    if time.checked_mul(SEC).is_none() {
        return Err(row.error(
            1,
            format!("{time} s is beyond the range of u64 nanoseconds"),
        ));
    }
    if last.is_some_and(|last| time <= last) {
        return Err(row.error(1, "not after the previous row's time"));
    }
    *last = Some(time);
    Ok(time)
}
