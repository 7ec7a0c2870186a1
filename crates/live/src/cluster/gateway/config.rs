//! The gateway's knobs, and why a gateway cannot be built from them.

use crate::http::FrontConfig;
use crate::node::ingress;
use crate::tls::ClientTls;
use std::time::Duration;

/// Idle kept-alive connections per node by default: 8, more than a
/// 2-core machine's gateway has requests in flight to one node at once.
pub const DEFAULT_POOL: usize = 8;

/// How long the gateway waits for a node's answer by default.
pub const DEFAULT_FORWARD_TIMEOUT: Duration = Duration::from_secs(60);

/// How many times its deadline an invocation that names one waits for its
/// node by default: 10, so that a call due in 10 ms is given up at 100 ms,
/// long after its answer could be of use, and far past what a node that
/// merely queues it would take.
pub const DEFAULT_DEADLINE_FACTOR: u32 = 10;

/// The largest node answer the gateway passes on by default: 8 MiB. An
/// answer is read whole before it is passed on, so this bounds what one
/// invocation can make the gateway hold.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 << 20;

/// Why a gateway cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// A node address that is not `HOST:PORT`.
    #[error("node address {0:?} is not HOST:PORT")]
    BadNode(String),
    /// A gateway address (a node's `--register`) that is not `HOST:PORT`.
    #[error("gateway address {0:?} is not HOST:PORT")]
    BadGateway(String),
    /// The same node twice.
    #[error("node {0} is given twice")]
    Repeated(String),
    /// A function table with no function.
    #[error("the gateway's function table is empty")]
    NoFunctions,
}

/// The gateway's knobs. Build with [`GatewayConfig::new`] and its setters.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    pub(super) nodes: Vec<String>,
    pub(super) period: Duration,
    pub(super) pool: usize,
    pub(super) drain_timeout: Duration,
    pub(super) forward_timeout: Duration,
    pub(super) deadline_factor: Option<u32>,
    pub(super) front: FrontConfig,
    pub(super) max_response_bytes: usize,
    pub(super) node_tls: Option<ClientTls>,
}

impl GatewayConfig {
    /// A gateway over `nodes` (`HOST:PORT` each,
    /// [`Membership::Static`](crate::cluster::table::Membership::Static);
    /// none if every node registers itself), polling every 5 s (the
    /// nodes' default load period), keeping [`DEFAULT_POOL`] idle
    /// connections per node, draining for the node ingress's
    /// [`ingress::DEFAULT_DRAIN_TIMEOUT`].
    pub fn new(nodes: Vec<String>) -> GatewayConfig {
        GatewayConfig {
            nodes,
            period: Duration::from_secs(5),
            pool: DEFAULT_POOL,
            drain_timeout: ingress::DEFAULT_DRAIN_TIMEOUT,
            forward_timeout: DEFAULT_FORWARD_TIMEOUT,
            deadline_factor: Some(DEFAULT_DEADLINE_FACTOR),
            front: FrontConfig::default(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            node_tls: None,
        }
    }

    /// What it asks of its clients and lets them hold: its tokens (the
    /// control one guards `PUT` and `DELETE /nodes`; the invocation one is
    /// forwarded with the client's headers, so nodes that ask for the same
    /// token take it), its connections, a body's pace and TLS. By default
    /// [`FrontConfig`]'s.
    pub fn front(&mut self, front: FrontConfig) -> &mut GatewayConfig {
        self.front = front;
        self
    }

    /// Nodes are spoken to under TLS, their certificates checked against
    /// this CA: every node then serves TLS. By default plain HTTP.
    pub fn node_tls(&mut self, tls: Option<ClientTls>) -> &mut GatewayConfig {
        self.node_tls = tls;
        self
    }

    /// How often every node's load is polled. By default 5 s; a zero
    /// period counts as 1 ms.
    pub fn period(&mut self, period: Duration) -> &mut GatewayConfig {
        self.period = period.max(Duration::from_millis(1));
        self
    }

    /// Idle kept-alive connections kept per node. By default
    /// [`DEFAULT_POOL`].
    pub fn pool(&mut self, pool: usize) -> &mut GatewayConfig {
        self.pool = pool;
        self
    }

    /// How long a shutdown waits for the requests in flight. By default
    /// the node ingress's.
    pub fn drain_timeout(&mut self, timeout: Duration) -> &mut GatewayConfig {
        self.drain_timeout = timeout;
        self
    }

    /// How long an invocation waits for its node's answer before the
    /// gateway gives up on the node (502 `node-unreachable`), so that a
    /// node that hangs without closing holds nothing for ever. By default
    /// [`DEFAULT_FORWARD_TIMEOUT`].
    pub fn forward_timeout(&mut self, timeout: Duration) -> &mut GatewayConfig {
        self.forward_timeout = timeout;
        self
    }

    /// An invocation that names a deadline (`x-faasched-deadline-us`)
    /// waits at most `factor` times it for its node, where that is
    /// shorter than the forward timeout; past it the client gets 502
    /// `node-unreachable` and the node, seeing its client leave, stops
    /// the invocation. `None`: the forward timeout alone. By default
    /// [`DEFAULT_DEADLINE_FACTOR`].
    pub fn deadline_factor(&mut self, factor: Option<u32>) -> &mut GatewayConfig {
        self.deadline_factor = factor.filter(|&f| f > 0);
        self
    }

    /// The largest node answer passed on; a longer one is answered 502
    /// `response-too-large`. By default [`DEFAULT_MAX_RESPONSE_BYTES`].
    pub fn max_response_bytes(&mut self, bytes: usize) -> &mut GatewayConfig {
        self.max_response_bytes = bytes;
        self
    }
}
