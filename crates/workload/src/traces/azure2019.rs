//! Azure Functions 2019 (Shahrad et al., "Serverless in the Wild", ATC'20).
//!
//! Reads one day `NN` (01..14) from a directory holding that day's files:
//!
//! - `invocations_per_function_md.anon.dNN.csv`: `HashOwner,HashApp,HashFunction,
//!   Trigger,1,2,...,1440`, invocations per function per minute (1-based minute
//!   columns, found by name). invitro's traces name them `minute_1`, ...,
//!   `minute_1440` and have no `Trigger`, which is read just as well. A header
//!   may hold only some minutes (invitro's samples keep a few hours): the
//!   window must lie within them, and an error names those it has;
//! - `function_durations_percentiles.anon.dNN.csv`: `HashOwner,HashApp,
//!   HashFunction,Average,Count,Minimum,Maximum,percentile_Average_0,_1,_25,_50,
//!   _75,_99,_100` in ms. Only the key and the seven percentile columns are read,
//!   so empty or odd `Average`/`Count`/`Minimum`/`Maximum` cells do no harm;
//! - `app_memory_percentiles.anon.dNN.csv`: `HashOwner,HashApp,SampleCount,
//!   AverageAllocatedMb,...` per app. Only the key and `AverageAllocatedMb` are
//!   read. The dataset has no such file for days 13 and 14.
//!
//! Columns are found by header name, so extra columns (invitro's derived files add
//! `HashFunction` to the memory file) are fine.
//!
//! How the trace becomes invocations:
//!
//! - A function is keyed by (owner, app, function): the function hash is unique
//!   only within its app. If a key appears on several rows of a file, the first
//!   row counts and later ones are ignored, and counted in
//!   [`Trace::duplicates`] (in the durations file, the first row that can
//!   time the function counts). Those whose values differ from the first
//!   row's, in what the import reads (the window's counts, the percentiles,
//!   `AverageAllocatedMb`), are counted in [`Trace::conflicts`] too: a
//!   repeat of the same values changes nothing, a conflict means the file
//!   says two things and the first was taken.
//! - Minute `A` of the window `A..=B` starts at time 0. Each minute's count `k` is
//!   placed inside its minute by the chosen [`Arrivals`].
//! - CPU demand of each invocation: draw `u ~ U(0,1)` and interpolate linearly
//!   between the function's published percentiles at quantiles 0, .01, .25, .5,
//!   .75, .99, 1 (invitro draws uniformly between adjacent percentiles instead,
//!   i.e. it picks a segment by its quantile width too, but is flat within it; the
//!   linear version is the same up to the shape inside a segment). The percentiles
//!   are of 30-second averages, so this spreads durations less than reality does.
//!   Clamped to at least 1 ms.
//! - Memory: each app's `AverageAllocatedMb` (committed virtual memory) split
//!   evenly among the app's functions that appear in both the invocations and the
//!   durations file of the day (whether or not they are invoked in the window or
//!   sampled), rounded up to a whole MB, at least 1 (as invitro, Ilúvatar and
//!   FaasCache do). An app absent from the memory file, an empty
//!   `AverageAllocatedMb`, or a missing memory file (days 13, 14) gives
//!   [`DEFAULT_MEMORY_MB`].
//! - Functions invoked in the window but absent from the durations file, or whose
//!   percentile cells are empty or decrease from one quantile to the next (a
//!   percentile curve never does, so the row is not one), cannot be timed: they
//!   are left out and counted in [`Trace::skipped`].

use super::table::Table;
use super::{
    Arrivals, Builder, DEFAULT_MAX_INVOCATIONS, DEFAULT_MEMORY_MB, MINUTE, Trace, check_minutes,
    check_size, cpu_from_ms,
};
use crate::{Error, Result};
use rand::Rng;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

/// The stems of a day's files: `STEM.anon.dNN.csv`.
const INVOCATIONS: &str = "invocations_per_function_md";
const DURATIONS: &str = "function_durations_percentiles";
const MEMORY: &str = "app_memory_percentiles";

/// Minutes in one day's invocation file.
pub const MINUTES_PER_DAY: u32 = 1440;

/// The quantiles of the durations file's percentile columns.
const QUANTILES: [f64; 7] = [0.0, 0.01, 0.25, 0.5, 0.75, 0.99, 1.0];

/// The durations file's percentile columns, in the order of [`QUANTILES`].
const PERCENTILE_COLUMNS: [&str; 7] = [
    "percentile_Average_0",
    "percentile_Average_1",
    "percentile_Average_25",
    "percentile_Average_50",
    "percentile_Average_75",
    "percentile_Average_99",
    "percentile_Average_100",
];

/// What to read from an Azure Functions 2019 day, and how to turn it into
/// invocations.
#[derive(Clone, Debug)]
pub struct Options {
    /// Directory holding the day's three files.
    pub dir: PathBuf,
    /// Day of the dataset, 1..=14.
    pub day: u32,
    /// 1-based minutes of the day to read, inclusive, within 1..=1440. By default
    /// (`None`) every minute the invocations file has (a published day's
    /// whole day; a sample's first to last minute).
    pub minutes: Option<RangeInclusive<u32>>,
    /// Keep this many functions, sampled uniformly (see the module docs). By
    /// default (`None`) all of them.
    pub functions: Option<usize>,
    /// How each minute's invocations are placed in it. By default
    /// [`Arrivals::Uniform`].
    pub arrivals: Arrivals,
    /// Seed of every random choice. By default 0.
    pub seed: u64,
    /// Refuse to make more invocations than this. By default
    /// [`DEFAULT_MAX_INVOCATIONS`].
    pub max_invocations: u64,
}

impl Options {
    /// Reads day `day` from `dir`, with every other option at its default.
    pub fn new(dir: impl Into<PathBuf>, day: u32) -> Options {
        Options {
            dir: dir.into(),
            day,
            minutes: None,
            functions: None,
            arrivals: Arrivals::default(),
            seed: 0,
            max_invocations: DEFAULT_MAX_INVOCATIONS,
        }
    }

    /// The path of the day's file whose name starts with `stem`.
    fn file(&self, stem: &str) -> PathBuf {
        self.dir.join(format!("{stem}.anon.d{:02}.csv", self.day))
    }

    /// The day's three files: invocations, durations, memory.
    pub fn files(&self) -> [PathBuf; 3] {
        [INVOCATIONS, DURATIONS, MEMORY].map(|stem| self.file(stem))
    }

    /// The validated minute window.
    fn window(&self) -> Result<RangeInclusive<u32>> {
        if !(1..=14).contains(&self.day) {
            return Err(Error::invalid(
                "day",
                format!("{}: the dataset has days 1..=14", self.day),
            ));
        }
        let window = match &self.minutes {
            Some(m) => m.clone(),
            None => header_minutes(&self.dir, self.day)?,
        };
        let max = Some(u64::from(MINUTES_PER_DAY));
        check_minutes(u64::from(*window.start()), u64::from(*window.end()), max)?;
        Ok(window)
    }
}

/// (owner, app): the key of an app.
type AppKey = (String, String);

/// (owner, app, function): the key of a function.
type FunctionKey = (String, String, String);

/// A function's duration percentiles, in ms, at [`QUANTILES`].
type Percentiles = [f64; 7];

/// A function invoked in the window that the durations file can time.
struct Invoked {
    app: AppKey,
    hash: String,
    percentiles: Percentiles,
    /// (minute offset in the window, count), for minutes with invocations.
    counts: Vec<(u32, u64)>,
}

/// What the invocations file yields.
struct Invocations {
    invoked: Vec<Invoked>,
    /// Functions per app present in both the invocations and the durations file.
    app_functions: HashMap<AppKey, u32>,
    /// Functions invoked in the window but without durations.
    skipped: usize,
}

/// Reads one day of the Azure Functions 2019 trace (see the module docs).
pub fn read(opts: &Options) -> Result<Trace> {
    let window = opts.window()?;
    let mut repeats = Repeats::default();
    let durations = read_durations(&opts.file(DURATIONS), &mut repeats)?;
    let found = read_invocations(&opts.file(INVOCATIONS), &window, &durations, &mut repeats)?;
    let memory = read_memory(&opts.file(MEMORY), &mut repeats)?;

    let mut builder = Builder::new(opts.seed, opts.arrivals);
    let selected = builder.sample(found.invoked, opts.functions);
    let total = selected
        .iter()
        .flat_map(|f| &f.counts)
        .fold(0u64, |sum, &(_, k)| sum.saturating_add(k));
    check_size(total, opts.max_invocations)?;

    for f in &selected {
        let function = builder.function(&f.hash);
        let memory_mb = memory_per_function(&memory, &found.app_functions, &f.app);
        for &(minute, k) in &f.counts {
            let start = u64::from(minute) * MINUTE;
            builder.push_minute(&function, start, k, memory_mb, |rng| {
                cpu_from_ms(interpolate(&f.percentiles, rng.random()))
            });
        }
    }
    Ok(Trace {
        duplicates: repeats.all,
        conflicts: repeats.conflicting,
        ..builder.finish(found.skipped)
    })
}

/// Linear interpolation of the percentile curve at quantile `u` in [0, 1].
fn interpolate(p: &Percentiles, u: f64) -> f64 {
    // The segment [QUANTILES[i - 1], QUANTILES[i]] that holds u.
    let i = QUANTILES
        .partition_point(|&q| q <= u)
        .clamp(1, QUANTILES.len() - 1);
    let (q0, q1) = (QUANTILES[i - 1], QUANTILES[i]);
    let (v0, v1) = (p[i - 1], p[i]);
    v0 + (v1 - v0) * ((u - q0) / (q1 - q0)).clamp(0.0, 1.0)
}

/// The durations file: percentiles per function, for rows whose percentile cells
/// are all filled and never decrease; counts the later rows of a key timed
/// already into `repeats`.
fn read_durations(path: &Path, repeats: &mut Repeats) -> Result<HashMap<FunctionKey, Percentiles>> {
    let mut table = Table::open(path)?;
    let [owner, app, func] = key_columns(&table)?;
    let percentile_cols = table.columns(PERCENTILE_COLUMNS)?;
    let mut durations = HashMap::new();
    while let Some(row) = table.next_row()? {
        let cells = percentile_cols
            .iter()
            .map(|&col| row.opt_f64(col))
            .collect::<Result<Vec<_>>>()?;
        // Any empty cell, or a curve that decreases: the function cannot be timed.
        let Some(Ok(p)) = cells
            .into_iter()
            .collect::<Option<Vec<f64>>>()
            .map(Percentiles::try_from)
        else {
            continue;
        };
        if !p.is_sorted() {
            continue;
        }
        let key = (
            row.str(owner).to_owned(),
            row.str(app).to_owned(),
            row.str(func).to_owned(),
        );
        keep_first(&mut durations, key, p, repeats);
    }
    Ok(durations)
}

/// The invocations file, restricted to the window and joined with the durations.
fn read_invocations(
    path: &Path,
    window: &RangeInclusive<u32>,
    durations: &HashMap<FunctionKey, Percentiles>,
    repeats: &mut Repeats,
) -> Result<Invocations> {
    let mut table = Table::open(path)?;
    let [owner, app, func] = key_columns(&table)?;
    let minute_cols = minute_columns(&table, path, window)?;
    let mut seen: HashMap<FunctionKey, First> = HashMap::new();
    let mut found = Invocations {
        invoked: Vec::new(),
        app_functions: HashMap::new(),
        skipped: 0,
    };
    while let Some(row) = table.next_row()? {
        let mut counts = Vec::new();
        for (offset, &col) in (0..).zip(&minute_cols) {
            let k = row.count(col)?;
            if k > 0 {
                counts.push((offset, k));
            }
        }
        let app_key = (row.str(owner).to_owned(), row.str(app).to_owned());
        let key = (
            app_key.0.clone(),
            app_key.1.clone(),
            row.str(func).to_owned(),
        );
        if let Some(first) = seen.get(&key) {
            let first_counts = match first {
                First::Invoked(i) => found.invoked.get(*i).map_or(&[][..], |f| &f.counts),
                First::Counts(c) => c,
            };
            repeats.count(*first_counts == counts);
            continue;
        }
        let Some(&percentiles) = durations.get(&key) else {
            found.skipped += usize::from(!counts.is_empty());
            seen.insert(key, First::Counts(counts));
            continue;
        };
        *found.app_functions.entry(app_key.clone()).or_default() += 1;
        if counts.is_empty() {
            seen.insert(key, First::Counts(counts));
        } else {
            seen.insert(key.clone(), First::Invoked(found.invoked.len()));
            found.invoked.push(Invoked {
                app: app_key,
                hash: key.2,
                percentiles,
                counts,
            });
        }
    }
    Ok(found)
}

/// How an invocations file names its minute columns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MinuteNames {
    /// `1`..`1440`: the dataset's own files.
    Bare,
    /// `minute_1`..`minute_1440`: invitro's rewritten traces.
    Prefixed,
}

impl MinuteNames {
    const PREFIX: &str = "minute_";

    /// The minute (1..=1440) a header name stands for, and how it is named.
    fn parse(name: &str) -> Option<(u32, MinuteNames)> {
        let (digits, names) = match name.strip_prefix(Self::PREFIX) {
            Some(rest) => (rest, MinuteNames::Prefixed),
            None => (name, MinuteNames::Bare),
        };
        // Digits only, no leading zero: `+5`, ` 5` or `05` name no minute of
        // the dataset (and `05` would be a second name for `5`).
        if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let minute = digits.parse().ok()?;
        (1..=MINUTES_PER_DAY)
            .contains(&minute)
            .then_some((minute, names))
    }

    /// The header name of `minute` in this naming.
    fn name(self, minute: u32) -> String {
        match self {
            MinuteNames::Bare => minute.to_string(),
            MinuteNames::Prefixed => format!("{}{minute}", Self::PREFIX),
        }
    }
}

/// The minute columns of an invocations file's header, by minute, and how
/// they are named. Minute columns are named `1`..`1440` (the dataset) or
/// `minute_1`..`minute_1440` (invitro), one naming per file; other columns
/// (`Trigger`, or none) are not read.
fn header_minutes_of(table: &Table, path: &Path) -> Result<(MinuteNames, HashMap<u32, usize>)> {
    let mut names = None;
    let mut by_minute = HashMap::new();
    for (col, name) in table.header().iter().enumerate() {
        let Some((minute, naming)) = MinuteNames::parse(name) else {
            continue;
        };
        match names {
            None => names = Some(naming),
            Some(first) if first != naming => {
                return Err(Error::parse(
                    path,
                    1,
                    name,
                    format!(
                        "a minute column named like `{}`, while earlier ones are named \
                         like `{}`: a file names its minutes one way",
                        naming.name(1),
                        first.name(1)
                    ),
                ));
            }
            Some(_) => {}
        }
        by_minute.insert(minute, col);
    }
    let Some(names) = names else {
        let header: Vec<&str> = table.header().iter().collect();
        return Err(Error::parse(
            path,
            1,
            "header",
            format!(
                "no minute columns: expected `1`..`{MINUTES_PER_DAY}` (the dataset) or \
                 `minute_1`..`minute_{MINUTES_PER_DAY}` (invitro), found `{}`",
                abridged(&header, 8)
            ),
        ));
    };
    Ok((names, by_minute))
}

/// The first day whose invocations file `dir` holds: the day a run that
/// names none replays. A folder with no such file is [`Error::Unusable`],
/// naming the file it looked for.
pub fn first_day(dir: &Path) -> Result<u32> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut first = None;
    for entry in entries {
        let name = entry.map_err(|e| Error::io(dir, e))?.file_name();
        let day = (name.to_str())
            .and_then(|n| n.strip_prefix(INVOCATIONS))
            .and_then(|rest| rest.strip_prefix(".anon.d"))
            .and_then(|rest| rest.strip_suffix(".csv"))
            .and_then(|d| d.parse::<u32>().ok());
        if let Some(day) = day {
            first = Some(first.map_or(day, |f: u32| f.min(day)));
        }
    }
    first.ok_or_else(|| {
        Error::Unusable(format!(
            "{}: no {INVOCATIONS}.anon.dNN.csv, so no day of the Azure 2019 trace",
            dir.display()
        ))
    })
}

/// The first and the last minute day `day`'s invocations file in `dir` has
/// a column for (a published day has 1..=1440; a sample may hold fewer): a
/// window that reads all the file holds. Reads the header alone.
pub fn header_minutes(dir: &Path, day: u32) -> Result<RangeInclusive<u32>> {
    let path = Options::new(dir, day).file(INVOCATIONS);
    let (_, by_minute) = header_minutes_of(&Table::open(&path)?, &path)?;
    let first = by_minute.keys().min().copied().unwrap_or(1);
    let last = by_minute.keys().max().copied().unwrap_or(first);
    Ok(first..=last)
}

/// The columns of the window's minutes, in order (see
/// [`header_minutes_of`]). A header may hold only some minutes of the day
/// (a sample of a few hours): a window beyond them is an error that names
/// the minutes the header has.
fn minute_columns(table: &Table, path: &Path, window: &RangeInclusive<u32>) -> Result<Vec<usize>> {
    let (names, by_minute) = header_minutes_of(table, path)?;
    window
        .clone()
        .map(|minute| {
            by_minute.get(&minute).copied().ok_or_else(|| {
                let mut present: Vec<u32> = by_minute.keys().copied().collect();
                present.sort_unstable();
                Error::parse(
                    path,
                    1,
                    &names.name(minute),
                    format!(
                        "the header has {} only: pass --minutes within them",
                        describe_minutes(&present)
                    ),
                )
            })
        })
        .collect()
}

/// `minutes 480..959`, `minute 7`, or `minutes 1..60, 121..180, 300`:
/// sorted minutes as runs, the first four of them and how many more.
fn describe_minutes(minutes: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &m in minutes {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == m => *end = m,
            _ => runs.push((m, m)),
        }
    }
    let shown: Vec<String> = runs
        .iter()
        .take(4)
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}..{b}")
            }
        })
        .collect();
    let more = match runs.len().saturating_sub(shown.len()) {
        0 => String::new(),
        n => format!(" and {n} more runs"),
    };
    let noun = if minutes.len() == 1 {
        "minute"
    } else {
        "minutes"
    };
    format!("{noun} {}{more}", shown.join(", "))
}

/// The first `n` of `names`, comma-separated, with `,...` when there are more.
fn abridged(names: &[&str], n: usize) -> String {
    let mut text = names[..names.len().min(n)].join(",");
    if names.len() > n {
        text.push_str(",...");
    }
    text
}

/// The memory file: `AverageAllocatedMb` per app, for rows that give one. A missing
/// file gives an empty map.
fn read_memory(path: &Path, repeats: &mut Repeats) -> Result<HashMap<AppKey, f64>> {
    let mut memory = HashMap::new();
    let mut table = match Table::open(path) {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(memory);
        }
        other => other?,
    };
    let owner = table.column("HashOwner")?;
    let app = table.column("HashApp")?;
    let average = table.column("AverageAllocatedMb")?;
    while let Some(row) = table.next_row()? {
        if let Some(mb) = row.opt_f64(average)? {
            let key = (row.str(owner).to_owned(), row.str(app).to_owned());
            keep_first(&mut memory, key, mb, repeats);
        }
    }
    Ok(memory)
}

/// Rows ignored because an earlier row of their file has their key.
#[derive(Default)]
struct Repeats {
    /// All of them.
    all: usize,
    /// Those whose values differ from the earlier row's.
    conflicting: usize,
}

impl Repeats {
    /// Counts one ignored row, which repeats the earlier row's values if `same`.
    fn count(&mut self, same: bool) {
        self.all += 1;
        self.conflicting += usize::from(!same);
    }
}

/// What the first row of a key in the invocations file gave, to tell a later
/// row that repeats it from one that conflicts with it.
enum First {
    /// It is `Invocations::invoked[i]`, which holds its counts.
    Invoked(usize),
    /// Its counts in the window, for a row not kept as invoked (often none).
    Counts(Vec<(u32, u64)>),
}

/// Inserts `value` unless `key` has one already, which counts as a repeat,
/// conflicting if the values differ.
fn keep_first<K: Eq + Hash, V: PartialEq>(
    map: &mut HashMap<K, V>,
    key: K,
    value: V,
    repeats: &mut Repeats,
) {
    match map.entry(key) {
        Entry::Occupied(first) => repeats.count(*first.get() == value),
        Entry::Vacant(slot) => {
            slot.insert(value);
        }
    }
}

/// An app's memory split evenly among its functions, rounded up, at least 1 MB.
fn memory_per_function(
    memory: &HashMap<AppKey, f64>,
    app_functions: &HashMap<AppKey, u32>,
    app: &AppKey,
) -> u32 {
    let Some(&mb) = memory.get(app) else {
        return DEFAULT_MEMORY_MB;
    };
    let share = app_functions.get(app).copied().unwrap_or(1).max(1);
    // Saturates for absurd values; never below 1 MB.
    ((mb / f64::from(share)).ceil() as u32).max(1)
}

/// The columns of the (owner, app, function) key.
fn key_columns(table: &Table) -> Result<[usize; 3]> {
    let cols = table.columns(["HashOwner", "HashApp", "HashFunction"])?;
    Ok([cols[0], cols[1], cols[2]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_are_described_as_runs() {
        assert_eq!(describe_minutes(&[7]), "minute 7");
        assert_eq!(
            describe_minutes(&(480..=959).collect::<Vec<_>>()),
            "minutes 480..959"
        );
        assert_eq!(
            describe_minutes(&[1, 2, 3, 5, 7, 8, 10, 12, 14]),
            "minutes 1..3, 5, 7..8, 10 and 2 more runs"
        );
    }

    #[test]
    fn minute_columns_have_one_name_each() {
        assert_eq!(MinuteNames::parse("1440").map(|m| m.0), Some(1440));
        assert_eq!(MinuteNames::parse("minute_7").map(|m| m.0), Some(7));
        for no in [
            "0",
            "1441",
            "05",
            "minute_05",
            "+5",
            "minute_",
            "",
            "Trigger",
        ] {
            assert!(MinuteNames::parse(no).is_none(), "{no}");
        }
    }

    #[test]
    fn interpolation_hits_the_percentiles_and_is_linear_between() {
        let p = [1.0, 2.0, 10.0, 20.0, 30.0, 90.0, 100.0];
        for (q, v) in QUANTILES.iter().zip(p) {
            assert!((interpolate(&p, *q) - v).abs() < 1e-9, "q = {q}");
        }
        assert!((interpolate(&p, 0.375) - 15.0).abs() < 1e-9);
        assert!((interpolate(&p, 0.995) - 95.0).abs() < 1e-9);
    }
}
