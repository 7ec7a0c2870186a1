//! What `--out` and `--json` say a command writes where it writes more
//! than a simulation's files (the help of the lab's `Outputs`), set with
//! clap's `mut_arg`.

/// `--out` of the OS level's `simulate` and `replay`.
pub const OS_FILES: &str = "Write summary.json, summary.csv, invocations.csv and report.html \
(charts of the summary, one self-contained page) into this directory. Files are written as \
hidden .NAME.faasched-partial.PID and renamed into place together once all are written; what a \
killed run leaves is removed by the next run writing into DIR";

/// `--out` of `node compare` and `cluster compare`.
pub const COMPARE_FILES: &str = "Write compare.json and compare.csv, and each world's \
summary.json, summary.csv and report.html in sim/ and live/, into this directory, together, \
once all are written";

/// `--json` of every compare.
pub const COMPARE_JSON: &str = "Print compare.json to stdout instead of the table";
