//! The live crate's integration tests, one binary: a module per area.

mod gateway;
mod ingress;
mod replay;
