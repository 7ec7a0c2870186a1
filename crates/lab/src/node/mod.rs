//! The node level: a catalogue of dispatch policies, and runs of a request
//! workload through the simulated node under them.

pub mod catalog;
