//! The workload CSV (v1): reading, validation errors, writing, round trips.

use crate::common::{assert_parse_error, fixture};
use faasched_model::{Function, Functions, Invocation, MS, Phase, Phases, TIME_LIMIT, US};
use faasched_workload::Error;
use faasched_workload::csv::{HEADER, Reader, Writer, read_all};
use proptest::prelude::*;
use std::io::Read;
use std::path::Path;

const HEAD: &str = "id,function,arrival_us,phases,memory_mb,deadline_us\n";

#[test]
fn reads_the_fixture_in_nanoseconds() {
    let (invs, functions) = read_all(&fixture("workload/basic.csv")).unwrap();
    assert_eq!(invs.len(), 4);
    let names: Vec<_> = functions.iter().map(|f| f.name.to_string()).collect();
    assert_eq!(names, ["fib-3", "io-1", "name, with comma"]);

    assert_eq!(invs[0].function.name.as_ref(), "fib-3");
    assert_eq!(
        (invs[0].arrival, &invs[0].phases[..]),
        (0, &[Phase::Cpu(23 * MS)][..])
    );
    assert_eq!(invs[0].deadline, None);
    let io = &invs[1];
    assert_eq!((io.id, io.arrival, io.memory_mb), (1, 1_250 * US, 256));
    assert_eq!(
        io.phases[..],
        [
            Phase::Cpu(2 * MS),
            Phase::Io(40 * MS),
            Phase::Cpu(1_500 * US)
        ]
    );
    assert_eq!(io.deadline, Some(230 * MS));
    assert_eq!(io.cpu_demand(), 3_500 * US);
    // The same function keeps its interned id.
    assert_eq!(invs[2].function, invs[0].function);
    assert_eq!(invs[3].phases[..], [Phase::Io(US), Phase::Cpu(US)]);
    assert_eq!(invs[3].memory_mb, 1);
}

#[test]
fn writing_the_fixture_back_gives_the_same_bytes() {
    let path = fixture("workload/basic.csv");
    let (invs, _) = read_all(&path).unwrap();
    let mut writer = Writer::new(Vec::new());
    for inv in &invs {
        writer.write(inv).unwrap();
    }
    let written = String::from_utf8(writer.finish().unwrap()).unwrap();
    assert_eq!(written, std::fs::read_to_string(&path).unwrap());
}

/// Writes `content` to `bad.csv` in a temporary directory and reads it all.
fn read_text(content: &str) -> Result<Vec<Invocation>, Error> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, content).unwrap();
    read_all(&path).map(|(invs, _)| invs)
}

#[test]
fn bad_rows_are_reported_with_file_line_and_field() {
    let good = "0,f,10,c5,128,\n";
    let cases: &[(&str, u64, &str)] = &[
        (
            "id,function,arrival,phases,memory_mb,deadline_us\n",
            1,
            "header",
        ),
        ("", 1, "header"),
        ("id,function,arrival_us,phases,memory_mb\n", 1, "header"),
        ("0,f,10,c5,128\n", 2, "deadline_us"),
        ("0,f,10,c5,128,,extra\n", 2, "record"),
        ("x,f,10,c5,128,\n", 2, "id"),
        ("-1,f,10,c5,128,\n", 2, "id"),
        ("0,,10,c5,128,\n", 2, "function"),
        ("0,f,1.5,c5,128,\n", 2, "arrival_us"),
        ("0,f,18446744073709552,c5,128,\n", 2, "arrival_us"),
        ("0,f,10,,128,\n", 2, "phases"),
        ("0,f,10,c0,128,\n", 2, "phases"),
        ("0,f,10,x5,128,\n", 2, "phases"),
        ("0,f,10,c,128,\n", 2, "phases"),
        ("0,f,10,c5;,128,\n", 2, "phases"),
        ("0,f,10,c-5,128,\n", 2, "phases"),
        ("0,f,10,c 5,128,\n", 2, "phases"),
        ("0,f,10,c18446744073709552,128,\n", 2, "phases"),
        // Ending past TIME_LIMIT (2^54 ns): by the phases, or by the arrival.
        // 2^54 ns is 18014398509481.984 µs.
        ("0,f,18014398509481,c1,128,\n", 2, "phases"),
        ("0,f,1,c9007199254741;i9007199254741,128,\n", 2, "phases"),
        ("0,f,18014398509482,c1,128,\n", 2, "arrival_us"),
        ("0,f,10,c5,4294967296,\n", 2, "memory_mb"),
        ("0,f,10,c5,,\n", 2, "memory_mb"),
        ("0,f,10,c5,128,soon\n", 2, "deadline_us"),
    ];
    for &(row, line, field) in cases {
        let content = if line == 1 {
            row.to_string()
        } else {
            format!("{HEAD}{row}")
        };
        let err = read_text(&content).expect_err(row);
        assert_parse_error(&err, "bad.csv", line, field);
    }
    // A header error says which column is wrong.
    for (header, why) in [
        (
            "",
            "the file is empty; expected the header `id,function,arrival_us,phases,memory_mb,deadline_us`",
        ),
        (
            "id,function,arrival_us,phases,memory_mb\n",
            "found `id,function,arrival_us,phases,memory_mb`: column `deadline_us` is missing",
        ),
        (
            "function,id,arrival_us,phases,memory_mb,deadline_us\n",
            "column 1 is `function` where `id` belongs",
        ),
        (
            "id,function,arrival_us,phases,memory_mb,deadline_us,x\n",
            "1 column(s) too many, from column 7 (`x`)",
        ),
    ] {
        let err = read_text(header).unwrap_err().to_string();
        assert!(err.contains(why), "{err}");
    }
    // A repeated id, on the fourth line.
    let err = read_text(&format!("{HEAD}{good}1,f,10,c5,128,\n0,f,11,c5,128,\n")).unwrap_err();
    assert_parse_error(&err, "bad.csv", 4, "id");
    assert!(
        err.to_string().contains("id 0 is on an earlier row too"),
        "{err}"
    );
    // A decreasing arrival, on the fourth line.
    let err = read_text(&format!("{HEAD}{good}1,f,10,c5,128,\n2,f,9,c5,128,\n")).unwrap_err();
    assert_parse_error(&err, "bad.csv", 4, "arrival_us");
    // Lines count from the file's start, even past a quoted multi-line name.
    let err = read_text(&format!("{HEAD}0,\"a\nb\",1,c5,128,\n1,g,2,c0,1,\n")).unwrap_err();
    assert_parse_error(&err, "bad.csv", 4, "phases");
}

#[test]
fn the_reader_stops_after_the_first_error() {
    let content = format!("{HEAD}0,f,1,c5,1,\n1,f,2,c0,1,\n2,f,3,c5,1,\n");
    let mut reader =
        Reader::from_reader(Path::new("mem.csv"), std::io::Cursor::new(content)).unwrap();
    assert!(reader.next().unwrap().is_ok());
    let err = reader.next().unwrap().unwrap_err();
    assert_parse_error(&err, "mem.csv", 3, "phases");
    assert!(reader.next().is_none());
    assert!(reader.next().is_none());
    assert_eq!(reader.functions().len(), 1);
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let err = read_all(Path::new("/nonexistent/w.csv")).unwrap_err();
    assert!(matches!(err, Error::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/w.csv"));
}

/// An endless, lazily made workload CSV: reading it must not try to take it all.
struct Endless {
    next_row: u64,
    pending: Vec<u8>,
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending.is_empty() {
            self.pending = if self.next_row == 0 {
                HEAD.as_bytes().to_vec()
            } else {
                format!("{0},f{1},{0},c7,64,\n", self.next_row, self.next_row % 3).into_bytes()
            };
            self.next_row += 1;
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

#[test]
fn the_reader_streams() {
    let endless = Endless {
        next_row: 0,
        pending: Vec::new(),
    };
    let mut reader = Reader::from_reader(Path::new("endless"), endless).unwrap();
    let last = reader.by_ref().take(10_000).last().unwrap().unwrap();
    assert_eq!((last.id, last.arrival), (10_000, 10_000 * US));
    assert_eq!(reader.functions().len(), 3);
}

fn invocation(function: Function, arrival: u64, phases: &[Phase]) -> Invocation {
    Invocation {
        id: 0,
        function,
        arrival,
        phases: Phases::from_slice(phases),
        memory_mb: 128,
        deadline: None,
    }
}

fn written(invs: &[Invocation]) -> String {
    let mut writer = Writer::new(Vec::new());
    for inv in invs {
        writer.write(inv).unwrap();
    }
    String::from_utf8(writer.finish().unwrap()).unwrap()
}

#[test]
fn the_writer_rounds_to_microseconds_but_never_to_a_zero_phase() {
    let f = Functions::new().intern("f");
    let mut inv = invocation(
        f,
        1_499,
        &[Phase::Cpu(1), Phase::Io(2_500), Phase::Cpu(3_499)],
    );
    inv.deadline = Some(1_500);
    assert_eq!(written(&[inv]), format!("{HEAD}0,f,1,c1;i3;c3,128,2\n"));
}

#[test]
fn an_empty_workload_is_just_the_header() {
    assert_eq!(written(&[]), HEAD);
    assert_eq!(HEADER.join(",") + "\n", HEAD);
}

#[test]
fn the_writer_refuses_what_the_reader_would_reject() {
    let mut functions = Functions::new();
    let f = functions.intern("f");
    let bad = [
        invocation(functions.intern(""), 0, &[Phase::Cpu(1)]),
        invocation(f.clone(), 0, &[]),
        invocation(f.clone(), 0, &[Phase::Cpu(5), Phase::Io(0)]),
        invocation(f.clone(), TIME_LIMIT, &[Phase::Cpu(1)]),
    ];
    for inv in &bad {
        let err = Writer::new(Vec::new()).write(inv).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{inv:?}: {err}");
    }
    let mut writer = Writer::new(Vec::new());
    writer
        .write(&invocation(f.clone(), 10, &[Phase::Cpu(1)]))
        .unwrap();
    let err = writer
        .write(&invocation(f, 9, &[Phase::Cpu(1)]))
        .unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }));
}

#[test]
fn a_named_writer_writes_a_file_that_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.csv");
    let (invs, _) = read_all(&fixture("workload/basic.csv")).unwrap();
    let mut writer = Writer::named(&path, std::fs::File::create(&path).unwrap());
    for inv in &invs {
        writer.write(inv).unwrap();
    }
    writer.finish().unwrap();
    assert_eq!(read_all(&path).unwrap().0, invs);
}

/// Random invocations with whole-µs times, sorted arrivals, functions interned in
/// order of first sight (as the reader will intern them).
fn arb_workload() -> impl Strategy<Value = Vec<Invocation>> {
    // An arrival and up to three phases, each up to a quarter of the time
    // limit, end by it; a deadline may be anything that fits.
    let quarter_us = TIME_LIMIT / US / 4;
    let phase = prop_oneof![
        (1..=quarter_us).prop_map(|us| Phase::Cpu(us * US)),
        (1..=quarter_us).prop_map(|us| Phase::Io(us * US)),
    ];
    let row = (
        any::<u64>(),
        0usize..4,
        0..=quarter_us,
        prop::collection::vec(phase, 1..4),
        any::<u32>(),
        prop::option::of(0..=u64::MAX / US),
    );
    let names = prop::collection::vec("(?s).{1,12}", 4);
    (prop::collection::vec(row, 0..20), names).prop_map(|(rows, names)| {
        let mut functions = Functions::new();
        let mut arrivals: Vec<u64> = rows.iter().map(|r| r.2).collect();
        arrivals.sort_unstable();
        rows.into_iter()
            .zip(arrivals)
            .map(
                |((id, f, _, phases, memory_mb, deadline), arrival_us)| Invocation {
                    id,
                    function: functions.intern(&names[f]),
                    arrival: arrival_us * US,
                    phases: phases.into(),
                    memory_mb,
                    deadline: deadline.map(|us| us * US),
                },
            )
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn write_then_read_is_exact(invs in arb_workload()) {
        let text = written(&invs);
        let reader = Reader::from_reader(Path::new("rt.csv"), std::io::Cursor::new(text)).unwrap();
        let back: Vec<Invocation> = reader.collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(back, invs);
    }
}
