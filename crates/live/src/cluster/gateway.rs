//! The cluster gateway: HTTP in front of several node runtimes (`faasched
//! node serve`), routing every invocation with the cluster simulator's
//! [`Route`] policies, unchanged.
//!
//! | request | answer |
//! |---|---|
//! | `POST /invoke/{function}[?{query}]` | the chosen node's answer, with `x-faasched-node: HOST:PORT` added; 503 `x-faasched-error: overloaded` if the router drops it; 502 `x-faasched-error: node-unreachable` if the node fails before its answer or gives none within the forward timeout |
//! | `GET /metrics` | per node requests, errors, load, up; the decision time and the forwarding overhead (quantiles), in Prometheus text |
//! | `GET /status` | the nodes and the timings, JSON |
//!
//! The invariants:
//!
//! 1. A malformed request (the node ingress's rules: a bad name, query,
//!    [`LABEL_HEADER`] or deadline, a body) is answered 4xx and reaches no
//!    node. A function the workload's table does not have (by
//!    [`LABEL_HEADER`] if given, else the path's name) is answered 404
//!    `unknown-function`, naming it.
//! 2. Every invocation is decided once under one lock: the router reads
//!    the [`NodeTable`]'s up nodes, their last reported loads (stale) and
//!    the gateway's own requests in flight on each, and the decision's
//!    time alone is measured. [`Choice::Drop`] is answered 503.
//! 3. The invocation is forwarded, with its query and headers, over a
//!    kept-alive connection from the node's pool (at most
//!    [`GatewayConfig::pool`] idle ones kept), and the node's answer is
//!    returned whole. A connection that fails before the answer is
//!    counted against the node and answered 502: never silence, never a
//!    retry (an invocation is not idempotent).
//! 4. Every invocation is answered exactly once and counted on both sides:
//!    `received = answered` once the gateway is idle. Its outcome goes to
//!    [`Route::on_finish`] unless the set of up nodes changed meanwhile
//!    (its server id would then name another node).
//! 5. Every [`GatewayConfig::period`] the gateway polls every node's
//!    `GET /load`, each poll bounded by the period or [`MIN_POLL_TIMEOUT`],
//!    whichever is longer (a busy machine must not take a live node down
//!    for a short period); it updates the table
//!    (a report, or a miss: [`DOWN_AFTER_MISSES`] in a row take a node
//!    down, a report takes it back) and calls [`Route::on_loads`]. One
//!    round runs before the gateway accepts its first request.
//! 6. Shutdown drains like the node ingress ([`crate::http::serve`]).
//!
//! [`DOWN_AFTER_MISSES`]: super::table::DOWN_AFTER_MISSES

use super::table::NodeTable;
use crate::http::{self, Service};
use crate::node::ingress::metrics::family;
use crate::node::ingress::request::{self, Malformed, RouteKind};
use crate::node::ingress::{
    self, Counted, ERROR_HEADER, LABEL_HEADER, LoadReport, json, read_body, refusal, text,
};
use bytes::Bytes;
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

/// The node's header saying the invocation started its container cold
/// (`1`).
pub const COLD_HEADER: &str = "x-faasched-cold";

/// How a node answered an invocation.
#[derive(Clone, Copy, Debug)]
struct Answered {
    /// With a 2xx.
    ok: bool,
    /// It started its container cold.
    cold: bool,
}

/// The header naming the node that answered.
pub const NODE_HEADER: &str = "x-faasched-node";

/// The error kind of a node that failed before its answer.
pub const NODE_UNREACHABLE: &str = "node-unreachable";

/// The error kind of a function the workload's table does not have, as
/// the node runtime names its unknown functions.
const UNKNOWN_FUNCTION: &str = "unknown-function";

/// The header a node states its own time for a request in, µs.
const RUNTIME_HEADER: &str = "x-faasched-runtime-us";

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
    /// No `--node`.
    #[error("a gateway needs at least one node")]
    NoNodes,
    /// A node address that is not `HOST:PORT`.
    #[error("node address {0:?} is not HOST:PORT")]
    BadNode(String),
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
    /// A gateway over `nodes` (`HOST:PORT` each), polling every 5 s (the
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
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nodes: Vec<&str> = self.inner.links.iter().map(|l| l.addr.as_str()).collect();
        f.debug_struct("Gateway")
            .field("policy", &self.inner.policy)
            .field("nodes", &nodes)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway over `config`'s nodes routing with `router`, the
    /// functions it knows by name in `functions`. Errs naming a bad or
    /// repeated node address, or on no nodes or no functions.
    pub fn new(
        config: &GatewayConfig,
        router: Box<dyn Route + Send>,
        functions: impl IntoIterator<Item = (String, FunctionProfile)>,
    ) -> Result<Gateway, GatewayError> {
        if config.nodes.is_empty() {
            return Err(GatewayError::NoNodes);
        }
        let mut links = Vec::with_capacity(config.nodes.len());
        for addr in &config.nodes {
            let valid = addr
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
            let authority = HeaderValue::from_str(addr).ok().filter(|_| valid);
            let Some(authority) = authority else {
                return Err(GatewayError::BadNode(addr.clone()));
            };
            if links.iter().any(|l: &NodeLink| &l.addr == addr) {
                return Err(GatewayError::Repeated(addr.clone()));
            }
            links.push(NodeLink {
                addr: addr.clone(),
                authority,
                idle: Mutex::new(Vec::new()),
                requests: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                cold: AtomicU64::new(0),
            });
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
                    router,
                    next_id: 0,
                }),
                links,
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
        Ok(GatewayServed {
            received: m.received.load(Ordering::SeqCst),
            answered: m.answered.load(Ordering::SeqCst),
            unreachable: m.unreachable.load(Ordering::Relaxed),
            dropped: m.dropped.load(Ordering::Relaxed),
            decision_p50: lock(&m.decision).value_at_quantile(0.5),
            overhead_p50: lock(&m.overhead).value_at_quantile(0.5),
            connections_cut: cut,
        })
    }
}

/// What the gateway's connections share.
struct Inner {
    state: Mutex<State>,
    links: Vec<NodeLink>,
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
    router: Box<dyn Route + Send>,
    next_id: u64,
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

/// The gateway's own counters and timings.
struct Metrics {
    received: AtomicU64,
    answered: AtomicU64,
    unreachable: AtomicU64,
    dropped: AtomicU64,
    malformed: AtomicU64,
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
        match RouteKind::of(path) {
            RouteKind::Invoke | RouteKind::Metrics | RouteKind::Status => {}
            RouteKind::Register | RouteKind::Load | RouteKind::Other => {
                return Err(Malformed {
                    status: StatusCode::NOT_FOUND,
                    what: format!(
                        "no route {}: the gateway's routes are POST /invoke/NAME, GET /metrics and GET /status",
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
                LABEL_HEADER.to_owned()
            } else {
                format!("the path (or name one in {LABEL_HEADER})")
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

        let (choice, info, epoch) = {
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
                    Some(node)
                }
                _ => None,
            };
            (choice, info, state.table.epoch())
        };
        let Some(node) = choice else {
            self.metrics.dropped.fetch_add(1, Ordering::Relaxed);
            self.drop_outcome(info);
            let mut response = text(
                StatusCode::SERVICE_UNAVAILABLE,
                "the gateway's router dropped the invocation: overloaded\n".to_owned(),
            );
            response.headers_mut().insert(
                HeaderName::from_static(ERROR_HEADER),
                HeaderValue::from_static("overloaded"),
            );
            return Ok((response, "overloaded"));
        };
        answering.node = Some((node, epoch, info));

        let link = &self.links[node];
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
        let mut polls = tokio::task::JoinSet::new();
        for node in 0..self.links.len() {
            let inner = Arc::clone(self);
            polls.spawn(async move {
                let bound = inner.period.max(MIN_POLL_TIMEOUT);
                let report = tokio::time::timeout(bound, inner.load(node)).await;
                (node, report.ok().and_then(Result::ok))
            });
        }
        let mut results = Vec::with_capacity(self.links.len());
        while let Some(joined) = polls.join_next().await {
            if let Ok(result) = joined {
                results.push(result);
            }
        }
        let mut state = lock(&self.state);
        let state = &mut *state;
        let now = self.now();
        for (node, report) in results {
            match report {
                Some(report) => {
                    state.table.report(node, &report, now);
                }
                None => {
                    state.table.miss(node);
                }
            }
        }
        state.router.on_loads(now, state.table.servers());
    }

    /// `GET /load` of `node`.
    async fn load(&self, node: usize) -> Result<LoadReport, String> {
        let link = &self.links[node];
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
        let nodes: Vec<serde_json::Value> = {
            let state = lock(&self.state);
            self.links
                .iter()
                .enumerate()
                .map(|(i, link)| {
                    let view = state.table.view(i);
                    serde_json::json!({
                        "node": link.addr,
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
                .collect()
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
            for (i, link) in self.links.iter().enumerate() {
                let _ = writeln!(out, "{name}{{node=\"{}\"}} {}", link.addr, value(i));
            }
        };
        per_node(
            &mut out,
            "faasched_gateway_node_requests_total",
            "Invocations forwarded to the node.",
            "counter",
            &|i| self.links[i].requests.load(Ordering::Relaxed).to_string(),
        );
        per_node(
            &mut out,
            "faasched_gateway_node_errors_total",
            "Invocations whose node failed before its answer (answered 502 node-unreachable).",
            "counter",
            &|i| self.links[i].errors.load(Ordering::Relaxed).to_string(),
        );
        per_node(
            &mut out,
            "faasched_gateway_node_cold_starts_total",
            "Invocations the node answered from a container it started cold.",
            "counter",
            &|i| self.links[i].cold.load(Ordering::Relaxed).to_string(),
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
        ] {
            family(&mut out, name, help, "counter");
            let _ = writeln!(out, "{name} {value}");
        }
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

/// A new HTTP/1.1 connection to `addr`, its driver spawned.
async fn connect(addr: &str) -> Result<SendRequest<Full<Bytes>>, String> {
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
