//! Live: the policies of every level run for real on this machine.
//!
//! The simulator answers "what would happen"; this crate answers "what happens".
//!
//! - [`os`]: real function processes on the stock kernel (the function suite,
//!   the launcher that replays a workload, steering, the agent);
//! - [`node`]: the WebAssembly node runtime (dispatchers, workers, HTTP
//!   ingress, containers, the load generator);
//! - [`cluster`]: the gateway that routes over node runtimes, and the clients
//!   that drive it;
//! - [`http`]: the HTTP server every live service shares;
//! - [`wire`]: the HTTP protocol they and their clients speak (header
//!   names, the load report, requests' parsing).
//!
//! The system calls under them are faasched-sys's.

pub mod auth;
pub mod cluster;
pub mod http;
pub mod load;
pub mod node;
pub mod os;
pub mod tls;
pub mod wire;

// The system calls, as `crate::sys::...`, private: faasched-sys is the one
// crate that offers them.
use faasched_sys as sys;
