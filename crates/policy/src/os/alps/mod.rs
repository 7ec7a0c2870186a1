//! ALPS (alps-atc24): learn from an SRPT simulation of the last window a rank
//! and a time slice per function, and steer the kernel with them.

mod io;
mod learner;
mod params;
mod steer;

pub use io::IO_SHARE;
pub use learner::{Learned, Record, learn};
pub use params::{Params, Trainer, window_ns};
pub use steer::{Alps, Enforcement, MAX_HOLD, NICE_FIRST, NICE_LAST, UNRANKED};
