//! Live: run and steer real function processes on a stock Linux kernel.
//!
//! The simulator answers "what would happen"; this crate answers "what happens".
//! It holds the function suite (real programs the `faasched` binary runs as
//! `faasched fn NAME`), their calibration against this machine's CPU, and the
//! thin layer of system calls everything else is built on.

pub mod agent;
pub mod calibration;
pub mod observe;
pub mod privilege;
pub mod replay;
pub mod steering;
pub mod suite;
pub mod sys;
pub mod watchbench;
