//! The cluster gateway: HTTP in front of several node runtimes (`faasched
//! node serve`), routing every invocation with the cluster simulator's
//! [`Route`] policies, unchanged.
//!
//! | request | answer |
//! |---|---|
//! | `POST /invoke/{function}[?{query}]` | the chosen node's answer, with `x-faasched-node: HOST:PORT` added; 503 `x-faasched-error: overloaded` if the router drops it; 502 `x-faasched-error: node-unreachable` if the node fails before its answer or gives none within the forward timeout |
//! | `PUT /nodes/{HOST:PORT}` | 201 if the node joins the table ([`Membership::Registered`], up at once, idle until its first report, polled from the next round), 200 if it is in the table already (a heartbeat; nothing changes); 400 naming a malformed address |
//! | `DELETE /nodes/{HOST:PORT}` | 200: a registered node is dropped from the table, a static one (`--node`) taken down until its next report; 404 `x-faasched-error: unknown-node` if it is not in the table |
//! | `GET /metrics` | per node requests, errors, load, up; registrations, drops and leaves; the decision time and the forwarding overhead (quantiles); the mean load variance across the up nodes, in Prometheus text |
//! | `GET /status` | the nodes, their membership counts, the load evenness and the timings, JSON |
//!
//! The invariants:
//!
//! 1. A malformed request (the node ingress's rules: a bad name, query,
//!    [`FUNCTION_HEADER`] or deadline, a body) is answered 4xx and reaches no
//!    node. A function the workload's table does not have (by
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
//!
//! [`DOWN_AFTER_MISSES`]: super::table::DOWN_AFTER_MISSES

use super::table::{Membership, Missed, NodeTable};
use crate::http::{self, Service};
use crate::node::ingress;
use crate::wire::request::{self, Malformed, RouteKind, read_body};
use crate::wire::response::{Counted, family, json, refusal, text};
use crate::wire::{
    COLD_HEADER, ERROR_HEADER, FUNCTION_HEADER, LoadReport, NODE_HEADER, RUNTIME_HEADER,
};
use bytes::Bytes;
use faasched_model::cluster::loads::{LoadSeries, spread};
use faasched_model::cluster::{
    Choice, FunctionProfile, InvocationId, InvocationInfo, InvocationOutcome, Route,
};
use faasched_model::{Nanos, Time};
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self as client, SendRequest};
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// How a node answered an invocation.
#[derive(Clone, Copy, Debug)]
struct Answered {
    /// With a 2xx.
    ok: bool,
    /// It started its container cold.
    cold: bool,
}

/// The error kind of a node that failed before its answer.
pub const NODE_UNREACHABLE: &str = "node-unreachable";

/// The error kind of a `DELETE /nodes/{HOST:PORT}` of a node the gateway's
/// table does not have.
pub const UNKNOWN_NODE: &str = "unknown-node";

/// The longest node address a registration may give, bytes: a DNS name
/// (253) and a port, with room to spare.
const MAX_ADDRESS: usize = 300;

/// The error kind of a function the workload's table does not have, as
/// the node runtime names its unknown functions.
const UNKNOWN_FUNCTION: &str = "unknown-function";

/// Idle kept-alive connections per node by default: 8, more than a
/// 2-core machine's gateway has requests in flight to one node at once.
pub const DEFAULT_POOL: usize = 8;

/// The shortest time a node's load poll is given: 1 s.
pub const MIN_POLL_TIMEOUT: Duration = Duration::from_secs(1);

/// The histograms' top, ns: 60 s, past any invocation.
const HISTOGRAM_MAX: u64 = 60_000_000_000;

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
    nodes: Vec<String>,
    period: Duration,
    pool: usize,
    drain_timeout: Duration,
    forward_timeout: Duration,
}

/// How long the gateway waits for a node's answer by default.
pub const DEFAULT_FORWARD_TIMEOUT: Duration = Duration::from_secs(60);

impl GatewayConfig {
    /// A gateway over `nodes` (`HOST:PORT` each, [`Membership::Static`];
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
        }
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
}

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
    /// Connections still open at the drain timeout, closed.
    pub connections_cut: usize,
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
            let link = NodeLink::new(addr).ok_or_else(|| GatewayError::BadNode(addr.clone()))?;
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
                drain_timeout: config.drain_timeout,
                forward_timeout: config.forward_timeout,
                listen: Mutex::new(None),
                metrics: Metrics::default(),
            }),
        })
    }

    /// Serves on `listener` until `shutdown` resolves, then drains
    /// (invariant 6). Errs only if the listener has no local address.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<GatewayServed> {
        *lock(&self.inner.listen) = Some(listener.local_addr()?);
        self.inner.poll_round().await;
        let poller = tokio::spawn(poll(Arc::clone(&self.inner)));
        let service = Arc::new(Front(Arc::clone(&self.inner)));
        let cut = http::serve(listener, service, shutdown, self.inner.drain_timeout).await;
        poller.abort();
        let m = &self.inner.metrics;
        let (polls, load_variance) = {
            let state = lock(&self.inner.state);
            (state.polls, state.loads.mean_variance)
        };
        Ok(GatewayServed {
            received: m.received.load(Ordering::SeqCst),
            answered: m.answered.load(Ordering::SeqCst),
            unreachable: m.unreachable.load(Ordering::Relaxed),
            dropped: m.dropped.load(Ordering::Relaxed),
            decision_p50: lock(&m.decision).value_at_quantile(0.5),
            overhead_p50: lock(&m.overhead).value_at_quantile(0.5),
            connections_cut: cut,
            polls,
            load_variance,
            registrations: m.registrations.load(Ordering::Relaxed),
            drops: m.node_drops.load(Ordering::Relaxed),
            leaves: m.leaves.load(Ordering::Relaxed),
        })
    }
}

/// What the gateway's connections share.
struct Inner {
    state: Mutex<State>,
    profiles: HashMap<String, FunctionProfile>,
    policy: String,
    started: Instant,
    period: Duration,
    pool: usize,
    drain_timeout: Duration,
    forward_timeout: Duration,
    listen: Mutex<Option<SocketAddr>>,
    metrics: Metrics,
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

impl State {
    /// Tells the router of the up nodes now if they changed since
    /// `epoch` (invariant 6).
    fn changed_since(&mut self, epoch: u64, now: Time) {
        if self.table.epoch() != epoch {
            self.router.on_loads(now, self.table.servers());
        }
    }

    /// The id of the node at `addr`, if it is in the table.
    fn find(&self, addr: &str) -> Option<usize> {
        self.links
            .iter()
            .find(|(_, l)| l.addr == addr)
            .map(|(&id, _)| id)
    }
}

/// One node: its address and kept-alive connections.
struct NodeLink {
    addr: String,
    authority: HeaderValue,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
    requests: AtomicU64,
    errors: AtomicU64,
    /// Invocations it answered from a container it started cold.
    cold: AtomicU64,
}

impl NodeLink {
    /// A link to `addr`, if it is `HOST:PORT` ([`is_address`]).
    fn new(addr: &str) -> Option<NodeLink> {
        if !is_address(addr) {
            return None;
        }
        Some(NodeLink {
            addr: addr.to_owned(),
            authority: HeaderValue::from_str(addr).ok()?,
            idle: Mutex::new(Vec::new()),
            requests: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            cold: AtomicU64::new(0),
        })
    }
}

/// The gateway's own counters and timings.
struct Metrics {
    received: AtomicU64,
    answered: AtomicU64,
    unreachable: AtomicU64,
    dropped: AtomicU64,
    malformed: AtomicU64,
    registrations: AtomicU64,
    node_drops: AtomicU64,
    leaves: AtomicU64,
    responses: Mutex<BTreeMap<(u16, &'static str), u64>>,
    decision: Mutex<Histogram<u64>>,
    overhead: Mutex<Histogram<u64>>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let histogram = || {
            // The bounds are constants within hdrhistogram's range.
            Histogram::new_with_bounds(1, HISTOGRAM_MAX, 3)
                .unwrap_or_else(|e| unreachable!("valid histogram bounds: {e}"))
        };
        Metrics {
            received: AtomicU64::new(0),
            answered: AtomicU64::new(0),
            unreachable: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            malformed: AtomicU64::new(0),
            registrations: AtomicU64::new(0),
            node_drops: AtomicU64::new(0),
            leaves: AtomicU64::new(0),
            responses: Mutex::new(BTreeMap::new()),
            decision: Mutex::new(histogram()),
            overhead: Mutex::new(histogram()),
        }
    }
}

/// Locks `mutex`, whose holders never panic while holding it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records `value` ns, clamped into the histogram's range.
fn record(histogram: &Mutex<Histogram<u64>>, value: u64) {
    let _ = lock(histogram).record(value.clamp(1, HISTOGRAM_MAX));
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The server the gateway is to hyper.
struct Front(Arc<Inner>);

impl Service for Front {
    async fn handle(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let inner = &self.0;
        let (response, kind) = match inner.respond(request).await {
            Ok(counted) => counted,
            Err(malformed) => {
                inner.metrics.malformed.fetch_add(1, Ordering::Relaxed);
                refusal(malformed)
            }
        };
        *lock(&inner.metrics.responses)
            .entry((response.status().as_u16(), kind))
            .or_default() += 1;
        response
    }
}

/// Counts an invocation answered when dropped, on every path: a client
/// that leaves drops the request's future, and the answer it never reads
/// is still counted (invariant 4).
struct Answering<'a> {
    inner: &'a Inner,
    node: Option<(usize, u64, InvocationInfo)>,
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        if let Some((node, epoch, info)) = self.node.take() {
            // Left before the node answered: the node's time is lost, the
            // router learns nothing of the outcome but its end.
            self.inner.finish(node, epoch, info, None);
        }
        self.inner.metrics.answered.fetch_add(1, Ordering::SeqCst);
    }
}

impl Inner {
    fn now(&self) -> Time {
        nanos(self.started.elapsed())
    }

    async fn respond(&self, request: Request<Incoming>) -> Result<Counted, Malformed> {
        let path = request.uri().path();
        if path == "/nodes" || path.starts_with("/nodes/") {
            return self.membership(request).await;
        }
        match RouteKind::of(path) {
            RouteKind::Invoke | RouteKind::Metrics | RouteKind::Status => {}
            RouteKind::Register | RouteKind::Load | RouteKind::Other => {
                return Err(Malformed {
                    status: StatusCode::NOT_FOUND,
                    what: format!(
                        "no route {}: the gateway's routes are POST /invoke/NAME, PUT and DELETE /nodes/HOST:PORT, GET /metrics and GET /status",
                        request::shown(path)
                    ),
                    allow: None,
                });
            }
        }
        match request::route(request.method(), path)? {
            request::Route::Invoke(function) => self.invoke(function, request).await,
            request::Route::Metrics => {
                let mut response = text(StatusCode::OK, self.render());
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                );
                Ok((response, "ok"))
            }
            request::Route::Status => Ok((json(&self.status()), "ok")),
            request::Route::Register(_) | request::Route::Load => {
                unreachable!("refused above by their route kind")
            }
        }
    }

    /// `PUT` or `DELETE /nodes/{HOST:PORT}` (invariant 6).
    async fn membership(&self, request: Request<Incoming>) -> Result<Counted, Malformed> {
        const ALLOW: &str = "PUT, DELETE";
        let (parts, body) = request.into_parts();
        let path = parts.uri.path();
        let method = &parts.method;
        if method != Method::PUT && method != Method::DELETE {
            return Err(Malformed {
                status: StatusCode::METHOD_NOT_ALLOWED,
                what: format!(
                    "{} takes {ALLOW}, not {}",
                    request::shown(path),
                    request::shown(method.as_str())
                ),
                allow: Some(ALLOW),
            });
        }
        if parts.uri.query().is_some() {
            return Err(Malformed::bad(format!("{method} /nodes takes no query")));
        }
        read_body(body, 0, "a node registration's body").await?;
        let addr = path.strip_prefix("/nodes/").unwrap_or("");
        if addr.is_empty() {
            return Err(Malformed::bad(format!(
                "{method} /nodes/HOST:PORT: the path names no node"
            )));
        }
        let Some(link) = NodeLink::new(addr) else {
            return Err(Malformed::bad(format!(
                "node address {} is not HOST:PORT",
                request::shown(addr)
            )));
        };
        let mut state = lock(&self.state);
        let state = &mut *state;
        let epoch = state.table.epoch();
        let known = state.find(addr);
        let (status, body, kind) = if method == Method::PUT {
            match known {
                Some(_) => (
                    StatusCode::OK,
                    format!("node {addr} is in the table\n"),
                    "ok",
                ),
                None => {
                    let id = state.table.add(Membership::Registered);
                    state.links.insert(id, Arc::new(link));
                    self.metrics.registrations.fetch_add(1, Ordering::Relaxed);
                    (
                        StatusCode::CREATED,
                        format!("node {addr} registered\n"),
                        "ok",
                    )
                }
            }
        } else {
            match known {
                Some(id) => {
                    state.table.leave(id);
                    if !state.table.contains(id) {
                        state.links.remove(&id);
                    }
                    self.metrics.leaves.fetch_add(1, Ordering::Relaxed);
                    (StatusCode::OK, format!("node {addr} left\n"), "ok")
                }
                None => (
                    StatusCode::NOT_FOUND,
                    format!("node {addr} is not in the gateway's table\n"),
                    UNKNOWN_NODE,
                ),
            }
        };
        state.changed_since(epoch, self.now());
        let mut response = text(status, body);
        if kind == UNKNOWN_NODE {
            response.headers_mut().insert(
                HeaderName::from_static(ERROR_HEADER),
                HeaderValue::from_static(UNKNOWN_NODE),
            );
        }
        Ok((response, kind))
    }

    /// Invariants 1 to 4 for one invocation.
    async fn invoke(
        &self,
        function: String,
        request: Request<Incoming>,
    ) -> Result<Counted, Malformed> {
        let received = Instant::now();
        let (parts, body) = request.into_parts();
        read_body(body, 0, "an invocation's body").await?;
        let invoke = request::invoke(function, parts.uri.query(), &parts.headers)?;
        let Some(&profile) = self.profiles.get(invoke.label()) else {
            let how = if invoke.label.is_some() {
                FUNCTION_HEADER.to_owned()
            } else {
                format!("the path (or name one in {FUNCTION_HEADER})")
            };
            let mut response = text(
                StatusCode::NOT_FOUND,
                format!(
                    "function {} of {how} is not in the gateway's workload\n",
                    request::shown(invoke.label())
                ),
            );
            response.headers_mut().insert(
                HeaderName::from_static(ERROR_HEADER),
                HeaderValue::from_static(UNKNOWN_FUNCTION),
            );
            return Ok((response, UNKNOWN_FUNCTION));
        };
        self.metrics.received.fetch_add(1, Ordering::SeqCst);
        let mut answering = Answering {
            inner: self,
            node: None,
        };

        let (choice, info, epoch, no_node) = {
            let mut state = lock(&self.state);
            let state = &mut *state;
            let now = self.now();
            let info = InvocationInfo {
                id: InvocationId(state.next_id),
                arrival: now,
                profile,
            };
            state.next_id += 1;
            let decided = Instant::now();
            let choice = if state.table.servers().is_empty() {
                Choice::Drop
            } else {
                state.router.route(now, &info, state.table.servers())
            };
            record(&self.metrics.decision, nanos(decided.elapsed()));
            let choice = match choice {
                Choice::Server(s) if (s.0 as usize) < state.table.servers().len() => {
                    let node = state.table.node_of(s);
                    state.table.start(node);
                    Some((node, Arc::clone(&state.links[&node])))
                }
                _ => None,
            };
            let no_node = state.table.servers().is_empty();
            (choice, info, state.table.epoch(), no_node)
        };
        let Some((node, link)) = choice else {
            self.metrics.dropped.fetch_add(1, Ordering::Relaxed);
            self.drop_outcome(info);
            let why = if no_node {
                "the gateway has no node up: overloaded\n"
            } else {
                "the gateway's router dropped the invocation: overloaded\n"
            };
            let mut response = text(StatusCode::SERVICE_UNAVAILABLE, why.to_owned());
            response.headers_mut().insert(
                HeaderName::from_static(ERROR_HEADER),
                HeaderValue::from_static("overloaded"),
            );
            return Ok((response, "overloaded"));
        };
        answering.node = Some((node, epoch, info));

        let link = &*link;
        link.requests.fetch_add(1, Ordering::Relaxed);
        let forwarded = tokio::time::timeout(self.forward_timeout, self.forward(link, &parts))
            .await
            .unwrap_or_else(|_| {
                // Its connection is dropped with the future: in an unknown
                // state, it is not reused.
                Err(format!("no answer within {:?}", self.forward_timeout))
            });
        answering.node = None;
        let node_header = link.authority.clone();
        let (mut response, kind) = match forwarded {
            Ok(response) => {
                let cold = response
                    .headers()
                    .get(COLD_HEADER)
                    .is_some_and(|v| v.as_bytes() == b"1");
                if cold {
                    link.cold.fetch_add(1, Ordering::Relaxed);
                }
                self.finish(
                    node,
                    epoch,
                    info,
                    Some(Answered {
                        ok: response.status().is_success(),
                        cold,
                    }),
                );
                let runtime_us = response
                    .headers()
                    .get(RUNTIME_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok());
                if let Some(us) = runtime_us {
                    let gateway = nanos(received.elapsed());
                    record(
                        &self.metrics.overhead,
                        gateway.saturating_sub(us.saturating_mul(1_000)),
                    );
                }
                let kind = match response.headers().get(ERROR_HEADER) {
                    None => "ok",
                    Some(_) => "node-error",
                };
                (response, kind)
            }
            Err(error) => {
                self.finish(node, epoch, info, None);
                link.errors.fetch_add(1, Ordering::Relaxed);
                self.metrics.unreachable.fetch_add(1, Ordering::Relaxed);
                let mut response = text(
                    StatusCode::BAD_GATEWAY,
                    format!("node {} failed before its answer: {error}\n", link.addr),
                );
                response.headers_mut().insert(
                    HeaderName::from_static(ERROR_HEADER),
                    HeaderValue::from_static(NODE_UNREACHABLE),
                );
                (response, NODE_UNREACHABLE)
            }
        };
        response
            .headers_mut()
            .insert(HeaderName::from_static(NODE_HEADER), node_header);
        drop(answering);
        Ok((response, kind))
    }

    /// Tells the router of a dropped invocation.
    fn drop_outcome(&self, info: InvocationInfo) {
        let mut state = lock(&self.state);
        let now = self.now();
        state.router.on_finish(
            now,
            &InvocationOutcome {
                info,
                work: info.profile.warm,
                server: None,
                cold: false,
                finish: None,
            },
        );
    }

    /// `node` is done with `info`: how it answered, `None` if it did not.
    /// The router learns the outcome if the up nodes are still those it
    /// chose among (invariant 4).
    fn finish(&self, node: usize, epoch: u64, info: InvocationInfo, answered: Option<Answered>) {
        let mut state = lock(&self.state);
        let state = &mut *state;
        state.table.finish(node);
        if state.table.epoch() != epoch {
            return;
        }
        let now = self.now();
        state.router.on_finish(
            now,
            &InvocationOutcome {
                info,
                work: info.profile.warm,
                server: state.table.server_of(node),
                cold: answered.is_some_and(|a| a.cold),
                finish: answered.filter(|a| a.ok).map(|_| now),
            },
        );
    }

    /// Sends the invocation `parts` describe to `link`'s node and reads
    /// its answer whole, adding nothing.
    async fn forward(
        &self,
        link: &NodeLink,
        parts: &hyper::http::request::Parts,
    ) -> Result<Response<Full<Bytes>>, String> {
        let path = parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path(), |p| p.as_str());
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .body(Full::new(Bytes::new()))
            .map_err(|e| format!("building the request: {e}"))?;
        let headers = request.headers_mut();
        for (name, value) in &parts.headers {
            if !hop_by_hop(name) {
                headers.append(name.clone(), value.clone());
            }
        }
        headers.insert(header::HOST, link.authority.clone());
        let (response, sender) = self.exchange(link, request).await?;
        let (mut head, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| format!("reading the answer: {e}"))?
            .to_bytes();
        // The connection is reused only once its answer was read whole.
        self.give_back(link, sender);
        // The node's connection headers (a `connection: close` as it stops)
        // are its connection's, not the client's.
        let headers = std::mem::take(&mut head.headers);
        let mut name = None;
        for (next, value) in headers {
            name = next.or(name);
            if let Some(name) = name.as_ref().filter(|n| !hop_by_hop(n)) {
                head.headers.append(name.clone(), value);
            }
        }
        Ok(Response::from_parts(head, Full::new(body)))
    }

    /// Sends `request` on a kept-alive connection to `link`'s node, or a
    /// new one.
    async fn exchange(
        &self,
        link: &NodeLink,
        request: Request<Full<Bytes>>,
    ) -> Result<(Response<Incoming>, SendRequest<Full<Bytes>>), String> {
        let mut sender = loop {
            let kept = lock(&link.idle).pop();
            match kept {
                Some(mut kept) => {
                    if !kept.is_closed() && kept.ready().await.is_ok() {
                        break kept;
                    }
                }
                None => break connect(&link.addr).await?,
            }
        };
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("sending the request: {e}"))?;
        Ok((response, sender))
    }

    fn give_back(&self, link: &NodeLink, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = lock(&link.idle);
        if idle.len() < self.pool {
            idle.push(sender);
        }
    }

    /// One poll of every node's load, all at once, each bounded by the
    /// period or [`MIN_POLL_TIMEOUT`]; then the table and the router learn the results.
    async fn poll_round(self: &Arc<Self>) {
        let links: Vec<(usize, Arc<NodeLink>)> = lock(&self.state)
            .links
            .iter()
            .map(|(&id, link)| (id, Arc::clone(link)))
            .collect();
        let mut polls = tokio::task::JoinSet::new();
        for (node, link) in links {
            let inner = Arc::clone(self);
            polls.spawn(async move {
                let bound = inner.period.max(MIN_POLL_TIMEOUT);
                let report = tokio::time::timeout(bound, inner.load(&link)).await;
                (node, report.ok().and_then(Result::ok))
            });
        }
        let mut results = Vec::new();
        while let Some(joined) = polls.join_next().await {
            if let Ok(result) = joined {
                results.push(result);
            }
        }
        self.apply_round(results);
    }

    /// What a poll round learned, `None` for a missed poll, applied to
    /// the table, the router and the load series (invariant 5). A node
    /// that left during the round is left out.
    fn apply_round(&self, results: Vec<(usize, Option<LoadReport>)>) {
        let mut state = lock(&self.state);
        let state = &mut *state;
        let now = self.now();
        for (node, report) in results {
            match report {
                Some(report) => {
                    state.table.report(node, &report, now);
                }
                None => {
                    if state.table.miss(node) == Some(Missed::Dropped) {
                        state.links.remove(&node);
                        self.metrics.node_drops.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        state.router.on_loads(now, state.table.servers());
        state.polls += 1;
        let loads: Vec<f64> = state.table.servers().iter().map(|(_, v)| v.load).collect();
        if let Some((mean, variance)) = spread(&loads) {
            state.loads.push(now, mean, variance);
        }
    }

    /// `GET /load` of `link`'s node.
    async fn load(&self, link: &NodeLink) -> Result<LoadReport, String> {
        let request = Request::builder()
            .method(Method::GET)
            .uri("/load")
            .header(header::HOST, link.authority.clone())
            .body(Full::new(Bytes::new()))
            .map_err(|e| e.to_string())?;
        let (response, sender) = self.exchange(link, request).await?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        self.give_back(link, sender);
        if !status.is_success() {
            return Err(format!("GET /load answered {status}"));
        }
        serde_json::from_slice(&body).map_err(|e| format!("GET /load: {e}"))
    }

    fn status(&self) -> serde_json::Value {
        let (nodes, polls, load_variance) = {
            let state = lock(&self.state);
            let nodes: Vec<serde_json::Value> = state
                .links
                .iter()
                .map(|(&i, link)| {
                    let view = state.table.view(i);
                    let membership = match state.table.membership(i) {
                        Membership::Static => "static",
                        Membership::Registered => "registered",
                    };
                    serde_json::json!({
                        "node": link.addr,
                        "membership": membership,
                        "up": state.table.is_up(i),
                        "misses": state.table.misses(i),
                        "cores": view.cores,
                        "memory_mb": view.memory_mb,
                        "load": view.load,
                        "published_ms": view.published / 1_000_000,
                        "running": view.running,
                        "requests": link.requests.load(Ordering::Relaxed),
                        "errors": link.errors.load(Ordering::Relaxed),
                        "cold_starts": link.cold.load(Ordering::Relaxed),
                    })
                })
                .collect();
            (nodes, state.polls, state.loads.mean_variance)
        };
        let m = &self.metrics;
        let (decision, overhead) = (lock(&m.decision).clone(), lock(&m.overhead).clone());
        serde_json::json!({
            "gateway": {
                "listen": lock(&self.listen).map(|a| a.to_string()),
                "uptime_ms": self.now() / 1_000_000,
                "policy": self.policy,
                "period_ms": u64::try_from(self.period.as_millis()).unwrap_or(u64::MAX),
            },
            "invocations": {
                "received": m.received.load(Ordering::SeqCst),
                "answered": m.answered.load(Ordering::SeqCst),
                "unreachable": m.unreachable.load(Ordering::Relaxed),
                "dropped": m.dropped.load(Ordering::Relaxed),
                "malformed": m.malformed.load(Ordering::Relaxed),
            },
            "membership": {
                "registrations": m.registrations.load(Ordering::Relaxed),
                "drops": m.node_drops.load(Ordering::Relaxed),
                "leaves": m.leaves.load(Ordering::Relaxed),
            },
            "loads": {
                "polls": polls,
                "variance_mean": load_variance,
            },
            "decision_ns": quantiles(&decision),
            "overhead_ns": quantiles(&overhead),
            "nodes": nodes,
        })
    }

    fn render(&self) -> String {
        let mut out = String::new();
        let m = &self.metrics;
        let state = lock(&self.state);
        let per_node = |out: &mut String,
                        name: &str,
                        help: &str,
                        kind: &str,
                        value: &dyn Fn(usize) -> String| {
            family(out, name, help, kind);
            for (&i, link) in &state.links {
                let _ = writeln!(out, "{name}{{node=\"{}\"}} {}", link.addr, value(i));
            }
        };
        per_node(
            &mut out,
            "faasched_gateway_node_requests_total",
            "Invocations forwarded to the node.",
            "counter",
            &|i| state.links[&i].requests.load(Ordering::Relaxed).to_string(),
        );
        per_node(
            &mut out,
            "faasched_gateway_node_errors_total",
            "Invocations whose node failed before its answer (answered 502 node-unreachable).",
            "counter",
            &|i| state.links[&i].errors.load(Ordering::Relaxed).to_string(),
        );
        per_node(
            &mut out,
            "faasched_gateway_node_cold_starts_total",
            "Invocations the node answered from a container it started cold.",
            "counter",
            &|i| state.links[&i].cold.load(Ordering::Relaxed).to_string(),
        );
        per_node(
            &mut out,
            "faasched_gateway_node_load",
            "The node's last reported 1-minute load average over its cores.",
            "gauge",
            &|i| state.table.view(i).load.to_string(),
        );
        per_node(
            &mut out,
            "faasched_gateway_node_up",
            "1 if the node answers its load polls (down after 3 missed in a row).",
            "gauge",
            &|i| u8::from(state.table.is_up(i)).to_string(),
        );
        per_node(
            &mut out,
            "faasched_gateway_node_running",
            "Invocations the gateway has in flight on the node.",
            "gauge",
            &|i| state.table.view(i).running.to_string(),
        );
        let (polls, load_variance) = (state.polls, state.loads.mean_variance);
        drop(state);
        for (name, help, value) in [
            (
                "faasched_gateway_invocations_received_total",
                "Invocations received, well-formed and of a known function.",
                m.received.load(Ordering::SeqCst),
            ),
            (
                "faasched_gateway_invocations_answered_total",
                "Invocations answered (each received one exactly once).",
                m.answered.load(Ordering::SeqCst),
            ),
            (
                "faasched_gateway_drops_total",
                "Invocations the router dropped (answered 503 overloaded).",
                m.dropped.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_malformed_total",
                "Requests refused 4xx before any node saw them.",
                m.malformed.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_node_registrations_total",
                "Nodes that joined the table by registering (PUT /nodes/HOST:PORT).",
                m.registrations.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_node_drops_total",
                "Registered nodes dropped from the table once down after 3 missed polls.",
                m.node_drops.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_node_leaves_total",
                "Nodes that said they left (DELETE /nodes/HOST:PORT).",
                m.leaves.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_polls_total",
                "Rounds of load polls of every node.",
                polls,
            ),
        ] {
            family(&mut out, name, help, "counter");
            let _ = writeln!(out, "{name} {value}");
        }
        family(
            &mut out,
            "faasched_gateway_load_variance_mean",
            "The mean over the poll rounds of the population variance of the up nodes' reported loads (load average over cores).",
            "gauge",
        );
        let _ = writeln!(out, "faasched_gateway_load_variance_mean {load_variance}");
        family(
            &mut out,
            "faasched_gateway_responses_total",
            "HTTP responses sent, by status code and error kind.",
            "counter",
        );
        for ((code, kind), count) in lock(&m.responses).iter() {
            let _ = writeln!(
                out,
                "faasched_gateway_responses_total{{code=\"{code}\",kind=\"{kind}\"}} {count}"
            );
        }
        summary(
            &mut out,
            "faasched_gateway_decision_seconds",
            "The router's decision time alone.",
            &lock(&m.decision),
        );
        summary(
            &mut out,
            "faasched_gateway_overhead_seconds",
            "Forwarding overhead: the gateway's time for an invocation less the node's x-faasched-runtime-us.",
            &lock(&m.overhead),
        );
        out
    }
}

/// The quantiles the metrics and the status give.
const QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];

fn quantiles(h: &Histogram<u64>) -> serde_json::Value {
    serde_json::json!({
        "count": h.len(),
        "p50": h.value_at_quantile(0.5),
        "p90": h.value_at_quantile(0.9),
        "p99": h.value_at_quantile(0.99),
    })
}

/// A Prometheus summary of `h` (ns) in seconds.
fn summary(out: &mut String, name: &str, help: &str, h: &Histogram<u64>) {
    family(out, name, help, "summary");
    for q in QUANTILES {
        let _ = writeln!(
            out,
            "{name}{{quantile=\"{q}\"}} {}",
            h.value_at_quantile(q) as f64 / 1e9
        );
    }
    let sum: f64 = h
        .iter_recorded()
        .map(|v| v.value_iterated_to() as f64 * v.count_at_value() as f64)
        .sum();
    let _ = writeln!(out, "{name}_sum {}", sum / 1e9);
    let _ = writeln!(out, "{name}_count {}", h.len());
}

/// Whether `name` is a hop-by-hop header, which a proxy does not forward
/// (RFC 9110 §7.6.1), or one the forwarded request sets itself.
fn hop_by_hop(name: &HeaderName) -> bool {
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

/// Whether `addr` is `HOST:PORT`: a host of ASCII letters, digits, `.`,
/// `-`, `_`, `:`, `[` and `]` (a name, an IPv4 or a bracketed IPv6
/// address), a port that is a number, at most [`MAX_ADDRESS`] bytes, so
/// that it is a valid `Host`, path segment and metrics label as it is.
pub(super) fn is_address(addr: &str) -> bool {
    let Some((host, port)) = addr.rsplit_once(':') else {
        return false;
    };
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'));
    host_ok && addr.len() <= MAX_ADDRESS && port.parse::<u16>().is_ok()
}

/// A new HTTP/1.1 connection to `addr`, its driver spawned.
pub(super) async fn connect(addr: &str) -> Result<SendRequest<Full<Bytes>>, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (sender, connection) = client::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    tokio::spawn(async move {
        // Its end (the node closed it, or failed) shows on the sender.
        let _ = connection.await;
    });
    Ok(sender)
}

/// Polls every period, after the round `serve` ran first.
async fn poll(inner: Arc<Inner>) {
    let period = inner.period;
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        inner.poll_round().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::FunctionId;
    use faasched_policy::cluster::LeastLoaded;

    fn gateway(nodes: &[&str]) -> Gateway {
        let profile = FunctionProfile {
            function: FunctionId(0),
            memory_mb: 128,
            warm: 1_000_000,
            cold: 2_000_000,
        };
        Gateway::new(
            &GatewayConfig::new(nodes.iter().map(|n| n.to_string()).collect()),
            Box::new(LeastLoaded::new()),
            [("f".to_owned(), profile)],
        )
        .unwrap()
    }

    fn report(load: f64) -> Option<LoadReport> {
        Some(LoadReport {
            cores: 2,
            memory_mb: 1024,
            load,
            published_ms: 0,
            seq: 1,
        })
    }

    /// The load series holds, per round, the mean and population variance
    /// of the loads the router sees: the up nodes' last reports, a missed
    /// poll's stale one included, a down node's left out.
    #[test]
    fn every_poll_round_pushes_the_up_nodes_load_mean_and_variance() {
        let g = gateway(&["a:1", "b:2", "c:3"]);
        let inner = &g.inner;
        // Loads 0, 1, 0.5: mean 0.5, variance (0.25 + 0.25 + 0) / 3 = 1/6.
        inner.apply_round(vec![(0, report(0.0)), (1, report(1.0)), (2, report(0.5))]);
        // Node c misses twice, still up at its last 0.5: loads 0.25, 0.75,
        // 0.5, variance (0.0625 + 0.0625 + 0) / 3 = 1/24, twice.
        for _ in 0..2 {
            inner.apply_round(vec![(0, report(0.25)), (1, report(0.75)), (2, None)]);
        }
        // Its third miss takes it down: loads 0 and 1, variance 1/4.
        inner.apply_round(vec![(0, report(0.0)), (1, report(1.0)), (2, None)]);
        let state = lock(&inner.state);
        let loads = &state.loads;
        assert_eq!((state.polls, loads.publications), (4, 4));
        let variances: Vec<f64> = loads.samples.iter().map(|s| s.variance).collect();
        let expected = [1.0 / 6.0, 1.0 / 24.0, 1.0 / 24.0, 0.25];
        for (got, want) in variances.iter().zip(expected) {
            assert!((got - want).abs() < 1e-12, "{variances:?}");
        }
        assert!(loads.samples.iter().all(|s| s.mean == 0.5), "{loads:?}");
        // (4 + 1 + 1 + 6) / 24 / 4 rounds.
        assert!((loads.mean_variance - 0.125).abs() < 1e-12);
    }

    #[test]
    fn a_round_with_no_node_up_counts_but_pushes_nothing() {
        let g = gateway(&[]);
        g.inner.apply_round(Vec::new());
        let state = lock(&g.inner.state);
        assert_eq!((state.polls, state.loads.publications), (1, 0));
        assert_eq!(state.loads.mean_variance, 0.0);
    }
}
