//! The cluster level's metrics: per router and keep-alive policy, from a
//! stream of [`InvocationOutcome`]s, in memory independent of their number.
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
//!    "median function slowdown"): mean, p50, p99, p99.9, max.
//!
//! Percentiles are nearest-rank, as at the node level (see
//! [`crate::node`]): latency is recorded in µs and slowdown in fixed point
//! (⌊latency · 10⁶ / warm⌋) into log-bucketed histograms, within 0.049%;
//! the function slowdowns are exact (one value per function).

mod metrics;
mod output;

pub use metrics::{ClusterSummary, Collector};
pub use output::{
    CLUSTER_SCHEMA_VERSION, ClusterRow, ClusterUsage, LoadPoint, cluster_json,
    render_cluster_table, write_cluster_outputs,
};
