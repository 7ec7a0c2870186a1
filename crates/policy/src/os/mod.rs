//! The operating-system level: steering policies.
//!
//! A steering policy implements [`faasched_model::Steer`]: it sets the stock
//! kernel's knobs on each task and nothing else, so the same code runs in the
//! simulator and live. The sim-only mechanisms (SRPT, PS, global FIFO, the
//! ALPS paper's patched CFS) are kernel-model disciplines; the catalogue
//! (`faasched_lab::os::catalog`) names every policy and pairs each sim-only
//! discipline with the policy that steers it (one that sets nothing, or ALPS).

pub mod alps;
pub mod attained;
mod baseline;
pub mod gittins;
pub mod hybrid;
pub mod layer;
pub mod sfs;
#[cfg(test)]
mod testkit;
pub mod wait_guard;

pub use baseline::{BASELINE_RT_PRIO, Uniform};
