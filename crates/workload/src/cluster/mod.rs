//! Cluster-level workloads: function tables and invocation streams for the
//! cluster's router and servers ([`faasched_model::cluster`]).
//!
//! | source | what | type |
//! |---|---|---|
//! | CH-RLU Table 1 | 8 FunctionBench functions | [`FunctionTable::functionbench`] |
//! | table CSV | `name,memory_mb,warm_ms,cold_ms` | [`FunctionTable::read_csv`] |
//! | `azure-functions` | synthetic Azure-like population, open loop, scaled to a load | [`AzureFunctions`] |
//! | Azure Functions 2019 day | table (top N by invocations) and replay | [`AzureTrace`] |
//! | Fig 9 bursts | two top functions boosted every 30 s | [`Boosts`], [`Boosted`] |
//! | Fig 10 rising burst | open loop, 2 → 18 invocations/s over 25 min | [`Ramp`], [`RateProfile`] |
//! | Locust clients | closed loop, think U(0, 1 s) | [`ClosedLoop`] |
//! | workload CSV (v1) | a row per invocation, work = its CPU | [`FileInvocations`] |
//!
//! What every stream shares:
//! 1. It yields [`Invocation`](faasched_model::cluster::Invocation)s in
//!    arrival order, ids 0, 1, 2, ...; the function ids are the table's.
//! 2. An invocation's work is its function's warm time (the file reader's is
//!    its row's CPU): a cold start adds the table's cold − warm.
//! 3. The same seed and inputs give the same stream; randomness comes from
//!    seeded [`rand_pcg::Pcg64`]s, and no decision depends on hash order.
//! 4. Generators hold per-function state only: memory does not grow with
//!    the stream's length (the Azure replay holds its window, as the trace
//!    reader does).

mod azure;
mod bursts;
mod closed;
mod file;
mod stream;
mod synthetic;
mod table;

pub use azure::{AzureOptions, AzureTrace, DEFAULT_WARM_QUANTILE, Replay, TABLE_SEED};
pub use bursts::{BoostSpec, Boosted, Boosts, Ramp, RateProfile};
pub use closed::{ClosedLoop, DEFAULT_THINK, HEAVY_LOAD_THREADS, LOW_LOAD_THREADS};
pub use file::FileInvocations;
pub use stream::{OpenLoop, Weights};
pub use synthetic::{
    AzureFunctions, AzureParams, BURR_C, BURR_K, BURR_LAMBDA, DEFAULT_FUNCTIONS, DURATION_MU,
    DURATION_SIGMA, MAX_FUNCTIONS, MAX_MEMORY_MB, MAX_WARM, MIN_FITTED_PER_MINUTE, MIN_MEMORY_MB,
    MIN_WARM, RATE_LOG10_MEAN, RATE_LOG10_SD, Summary, fitted_rates_per_minute,
};
pub use table::{DEFAULT_COLD_START, FunctionTable, TABLE_HEADER};
