//! The discrete-event engines of every level, deterministic: the same
//! inputs give the same outcomes, and memory stays proportional to the
//! work in flight.
//!
//! - [`os`]: invocations through the kernel model (`faasched-kernel`) under
//!   a steering policy;
//! - [`node`]: requests through a node's dispatchers and workers under a
//!   dispatch policy;
//! - [`cluster`]: invocations through a router over servers that keep warm
//!   containers.

pub mod cluster;
pub mod node;
pub mod os;
mod slots;

/// The last instant any engine simulates, shared by every level: past it a
/// run stops with an error rather than overflow its clock.
pub use faasched_kernel::RUN_LIMIT;
