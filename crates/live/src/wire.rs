//! The HTTP protocol of the live cluster, in one place: the `x-faasched-*`
//! header names that clients, the node runtime and the cluster gateway
//! all speak, the load report a node serves and a gateway polls, and the
//! requests and answers the node ingress and the gateway both parse and
//! build (in `request` and `response`, kept within the crate). Defined
//! once, so that a name or a field changes for every side at once.
//! docs/RUNTIME.md ("HTTP API") and docs/CLUSTER.md ("Live gateway")
//! describe it.

pub(crate) mod request;
pub(crate) mod response;

pub use request::{MAX_NAME, Malformed, arguments};

use hyper::header::HeaderName;
use serde::{Deserialize, Serialize};

/// Whether `name` is a hop-by-hop header, which a proxy does not forward
/// (RFC 9110 §7.6.1), or one whose message sets it itself (its framing,
/// `Content-Length`, and `Host`): the gateway forwards none of them, and
/// the node takes none from what a function answers, whose body's length
/// is what it wrote.
pub(crate) fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
    )
}

/// Request header: the workload function an invocation stands for, by
/// name; by default the path's function. The node keeps its estimates and
/// deadlines per function, the gateway routes on its profile.
pub const FUNCTION_HEADER: &str = "x-faasched-function";

/// Request header: an invocation's relative deadline, µs (for EDF).
pub const DEADLINE_HEADER: &str = "x-faasched-deadline-us";

/// Response header of a node: from the invocation's arrival at the runtime
/// to its completion, µs.
pub const RUNTIME_HEADER: &str = "x-faasched-runtime-us";

/// Response header of a node: the invocation's CPU time in its sandbox, µs.
pub const RUNTIME_CPU_HEADER: &str = "x-faasched-cpu-us";

/// Response header of a node: how often the invocation was preempted.
pub const PREEMPTIONS_HEADER: &str = "x-faasched-preemptions";

/// Response header of a node: `1` if the invocation started its container
/// cold, else `0`.
pub const COLD_HEADER: &str = "x-faasched-cold";

/// Response header of a node: a WASI command's exit status.
pub const EXIT_STATUS_HEADER: &str = "x-faasched-exit-status";

/// Response header of the gateway: the node (`HOST:PORT`) it forwarded the
/// invocation to.
pub const NODE_HEADER: &str = "x-faasched-node";

/// Response header of a failure: its kind (`overloaded`, `trap`,
/// `node-unreachable`, ...).
pub const ERROR_HEADER: &str = "x-faasched-error";

/// The JSON body of a node's `GET /load`, which the gateway polls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// The cores the load is over.
    pub cores: u32,
    /// Memory for containers, MB.
    pub memory_mb: u32,
    /// The 1-minute load average as `uptime` prints it, over `cores`.
    pub load: f64,
    /// When `load` was last sampled, ms since the ingress started (0
    /// before the first sample).
    pub published_ms: u64,
    /// Samples taken so far: a gateway sees a node's reports advance.
    pub seq: u64,
    /// The node's id, drawn when it started: one node reached under two
    /// addresses is one node to a gateway. Left out by a node that has
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}
