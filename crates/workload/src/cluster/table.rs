//! Function tables: what the cluster knows of each function (memory, warm
//! and cold time), with dense ids from 0 in table order.
//!
//! Three sources:
//! 1. [`FunctionTable::functionbench`]: CH-RLU Table 1, built in;
//! 2. [`FunctionTable::read_csv`]: a table CSV, `name,memory_mb,warm_ms,cold_ms`
//!    (see [`TABLE_HEADER`]);
//! 3. an Azure Functions 2019 day ([`super::AzureTrace`]) or the synthetic
//!    Azure-like population ([`super::AzureFunctions`]).

use crate::{Error, Result};
use faasched_model::cluster::FunctionProfile;
use faasched_model::{Function, FunctionId, Functions, MS, Nanos, TIME_LIMIT};
use std::fs::File;
use std::path::Path;

/// The header of a table CSV, field by field: the function's name, the memory
/// of one container (MB, a whole number above 0), its warm and cold running
/// times (ms, decimals allowed, above 0, cold ≥ warm).
pub const TABLE_HEADER: [&str; 4] = ["name", "memory_mb", "warm_ms", "cold_ms"];

/// Functions by dense id (`FunctionId(i)` is the i-th added), each with its
/// [`FunctionProfile`].
#[derive(Clone, Debug, Default)]
pub struct FunctionTable {
    functions: Functions,
    profiles: Vec<FunctionProfile>,
}

/// CH-RLU Table 1 (FunctionBench on OpenWhisk, ch-rlu-hpdc22 §1): name, warm
/// and cold time in ms, and the memory we give a container in MB.
///
/// The paper gives no memory sizes. We take OpenWhisk's default action limit,
/// 256 MB, for the light functions, and its default maximum, 512 MB, for the
/// three that load a model or a video (CNN inference with its network,
/// scikit-learn training, video encoding): our choice within OpenWhisk's
/// default bounds (128..=512 MB), not a measurement.
const FUNCTIONBENCH: [(&str, Nanos, Nanos, u32); 8] = [
    ("web-serving", 179, 1153, 256),
    ("ml-inference-cnn", 2211, 7833, 512),
    ("disk-bench-dd", 1068, 2944, 256),
    ("matrix-multiply", 117, 1067, 256),
    ("sklearn-regression", 53570, 54450, 512),
    ("aes-encryption", 587, 2064, 256),
    ("video-encoding", 10280, 11510, 512),
    ("json-parsing", 414, 1962, 256),
];

/// What a cold start adds to a function's warm time where a source gives no
/// cold time of its own (the synthetic population, the Azure trace): 1.3535 s,
/// the median of CH-RLU Table 1's cold − warm (0.88 s for Sklearn Regression
/// .. 5.62 s for ML Inference; the middle two are Video Encoding's 1.23 s and
/// AES Encryption's 1.477 s).
pub const DEFAULT_COLD_START: Nanos = 1_353_500 * faasched_model::US;

impl FunctionTable {
    /// An empty table.
    pub fn new() -> FunctionTable {
        FunctionTable::default()
    }

    /// CH-RLU Table 1's eight FunctionBench functions, in the paper's order,
    /// with the memory sizes documented on the table's source.
    pub fn functionbench() -> FunctionTable {
        let mut table = FunctionTable::new();
        for (name, warm_ms, cold_ms, memory_mb) in FUNCTIONBENCH {
            let (warm, cold) = (warm_ms * MS, cold_ms * MS);
            // The rows above are valid: unique names, 0 < warm ≤ cold.
            if let Err(e) = table.push(name, memory_mb, warm, cold) {
                unreachable!("the built-in table is valid: {e}");
            }
        }
        table
    }

    /// Adds a function; its id is the number of functions before it. Errors
    /// name what is wrong: an empty or repeated name, no memory, a warm time
    /// of 0, a cold time below the warm time, or one past the clock's limit.
    pub fn push(
        &mut self,
        name: &str,
        memory_mb: u32,
        warm: Nanos,
        cold: Nanos,
    ) -> Result<FunctionId> {
        let what = |field: &str| format!("function `{name}`: {field}");
        if name.is_empty() {
            return Err(Error::invalid("function name", "empty"));
        }
        if self.functions.find(name).is_some() {
            return Err(Error::invalid("function name", format!("`{name}` twice")));
        }
        if memory_mb == 0 {
            return Err(Error::invalid(&what("memory"), "must be above 0 MB"));
        }
        if warm == 0 {
            return Err(Error::invalid(&what("warm time"), "must be above 0"));
        }
        if cold < warm {
            return Err(Error::invalid(
                &what("cold time"),
                format!("{cold} ns is below the warm time {warm} ns"),
            ));
        }
        if cold > TIME_LIMIT {
            return Err(Error::invalid(
                &what("cold time"),
                format!("{cold} ns is past the clock's limit {TIME_LIMIT} ns"),
            ));
        }
        let function = self.functions.intern(name).id;
        self.profiles.push(FunctionProfile {
            function,
            memory_mb,
            warm,
            cold,
        });
        Ok(function)
    }

    /// `copies` copies (at least 1) of every function, named `{name}-{i}` for
    /// `i` in `0..copies`, copies of a function together, in table order:
    /// CH-RLU's live workload is ten copies of each FunctionBench function
    /// "with unique names" (§6.1). Errors: 0 copies, or a name that clashes
    /// with another's copy (`a-1` and `a`).
    pub fn copies(&self, copies: u32) -> Result<FunctionTable> {
        if copies == 0 {
            return Err(Error::invalid("copies", "0: want at least 1"));
        }
        let mut table = FunctionTable::new();
        for (f, p) in self.iter() {
            for i in 0..copies {
                table.push(&format!("{}-{i}", f.name), p.memory_mb, p.warm, p.cold)?;
            }
        }
        Ok(table)
    }

    /// The same functions with their warm and cold times multiplied by
    /// `factor` (memory as it is): a table whose times fit a live run on a
    /// small machine, FunctionBench's seconds made milliseconds. A warm
    /// time that would round to 0 ns becomes 1 ns. Errors: a factor not
    /// finite and above 0, or a time past the clock's limit.
    pub fn scaled(&self, factor: f64) -> Result<FunctionTable> {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(Error::invalid(
                "time scale",
                format!("{factor}: want a number above 0"),
            ));
        }
        let scale = |t: Nanos| (t as f64 * factor).round().min(u64::MAX as f64) as Nanos;
        let mut table = FunctionTable::new();
        for (f, p) in self.iter() {
            let warm = scale(p.warm).max(1);
            table.push(&f.name, p.memory_mb, warm, scale(p.cold).max(warm))?;
        }
        Ok(table)
    }

    /// How many functions.
    pub fn len(&self) -> usize {
        self.profiles.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.profiles.is_empty()
    }

    /// Every profile, by id: the i-th is `FunctionId(i)`'s.
    pub fn profiles(&self) -> &[FunctionProfile] {
        &self.profiles
    }

    /// The profile of `f`, if the table has it.
    pub fn profile(&self, f: FunctionId) -> Option<&FunctionProfile> {
        self.profiles.get(f.0 as usize)
    }

    /// The name of `f`, if the table has it.
    pub fn name(&self, f: FunctionId) -> Option<&str> {
        self.functions.get(f).map(|f| &*f.name)
    }

    /// The profile of the function named `name`, if the table has it.
    pub fn find(&self, name: &str) -> Option<&FunctionProfile> {
        self.functions.find(name).and_then(|f| self.profile(f.id))
    }

    /// The functions (ids and names), by id.
    pub fn functions(&self) -> &Functions {
        &self.functions
    }

    /// Every function with its profile, by id.
    pub fn iter(&self) -> impl Iterator<Item = (&Function, &FunctionProfile)> {
        self.functions.iter().zip(&self.profiles)
    }

    /// Reads a table CSV: the header exactly [`TABLE_HEADER`], then one row per
    /// function; ids in row order. Errors name the file, the 1-based line and
    /// the field.
    pub fn read_csv(path: &Path) -> Result<FunctionTable> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(file);
        let mut record = ::csv::StringRecord::new();
        let read = |reader: &mut ::csv::Reader<File>, record: &mut ::csv::StringRecord| {
            reader
                .read_record(record)
                .map_err(|e| crate::csv::csv_error(path, e))
        };
        if !read(&mut reader, &mut record)? || !record.iter().eq(TABLE_HEADER) {
            let found: Vec<&str> = record.iter().collect();
            return Err(Error::parse(
                path,
                1,
                "header",
                format!(
                    "expected `{}`, found `{}`",
                    TABLE_HEADER.join(","),
                    found.join(",")
                ),
            ));
        }
        let mut table = FunctionTable::new();
        while read(&mut reader, &mut record)? {
            let line = record.position().map_or(0, |p| p.line());
            // A row with fields missing names the first; one with extras,
            // the record.
            let err = |field: usize, message: String| {
                let name = TABLE_HEADER.get(field).copied().unwrap_or("record");
                Error::parse(path, line, name, message)
            };
            if record.len() != TABLE_HEADER.len() {
                return Err(err(
                    record.len(),
                    format!(
                        "expected {} fields as in the header, found {}",
                        TABLE_HEADER.len(),
                        record.len()
                    ),
                ));
            }
            let name = &record[0];
            if name.is_empty() {
                return Err(err(0, "empty, expected a function name".into()));
            }
            if table.functions.find(name).is_some() {
                return Err(err(0, format!("`{name}` is on an earlier row too")));
            }
            let memory_mb = match record[1].parse::<u32>() {
                Ok(mb) if mb > 0 && record[1].bytes().all(|b| b.is_ascii_digit()) => mb,
                _ => {
                    return Err(err(
                        1,
                        format!("`{}` is not a whole number of MB above 0", &record[1]),
                    ));
                }
            };
            let warm = millis(&record[2]).map_err(|m| err(2, m))?;
            let cold = millis(&record[3]).map_err(|m| err(3, m))?;
            if cold < warm {
                return Err(err(
                    3,
                    format!("`{}` is below warm_ms `{}`", &record[3], &record[2]),
                ));
            }
            table
                .push(name, memory_mb, warm, cold)
                .map_err(|e| err(3, e.to_string()))?;
        }
        Ok(table)
    }

    /// Writes the table as a table CSV that [`FunctionTable::read_csv`] reads
    /// back to the same table (times in ms with up to six decimals: exact).
    pub fn to_csv(&self) -> String {
        let mut out = TABLE_HEADER.join(",");
        out.push('\n');
        for (f, p) in self.iter() {
            let name = if f.name.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", f.name.replace('"', "\"\""))
            } else {
                f.name.to_string()
            };
            out.push_str(&format!(
                "{name},{},{},{}\n",
                p.memory_mb,
                fmt_millis(p.warm),
                fmt_millis(p.cold)
            ));
        }
        out
    }
}

/// A table CSV's time: ms as plain digits with at most six decimals (ns
/// resolution), read exactly; above 0 and within the clock's limit.
fn millis(text: &str) -> std::result::Result<Nanos, String> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let well_formed = !whole.is_empty()
        && digits(whole)
        && digits(frac)
        && frac.len() <= 6
        && (!frac.is_empty() || !text.ends_with('.'));
    if !well_formed {
        return Err(format!(
            "`{text}` is not a number of ms: plain digits, at most six decimals"
        ));
    }
    let frac_ns = format!("{frac:0<6}").parse::<u64>().unwrap_or(0);
    let ns = whole
        .parse::<u64>()
        .ok()
        .and_then(|w| w.checked_mul(MS))
        .and_then(|w| w.checked_add(frac_ns))
        .filter(|&ns| ns <= TIME_LIMIT);
    match ns {
        None => Err(format!(
            "`{text}` ms is past the clock's limit ({} ms)",
            TIME_LIMIT / MS
        )),
        Some(0) => Err(format!("`{text}` ms: want a time above 0")),
        Some(ns) => Ok(ns),
    }
}

/// ns as ms with the decimals it needs (`179`, `0.5`, `1.000001`).
fn fmt_millis(ns: Nanos) -> String {
    let (whole, frac) = (ns / MS, ns % MS);
    if frac == 0 {
        whole.to_string()
    } else {
        let digits = format!("{frac:06}");
        format!("{whole}.{}", digits.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scaled_table_keeps_names_and_memory_and_scales_times() {
        let table = FunctionTable::functionbench();
        let small = table.scaled(0.01).unwrap();
        assert_eq!(small.len(), table.len());
        let web = small.find("web-serving").unwrap();
        // 179 ms warm, 1,153 ms cold, 256 MB.
        assert_eq!(
            (web.warm, web.cold, web.memory_mb),
            (1_790_000, 11_530_000, 256)
        );
        assert_eq!(small.name(web.function), Some("web-serving"));
        let tiny = table.scaled(1e-12).unwrap();
        assert!(tiny.profiles().iter().all(|p| p.warm == 1 && p.cold >= 1));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(table.scaled(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn millis_accept_plain_decimals_only() {
        assert_eq!(millis("179"), Ok(179 * MS));
        assert_eq!(millis("0.5"), Ok(MS / 2));
        assert_eq!(millis("1.000001"), Ok(MS + 1));
        assert_eq!(millis("007.250"), Ok(7 * MS + MS / 4));
        let limit = TIME_LIMIT / MS;
        assert_eq!(millis(&format!("{limit}")), Ok(limit * MS));
        for bad in [
            "",
            "0",
            "0.000",
            "-1",
            "1e3",
            " 5",
            "5 ",
            "inf",
            "NaN",
            ".5",
            "5.",
            "1.2.3",
            "0.0000001",
            "99999999999999999999999",
        ] {
            assert!(millis(bad).is_err(), "{bad}");
        }
        assert_eq!(fmt_millis(179 * MS), "179");
        assert_eq!(fmt_millis(MS / 2), "0.5");
        assert_eq!(fmt_millis(MS + 1), "1.000001");
    }

    #[test]
    fn the_default_cold_start_is_the_median_of_table_1() {
        let mut extra: Vec<Nanos> = FunctionTable::functionbench()
            .profiles()
            .iter()
            .map(FunctionProfile::cold_extra)
            .collect();
        extra.sort_unstable();
        assert_eq!((extra[3] + extra[4]) / 2, DEFAULT_COLD_START);
    }
}
