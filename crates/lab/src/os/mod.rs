//! The operating-system level: steering policies over a machine's cores.
//!
//! - [`catalog`]: every steering policy as a typed spec, looked up once;
//! - [`tuning`]: the learning policies' parameters from a file and flags;
//! - [`run`]: one policy over a workload on a simulated [`run::Machine`],
//!   once or in parts;
//! - [`simulate`]: `faasched simulate`, several policies in turn;
//! - [`experiment`]: the ALPS and hybrid papers' figures as experiment
//!   cases;
//! - `replay`: the same for real on this machine, policies in turns or
//!   rounds (`faasched replay`);
//! - `compare`: both, and how far the simulation is from the measurement
//!   (`faasched compare`);
//! - `agent`, `exec`: the agent that steers processes a platform hands
//!   over, and its clients;
//! - `func`: the live runtime's function suite (`faasched fn`).
//!
//! All but `catalog`, `tuning`, `run`, `simulate` and `experiment` run
//! real processes;
//! they come with the `live` feature.

#[cfg(feature = "live")]
pub mod agent;
pub mod catalog;
#[cfg(feature = "live")]
pub mod compare;
#[cfg(feature = "live")]
pub mod exec;
pub mod experiment;
#[cfg(feature = "live")]
pub mod func;
#[cfg(feature = "live")]
pub mod replay;
pub mod run;
pub mod simulate;
pub mod tuning;
