//! `faasched workload`: write workload CSV from a generator or a production trace.

use anyhow::{Result, anyhow};
use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use faasched_lab::output::counted;
use faasched_lab::output::write_workload;
use faasched_report::Staged;
use faasched_workload::scale;
use faasched_workload::synthetic::{Generator, Params, Spec};
use faasched_workload::traces::{Arrivals, Trace, azure2019, azure2021, huawei2023};
use faasched_workload::{DEFAULT_INVOCATIONS, DEFAULT_LOAD};
use std::cmp::Ordering;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::str::FromStr;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Generate a synthetic workload (see `simulate --help` for the built-ins).
    Generate(Generate),
    /// Import a production trace.
    #[command(subcommand)]
    Import(Import),
}

impl Command {
    pub fn execute(self) -> Result<()> {
        match self {
            Command::Generate(g) => g.execute(),
            Command::Import(i) => i.execute(),
        }
    }
}

#[derive(ClapArgs, Debug)]
pub struct Generate {
    /// Built-in workload: huawei, azure, lognormal[:scale=F], exponential[:mean-ms=F],
    /// fixed[:cpu-ms=F], bimodal[:p=F,short-us=N,long-us=N], bimodal-high,
    /// bimodal-extreme, mixed-io.
    #[arg(long, short = 'w', default_value = "huawei")]
    workload: String,
    /// Cores the load is computed for, 1 to 256 (as `simulate` takes).
    #[arg(long, short = 'c', default_value_t = 56, value_parser = clap::value_parser!(u16).range(1..=256))]
    cores: u16,
    /// Offered load (CPU demand / core-time).
    #[arg(long, short = 'l', default_value_t = DEFAULT_LOAD)]
    load: f64,
    /// Number of invocations.
    #[arg(long, short = 'n', default_value_t = DEFAULT_INVOCATIONS,
          value_parser = crate::os::args::count)]
    invocations: u64,
    /// Seed.
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
    /// Output workload CSV (`--out` works too, as for the other commands). A
    /// device or FIFO (/dev/null, /dev/stdout) is written in place and a
    /// symlink's target file is replaced; until done the file is written as
    /// hidden .NAME.faasched-partial.PID, which the next run removes if this
    /// one was killed.
    #[arg(long, short = 'o', visible_alias = "out")]
    output: PathBuf,
}

impl Generate {
    fn execute(self) -> Result<()> {
        let params = Params {
            spec: Spec::parse(&self.workload)?,
            cores: usize::from(self.cores),
            load: self.load,
            invocations: self.invocations,
            seed: self.seed,
        };
        let mut staged = Staged::new();
        write_workload(&self.output, Generator::new(&params)?, &mut staged)?;
        staged.commit()?;
        eprintln!(
            "wrote {} invocations of `{}` ({} cores, load {}) to {}",
            self.invocations,
            params.spec,
            self.cores,
            self.load,
            self.output.display()
        );
        Ok(())
    }
}

/// Arrival placement within a trace minute of k invocations of a function.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum ArrivalsArg {
    /// k independent uniform instants in the minute.
    Uniform,
    /// Evenly spaced, 60 s / k apart, at (i + φ) × 60 s / k for i = 0..k;
    /// the phase φ in [0, 1) is drawn once per function with the seed.
    Equidistant,
    /// A Poisson process given its k arrivals: k + 1 exponential gaps
    /// scaled to fill the minute, an arrival at the end of each of the
    /// first k (the same law as uniform).
    Poisson,
}

impl From<ArrivalsArg> for Arrivals {
    fn from(a: ArrivalsArg) -> Arrivals {
        match a {
            ArrivalsArg::Uniform => Arrivals::Uniform,
            ArrivalsArg::Equidistant => Arrivals::Equidistant,
            ArrivalsArg::Poisson => Arrivals::Poisson,
        }
    }
}

/// Options every importer shares.
#[derive(ClapArgs, Debug)]
pub struct Common {
    /// Keep this many functions (at least 1), sampled uniformly with the
    /// seed (default: every function).
    #[arg(long, value_parser = crate::os::args::count)]
    functions: Option<u64>,
    /// Seed of every random choice.
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
    /// Rescale arrivals to this offered load on --cores.
    #[arg(long, short = 'l', requires = "cores")]
    load: Option<f64>,
    /// Cores the load is computed for, 1 to 256 (with --load, or to report
    /// the load; no default).
    #[arg(long, short = 'c', value_parser = clap::value_parser!(u16).range(1..=256))]
    cores: Option<u16>,
    /// Output workload CSV (`--out` works too, as for the other commands). A
    /// device or FIFO (/dev/null, /dev/stdout) is written in place and a
    /// symlink's target file is replaced; until done the file is written as
    /// hidden .NAME.faasched-partial.PID, which the next run removes if this
    /// one was killed.
    #[arg(long, short = 'o', visible_alias = "out")]
    output: PathBuf,
}

#[derive(Subcommand, Debug)]
pub enum Import {
    /// Azure Functions 2019: DIR holds one day's invocations, durations and memory files.
    #[command(name = "azure-2019")]
    Azure2019 {
        /// Directory of the dataset's CSV files.
        dir: PathBuf,
        /// Day of the dataset, 1..=14.
        #[arg(long, default_value_t = 1)]
        day: u32,
        /// Minutes of the day to keep, 1-based and inclusive, like 540..690
        /// (default: the whole day).
        #[arg(long, value_parser = parse_range::<u32>)]
        minutes: Option<RangeInclusive<u32>>,
        /// How the k invocations of a function in a minute are placed in it.
        #[arg(long, value_enum, default_value_t = ArrivalsArg::Uniform)]
        arrivals: ArrivalsArg,
        #[command(flatten)]
        common: Common,
    },
    /// Azure Functions 2021: one CSV of app,func,end_timestamp,duration.
    #[command(name = "azure-2021")]
    Azure2021 {
        /// The trace file.
        file: PathBuf,
        /// Keep invocations starting in this window of trace seconds: A..B
        /// keeps those starting from A up to, not including, B (like 0..3600
        /// for the first hour, or 0.5..1.25; default: all).
        #[arg(long, value_parser = parse_window)]
        seconds: Option<RangeInclusive<f64>>,
        #[command(flatten)]
        common: Common,
    },
    /// Huawei 2023: DIR holds requests_minute/ and function_delay_minute/.
    #[command(name = "huawei-2023")]
    Huawei2023 {
        /// Directory of the release's metric folders.
        dir: PathBuf,
        /// Days to read, by the numbers of the release's day files
        /// (`day_01.csv`, `day_001.csv`), inclusive, like 1 or 1..3.
        #[arg(long, default_value = "0", value_parser = parse_range::<u32>)]
        days: RangeInclusive<u32>,
        /// Minutes of the selection to keep, 1-based and inclusive, like
        /// 1..60 (default: all of the days read).
        #[arg(long, value_parser = parse_range::<u64>)]
        minutes: Option<RangeInclusive<u64>>,
        /// How the k invocations of a function in a minute are placed in it.
        #[arg(long, value_enum, default_value_t = ArrivalsArg::Uniform)]
        arrivals: ArrivalsArg,
        #[command(flatten)]
        common: Common,
    },
}

/// Parses `A..B` (inclusive) or a single `A`.
/// A window of trace seconds, `A..B`, half-open; `A..=B` would promise an
/// end it does not keep, so it is refused.
fn parse_window(s: &str) -> Result<RangeInclusive<f64>, String> {
    if s.contains("..=") {
        return Err(format!("`{s}`: a window of seconds is half-open, A..B"));
    }
    parse_range(s)
}

fn parse_range<T: FromStr + Copy + PartialOrd>(s: &str) -> Result<RangeInclusive<T>, String>
where
    T::Err: std::fmt::Display,
{
    let num = |x: &str| x.trim().parse::<T>().map_err(|e| format!("`{x}`: {e}"));
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (num(a)?, num(b.trim_start_matches('='))?),
        None => {
            let a = num(s)?;
            (a, a)
        }
    };
    // Not `a > b`: a NaN bound is no range either.
    if !matches!(a.partial_cmp(&b), Some(Ordering::Less | Ordering::Equal)) {
        return Err(format!("empty range `{s}`"));
    }
    Ok(a..=b)
}

impl Import {
    fn execute(self) -> Result<()> {
        // The flag that widens the window, for an empty selection's error.
        let (trace, common, window) = match self {
            Import::Azure2019 {
                dir,
                day,
                minutes,
                arrivals,
                common,
            } => {
                let mut o = azure2019::Options::new(dir, day);
                o.minutes = minutes;
                o.arrivals = arrivals.into();
                o.functions = common.functions();
                o.seed = common.seed;
                (azure2019::read(&o)?, common, "--minutes")
            }
            Import::Azure2021 {
                file,
                seconds,
                common,
            } => {
                let mut o = azure2021::Options::new(file);
                o.window = seconds.map(|r| *r.start()..*r.end());
                o.functions = common.functions();
                o.seed = common.seed;
                (azure2021::read(&o)?, common, "--seconds")
            }
            Import::Huawei2023 {
                dir,
                days,
                minutes,
                arrivals,
                common,
            } => {
                let mut o = huawei2023::Options::new(dir, days);
                o.minutes = minutes;
                o.arrivals = arrivals.into();
                o.functions = common.functions();
                o.seed = common.seed;
                (huawei2023::read(&o)?, common, "--days or --minutes")
            }
        };
        write_trace(trace, &common, window)
    }
}

impl Common {
    /// `--functions`, as the readers count them.
    fn functions(&self) -> Option<usize> {
        self.functions
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}

/// Writes an imported trace; `window` names the flag that widens its window.
fn write_trace(trace: Trace, common: &Common, window: &str) -> Result<()> {
    let Trace {
        mut invocations,
        functions,
        skipped,
        duplicates,
        conflicts,
        candidates,
    } = trace;
    if invocations.is_empty() {
        return Err(if skipped > 0 {
            anyhow!(
                "the selection holds no invocations that can be timed: the {} invoked in it \
                 {} no durations; widen {window} or sample more functions (--functions)",
                counted(skipped, "function"),
                if skipped == 1 { "has" } else { "have" }
            )
        } else {
            anyhow!(
                "the selection holds no invocations; widen {window} or sample more functions (--functions)"
            )
        });
    }
    let mut note = String::new();
    let cores = common.cores.map(usize::from);
    if let (Some(load), Some(cores)) = (common.load, cores) {
        let factor = scale::rescale_to_load(&mut invocations, cores, load)?;
        note = format!(
            ", arrivals rescaled ×{factor:.4} to load {load} on {}",
            counted(cores, "core")
        );
    } else if let Some(cores) = cores {
        note = format!(
            ", offered load {} on {}",
            significant(scale::offered_load(&invocations, cores)),
            counted(cores, "core")
        );
    }
    note.push_str(&repeats_note(duplicates, conflicts));
    let mut staged = Staged::new();
    write_workload(&common.output, invocations.iter().map(Ok), &mut staged)?;
    staged.commit()?;
    if let Some(note) = sampling_note(common.functions, candidates) {
        eprintln!("{note}");
    }
    eprintln!(
        "wrote {} of {} to {}{} ({} skipped: no durations)",
        counted(invocations.len(), "invocation"),
        counted(functions.len(), "function"),
        common.output.display(),
        note,
        counted(skipped, "function"),
    );
    Ok(())
}

/// The note for `--functions N` asking for more than the `candidates`
/// functions the selection has: the import keeps them all, and a smaller
/// workload than asked should not pass unnoticed.
fn sampling_note(asked: Option<u64>, candidates: usize) -> Option<String> {
    let asked = asked.filter(|&n| n > candidates as u64)?;
    let kept = match candidates {
        1 => "it".to_string(),
        n => format!("all {n}"),
    };
    Some(format!(
        "note: --functions {asked}, but the selection has only {} to sample from: keeping {kept}",
        counted(candidates, "function")
    ))
}

/// What the summary says of the `duplicates` rows ignored for their key, of
/// which `conflicts` disagree with the row that counts: a repeat of the same
/// values is harmless, a conflict is the trace saying two things.
fn repeats_note(duplicates: usize, conflicts: usize) -> String {
    let repeated = duplicates.saturating_sub(conflicts);
    let mut note = String::new();
    if repeated > 0 {
        note.push_str(&format!(
            "; {} ignored (same key and values as an earlier row of the same file: harmless)",
            counted(repeated, "repeated row")
        ));
    }
    if conflicts > 0 {
        note.push_str(&format!(
            "; {} ignored (same key as an earlier row of the same file but other values: \
             the earlier row counts)",
            counted(conflicts, "conflicting row")
        ));
    }
    note
}

/// `x` to three significant digits, so that a small load still shows.
fn significant(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let decimals = (2 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_numbers_read_well() {
        assert_eq!(significant(0.91234), "0.912");
        assert_eq!(significant(0.000123456), "0.000123");
        assert_eq!(significant(12.345), "12.3");
        assert_eq!(significant(1234.4), "1234");
        assert_eq!(significant(0.0), "0");
    }

    #[test]
    fn sampling_more_functions_than_there_are_is_noted() {
        assert_eq!(sampling_note(None, 500), None);
        assert_eq!(sampling_note(Some(500), 500), None);
        assert_eq!(sampling_note(Some(20), 500), None);
        assert_eq!(
            sampling_note(Some(600), 500).as_deref(),
            Some(
                "note: --functions 600, but the selection has only 500 functions to sample \
                 from: keeping all 500"
            )
        );
        assert_eq!(
            sampling_note(Some(2), 1).as_deref(),
            Some(
                "note: --functions 2, but the selection has only 1 function to sample from: keeping it"
            )
        );
    }

    #[test]
    fn repeated_rows_are_told_from_conflicting_ones() {
        assert_eq!(repeats_note(0, 0), "");
        assert_eq!(
            repeats_note(24, 0),
            "; 24 repeated rows ignored (same key and values as an earlier row of the same \
             file: harmless)"
        );
        assert_eq!(
            repeats_note(3, 1),
            "; 2 repeated rows ignored (same key and values as an earlier row of the same \
             file: harmless); 1 conflicting row ignored (same key as an earlier row of the \
             same file but other values: the earlier row counts)"
        );
    }

    #[test]
    fn ranges_parse_whole_or_fractional_bounds() {
        assert_eq!(parse_range::<u32>("2..5"), Ok(2..=5));
        assert_eq!(parse_range::<u32>("2..=5"), Ok(2..=5));
        assert_eq!(parse_range::<u32>("7"), Ok(7..=7));
        assert_eq!(parse_range::<f64>("0.5..1.25"), Ok(0.5..=1.25));
        for bad in ["5..2", "NaN..1", "1..NaN", "a..2"] {
            assert!(parse_range::<f64>(bad).is_err(), "{bad}");
        }
        // A window of seconds is half-open: `..=` would promise its end.
        assert_eq!(parse_window("0..3600"), Ok(0.0..=3600.0));
        assert!(parse_window("0..=3600").unwrap_err().contains("half-open"));
    }
}
