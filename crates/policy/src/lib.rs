//! The policies of every level, pure: each gets plain values and the time,
//! and answers with a decision; none reads a clock, sleeps or does I/O, so
//! the simulators and the live runtimes drive the same code.
//!
//! - [`os`]: steering policies over a stock kernel's knobs (ALPS, SFS, the
//!   hybrid FIFO+CFS scheduler and the baselines), the `Steer` seam's;
//! - [`node`]: dispatch policies binding requests to worker threads
//!   (SledgeScale and its baselines), the `Dispatch` seam's;
//! - [`cluster`]: routers and keep-alive policies over servers (CH-RLU and
//!   its baselines), the `Route` and `KeepAlive` seams';
//! - [`BadParam`]: the error a parameter out of range gives, at every level.

pub mod cluster;
pub mod node;
pub mod os;
mod param;

pub use param::BadParam;
