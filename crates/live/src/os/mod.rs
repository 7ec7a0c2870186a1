//! The operating-system level, live: real function processes on a stock
//! Linux kernel, steered by the simulator's policies.
//!
//! - [`suite`]: the real programs the `faasched` binary runs as `faasched fn
//!   NAME`, and [`unit_cpu`]: the CPU time each one's work unit takes on this
//!   machine, so a workload's CPU phases become real work of the right length;
//! - [`replay`]: the launcher that replays a workload, each invocation a
//!   process at its arrival instant, and [`steering`]: the policy's calls
//!   driven by the kernel's own accounting;
//! - [`agent`]: steering processes a platform hands over on a Unix socket;
//! - [`observe`]: what the kernel tells of a process (schedstat, rusage,
//!   `/proc/stat`), [`privilege`]: what this process may set, and
//!   [`watchbench`]: how promptly a watcher notices CPU used.

pub mod agent;
pub mod observe;
pub mod privilege;
pub mod replay;
pub mod steering;
pub mod suite;
pub mod unit_cpu;
pub mod watchbench;
