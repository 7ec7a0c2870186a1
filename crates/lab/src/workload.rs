//! `faasched workload`: write workload CSV from a generator (`generate`) or
//! a production trace (`import`), and the parsers of the numbers and
//! ranges their flags take.

use crate::output::{counted, write_workload};
use anyhow::{Result, anyhow, bail};
use faasched_report::Staged;
use faasched_workload::scale;
use faasched_workload::synthetic::{Generator, Params, Spec};
use faasched_workload::traces::{Trace, azure2019, azure2021, huawei2023};
use std::cmp::Ordering;
use std::ops::{Range, RangeInclusive};
use std::path::PathBuf;
use std::str::FromStr;

/// How a trace minute's invocations of a function are placed in it.
pub use faasched_workload::traces::Arrivals;
/// A generated workload's size and offered load when none is asked for.
pub use faasched_workload::{DEFAULT_INVOCATIONS, DEFAULT_LOAD};

/// A workload to generate.
#[derive(Debug, Clone)]
pub struct Generate {
    /// The built-in's name, with parameters (`bimodal:p=0.2`).
    pub workload: String,
    /// Cores the load is computed for.
    pub cores: usize,
    /// Offered load.
    pub load: f64,
    /// Invocations.
    pub invocations: u64,
    /// Seed.
    pub seed: u64,
    /// The workload CSV to write.
    pub output: PathBuf,
}

/// Generates the workload into its file, put in place once written, and
/// says so on stderr.
pub fn generate(o: Generate) -> Result<()> {
    let params = write_generated(&o)?;
    eprintln!(
        "wrote {} invocations of `{}` ({} cores, load {}) to {}",
        o.invocations,
        params.spec,
        o.cores,
        o.load,
        o.output.display()
    );
    Ok(())
}

/// Generates the workload into its file, put in place once written; the
/// parameters it was drawn with.
pub fn write_generated(o: &Generate) -> Result<Params> {
    let params = Params {
        spec: Spec::parse(&o.workload)?,
        cores: o.cores,
        load: o.load,
        invocations: o.invocations,
        seed: o.seed,
    };
    let mut staged = Staged::new();
    write_workload(&o.output, Generator::new(&params)?, &mut staged)?;
    staged.commit()?;
    Ok(params)
}

/// A production trace to import: which, and what of it to keep.
#[derive(Debug, Clone)]
pub struct Import {
    /// The trace and its window.
    pub trace: TraceFiles,
    /// Keep this many functions, sampled uniformly with the seed (default:
    /// all).
    pub functions: Option<u64>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Rescale arrivals to this offered load on `cores`.
    pub load: Option<f64>,
    /// Cores the load is computed for (to rescale to `load`, else to
    /// report it).
    pub cores: Option<usize>,
    /// The workload CSV to write.
    pub output: PathBuf,
}

/// A trace's files and the part of it to read.
#[derive(Debug, Clone)]
pub enum TraceFiles {
    /// Azure Functions 2019: a directory of one day's files.
    Azure2019 {
        /// The dataset's directory.
        dir: PathBuf,
        /// Its day, 1..=14.
        day: u32,
        /// Minutes of the day, 1-based and inclusive (default: all).
        minutes: Option<RangeInclusive<u32>>,
        /// How a minute's invocations are placed in it.
        arrivals: Arrivals,
    },
    /// Azure Functions 2021: one CSV file.
    Azure2021 {
        /// The trace file.
        file: PathBuf,
        /// Trace seconds whose invocations to keep (default: all).
        seconds: Option<Range<f64>>,
    },
    /// Huawei 2023: a directory of the release's metric folders.
    Huawei2023 {
        /// The release's directory.
        dir: PathBuf,
        /// Days to read, by their files' numbers.
        days: RangeInclusive<u32>,
        /// Minutes of the selection, 1-based and inclusive (default: all).
        minutes: Option<RangeInclusive<u64>>,
        /// How a minute's invocations are placed in it.
        arrivals: Arrivals,
    },
}

/// Reads the trace and writes it as workload CSV, rescaled to a load if
/// asked, and says on stderr what it kept.
pub fn import(o: Import) -> Result<()> {
    // The flags' parsers refuse these too; the Python package has only this.
    if o.functions == Some(0) {
        bail!("--functions 0: sample at least 1 function");
    }
    if o.load.is_some() && o.cores.is_none() {
        bail!("--load needs the cores it is computed for (--cores)");
    }
    let functions = o
        .functions
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    // The flag that widens the window, for an empty selection's error.
    let read = || -> Result<(Trace, &str)> {
        Ok(match o.trace.clone() {
            TraceFiles::Azure2019 {
                dir,
                day,
                minutes,
                arrivals,
            } => {
                let read = azure2019::Options {
                    minutes,
                    arrivals,
                    functions,
                    seed: o.seed,
                    ..azure2019::Options::new(dir, day)
                };
                (azure2019::read(&read)?, "--minutes")
            }
            TraceFiles::Azure2021 { file, seconds } => {
                let read = azure2021::Options {
                    window: seconds,
                    functions,
                    seed: o.seed,
                    ..azure2021::Options::new(file)
                };
                (azure2021::read(&read)?, "--seconds")
            }
            TraceFiles::Huawei2023 {
                dir,
                days,
                minutes,
                arrivals,
            } => {
                let read = huawei2023::Options {
                    minutes,
                    arrivals,
                    functions,
                    seed: o.seed,
                    ..huawei2023::Options::new(dir, days)
                };
                (huawei2023::read(&read)?, "--days or --minutes")
            }
        })
    };
    let (trace, window) = crate::progress::during("import", "reading the trace", read)?;
    write_trace(trace, &o, window)
}

/// Writes an imported trace; `window` names the flag that widens its window.
fn write_trace(trace: Trace, o: &Import, window: &str) -> Result<()> {
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
    if let (Some(load), Some(cores)) = (o.load, o.cores) {
        let factor = scale::rescale_to_load(&mut invocations, cores, load)?;
        note = format!(
            ", arrivals rescaled ×{factor:.4} to load {load} on {}",
            counted(cores, "core")
        );
    } else if let Some(cores) = o.cores {
        note = format!(
            ", offered load {} on {}",
            significant(scale::offered_load(&invocations, cores)),
            counted(cores, "core")
        );
    }
    note.push_str(&repeats_note(duplicates, conflicts));
    let mut staged = Staged::new();
    write_workload(&o.output, invocations.iter().map(Ok), &mut staged)?;
    staged.commit()?;
    if let Some(note) = sampling_note(o.functions, candidates) {
        eprintln!("{note}");
    }
    eprintln!(
        "wrote {} of {} to {}{} ({} skipped: no durations)",
        counted(invocations.len(), "invocation"),
        counted(functions.len(), "function"),
        o.output.display(),
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

/// A number of invocations (or functions, requests) for a flag: a whole
/// number, at least 1.
pub fn count(s: &str) -> Result<u64, String> {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(_) if s.strip_prefix('-').is_some_and(digits) => Err("must be at least 1".to_string()),
        Err(_) if digits(s) => Err(format!("must be at most {}", u64::MAX)),
        Err(_) => Err("expected a whole number, such as 1000".to_string()),
    }
}

/// An offered load for a flag, at every level: a fraction of the capacity
/// (CPU demand over core-time), above 0. Above 1 is allowed: overload is
/// something to study.
pub fn load(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(l) => valid_load(l),
        Err(_) => Err(LOAD_RULE.to_string()),
    }
}

/// What [`load`] and [`valid_load`] say of a load that is not one.
const LOAD_RULE: &str = "give a fraction of the capacity above 0, such as 0.8";

/// `l` if it is a load [`load`] takes (for a caller given a number, not a
/// flag's text).
pub fn valid_load(l: f64) -> Result<f64, String> {
    match l.is_finite() && l > 0.0 {
        true => Ok(l),
        false => Err(LOAD_RULE.to_string()),
    }
}

/// A window of trace seconds, `A..B`, half-open; `A..=B` would promise an
/// end it does not keep, so it is refused.
pub fn parse_window(s: &str) -> Result<Range<f64>, String> {
    if s.contains("..=") {
        return Err(format!("`{s}`: a window of seconds is half-open, A..B"));
    }
    parse_range(s).map(|r| *r.start()..*r.end())
}

/// Parses `A..B` or `A..=B` (inclusive both) or a single `A`; a range
/// whose end comes before its start is refused.
pub fn parse_range<T: FromStr + Copy + PartialOrd>(s: &str) -> Result<RangeInclusive<T>, String>
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_import_refuses_no_functions_and_a_load_without_cores_before_reading() {
        let asked = |functions, load, cores| Import {
            trace: TraceFiles::Azure2021 {
                file: PathBuf::from("/no/such/trace.csv"),
                seconds: None,
            },
            functions,
            seed: 1,
            load,
            cores,
            output: PathBuf::from("/no/such/out.csv"),
        };
        let e = import(asked(Some(0), None, None)).unwrap_err().to_string();
        assert_eq!(e, "--functions 0: sample at least 1 function");
        let e = import(asked(None, Some(0.5), None))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--load needs the cores it is computed for (--cores)");
    }

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
    fn loads_are_positive_fractions() {
        assert_eq!(load("0.8"), Ok(0.8));
        assert_eq!(load("1.5"), Ok(1.5));
        for bad in ["0", "-0.5", "inf", "NaN", "high"] {
            assert_eq!(
                load(bad).unwrap_err(),
                "give a fraction of the capacity above 0, such as 0.8",
                "{bad}"
            );
        }
    }

    #[test]
    fn counts_are_whole_and_positive() {
        assert_eq!(count("12"), Ok(12));
        assert_eq!(count("0").unwrap_err(), "must be at least 1");
        assert_eq!(count("-10").unwrap_err(), "must be at least 1");
        assert_eq!(
            count("1e3").unwrap_err(),
            "expected a whole number, such as 1000"
        );
        assert_eq!(
            count("99999999999999999999").unwrap_err(),
            "must be at most 18446744073709551615"
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
        assert_eq!(parse_window("0..3600"), Ok(0.0..3600.0));
        assert!(parse_window("0..=3600").unwrap_err().contains("half-open"));
    }
}
