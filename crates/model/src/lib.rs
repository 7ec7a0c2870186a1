//! The vocabulary of faasched: time, invocations, outcomes, the kernel attributes a
//! policy may set, and the seams that both the simulator and the live runtime
//! drive: [`Steer`] at the OS level, [`node::Dispatch`] at the node level,
//! [`cluster::Route`] and [`cluster::KeepAlive`] at the cluster level.
//!
//! This crate is the floor of the workspace (see docs/ARCHITECTURE.md): it holds types and
//! traits only, no I/O, no clocks, no randomness.

mod attrs;
pub mod cluster;
mod function;
mod idmap;
mod invocation;
pub mod node;
mod steer;
mod time;

pub use attrs::{Attrs, Class, CpuSet, MAX_CPUS, Privileges, nice_to_weight};
pub use function::{Function, FunctionId, Functions};
pub use idmap::{IdHasher, IdMap};
pub use invocation::{Group, Invocation, Outcome, Phase, Phases};
pub use steer::{Load, Steer, TaskId, TaskInfo};
pub use time::{MS, Nanos, SEC, TIME_LIMIT, Time, US, fmt_ms};
