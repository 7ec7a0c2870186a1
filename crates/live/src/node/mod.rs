//! The node level, live: a WebAssembly function runtime whose dispatchers
//! run the node simulator's policies, and what drives and measures it.

pub mod baseline;
pub mod bench;
pub mod cgi;
pub mod containers;
pub mod ingress;
pub mod invoke;
pub mod load;
pub mod manifest;
pub mod mechanism_costs;
pub mod runtime;
pub mod wasm;
