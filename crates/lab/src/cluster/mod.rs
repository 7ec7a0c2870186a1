//! The cluster level: a catalogue of routers and keep-alive policies, runs
//! of an invocation workload through the simulated cluster under them, and
//! the live gateway in front of node runtimes, with the clients that load
//! it: what the `faasched cluster` commands do.

#[cfg(feature = "live")]
pub mod calibrate;
pub mod catalog;
#[cfg(feature = "live")]
pub mod compare;
pub mod experiment;
pub mod figures;
#[cfg(feature = "live")]
pub mod gateway;
#[cfg(feature = "live")]
pub mod live;
#[cfg(feature = "live")]
pub mod load;
pub mod publish;
#[cfg(feature = "live")]
pub mod replay;
pub mod run;
pub mod simulate;
pub mod stack;
#[cfg(feature = "live")]
pub mod up;
