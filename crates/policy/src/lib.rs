//! Steering policies and the catalogue that names them.
//!
//! A steering policy implements [`faasched_model::Steer`]: it sets the stock
//! kernel's knobs on each task and nothing else, so the same code runs in the
//! simulator and (later) live. The sim-only mechanisms (SRPT, PS, global FIFO)
//! are kernel-model disciplines; the catalogue pairs them with a policy that sets
//! nothing.

mod alps;
mod baseline;
mod catalog;

pub use alps::{BadParam, Learned, Params as AlpsParams, Record, Trainer, learn};
pub use baseline::{BASELINE_RT_PRIO, Uniform};
pub use catalog::{POLICIES, Setup, UnknownPolicy, setup};
