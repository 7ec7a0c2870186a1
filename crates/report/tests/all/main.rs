//! The report crate's integration tests, one binary: a module per area.

mod collector;
mod common;
mod node;
mod output;
