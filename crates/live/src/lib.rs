//! Live: run and steer real function processes on a stock Linux kernel.
//!
//! The simulator answers "what would happen"; this crate answers "what happens".
//! It holds the function suite (real programs the `faasched` binary runs as
//! `faasched fn NAME`), their calibration against this machine's CPU, the
//! launcher that replays a workload, and the agent; the system calls under
//! them are faasched-sys's.

pub mod agent;
pub mod calibration;
pub mod cluster;
pub mod http;
pub mod node;
pub mod observe;
pub mod privilege;
pub mod replay;
pub mod steering;
pub mod suite;
pub mod watchbench;

// The system calls, as `crate::sys::...`, private: faasched-sys is the one
// crate that offers them.
use faasched_sys as sys;
