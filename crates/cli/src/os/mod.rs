//! The operating-system level's commands: `simulate`, `replay`, `compare`,
//! `agent`, `exec` and `fn`, and the options they share.

pub mod agent;
pub mod compare;
pub mod exec;
pub mod func;
pub mod replay;
pub mod simulate;
