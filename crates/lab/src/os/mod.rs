//! The operating-system level: steering policies over a machine's cores.
//!
//! - [`catalog`]: every steering policy as a typed spec, looked up once;
//! - [`run`]: one policy over a workload on a simulated [`run::Machine`],
//!   once or in parts;
//! - `replay`: the same for real on this machine, policies in turns or
//!   rounds;
//! - `compare`: both, and how far the simulation is from the measurement.
//!
//! `replay` and `compare` run real processes; they come with the `live`
//! feature.

pub mod catalog;
#[cfg(feature = "live")]
pub mod compare;
#[cfg(feature = "live")]
pub mod replay;
pub mod run;
