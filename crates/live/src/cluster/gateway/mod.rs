//! The cluster gateway: HTTP in front of several node runtimes (`faasched
//! node serve`), routing every invocation with the cluster simulator's
//! [`Route`] policies, unchanged.
//!
//! | request | answer |
//! |---|---|
//! | `POST /invoke/{function}[?{query}]`, a body of at most the node ingress's default ([`DEFAULT_MAX_BODY_BYTES`](crate::node::ingress::DEFAULT_MAX_BODY_BYTES)) | the query and body forwarded as sent; the chosen node's answer, with `x-faasched-node: HOST:PORT` added; 503 `x-faasched-error: overloaded` if the router drops it, or while the gateway holds [`BODIES_HELD`](crate::wire::request::BODIES_HELD) of the largest bodies; 502 `x-faasched-error: node-unreachable` if the node fails before its answer or gives none within the forward timeout; 502 `response-too-large` if its answer is longer than [`GatewayConfig::max_response_bytes`] |
//! | `PUT /nodes/{HOST:PORT}` | 201 if the node joins the table ([`Membership::Registered`], up at once, idle until its first report, polled from the next round), 200 if it is in the table already (a heartbeat; nothing changes); 400 naming a malformed address; 401 `unauthorized` without the token, if the gateway has one ([`FrontConfig::token`](crate::http::FrontConfig::token)), as for `DELETE` |
//! | `DELETE /nodes/{HOST:PORT}` | 200: a registered node is dropped from the table, a static one (`--node`) taken down until its next report; 404 `x-faasched-error: unknown-node` if it is not in the table |
//! | `GET /metrics` | per node requests, errors, load, up; registrations, drops and leaves; the decision time and the forwarding overhead (quantiles); the mean load variance across the up nodes, in Prometheus text |
//! | `GET /status` | the nodes, their membership counts, the load evenness and the timings, JSON |
//!
//! The invariants:
//!
//! 1. A malformed request (the node ingress's rules: a bad name,
//!    [`FUNCTION_HEADER`] or deadline, a body too long or too slow) is
//!    answered 4xx and reaches no node; its query and body go to the node
//!    as sent, which checks what its function takes. A function the workload's table does not have (by
//!    [`FUNCTION_HEADER`] if given, else the path's name) is answered 404
//!    `unknown-function`, naming it.
//! 2. Every invocation is decided once under one lock: the router reads
//!    the [`NodeTable`]'s up nodes, their last reported loads (stale) and
//!    the gateway's own requests in flight on each, and the decision's
//!    time alone is measured. [`Choice::Drop`] is answered 503
//!    `overloaded`, and so is every invocation while no node is up (none
//!    given or registered yet, or all down), the body saying which.
//! 3. The invocation is forwarded, with its query and headers, over a
//!    kept-alive connection from the node's pool (at most
//!    [`GatewayConfig::pool`] idle ones kept), and the node's answer is
//!    returned whole. A connection that fails before the answer is
//!    counted against the node and answered 502: never silence, never a
//!    retry (an invocation is not idempotent).
//! 4. Every invocation is answered exactly once and counted on both sides:
//!    `received = answered` once the gateway is idle. Its outcome goes to
//!    [`Route::on_finish`] unless the set of up nodes changed meanwhile
//!    (its server id would then name another node). A node that leaves
//!    or is dropped meanwhile still gets its requests in flight answered,
//!    or answered 502.
//! 5. Every [`GatewayConfig::period`] the gateway polls every node's
//!    `GET /load`, each poll bounded by the period or [`MIN_POLL_TIMEOUT`],
//!    whichever is longer (a busy machine must not take a live node down
//!    for a short period); it updates the table
//!    (a report, or a miss: [`DOWN_AFTER_MISSES`] in a row take a node
//!    down, a report takes it back; a registered node is dropped once
//!    down) and calls [`Route::on_loads`]; then it pushes the up nodes'
//!    loads' mean and population variance into a [`LoadSeries`], as the
//!    cluster simulator does at each publication. One round runs before
//!    the gateway accepts its first request.
//! 6. Nodes join and leave while it serves (`PUT` and `DELETE
//!    /nodes/{HOST:PORT}`, under the same lock as a decision); when the
//!    up nodes change so, the router is told at once with
//!    [`Route::on_loads`], so what it derived from the last view never
//!    outlives the view.
//! 7. Shutdown drains like the node ingress ([`crate::http::serve`]).
//! 8. A node that fails between polls is out within about a second: one
//!    that refuses a connection at once, its invocation sent to the
//!    router's next choice (no byte of it reached the node); one that
//!    fails a forward otherwise once a probe ([`PROBE_TIMEOUT`]) fails
//!    too, that invocation answered 502 and never sent again.
//!
//! Where they are kept: `front` routes a request's path to its handler
//! and refuses what invariant 1 refuses; `decision` makes invariant 2's
//! decision and tells the router invariant 4's outcomes; `forward` takes
//! an invocation to its node and back (invariants 3 and 4) over `link`'s
//! kept-alive connections; `poll` runs invariant 5's rounds, `membership`
//! invariant 6's joins and leaves, `outage` invariant 8's; `metrics` keeps the counters and
//! renders `GET /metrics` and `GET /status`; `config` holds the knobs.
//!
//! [`FUNCTION_HEADER`]: crate::wire::FUNCTION_HEADER
//! [`Membership::Registered`]: super::table::Membership::Registered
//! [`Choice::Drop`]: faasched_model::cluster::Choice::Drop
//! [`DOWN_AFTER_MISSES`]: super::table::DOWN_AFTER_MISSES

mod config;
mod decision;
mod forward;
mod front;
mod link;
mod membership;
mod metrics;
mod outage;
mod poll;

pub use config::{
    DEFAULT_DEADLINE_FACTOR, DEFAULT_FORWARD_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_POOL,
    GatewayConfig, GatewayError,
};
pub use forward::{NODE_UNREACHABLE, RESPONSE_TOO_LARGE};
pub(super) use link::{connect, is_address};
pub use membership::UNKNOWN_NODE;
pub use outage::PROBE_TIMEOUT;
pub use poll::MIN_POLL_TIMEOUT;

use super::table::NodeTable;
use crate::http;
use crate::node::ingress;
use crate::tls::ClientTls;
use crate::wire::request::Bodies;
use faasched_model::cluster::loads::LoadSeries;
use faasched_model::cluster::{FunctionProfile, Route};
use faasched_model::{Nanos, Time};
use front::Front;
use link::NodeLink;
use metrics::Metrics;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// A gateway, built and ready to serve.
pub struct Gateway {
    inner: Arc<Inner>,
}

/// How a served gateway ended, and what it measured.
#[derive(Clone, Debug, PartialEq)]
pub struct GatewayServed {
    /// Invocations received (well-formed, of a known function).
    pub received: u64,
    /// Of those, answered (by a node, a 502 or a 503).
    pub answered: u64,
    /// Answered 502: their node failed before its answer.
    pub unreachable: u64,
    /// Answered 503: the router dropped them.
    pub dropped: u64,
    /// The router's decision time alone, median, ns (0 before any).
    pub decision_p50: Nanos,
    /// Gateway time less the node's stated runtime, median, ns (0 before
    /// any answer).
    pub overhead_p50: Nanos,
    /// Connections still open at the drain timeout, closed: those whose
    /// request was being answered, and the others.
    pub connections_cut: http::Cut,
    /// Poll rounds run.
    pub polls: u64,
    /// The mean over the poll rounds (those with a node up) of the
    /// population variance of the up nodes' reported loads, load average
    /// over cores: the cluster simulator's `load_variance`, live.
    pub load_variance: f64,
    /// Nodes that joined by registering.
    pub registrations: u64,
    /// Registered nodes dropped from the table after their missed polls.
    pub drops: u64,
    /// Nodes that said they left (`DELETE /nodes/{HOST:PORT}`).
    pub leaves: u64,
    /// Nodes' answers passed on with an error, by its kind (at most 32
    /// kinds, the rest as `other`): what the nodes refused, where
    /// `dropped` is the router's.
    pub node_failures: BTreeMap<String, u64>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nodes: Vec<String> = lock(&self.inner.state)
            .links
            .values()
            .map(|l| l.addr.clone())
            .collect();
        f.debug_struct("Gateway")
            .field("policy", &self.inner.policy)
            .field("nodes", &nodes)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway over `config`'s nodes routing with `router`, the
    /// functions it knows by name in `functions`. Errs naming a bad or
    /// repeated node address, or on no functions. With no nodes it
    /// answers 503 until one registers.
    pub fn new(
        config: &GatewayConfig,
        router: Box<dyn Route + Send>,
        functions: impl IntoIterator<Item = (String, FunctionProfile)>,
    ) -> Result<Gateway, GatewayError> {
        let mut links = BTreeMap::new();
        for (id, addr) in config.nodes.iter().enumerate() {
            let link = NodeLink::new(addr, config.pool, config.node_tls.clone())
                .ok_or_else(|| GatewayError::BadNode(addr.clone()))?;
            if links.values().any(|l: &Arc<NodeLink>| &l.addr == addr) {
                return Err(GatewayError::Repeated(addr.clone()));
            }
            links.insert(id, Arc::new(link));
        }
        let profiles: HashMap<String, FunctionProfile> = functions.into_iter().collect();
        if profiles.is_empty() {
            return Err(GatewayError::NoFunctions);
        }
        let policy = router.name().to_owned();
        Ok(Gateway {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    table: NodeTable::new(links.len()),
                    links,
                    router,
                    next_id: 0,
                    loads: LoadSeries::default(),
                    polls: 0,
                }),
                profiles,
                policy,
                started: Instant::now(),
                period: config.period,
                pool: config.pool,
                node_tls: config.node_tls.clone(),
                drain_timeout: config.drain_timeout,
                forward_timeout: config.forward_timeout,
                deadline_factor: config.deadline_factor,
                front: config.front.clone(),
                max_response_bytes: config.max_response_bytes,
                bodies: Bodies::new(ingress::DEFAULT_MAX_BODY_BYTES),
                listen: Mutex::new(None),
                metrics: Metrics::default(),
                suspects: outage::Suspects::default(),
            }),
        })
    }

    /// Serves on `listener` until `shutdown` resolves, then drains
    /// (invariant 7). Errs only if the listener has no local address.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<GatewayServed> {
        *lock(&self.inner.listen) = Some(listener.local_addr()?);
        self.inner.poll_round().await;
        let poller = tokio::spawn(poll::every_period(Arc::clone(&self.inner)));
        let prober = tokio::spawn(outage::probe_suspects(Arc::clone(&self.inner)));
        let service = Arc::new(Front(Arc::clone(&self.inner)));
        let limits = http::Limits {
            drain_timeout: self.inner.drain_timeout,
            max_connections: self.inner.front.max_connections,
        };
        let cut = http::serve(
            listener,
            service,
            self.inner.front.tls.clone(),
            shutdown,
            limits,
        )
        .await;
        poller.abort();
        prober.abort();
        Ok(self.inner.served(cut))
    }
}

/// What the gateway's connections share.
struct Inner {
    state: Mutex<State>,
    profiles: HashMap<String, FunctionProfile>,
    policy: String,
    started: Instant,
    period: Duration,
    /// Idle kept-alive connections kept per node.
    pool: usize,
    /// How nodes are spoken to under TLS, if they are.
    node_tls: Option<ClientTls>,
    drain_timeout: Duration,
    forward_timeout: Duration,
    /// An invocation that names a deadline waits at most this many times
    /// it for its node, where that is shorter than the forward timeout.
    deadline_factor: Option<u32>,
    /// Its tokens, connections, a body's pace and TLS.
    front: http::FrontConfig,
    /// The largest node answer passed on.
    max_response_bytes: usize,
    /// The invocation bodies held on their way to a node: each at most
    /// what a node takes by default, [`BODIES_HELD`](crate::wire::request::BODIES_HELD)
    /// of them.
    bodies: Bodies,
    listen: Mutex<Option<SocketAddr>>,
    metrics: Metrics,
    /// The nodes a failed forward asks to probe (invariant 8).
    suspects: outage::Suspects,
}

/// What one decision reads and changes.
struct State {
    table: NodeTable,
    /// Every node of the table, by its id there.
    links: BTreeMap<usize, Arc<NodeLink>>,
    router: Box<dyn Route + Send>,
    next_id: u64,
    /// The up nodes' loads at every poll round (invariant 5).
    loads: LoadSeries,
    /// Poll rounds run.
    polls: u64,
}

impl Inner {
    /// The gateway's time: since it was built.
    fn now(&self) -> Time {
        nanos(self.started.elapsed())
    }
}

/// Locks `mutex`, whose holders never panic while holding it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
