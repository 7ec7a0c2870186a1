//! The node runtime's HTTP front: HTTP/1.1 requests in, [`Invoke`]s to a
//! [`Backend`], answers back out. It parses, counts and forwards; it never
//! runs WebAssembly (the backend's workers do).
//!
//! | request | answer |
//! |---|---|
//! | `POST /invoke/{function}[?{name}={integer}]` | 200, body `{value}\n`, headers `x-faasched-runtime-us`, `x-faasched-cpu-us`, `x-faasched-preemptions`, `x-faasched-cold` (1 if it started its container cold); or the [`Failure`]'s status, body `{failure}\n`, header `x-faasched-error: {kind}`; 401 without a token the ingress asks for ([`FrontConfig::invoker`]). A client other than the control token's holder cannot choose its deadline: its `x-faasched-deadline-us` is dropped and counted |
//! | `POST /register/{name}`, the module as the body | 201, or the failure's status; 401 `unauthorized` without the token, if the ingress has one ([`FrontConfig::token`](crate::http::FrontConfig::token), before the body is read); 503 `overloaded` while another module compiles |
//! | `DELETE /functions/{name}` | 200 once the module is removed, or the failure's status; 401 as for `POST /register` |
//! | `GET /functions/{name}/log` | the last bytes a WASI command wrote to standard error ([`Backend::log`]), or the failure's status; 401 as for `POST /register` |
//! | `GET /metrics` | the ingress's counters, then the backend's, in Prometheus text |
//! | `GET /status` | `{"ingress": {"id", "listen", "uptime_ms"}, "backend": ...}` |
//! | `GET /load` | a [`LoadReport`]: the node's load average over its cores, sampled every [`LoadConfig::period`] ([`load`]) |
//!
//! The invariants:
//!
//! 1. A malformed request (an unknown route, a method the route does not
//!    take, a bad name, a query other than one `name=integer`, a bad
//!    [`FUNCTION_HEADER`] or [`DEADLINE_HEADER`], a body past its limit) is
//!    answered 4xx with `x-faasched-error: bad-request` and never reaches
//!    the backend.
//! 2. Every invocation handed to [`Backend::invoke`] is answered exactly
//!    once: the reply the backend gets counts its answer when called, and
//!    if the backend drops it uncalled it answers
//!    [`Failure::Internal`] itself. So `accepted = answered + in flight`.
//! 3. A client that leaves before its answer costs nothing but a counter:
//!    its request future is dropped, the answer still arrives, is counted
//!    and is dropped.
//! 4. Shutdown: when the `shutdown` future given to [`Ingress::serve`]
//!    resolves, the listener is closed (new connections are refused),
//!    [`Backend::shutdown`] is called, every connection finishes the request
//!    it holds and closes, and `serve` returns once all have, or after the
//!    drain timeout, cutting those still open ([`crate::http::serve`], which
//!    the cluster gateway serves with too).
//!
//! Runtime: [`runtime`] builds the one it is meant for, tokio's
//! current-thread runtime. The ingress only parses and forwards (a
//! request's work is the backend's, on its own pinned threads), so one
//! thread keeps up with the workers; a multi-thread runtime would start a
//! thread per core to compete with the pinned dispatchers and workers.
//! [`Backend::register`], which compiles a module, runs on the runtime's
//! blocking pool; every other backend call runs on the ingress thread and
//! must not block.
//!
//! ```no_run
//! # use faasched_live::node::{ingress, invoke::Backend};
//! # use std::sync::Arc;
//! # fn run(backend: Arc<dyn Backend>) -> std::io::Result<()> {
//! ingress::runtime()?.block_on(async {
//!     let stop = ingress::shutdown_signal()?;
//!     let listener = tokio::net::TcpListener::bind("0.0.0.0:8080").await?;
//!     let drained = ingress::serve(listener, backend, async {
//!         stop.await;
//!     })
//!     .await?;
//!     eprintln!("{} invocations, {} unanswered", drained.accepted, drained.unanswered);
//!     Ok::<_, std::io::Error>(())
//! })
//! # }
//! ```
//!
//! [`FUNCTION_HEADER`]: crate::wire::FUNCTION_HEADER
//! [`DEADLINE_HEADER`]: crate::wire::DEADLINE_HEADER

pub mod load;
mod metrics;

pub use load::LoadConfig;

use crate::auth;
use crate::http::{self, FrontConfig, Invoker, Limits, Service};
use crate::node::cgi;
use crate::node::invoke::{Answer, Backend, Cancel, Failure, Invoke, Written};
use crate::node::manifest::{MANIFEST_HEADER, Manifest};
use crate::wire::request::{self, Bodies, Malformed, Route, RouteKind, read_body};
use crate::wire::response::{self, BAD_HEADERS, Counted, EXIT_STATUS, OK, json, refusal, text};
use crate::wire::{
    COLD_HEADER, EXIT_STATUS_HEADER, LoadReport, PREEMPTIONS_HEADER, RUNTIME_CPU_HEADER,
    RUNTIME_HEADER, hop_by_hop,
};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use load::Sampled;
use metrics::Metrics;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The largest module `POST /register` takes by default, bytes: 32 MiB,
/// above the function suite's modules (a Python component, its
/// interpreter within, is 18 MB) and small enough to hold in memory while
/// it compiles.
pub const DEFAULT_MAX_MODULE_BYTES: usize = 32 << 20;

/// The largest invocation body taken by default, bytes: 1 MiB, a WASI
/// command's standard input (a `run` function takes none). Each request
/// being read may hold this much.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

/// How long a shutdown waits by default for the requests it holds to be
/// answered: 10 s, past the function suite's default CPU-time limits, and
/// short enough for a service manager's stop timeout (systemd: 90 s).
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// An HTTP ingress in front of a backend, with its knobs.
#[derive(Clone)]
pub struct Ingress {
    backend: Arc<dyn Backend>,
    drain_timeout: Duration,
    max_module_bytes: usize,
    max_body_bytes: usize,
    load: LoadConfig,
    front: FrontConfig,
    id: String,
}

/// How a served ingress ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drained {
    /// Invocations handed to the backend over the ingress's life.
    pub accepted: u64,
    /// Of those, the ones still unanswered when `serve` returned (the drain
    /// timeout passed first); their answers, when they come, are dropped.
    pub unanswered: u64,
    /// Connections still open at the drain timeout, closed: those whose
    /// request was with the backend (each an invocation of `unanswered`,
    /// or a registration), and the others.
    pub connections_cut: http::Cut,
}

/// The signal that asked the process to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSignal {
    /// `SIGTERM`.
    Terminate,
    /// `SIGINT` (Ctrl-C).
    Interrupt,
}

impl Ingress {
    /// An ingress for `backend` with the default knobs.
    pub fn new(backend: Arc<dyn Backend>) -> Ingress {
        Ingress {
            backend,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            max_module_bytes: DEFAULT_MAX_MODULE_BYTES,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            load: LoadConfig::new(),
            front: FrontConfig::default(),
            id: fresh_id(),
        }
    }

    /// What it asks of its clients and lets them hold: its tokens (the
    /// control one guards `POST /register` and `DELETE /functions`), its
    /// connections, a body's pace and TLS. By default [`FrontConfig`]'s.
    pub fn front(&mut self, front: FrontConfig) -> &mut Ingress {
        self.front = front;
        self
    }

    /// The node's id, drawn here: in `GET /status` and every `GET /load`,
    /// so that a gateway knows the node under any of its addresses.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What `GET /load` reports and how often it samples. By default
    /// [`LoadConfig::new`]: one core, which a node of more workers should
    /// set.
    pub fn load_report(&mut self, load: LoadConfig) -> &mut Ingress {
        self.load = load;
        self
    }

    /// How long a shutdown waits for the accepted requests' answers before
    /// it closes their connections. By default [`DEFAULT_DRAIN_TIMEOUT`].
    pub fn drain_timeout(&mut self, timeout: Duration) -> &mut Ingress {
        self.drain_timeout = timeout;
        self
    }

    /// The largest module `POST /register` takes, bytes; a longer body is
    /// answered 413. By default [`DEFAULT_MAX_MODULE_BYTES`].
    pub fn max_module_bytes(&mut self, bytes: usize) -> &mut Ingress {
        self.max_module_bytes = bytes;
        self
    }

    /// The largest invocation body it takes, bytes; a longer one is
    /// answered 413. By default [`DEFAULT_MAX_BODY_BYTES`].
    pub fn max_body_bytes(&mut self, bytes: usize) -> &mut Ingress {
        self.max_body_bytes = bytes;
        self
    }

    /// Serves HTTP/1.1 on `listener` until `shutdown` resolves, then drains
    /// (the module docs' step 4) and returns how that went. Errs only if
    /// the listener has no local address.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<Drained> {
        let shared = Arc::new(Shared {
            backend: Arc::clone(&self.backend),
            metrics: Arc::new(Metrics::default()),
            listen: listener.local_addr()?,
            started: Instant::now(),
            max_module_bytes: self.max_module_bytes,
            load: self.load,
            front: self.front.clone(),
            id: self.id.clone(),
            compiling: tokio::sync::Semaphore::new(1),
            reading: tokio::sync::Semaphore::new(MODULES_READ_AT_ONCE),
            bodies: Bodies::new(self.max_body_bytes),
            sampled: Mutex::new(Sampled::default()),
        });
        let sampler = tokio::spawn(sample_load(Arc::clone(&shared)));
        let connections_cut = http::serve(
            listener,
            Arc::clone(&shared),
            self.front.tls.clone(),
            shutdown,
            Limits {
                drain_timeout: self.drain_timeout,
                max_connections: self.front.max_connections,
            },
        )
        .await;
        sampler.abort();
        let (accepted, answered) = shared.metrics.invocations();
        Ok(Drained {
            accepted,
            unanswered: accepted - answered,
            connections_cut,
        })
    }
}

/// A node id no other node has: 64 bits from the OS's randomness (which
/// seeds std's hash maps).
fn fresh_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("{bits:016x}")
}

/// Samples the active invocations into the load average every period,
/// for as long as the ingress serves (the [`load`] module's docs).
async fn sample_load(shared: Arc<Shared>) {
    let period = shared.load.sampling_period();
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    // A late tick is one sample late, not a burst of catch-up samples.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let (accepted, answered) = shared.metrics.invocations();
        let at_ms = u64::try_from(shared.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        lock(&shared.sampled).sample(accepted - answered, at_ms);
    }
}

/// Locks `mutex`, whose holders never panic while holding it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Serves `backend` on `listener` with the default knobs until `shutdown`
/// resolves: [`Ingress::serve`].
pub async fn serve(
    listener: TcpListener,
    backend: Arc<dyn Backend>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<Drained> {
    Ingress::new(backend).serve(listener, shutdown).await
}

/// The runtime the ingress is meant to run on: tokio's current-thread
/// runtime with I/O and timers, and a blocking pool of two threads for
/// [`Backend::register`] (see the module docs for why one thread).
pub fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(2)
        .thread_name("faasched-ingress")
        .build()
}

/// A future that resolves at the first `SIGTERM` or `SIGINT`, for
/// [`serve`]'s `shutdown`. The handlers are installed when this returns,
/// not when the future is first polled, so a signal right after is not
/// lost; from then on neither signal kills the process (tokio keeps its
/// handlers), so call it once, from the CLI.
///
/// Errs outside a tokio runtime, or if a handler cannot be installed.
///
/// # Panics
///
/// In a tokio runtime built without I/O enabled (tokio's signal driver
/// needs it); [`runtime`] enables it.
pub fn shutdown_signal() -> io::Result<impl Future<Output = StopSignal> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => StopSignal::Terminate,
            _ = interrupt.recv() => StopSignal::Interrupt,
        }
    })
}

/// What every connection's requests share.
struct Shared {
    backend: Arc<dyn Backend>,
    metrics: Arc<Metrics>,
    listen: SocketAddr,
    started: Instant,
    max_module_bytes: usize,
    /// The invocation bodies held at once.
    bodies: Bodies,
    load: LoadConfig,
    /// Its tokens and a body's pace.
    front: FrontConfig,
    /// The node's id.
    id: String,
    /// The one registration that may compile at a time.
    compiling: tokio::sync::Semaphore,
    /// The registrations whose modules may be read at once.
    reading: tokio::sync::Semaphore,
    sampled: Mutex<Sampled>,
}

impl Service for Shared {
    async fn handle(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        handle(self, request).await
    }

    fn connection(&self) {
        self.metrics.connection();
    }

    fn accept_error(&self) {
        self.metrics.accept_error();
    }

    fn refused(&self) {
        self.metrics.refused_connection();
    }

    fn control(&self, request: &Request<Incoming>) -> bool {
        matches!(
            RouteKind::of(request.uri().path()),
            RouteKind::Register | RouteKind::Functions
        )
    }

    fn connection_error(&self) {
        self.metrics.connection_error();
    }

    fn stopping(&self) {
        self.backend.shutdown();
    }

    fn cut(&self) {
        self.metrics.cut();
    }
}

/// Answers one request, counting it and its response.
async fn handle(shared: &Shared, request: Request<Incoming>) -> Response<Full<Bytes>> {
    shared.metrics.request(RouteKind::of(request.uri().path()));
    let (response, kind) = match respond(shared, request).await {
        Ok(answered) => answered,
        Err(malformed) => {
            shared.metrics.malformed();
            refusal(malformed)
        }
    };
    shared.metrics.response(response.status().as_u16(), kind);
    response
}

/// Routes a request to its answer.
async fn respond(shared: &Shared, request: Request<Incoming>) -> Result<Counted, Malformed> {
    match request::route(request.method(), request.uri().path())? {
        Route::Invoke(function) => {
            let invoker = shared.front.invoker(request.headers())?;
            let (parts, body) = request.into_parts();
            // The bodies held at once, read or waiting for their answer,
            // are bounded in sum.
            let Some(held) = shared
                .bodies
                .read(body, shared.front.body_pace, "an invocation's body")
                .await?
            else {
                return Ok(overloaded(
                    "the node holds as many invocation bodies as it takes; send again in a second",
                ));
            };
            let body = held.body.clone();
            let mut invoke = request::invoke(function, parts.uri.query(), &parts.headers)?;
            invoke.headers = parts.headers;
            invoke.body = body;
            if invoker == Invoker::Client && invoke.deadline.take().is_some() {
                shared.metrics.deadline_ignored();
            }
            if let Err(failure) = shared.backend.check(&invoke) {
                if matches!(failure, Failure::BadRequest(_)) {
                    shared.metrics.malformed();
                }
                return Ok(failure_answer(&failure));
            }
            Ok(invoke_answer(invoke_and_wait(shared, invoke).await))
        }
        Route::Register(name) => {
            auth::check(
                shared.front.token.as_ref(),
                request.headers(),
                "POST /register",
            )?;
            if request.uri().query().is_some() {
                return Err(Malformed::bad("POST /register takes no query"));
            }
            let manifest = Manifest::from_header(
                request
                    .headers()
                    .get(MANIFEST_HEADER)
                    .map(HeaderValue::as_bytes),
            )
            .and_then(|m| m.unwrap_or_default().settings())
            .map_err(|why| Malformed::bad(format!("POST /register: {why}")))?;
            // A few modules read at once: each may hold up to
            // `max_module_bytes` while it comes.
            let Ok(_reading) = shared.reading.try_acquire() else {
                return Ok(busy_compiling(&name, "other modules are being sent"));
            };
            let module = read_body(
                request.into_body(),
                shared.max_module_bytes,
                shared.front.body_pace,
                "the module",
            )
            .await?;
            // One compile at a time: a compile takes a core for as long as
            // the module is large, and the workers need the others.
            let Ok(_compiling) = shared.compiling.try_acquire() else {
                return Ok(busy_compiling(&name, "another module is compiling"));
            };
            let registering = name.clone();
            let registered = blocking(shared, move |backend| {
                backend.register(&registering, &module, &manifest)
            })
            .await;
            Ok(match registered {
                Ok(()) => (
                    text(StatusCode::CREATED, format!("registered {name}\n")),
                    OK,
                ),
                Err(failure) => failure_answer(&failure),
            })
        }
        Route::Unregister(name) => {
            auth::check(
                shared.front.token.as_ref(),
                request.headers(),
                "DELETE /functions",
            )?;
            let (parts, body) = request.into_parts();
            if parts.uri.query().is_some() {
                return Err(Malformed::bad("DELETE /functions takes no query"));
            }
            read_body(body, 0, shared.front.body_pace, "a removal's body").await?;
            let removing = name.clone();
            let removed = blocking(shared, move |backend| backend.unregister(&removing)).await;
            Ok(match removed {
                Ok(()) => (text(StatusCode::OK, format!("removed {name}\n")), OK),
                Err(failure) => failure_answer(&failure),
            })
        }
        Route::Log(name) => {
            // A function's log may say what its callers sent: the control
            // token's.
            auth::check(
                shared.front.token.as_ref(),
                request.headers(),
                "GET /functions/NAME/log",
            )?;
            Ok(match shared.backend.log(&name) {
                Ok(log) => {
                    let mut response = Response::new(Full::new(log));
                    response.headers_mut().insert(
                        hyper::header::CONTENT_TYPE,
                        HeaderValue::from_static("text/plain; charset=utf-8"),
                    );
                    (response, OK)
                }
                Err(failure) => failure_answer(&failure),
            })
        }
        Route::Metrics => {
            let mut out = String::new();
            shared.metrics.render(&mut out);
            shared.backend.metrics(&mut out);
            Ok((response::prometheus(out), OK))
        }
        Route::Load => {
            let report = LoadReport {
                node: Some(shared.id.clone()),
                ..lock(&shared.sampled).report(&shared.load)
            };
            Ok((json(&report), OK))
        }
        Route::Status => {
            let status = serde_json::json!({
                "ingress": {
                    "id": shared.id,
                    "listen": shared.listen.to_string(),
                    "uptime_ms": u64::try_from(shared.started.elapsed().as_millis()).unwrap_or(u64::MAX),
                },
                "backend": shared.backend.status(),
            });
            Ok((json(&status), OK))
        }
    }
}

/// Runs `call` on the backend on tokio's blocking pool: a registration
/// compiles, and a removal waits for the runtime's lock.
async fn blocking(
    shared: &Shared,
    call: impl FnOnce(&dyn Backend) -> Result<(), Failure> + Send + 'static,
) -> Result<(), Failure> {
    let backend = Arc::clone(&shared.backend);
    tokio::task::spawn_blocking(move || call(&*backend))
        .await
        .unwrap_or_else(|_| Err(Failure::Internal("the backend panicked".into())))
}

/// Registrations whose modules are read at once; one more is answered 503
/// at once, so that what registrations hold is bounded by this many
/// modules of the largest size.
pub const MODULES_READ_AT_ONCE: usize = 4;

/// A 503 `overloaded` saying `why` and when to come back
/// (`Retry-After: 1`): a registration while others are read or compile,
/// or an invocation past the body budget ([`BODIES_HELD`](crate::wire::request::BODIES_HELD)).
fn overloaded(why: &str) -> Counted {
    let failure = Failure::Overloaded;
    let (mut response, kind) = response::error(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("{failure}: {why}\n"),
        failure.kind(),
    );
    response::retry_later(&mut response);
    (response, kind)
}

/// The 503 of a registration while others are read or compile (`why`).
fn busy_compiling(name: &str, why: &str) -> Counted {
    overloaded(&format!("{why}; register {name} again in a second"))
}

/// Hands `invoke` to the backend and waits for its answer.
async fn invoke_and_wait(shared: &Shared, invoke: Invoke) -> Answer {
    let (sender, answer) = oneshot::channel();
    let pending = Pending {
        metrics: Arc::clone(&shared.metrics),
        received: invoke.received,
        sender: Some(sender),
    };
    let mut waiting = Waiting {
        metrics: &shared.metrics,
        cancel: invoke.cancel.clone(),
        answered: false,
    };
    shared.metrics.accepted();
    shared
        .backend
        .invoke(invoke, Box::new(move |answer| pending.answer(answer)));
    // `Pending` sends on every path, its drop included.
    let answer = answer.await.unwrap_or_else(|_| {
        Err(Failure::Internal(
            "the invocation's answer was lost".to_owned(),
        ))
    });
    waiting.answered = true;
    answer
}

/// The reply's end in the backend: counts the answer and sends it on.
struct Pending {
    metrics: Arc<Metrics>,
    received: Instant,
    sender: Option<oneshot::Sender<Answer>>,
}

impl Pending {
    fn answer(mut self, answer: Answer) {
        self.send(answer);
    }

    fn send(&mut self, answer: Answer) {
        if let Some(sender) = self.sender.take() {
            let latency = u64::try_from(self.received.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.metrics.answered(latency);
            // An error means the client left: counted by its `Waiting`.
            let _ = sender.send(answer);
        }
    }
}

impl Drop for Pending {
    /// A backend that drops the reply uncalled breaks its contract; the
    /// client still gets an answer, and the books still balance.
    fn drop(&mut self) {
        self.send(Err(Failure::Internal(
            "the backend dropped the invocation without answering".to_owned(),
        )));
    }
}

/// The request's end: dropped before its answer means the client left,
/// and the invocation is cancelled so that it frees its sandbox.
struct Waiting<'m> {
    metrics: &'m Metrics,
    cancel: Cancel,
    answered: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.metrics.client_left();
            self.cancel.cancel();
        }
    }
}

/// The response to an invocation's answer: `VALUE\n` for a `run`
/// function; for a WASI command, what its standard output says
/// ([`cgi::response`]) if it exited 0, else a 500 `exit-status`; a
/// component's own response. Each carries the cost headers, and a
/// command's its exit status.
fn invoke_answer(answer: Answer) -> Counted {
    let completed = match answer {
        Ok(completed) => completed,
        Err(failure) => return failure_answer(&failure),
    };
    let command = matches!(completed.written, Some(Written::Command { .. }));
    let (mut response, kind) = match completed.written {
        None => (text(StatusCode::OK, format!("{}\n", completed.value)), OK),
        Some(Written::Response(answer)) => {
            let mut response = Response::new(Full::new(answer.body));
            *response.status_mut() = answer.status;
            *response.headers_mut() = functions_headers(answer.headers);
            (response, OK)
        }
        Some(Written::Command { .. }) if completed.value != 0 => response::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "the function exited with status {} (its standard error is its log)\n",
                completed.value
            ),
            EXIT_STATUS,
        ),
        Some(Written::Command { stdout, .. }) => match cgi::response(stdout) {
            Ok(cgi) => {
                let mut response = Response::new(Full::new(cgi.body));
                *response.status_mut() = cgi.status;
                *response.headers_mut() = functions_headers(cgi.headers);
                (response, OK)
            }
            Err(why) => response::error(
                StatusCode::BAD_GATEWAY,
                format!("the function's CGI header block is malformed: {why}\n"),
                BAD_HEADERS,
            ),
        },
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (RUNTIME_HEADER, completed.runtime / 1_000),
        (RUNTIME_CPU_HEADER, completed.cpu / 1_000),
        (PREEMPTIONS_HEADER, u64::from(completed.preemptions)),
        (COLD_HEADER, u64::from(completed.cold)),
    ] {
        headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
    }
    if command {
        headers.insert(
            HeaderName::from_static(EXIT_STATUS_HEADER),
            HeaderValue::from(completed.value),
        );
    }
    (response, kind)
}

/// The headers a function answered with, but its hop-by-hop ones and its
/// framing ([`hop_by_hop`]): its body is what it wrote, whatever length
/// it declared, and the connection is the node's.
fn functions_headers(mut headers: hyper::HeaderMap) -> hyper::HeaderMap {
    let theirs: Vec<_> = headers
        .keys()
        .filter(|name| hop_by_hop(name))
        .cloned()
        .collect();
    for name in theirs {
        headers.remove(name);
    }
    headers
}

/// The response carrying `failure`; a refusal by admission control says
/// when to try again (`Retry-After: 1`), since the node has room once what
/// it holds finishes.
fn failure_answer(failure: &Failure) -> Counted {
    let status =
        StatusCode::from_u16(failure.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let (mut response, kind) = response::error(status, format!("{failure}\n"), failure.kind());
    if matches!(failure, Failure::Refused(_)) {
        response::retry_later(&mut response);
    }
    (response, kind)
}
