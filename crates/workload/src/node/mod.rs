//! Node-level workloads: requests for one node's dispatchers and workers
//! ([`faasched_model::node::Request`]), from SledgeScale's built-in
//! workloads (sledgescale-sec25 Table 3) or from a workload CSV.
//!
//! - [`Workload`]: a built-in by name, with its per-function [`Profile`]
//!   (mean work, shares of requests and of work) and its capacity;
//! - [`Workload::requests`]: a seeded open-loop Poisson stream of its
//!   requests ([`Params`]), with [`Deadlines`] (10 × work by default,
//!   per-function overrides) and an [`Estimate`] (exact or noisy);
//! - [`RequestFile`]: a workload CSV whose rows are one CPU phase each,
//!   with its profile.
//!
//! Times are whole ns (a 600 kRPS stream has gaps of about 1.7 µs, which
//! the workload CSV's µs would distort); a stream written to a workload CSV
//! is rounded to µs by its writer.

mod builtin;
mod deadline;
mod estimate;
mod file;
mod generate;
mod profile;
mod work;

pub use builtin::{DEFAULT_DEADLINE_FACTOR, FunctionMix, Workload};
pub use deadline::{Deadline, Deadlines};
pub use estimate::Estimate;
pub use file::{FileRequests, RequestFile};
pub use generate::{Length, MAX_RATE_PER_S, Params, Requests};
pub use profile::{FunctionProfile, Profile};
pub use work::{LOGNORMAL_CAP, LOGNORMAL_FLOOR, LOGNORMAL_MU_LN_MS, LOGNORMAL_SIGMA, Work};
