//! The cli crate's integration tests, one binary: a module per area.

mod agent;
mod bench_cluster;
mod cli;
mod cluster;
mod cluster_compare;
mod cluster_gateway;
mod cluster_load;
mod common;
mod docs;
mod experiment;
mod faults;
mod func;
mod node;
mod node_calibrate;
mod node_commands;
mod node_load;
mod node_replay;
mod node_serve;
mod outputs;
mod replay;
mod report;
