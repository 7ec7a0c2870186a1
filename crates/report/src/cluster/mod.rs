//! The cluster level's metrics: per router and keep-alive policy, from a
//! stream of [`InvocationOutcome`]s, in memory independent of their number.
//!
//! [`InvocationOutcome`]: faasched_model::cluster::InvocationOutcome
//!
//! # What is measured
//!
//! Per policy (a router with a keep-alive policy on every server):
//!
//! 1. **invocations**: outcomes recorded, dropped ones included; **dropped**:
//!    the router sent them nowhere, or no server could make room for their
//!    container; they have no latency;
//! 2. **cold starts**: finished invocations that started a new container;
//!    the cold-start ratio is cold starts / finished;
//! 3. **latency** = finish − arrival, in ms, and **slowdown** = latency / the
//!    function's warm time alone on an idle server (CH-RLU §6.3), over the
//!    finished invocations: mean, p50, p99, p99.9, max;
//! 4. **global latency increase** = mean slowdown − 1, as a share: the
//!    paper's §6.1 metric, each invocation's latency over its function's
//!    least latency, averaged per function and weighted by the function's
//!    share of the invocations, which is the mean over every invocation
//!    (our least latency is the warm time, as the paper's simulator takes
//!    it);
//! 5. **function slowdown**: each function's mean slowdown, and their
//!    distribution over the functions, each counted once (Fig. 12's
//!    "median function slowdown"): mean, p50, p99, p99.9, max;
//! 6. **cost**: what the finished invocations' executions would cost on a
//!    FaaS provider ([`crate::cost`]: billed duration finish − first run,
//!    the moment the invocation's work first took a core on its server:
//!    after a cold start that holds no core, and after any wait in a
//!    node's queues or a kernel's run queue), over the invocations whose
//!    first run is known (every one simulated; none live, where a node's
//!    answer does not say);
//! 7. **per function** ([`FunctionSummary`], `functions.csv`): each
//!    function's invocations, finished, cold starts, mean end-to-end
//!    latency, mean slowdown and cost (means only: a percentile per
//!    function would hold a histogram per function);
//! 8. **node servers** (where a node engine runs each server's work under a
//!    node policy): of the invocations that started on a server, the share
//!    that **missed** their deadline there (finished after it, or dropped
//!    by the node's policy), the node's **drops**, and **preemptions** per
//!    invocation ([`NodeSummary`]); absent where servers share their cores;
//!    **OS servers** (where the kernel model runs each server's work under
//!    an OS policy): context **switches** per invocation, and of them the
//!    **preemptions**, the kernel taking an invocation's core away
//!    ([`OsSummary`]);
//! 9. **decision time**: the wall-clock time of the router's decisions
//!    ([`DecisionTimes`]), the one measure that differs between two runs
//!    of the same seed: it goes to `timing.json`, never into the files
//!    above.
//!
//! Percentiles are nearest-rank, as at the node level (see
//! [`crate::node`]): latency is recorded in µs and slowdown in fixed point
//! (⌊latency · 10⁶ / warm⌋) into log-bucketed histograms, within 0.049%;
//! the function slowdowns are exact (one value per function).
//!
//! # report.html
//!
//! [`write_cluster_report`] writes the page every level shares,
//! self-contained (inline CSS and SVG, no script, no external resource; the
//! same rows give the same bytes):
//!
//! 1. a header: the title and the legend, one colour per router in the
//!    rows' order, each with a checkbox that hides the router in every chart
//!    and table (CSS `:has`);
//! 2. the run's settings, as summary.json records them, a line each, nested
//!    objects as indented lists;
//! 3. a table of every [`ClusterRow`]: invocations, dropped, cold-start
//!    ratio, global latency increase, slowdown p50 and p99, median function
//!    slowdown, mean load variance, utilisation, cost; with node or OS
//!    servers, a second table of what they measured inside (node deadline
//!    misses, drops and preemptions; OS switches and preemptions);
//! 4. bar charts across routers, one bar per row, one chart per metric
//!    (CH-RLU's Figs. 7, 8, 12, 13): global latency increase, cold-start
//!    ratio, drops as a share of the invocations, mean load variance and
//!    median function slowdown; a row without a value gets a dash;
//! 5. the published loads against simulated time
//!    ([`ClusterRow::load_series`], Figs. 8c and 9b): their variance across
//!    servers, then their mean, a line per router; long series are
//!    averaged down to a drawable number of points, and a chart with no
//!    point says so;
//! 6. a footer defining the terms.
//!
//! A value axis starts at zero unless the values it shows are more than
//! 100 times apart (an overloaded baseline against the rest): then it is
//! logarithmic, and says so in its title.
//!
//! Every chart is a `<figure class="chart" data-kind="KIND">`.

mod html;
mod metrics;
mod output;
mod timing;

pub use html::{render_cluster_html, write_cluster_report};
pub use metrics::{ClusterSummary, Collector, FunctionSummary, NodeSummary, OsSummary};
pub use output::{
    CLUSTER_SCHEMA_VERSION, ClusterRow, ClusterUsage, FunctionRow, LoadPoint, cluster_json,
    render_cluster_table, write_cluster_outputs,
};
pub use timing::{
    DecisionTimes, TIMED_EVERY, TIMING_SCHEMA_VERSION, render_decision_times, timing_json,
    write_cluster_timing,
};
