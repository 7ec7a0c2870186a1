//! The operating-system level's metrics and output files: per-policy
//! metrics from a stream of [`Outcome`](faasched_model::Outcome)s, cost,
//! the terminal table, `summary.json`, `summary.csv`, `invocations.csv` and
//! a self-contained `report.html`.
//!
//! The flow for one run:
//!
//! 1. per policy, a [`Collector`] takes every outcome ([`Collector::record`],
//!    constant memory) and, if asked, an [`InvocationsWriter`] streams them
//!    to `invocations.csv`;
//! 2. [`Collector::finish`] turns the collector into a [`PolicySummary`];
//! 3. the summaries, with free-form workload and machine descriptions, form a
//!    [`Summary`], which [`write_outputs`] writes as `summary.json` and
//!    `summary.csv` and [`render_table`] shows on a terminal;
//! 4. one or more summaries, each a [`Section`] of a [`Report`], become one
//!    self-contained `report.html` ([`render_html`], [`write_report`]): turnaround
//!    CDFs and percentiles per group, context switches, cost and completions
//!    over time, one colour per policy.
//!
//! Vocabulary (turnaround, response, execution, waiting, slowdown, groups, cost)
//! follows docs/OUTPUTS.md. Percentiles are nearest-rank, from a log-bucketed
//! [`Histogram`](crate::Histogram) (exact below 2048, within 0.049% above).
//! [`fidelity`] measures how far a simulation's distribution is from a live
//! run's.

mod charts;
pub mod fidelity;
mod html;
mod metrics;
mod output;
mod table;
mod timeline;

pub use html::{Report, Section, render_html, write_report};
pub use metrics::{
    CDF_STEPS_PER_OCTAVE, CdfPoint, Collector, Metric, PolicySummary, REPORT_SCALE, Scope,
    ScopeSummary,
};
pub use output::{
    INVOCATIONS_CSV_HEADER, InvocationsWriter, Row, SUMMARY_CSV_HEADER, SUMMARY_SCHEMA_VERSION,
    Summary, read_summary_rows, write_outputs,
};
pub use table::render_table;
pub use timeline::{COMPLETION_BUCKETS, Completions, FIRST_BUCKET_WIDTH};
