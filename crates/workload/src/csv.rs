//! The workload CSV (v1): the interchange format between generators, trace
//! readers, the simulator and the live runtime (docs/WORKLOADS.md).
//!
//! ```text
//! id,function,arrival_us,phases,memory_mb,deadline_us
//! 0,fib-3,0,c23000,128,
//! 1,io-1,1250,c2000;i40000;c1500,256,230000
//! ```
//!
//! - `id`: `u64`; `function`: any non-empty text (CSV-quoted when it needs to be);
//! - `arrival_us`: `u64` µs, never decreasing from one row to the next;
//! - `phases`: `c<µs>` (CPU) and `i<µs>` (I/O wait), `;`-separated, in order, at
//!   least one, each value > 0;
//! - `memory_mb`: `u32`; `deadline_us`: `u64` µs relative to arrival, or empty.
//!
//! Numbers are plain ASCII digits (no sign, no spaces). The header must be exactly
//! [`HEADER`]. Times become nanoseconds inside; a value too large for `u64`
//! nanoseconds is an error, not a wrap-around, and so is a row whose arrival
//! plus phases ends after [`TIME_LIMIT`].
//!
//! The [`Reader`] streams: it holds one row at a time (plus the function table),
//! so memory does not grow with the file. It stops at the first bad row and
//! reports it with the file, the 1-based line and the field.
//!
//! The [`Writer`] writes exact microseconds. An invocation whose times are not
//! whole microseconds is rounded to the nearest one (half up; down only where up
//! would overflow `u64` nanoseconds), except that a non-zero phase never becomes
//! `0` (it is written as at least 1 µs), since the reader rejects empty phases.
//! It refuses what the reader would reject: an empty function name, no phases, a
//! zero phase, an arrival before the previous one, or an end after
//! [`TIME_LIMIT`].

use crate::ids::SeenIds;
use crate::{Error, Result};
use faasched_model::{Functions, Invocation, Nanos, Phase, SEC, TIME_LIMIT, US};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The header line of a v1 workload CSV, field by field.
pub const HEADER: [&str; 6] = [
    "id",
    "function",
    "arrival_us",
    "phases",
    "memory_mb",
    "deadline_us",
];

/// Streams the invocations of a workload CSV, validating each row.
///
/// Yields `Ok(invocation)` per row in file order; after the first `Err` it yields
/// nothing more. Function names are interned, in order of first sight, into a
/// table the reader owns ([`Reader::functions`]).
pub struct Reader {
    path: PathBuf,
    inner: ::csv::Reader<Box<dyn Read>>,
    record: ::csv::ByteRecord,
    functions: Functions,
    last_arrival_us: u64,
    /// Every id so far: a repeat is refused.
    ids: SeenIds,
    done: bool,
}

impl Reader {
    /// Opens `path` and checks its header.
    pub fn open(path: &Path) -> Result<Reader> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        Reader::from_reader(path, file)
    }

    /// Reads a workload CSV from `input`, naming it `name_for_errors` in errors,
    /// and checks its header.
    pub fn from_reader(name_for_errors: &Path, input: impl Read + 'static) -> Result<Reader> {
        let inner = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(Box::new(input) as Box<dyn Read>);
        let mut reader = Reader {
            path: name_for_errors.to_path_buf(),
            inner,
            record: ::csv::ByteRecord::new(),
            functions: Functions::new(),
            last_arrival_us: 0,
            ids: SeenIds::default(),
            done: false,
        };
        reader.check_header()?;
        Ok(reader)
    }

    /// The functions seen so far, in order of first sight.
    pub fn functions(&self) -> &Functions {
        &self.functions
    }

    /// The 1-based line on which the last row read starts (the header's,
    /// 1, before any row): for a caller that checks more of a row than the
    /// format does, to name the row in its own errors.
    pub fn line(&self) -> u64 {
        self.record.position().map_or(0, |p| p.line())
    }

    /// Gives up the reader, keeping its function table.
    pub fn into_functions(self) -> Functions {
        self.functions
    }

    fn check_header(&mut self) -> Result<()> {
        let found = self.read_record()?;
        let matches = found && self.record.iter().eq(HEADER.iter().map(|h| h.as_bytes()));
        if matches {
            return Ok(());
        }
        let expected = HEADER.join(",");
        if !found {
            let why = format!("the file is empty; expected the header `{expected}`");
            return Err(Error::parse(&self.path, 1, "header", why));
        }
        let seen: Vec<String> = self
            .record
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        let why = match HEADER.iter().zip(&seen).position(|(h, s)| h != s) {
            Some(i) => format!(
                "column {} is `{}` where `{}` belongs",
                i + 1,
                seen[i],
                HEADER[i]
            ),
            None if seen.len() < HEADER.len() => {
                format!("column `{}` is missing", HEADER[seen.len()])
            }
            None => format!(
                "{} column(s) too many, from column {} (`{}`)",
                seen.len() - HEADER.len(),
                HEADER.len() + 1,
                seen[HEADER.len()]
            ),
        };
        Err(Error::parse(
            &self.path,
            1,
            "header",
            format!("expected `{expected}`, found `{}`: {why}", seen.join(",")),
        ))
    }

    /// Reads the next record into `self.record`; `false` at the end of input.
    fn read_record(&mut self) -> Result<bool> {
        self.inner
            .read_byte_record(&mut self.record)
            .map_err(|e| csv_error(&self.path, e))
    }

    fn read_next(&mut self) -> Result<Option<Invocation>> {
        if !self.read_record()? {
            return Ok(None);
        }
        let line = self.record.position().map_or(0, |p| p.line());
        let row = Row {
            path: &self.path,
            line,
            record: &self.record,
        };
        row.check_len()?;
        let id = row.u64(0)?;
        if !self.ids.insert(id) {
            return Err(row.error(0, format!("id {id} is on an earlier row too")));
        }
        let name = row.str(1)?;
        let arrival_us = row.u64(2)?;
        if arrival_us < self.last_arrival_us {
            return Err(row.error(
                2,
                format!(
                    "arrival {arrival_us} µs is before the previous row's {} µs",
                    self.last_arrival_us
                ),
            ));
        }
        let arrival = row.micros(2, arrival_us)?;
        let phases = row.phases(3)?;
        let memory_mb = row.u32(4)?;
        let deadline = match row.bytes(5) {
            b"" => None,
            _ => Some(row.micros(5, row.u64(5)?)?),
        };
        let function = self.functions.intern(name);
        self.last_arrival_us = arrival_us;
        let inv = Invocation {
            id,
            function,
            arrival,
            phases,
            memory_mb,
            deadline,
        };
        if !inv.within_time_limit() {
            let field = if inv.arrival > TIME_LIMIT { 2 } else { 3 };
            return Err(row.error(field, past_time_limit()));
        }
        Ok(Some(inv))
    }
}

impl Iterator for Reader {
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

/// Reads a whole workload CSV into memory: its invocations and function table.
pub fn read_all(path: &Path) -> Result<(Vec<Invocation>, Functions)> {
    let mut reader = Reader::open(path)?;
    let invocations = reader.by_ref().collect::<Result<Vec<_>>>()?;
    Ok((invocations, reader.into_functions()))
}

/// One data row being parsed; every error it makes names its file, line and field.
struct Row<'a> {
    path: &'a Path,
    line: u64,
    record: &'a ::csv::ByteRecord,
}

impl Row<'_> {
    fn error(&self, field: usize, message: impl Into<String>) -> Error {
        let name = HEADER.get(field).copied().unwrap_or("record");
        Error::parse(self.path, self.line, name, message)
    }

    fn check_len(&self) -> Result<()> {
        let found = self.record.len();
        if found == HEADER.len() {
            return Ok(());
        }
        // Name the first missing field, or the record as a whole if it has extras.
        Err(self.error(
            found,
            format!("expected {} fields, found {found}", HEADER.len()),
        ))
    }

    fn bytes(&self, field: usize) -> &[u8] {
        self.record.get(field).unwrap_or_default()
    }

    fn str(&self, field: usize) -> Result<&str> {
        let text = std::str::from_utf8(self.bytes(field))
            .map_err(|_| self.error(field, "not valid UTF-8"))?;
        if text.is_empty() {
            return Err(self.error(field, "empty"));
        }
        Ok(text)
    }

    fn u64(&self, field: usize) -> Result<u64> {
        let bytes = self.bytes(field);
        parse_u64(bytes).ok_or_else(|| {
            self.error(
                field,
                format!(
                    "`{}` is not an unsigned integer that fits in 64 bits",
                    String::from_utf8_lossy(bytes)
                ),
            )
        })
    }

    fn u32(&self, field: usize) -> Result<u32> {
        let value = self.u64(field)?;
        u32::try_from(value).map_err(|_| self.error(field, format!("{value} exceeds {}", u32::MAX)))
    }

    fn micros(&self, field: usize, us: u64) -> Result<Nanos> {
        us.checked_mul(US)
            .ok_or_else(|| self.error(field, format!("{us} µs overflows 64-bit nanoseconds")))
    }

    fn phases(&self, field: usize) -> Result<faasched_model::Phases> {
        self.bytes(field)
            .split(|&b| b == b';')
            .map(|token| self.phase(field, token))
            .collect()
    }

    fn phase(&self, field: usize, token: &[u8]) -> Result<Phase> {
        let bad = || {
            self.error(
                field,
                format!(
                    "`{}` is not `c<µs>` or `i<µs>` with µs > 0",
                    String::from_utf8_lossy(token)
                ),
            )
        };
        let (kind, digits) = token.split_first().ok_or_else(bad)?;
        let us = parse_u64(digits).filter(|&us| us > 0).ok_or_else(bad)?;
        let ns = self.micros(field, us)?;
        match kind {
            b'c' => Ok(Phase::Cpu(ns)),
            b'i' => Ok(Phase::Io(ns)),
            _ => Err(bad()),
        }
    }
}

/// Parses plain ASCII digits into a `u64`; `None` if empty, not digits, or too big.
fn parse_u64(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() {
        return None;
    }
    bytes.iter().try_fold(0u64, |acc, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
        acc.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// Turns a `csv` crate error into ours: I/O stays I/O, anything else (invalid
/// UTF-8, say) is a parse error of the record at the position it reports.
pub(crate) fn csv_error(path: &Path, err: ::csv::Error) -> Error {
    let line = err.position().map_or(0, |p| p.line());
    let message = err.to_string();
    match err.into_kind() {
        ::csv::ErrorKind::Io(io) => Error::io(path, io),
        _ => Error::parse(path, line, "record", message),
    }
}

/// Writes invocations as a workload CSV (v1).
///
/// The header is written with the first row (or by [`Writer::finish`] for an
/// empty workload). Call [`Writer::finish`] to flush; dropping the writer flushes
/// too, but hides any error.
pub struct Writer<W: Write> {
    path: PathBuf,
    inner: ::csv::Writer<W>,
    field: String,
    started: bool,
    last_arrival: u64,
}

impl<W: Write> Writer<W> {
    /// Writes to `w`; errors name it `<writer>`.
    pub fn new(w: W) -> Writer<W> {
        Writer::named(Path::new("<writer>"), w)
    }

    /// Writes to `w`, the file that will be `path` (a staged file, say);
    /// errors name `path`.
    pub fn named(path: &Path, w: W) -> Writer<W> {
        Writer {
            path: path.to_path_buf(),
            inner: ::csv::Writer::from_writer(w),
            field: String::new(),
            started: false,
            last_arrival: 0,
        }
    }

    /// Writes one invocation as one row.
    ///
    /// Fails with [`Error::Invalid`] for what the reader would reject (empty
    /// function name, no phases, a zero phase, an arrival before the previous
    /// one, an end after [`TIME_LIMIT`]), and with [`Error::Io`] if writing
    /// fails.
    pub fn write(&mut self, inv: &Invocation) -> Result<()> {
        check_writable(inv, self.last_arrival)?;
        self.start()?;
        self.last_arrival = inv.arrival;
        self.put(format_args!("{}", inv.id))?;
        self.put(format_args!("{}", inv.function.name))?;
        self.put(format_args!("{}", round_us(inv.arrival)))?;
        self.put(format_args!("{}", Phases(&inv.phases)))?;
        self.put(format_args!("{}", inv.memory_mb))?;
        match inv.deadline {
            Some(d) => self.put(format_args!("{}", round_us(d)))?,
            None => self.put(format_args!(""))?,
        }
        self.inner
            .write_record(None::<&[u8]>)
            .map_err(|e| csv_error(&self.path, e))
    }

    /// Writes the header if nothing was written, flushes, and returns the inner
    /// writer.
    pub fn finish(mut self) -> Result<W> {
        self.start()?;
        self.inner
            .into_inner()
            .map_err(|e| Error::io(&self.path, e.into_error()))
    }

    fn start(&mut self) -> Result<()> {
        if !self.started {
            self.inner
                .write_record(HEADER)
                .map_err(|e| csv_error(&self.path, e))?;
            self.started = true;
        }
        Ok(())
    }

    /// Writes one field, formatted into a reused buffer.
    fn put(&mut self, value: std::fmt::Arguments<'_>) -> Result<()> {
        self.field.clear();
        // Writing into a String cannot fail.
        let _ = self.field.write_fmt(value);
        self.inner
            .write_field(&self.field)
            .map_err(|e| csv_error(&self.path, e))
    }
}

fn check_writable(inv: &Invocation, last_arrival: u64) -> Result<()> {
    let problem = if inv.function.name.is_empty() {
        "empty function name"
    } else if inv.phases.is_empty() {
        "no phases"
    } else if inv
        .phases
        .iter()
        .any(|p| matches!(p, Phase::Cpu(0) | Phase::Io(0)))
    {
        "a zero-length phase"
    } else if inv.arrival < last_arrival {
        "arrival before the previous invocation's"
    } else if !inv.within_time_limit() {
        &past_time_limit()
    } else {
        return Ok(());
    };
    Err(Error::invalid(
        "invocation",
        format!("invocation {}: {problem}", inv.id),
    ))
}

/// Why an invocation that ends after [`TIME_LIMIT`] is refused.
fn past_time_limit() -> String {
    format!(
        "arrival plus phases end after {} µs (about {} days), the latest instant a workload may reach",
        TIME_LIMIT / US,
        TIME_LIMIT / (86_400 * SEC)
    )
}

/// Nanoseconds to the nearest microsecond, half up, except that it rounds down
/// where rounding up would not fit back into `u64` nanoseconds.
fn round_us(ns: Nanos) -> u64 {
    let down = ns / US;
    let up = down + 1;
    if ns % US >= US / 2 && up.checked_mul(US).is_some() {
        up
    } else {
        down
    }
}

/// Formats phases as `c<µs>;i<µs>;...`, never writing 0 for a non-zero phase.
struct Phases<'a>(&'a [Phase]);

impl std::fmt::Display for Phases<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, phase) in self.0.iter().enumerate() {
            let (kind, ns) = match *phase {
                Phase::Cpu(ns) => ('c', ns),
                Phase::Io(ns) => ('i', ns),
            };
            let sep = if i == 0 { "" } else { ";" };
            write!(f, "{sep}{kind}{}", round_us(ns).max(1))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_u64_is_strict() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"+1"), None);
        assert_eq!(parse_u64(b" 1"), None);
        assert_eq!(parse_u64(b"1.0"), None);
    }

    #[test]
    fn rounding_is_half_up_and_phases_never_zero() {
        assert_eq!(round_us(1_499), 1);
        assert_eq!(round_us(1_500), 2);
        assert_eq!(round_us(u64::MAX), u64::MAX / 1000);
        let phases = [Phase::Cpu(1), Phase::Io(2_500), Phase::Cpu(3_000)];
        assert_eq!(Phases(&phases).to_string(), "c1;i3;c3");
    }
}
