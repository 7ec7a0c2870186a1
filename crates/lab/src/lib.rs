//! faasched's lab: everything the `faasched` commands do, as a library.
//!
//! - [`catalog`]: every policy as a typed spec, looked up once;
//! - [`run`]: one policy over a workload on a simulated [`run::Machine`],
//!   once or in parts;
//! - `replay`: the same for real on this machine, policies in turns or
//!   rounds;
//! - `compare`: both, and how far the simulation is from the measurement;
//! - [`experiment`]: the papers' experiments as data, run in parallel;
//! - [`bench`]: what `faasched bench` times;
//! - [`interrupt`], [`progress`], [`output`]: what the runs share.
//!
//! `replay`, `compare` and the agent's bench run real processes; they come
//! with the `live` feature (on by default). Without it nothing here links
//! the live runtime: `simulate`, the experiments and the simulator's
//! benches need none of it.
//!
//! Errors are [`anyhow::Error`]s: this is the application's layer, whose
//! errors are shown to a user, never matched on (the crates below keep
//! typed errors).

pub mod bench;
pub mod catalog;
pub mod cluster;
#[cfg(feature = "live")]
pub mod compare;
pub mod experiment;
pub mod interrupt;
pub mod node;
pub mod output;
pub mod progress;
#[cfg(feature = "live")]
pub mod replay;
pub mod run;
