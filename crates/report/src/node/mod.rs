//! The node level's metrics: per-policy metrics from a stream of
//! [`RequestOutcome`]s.
//!
//! Per offered rate and policy, a [`Collector`] takes every outcome
//! ([`Collector::record`], memory independent of their number), and
//! [`Collector::finish`] names the functions and adds what the engine
//! measured ([`Usage`]: span, worker and dispatcher utilisation), giving a
//! [`PolicySummary`].
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
//! [`RequestOutcome`]: faasched_model::node::RequestOutcome
//! [`RequestOutcome::missed`]: faasched_model::node::RequestOutcome::missed
//! [`Placement::Drop`]: faasched_model::node::Placement::Drop
//! [`Histogram`]: crate::Histogram

mod metrics;

pub use metrics::{ALL, Collector, PolicySummary, ScopeSummary, Stats, Usage};
