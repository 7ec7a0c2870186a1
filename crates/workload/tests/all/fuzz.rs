//! Fuzzing: arbitrary bytes, and valid fixtures with a few bytes changed, fed to
//! every reader. Each must answer `Ok` or `Err`, never panic; an `Ok` trace must
//! still be sorted with dense ids, and the CSV reader must stop at its first error.

use crate::common::{assert_sorted_with_dense_ids, copy_dir, fixture};
use faasched_workload::csv::Reader;
use faasched_workload::traces::{Arrivals, Trace, azure2019, azure2021, huawei2023};
use faasched_workload::{Error, Result};
use proptest::prelude::*;
use std::io::Cursor;
use std::path::Path;

/// Keeps fuzzed counts from making the readers build huge traces.
const MAX_INVOCATIONS: u64 = 5_000;

/// One edit of a byte string.
#[derive(Clone, Debug)]
enum Edit {
    Replace(usize, u8),
    Insert(usize, u8),
    Delete(usize),
}

/// Bytes that matter to CSV and numbers more often than chance would pick them.
fn byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        any::<u8>(),
        prop::sample::select(b",\n\r\"-.;0123456789eEciNa ".to_vec()),
    ]
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        (any::<usize>(), byte()).prop_map(|(at, b)| Edit::Replace(at, b)),
        (any::<usize>(), byte()).prop_map(|(at, b)| Edit::Insert(at, b)),
        any::<usize>().prop_map(Edit::Delete),
    ];
    prop::collection::vec(edit, 1..8)
}

/// Applies `edits` to `bytes`, positions taken modulo the length.
fn mutate(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for edit in edits {
        let len = bytes.len().max(1);
        match *edit {
            Edit::Replace(at, b) if !bytes.is_empty() => bytes[at % len] = b,
            Edit::Insert(at, b) => bytes.insert(at % (bytes.len() + 1), b),
            Edit::Delete(at) if !bytes.is_empty() => {
                bytes.remove(at % len);
            }
            _ => {}
        }
    }
    bytes
}

fn arrivals() -> impl Strategy<Value = Arrivals> {
    prop::sample::select(vec![
        Arrivals::Uniform,
        Arrivals::Equidistant,
        Arrivals::Poisson,
    ])
}

/// Reads `bytes` as a workload CSV to the end; the reader must stop at an error.
fn drain_csv(bytes: Vec<u8>) -> std::result::Result<(), TestCaseError> {
    let Ok(reader) = Reader::from_reader(Path::new("fuzz.csv"), Cursor::new(bytes)) else {
        return Ok(());
    };
    let results: Vec<Result<_>> = reader.collect();
    let errors = results.iter().filter(|r| r.is_err()).count();
    prop_assert!(errors <= 1);
    prop_assert!(errors == 0 || results.last().is_some_and(|r| r.is_err()));
    Ok(())
}

/// Checks what a trace reader answered.
fn check_trace(result: Result<Trace>) -> std::result::Result<(), TestCaseError> {
    match result {
        Ok(trace) => {
            prop_assert!(trace.invocations.len() as u64 <= MAX_INVOCATIONS);
            assert_sorted_with_dense_ids(&trace.invocations);
        }
        Err(Error::Parse { .. } | Error::Io { .. } | Error::Invalid { .. }) => {}
        Err(other) => prop_assert!(false, "unexpected error {other:?}"),
    }
    Ok(())
}

/// A copy of fixture directory `name` whose file `target` holds `bytes`, or, if
/// `bytes` is `None`, that file changed by `edits`.
fn fuzzed_dir(
    name: &str,
    target: &str,
    bytes: Option<Vec<u8>>,
    edits: &[Edit],
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(name), dir.path());
    let path = dir.path().join(target);
    let bytes = bytes.unwrap_or_else(|| mutate(std::fs::read(&path).unwrap(), edits));
    std::fs::write(&path, bytes).unwrap();
    dir
}

const AZURE2019_FILES: [&str; 3] = [
    "invocations_per_function_md.anon.d01.csv",
    "function_durations_percentiles.anon.d01.csv",
    "app_memory_percentiles.anon.d01.csv",
];

const HUAWEI_FILES: [&str; 4] = [
    "requests_minute/day_00.csv",
    "requests_minute/day_001.csv",
    "function_delay_minute/day_00.csv",
    "function_delay_minute/day_001.csv",
];

fn read_azure2019(dir: &Path, arrivals: Arrivals, functions: Option<usize>) -> Result<Trace> {
    azure2019::read(&azure2019::Options {
        arrivals,
        functions,
        max_invocations: MAX_INVOCATIONS,
        ..azure2019::Options::new(dir, 1)
    })
}

fn read_azure2021(dir: &Path, functions: Option<usize>) -> Result<Trace> {
    azure2021::read(&azure2021::Options {
        functions,
        max_invocations: MAX_INVOCATIONS,
        ..azure2021::Options::new(dir.join("trace.csv"))
    })
}

fn read_huawei(dir: &Path, arrivals: Arrivals, functions: Option<usize>) -> Result<Trace> {
    huawei2023::read(&huawei2023::Options {
        arrivals,
        functions,
        max_invocations: MAX_INVOCATIONS,
        ..huawei2023::Options::new(dir, [0, 1])
    })
}

fn arbitrary_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(byte(), 0..512)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn workload_csv_arbitrary_bytes(bytes in arbitrary_bytes()) {
        drain_csv(bytes)?;
    }

    #[test]
    fn workload_csv_rows_after_a_good_header(bytes in arbitrary_bytes()) {
        let mut input = b"id,function,arrival_us,phases,memory_mb,deadline_us\n".to_vec();
        input.extend(bytes);
        drain_csv(input)?;
    }

    #[test]
    fn workload_csv_mutated_fixture(edits in edits()) {
        let fixture = std::fs::read(fixture("workload/basic.csv")).unwrap();
        drain_csv(mutate(fixture, &edits))?;
    }

    #[test]
    fn azure2019_mutated(
        file in 0..AZURE2019_FILES.len(),
        edits in edits(),
        arrivals in arrivals(),
        functions in prop::option::of(0usize..4),
    ) {
        let dir = fuzzed_dir("azure2019", AZURE2019_FILES[file], None, &edits);
        check_trace(read_azure2019(dir.path(), arrivals, functions))?;
    }

    #[test]
    fn azure2019_arbitrary_bytes(file in 0..AZURE2019_FILES.len(), bytes in arbitrary_bytes()) {
        let dir = fuzzed_dir("azure2019", AZURE2019_FILES[file], Some(bytes), &[]);
        check_trace(read_azure2019(dir.path(), Arrivals::Uniform, None))?;
    }

    #[test]
    fn azure2021_mutated(edits in edits(), functions in prop::option::of(0usize..4)) {
        let dir = fuzzed_dir("azure2021", "trace.csv", None, &edits);
        check_trace(read_azure2021(dir.path(), functions))?;
    }

    #[test]
    fn azure2021_arbitrary_bytes(bytes in arbitrary_bytes()) {
        let dir = fuzzed_dir("azure2021", "trace.csv", Some(bytes), &[]);
        check_trace(read_azure2021(dir.path(), None))?;
    }

    #[test]
    fn huawei2023_mutated(
        file in 0..HUAWEI_FILES.len(),
        edits in edits(),
        arrivals in arrivals(),
        functions in prop::option::of(0usize..4),
    ) {
        let dir = fuzzed_dir("huawei2023", HUAWEI_FILES[file], None, &edits);
        check_trace(read_huawei(dir.path(), arrivals, functions))?;
    }

    #[test]
    fn huawei2023_arbitrary_bytes(file in 0..HUAWEI_FILES.len(), bytes in arbitrary_bytes()) {
        let dir = fuzzed_dir("huawei2023", HUAWEI_FILES[file], Some(bytes), &[]);
        check_trace(read_huawei(dir.path(), Arrivals::Uniform, None))?;
    }
}
