//! The node level's metrics and output files: per-policy metrics from a
//! stream of [`RequestOutcome`]s, the terminal table, `summary.json`,
//! `summary.csv` and a self-contained `report.html`.
//!
//! The flow for one run of `node simulate`:
//!
//! 1. per offered rate and policy, a [`Collector`] takes every outcome
//!    ([`Collector::record`], memory independent of their number);
//! 2. [`Collector::finish`] names the functions and adds what the engine
//!    measured ([`Usage`]: span, worker and dispatcher utilisation), giving
//!    a [`PolicySummary`];
//! 3. the summaries, grouped by offered rate into [`Load`]s, with the run's
//!    settings form a [`Summary`]: [`render_table`] shows it on a terminal,
//!    [`write_outputs`] writes `summary.json` and `summary.csv`, and
//!    [`write_report`] `report.html`, all through one [`Staged`] so that
//!    they take their places together.
//!
//! # What is measured
//!
//! Per scope of a policy at an offered rate (`all` requests, then each
//! function that had requests):
//!
//! 1. **requests**: outcomes recorded, dropped ones included;
//! 2. **dropped**: refused by the dispatcher ([`Placement::Drop`]); they never
//!    ran and have no latency;
//! 3. **missed**: finished after the absolute deadline (arrival + relative
//!    deadline, [`RequestOutcome::missed`]) **or dropped**; the miss rate is
//!    missed / requests, so a policy cannot lower it by dropping;
//! 4. **latency** = response sent − request received, and **slowdown** =
//!    latency / work, over the finished requests: mean, p50, p99, p99.9, max;
//! 5. **throughput**: finished requests per second over the run's span;
//! 6. **preemptions per request**: times a finished request was taken off a
//!    worker before it finished, over the finished requests (a dropped one
//!    never ran).
//!
//! Worker and dispatcher utilisation (busy time / span, one number each) are
//! the engine's, kept as given; the table and the report show their means.
//!
//! # Percentiles and memory
//!
//! Latency is recorded in ns into a [`Histogram`], slowdown in fixed point
//! (⌊latency · 10⁶ / work⌋, work at least 1 ns); they are reported divided by
//! 10³ (latency in µs) and 10⁶ (slowdown as a ratio). Percentiles are
//! nearest-rank: the p-th percentile of n values is the value of rank
//! ⌈p·n/100⌉ (at least 1) in ascending order, so p99.9 of 1000 values is the
//! 999th and of 100 values the largest. They are exact for latencies below
//! 2048 ns and within 0.049% (2^-11) above; mean and max are exact. Memory
//! grows with the number of functions and the range of the values, never
//! with the number of requests.
//!
//! # Files
//!
//! Bytes are deterministic: loads, policies and scopes keep the order given
//! (functions in id order), JSON objects come from structs (fixed key order)
//! and floats are printed by serde_json and csv (shortest round trip).
//! Latency is in µs (`_us`): node-level requests run for µs to ms. A
//! statistic with nothing to cover (nothing finished, a span of 0) is `null`
//! in JSON and an empty cell in CSV.
//!
//! `summary.csv` has one [`Row`] per scope, policy and rate, under
//! [`SUMMARY_CSV_HEADER`]. `summary.json` is
//!
//! ```text
//! {"schema_version": 1, "faasched_version": "X.Y.Z", "settings": ...,
//!  "rows": [...], "loads": [{"rate_rps": R, "policies": {"NAME": {...}}}]}
//! ```
//!
//! 1. `schema_version` is [`SUMMARY_SCHEMA_VERSION`], raised when a key goes
//!    away or changes meaning (not when one is added);
//! 2. `settings` is the caller's description of the run, as given;
//! 3. `rows` are the lines of `summary.csv` as objects, ordered by load, then
//!    policy, then scope;
//! 4. `loads` gives, per offered rate and policy in the order given, what
//!    the engine measured: `span_ms`, `worker_utilisation` and
//!    `dispatcher_utilisation` (arrays) and `mean_worker_utilisation` and
//!    `mean_dispatcher_utilisation`.
//!
//! `report.html` is the page every level shares, self-contained (inline CSS
//! and SVG, no script, no external resource):
//!
//! 1. a header: the title and the legend, one colour per policy in order of
//!    first appearance, each with a checkbox that hides the policy in every
//!    chart and table (CSS `:has`);
//! 2. the run's settings, a line each, nested objects (the workload, the
//!    costs) as indented lists;
//! 3. for a sweep (two or more distinct offered rates), per scope one chart
//!    per [`METRICS`] entry against the offered load, a line per policy, as
//!    the SledgeScale paper's Figs 8–12 draw them: p99.9 latency and p99.9
//!    slowdown on log axes, the deadline miss rate on a linear one. A line
//!    breaks at a rate where the policy has no value (nothing finished);
//! 4. per offered rate, a table of every policy's numbers (`all`, then each
//!    function); for a single rate, one bar chart per [`METRICS`] entry: a
//!    group of bars per scope, a bar per policy;
//! 5. a footer defining the terms.
//!
//! Every chart is a `<figure class="chart" data-kind="KIND">` (with
//! `data-scope="SCOPE"` on the curves), KIND a [`ChartMetric::kind`].
//!
//! [`RequestOutcome`]: faasched_model::node::RequestOutcome
//! [`RequestOutcome::missed`]: faasched_model::node::RequestOutcome::missed
//! [`Placement::Drop`]: faasched_model::node::Placement::Drop
//! [`Histogram`]: crate::Histogram
//! [`Staged`]: crate::Staged

mod capacity;
mod html;
mod metrics;
mod output;
mod table;

pub use capacity::{
    CapacityCurve, CapacityPage, CapacityProbe, render_capacity_html, write_capacity_report,
};
pub use html::{Axis, ChartMetric, METRICS, render_html, write_report};
pub use metrics::{ALL, Collector, PolicySummary, ScopeSummary, Usage};
pub use output::{
    Load, Row, SUMMARY_CSV_HEADER, SUMMARY_SCHEMA_VERSION, Summary, policy_rows, write_outputs,
};
pub use table::render_table;
