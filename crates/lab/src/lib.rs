//! faasched's lab: everything the `faasched` commands do, as a library.
//!
//! - [`os`], [`node`], [`cluster`]: each level's policy catalogue, runs,
//!   live replays and sim-against-live comparison;
//! - [`experiment`]: the papers' experiments as data, of every level, and
//!   [`level`]: the one runner of them, in parallel;
//! - [`bench`]: what `faasched bench` times;
//! - [`workload`]: workload CSV generated or imported from a trace;
//! - [`interrupt`], [`progress`], [`output`], [`stdout`]: what the runs
//!   share, and [`failures`]: why a live load's calls failed.
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
#[cfg(feature = "live")]
pub mod calls;
pub mod catalogue;
pub mod cluster;
pub mod compare;
pub mod experiment;
#[cfg(feature = "live")]
pub mod failures;
pub mod interrupt;
pub mod level;
pub mod message;
pub mod node;
pub mod os;
pub mod output;
pub mod progress;
pub mod stdout;
pub mod table;
pub mod text;
#[cfg(feature = "live")]
pub mod tls;
pub mod workload;
