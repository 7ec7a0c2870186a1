//! The cluster level: a catalogue of routers and keep-alive policies, and
//! runs of an invocation workload through the simulated cluster under them.

pub mod catalog;
#[cfg(feature = "live")]
pub mod compare;
pub mod experiment;
pub mod figures;
#[cfg(feature = "live")]
pub mod live;
#[cfg(feature = "live")]
pub mod load;
#[cfg(feature = "live")]
pub mod replay;
pub mod run;
#[cfg(feature = "live")]
pub mod up;
