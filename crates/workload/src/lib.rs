//! Workloads for faasched: synthetic generators, production trace readers, load
//! scaling and the workload CSV (v1) interchange format (docs/WORKLOADS.md).

pub mod cluster;
pub mod csv;
pub mod error;
mod ids;
pub mod node;
pub mod scale;
mod source;
pub mod synthetic;
pub mod traces;

pub use error::{Error, Result};
pub use source::{Choice, DEFAULT_INVOCATIONS, DEFAULT_LOAD, Source, Stream};
