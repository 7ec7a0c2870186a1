//! The system calls faasched needs that std does not wrap. Every `unsafe`
//! block of the crate lives under this module, each one a single call whose
//! arguments are checked by the safe function around it.
#![allow(unsafe_code)]

pub mod clock;
pub mod cputimer;
pub mod dgram;
pub mod limits;
pub mod peercred;
pub mod pidfd;
pub mod poll;
pub mod process;
pub mod raw;
pub mod sched;
pub mod signals;
pub mod sockopt;
