//! The HTTP/1.1 serving every live front shares (the node runtime's
//! ingress, the cluster gateway): accept, serve each connection, and drain
//! on shutdown. What a request gets is the [`Service`]'s; how connections
//! come and go is here, once.
//!
//! The invariants:
//!
//! 1. Every accepted connection is served on its own task until it closes.
//! 2. An accept that fails for want of a resource (file descriptors,
//!    memory) waits [`ACCEPT_BACKOFF`] before the next, instead of
//!    spinning. At most [`Limits::max_connections`] are open at once: one
//!    more is answered a bare 503 with `Retry-After` and closed
//!    ([`Service::refused`]), or closed at once while 64 such answers are
//!    being written, so that slow clients cannot take every file
//!    descriptor. The last eighth of them (at most [`MAX_RESERVED`]) are
//!    kept for the control plane ([`Service::control`]): another request
//!    on one is answered 503 and its connection closed.
//!    Under TLS a refused connection is closed unanswered (a plain 503
//!    would mean nothing to its client), and a handshake must end within
//!    [`crate::tls::HANDSHAKE_TIMEOUT`].
//! 3. A request's headers must come within hyper's header read timeout
//!    (30 s, which also closes an idle connection), and its body at
//!    [`BodyPace`]'s rate ([`crate::wire`]'s bodies are read so).
//! 4. Shutdown: when the `shutdown` future resolves, the listener is closed
//!    (new connections are refused), [`Service::stopping`] is called, every
//!    connection finishes the request it holds and closes, and [`serve`]
//!    returns once all have, or after the drain timeout, cutting those
//!    still open, and saying how many of them held a request being
//!    answered ([`Cut`]).

use crate::auth::{self, Token};
use crate::tls::{Io, ServerTls};
use crate::wire::request::Malformed;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How long the accept loop waits after an accept failed for want of a
/// resource (file descriptors, memory) before it tries again, instead of
/// spinning: 10 ms.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Connections open at once by default: 512, half a default file
/// descriptor limit of 1,024, which leaves the rest to the process.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// How long a refused connection's 503 may take to write before the
/// connection is closed anyway.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);

/// Refused connections answered at once; past them, a refused connection
/// is closed unanswered.
const MAX_REFUSING: usize = 64;

/// The answer to a connection past [`Limits::max_connections`].
const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\n\
x-faasched-error: overloaded\r\nconnection: close\r\ncontent-length: 33\r\n\r\n\
overloaded: too many connections\n";

/// How fast a request's body must come: its first byte within `grace`,
/// byte i by `grace` + i / `min_rate`. A client that sends slower is
/// answered 408 and its connection closed, so that a slow body holds a
/// connection and its memory for a bounded time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyPace {
    /// Time for the first byte, and slack for the rest.
    pub grace: Duration,
    /// Bytes a second a body keeps up, on average, past the grace.
    pub min_rate: u64,
}

impl Default for BodyPace {
    /// 5 s of grace, then 64 KiB a second: a 16 MiB module in 261 s at
    /// most.
    fn default() -> BodyPace {
        BodyPace {
            grace: Duration::from_secs(5),
            min_rate: 64 << 10,
        }
    }
}

impl BodyPace {
    /// When byte `read` (counted from 0) is due, from the body's start.
    pub fn due(&self, read: usize) -> Duration {
        self.grace + Duration::from_secs_f64(read as f64 / self.min_rate.max(1) as f64)
    }
}

/// What a front asks of its clients and lets them hold: the knobs the
/// node runtime's ingress and the cluster gateway share.
#[derive(Clone, Debug)]
pub struct FrontConfig {
    /// What the control routes (a node's `POST /register` and `DELETE
    /// /functions`, a gateway's `PUT` and `DELETE /nodes`) must present,
    /// if anything (see [`crate::auth`]).
    pub token: Option<Token>,
    /// What an invocation must present, if anything (the control token
    /// also admits: see [`FrontConfig::invoker`]).
    pub invoke_token: Option<Token>,
    /// Connections open at once; one more is refused 503.
    pub max_connections: usize,
    /// How fast a request's body must come.
    pub body_pace: BodyPace,
    /// The listener takes TLS only, with this certificate; `None`: plain
    /// HTTP.
    pub tls: Option<ServerTls>,
}

impl Default for FrontConfig {
    /// No token, [`DEFAULT_MAX_CONNECTIONS`], [`BodyPace`]'s default,
    /// plain HTTP.
    fn default() -> FrontConfig {
        FrontConfig {
            token: None,
            invoke_token: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            body_pace: BodyPace::default(),
            tls: None,
        }
    }
}

/// Who sent an invocation, as far as its credential tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invoker {
    /// It presented the control token, or the front has none (so whoever
    /// reaches it may change what it runs): it may also choose how urgent
    /// its request is (`x-faasched-deadline-us`).
    Operator,
    /// It may invoke, with the invocation token where there is one, but
    /// not jump the queue: under EDF a client choosing its own deadline
    /// would run before everyone else.
    Client,
}

impl FrontConfig {
    /// Who sent an invocation with `headers`, or the 401 of one that may
    /// not invoke. The control token admits to invocations as well as the
    /// invocation token does: whoever may change the code may run it.
    pub fn invoker(&self, headers: &HeaderMap) -> Result<Invoker, Malformed> {
        match &self.token {
            Some(token) if token.admits(headers) => Ok(Invoker::Operator),
            control => {
                auth::check(self.invoke_token.as_ref(), headers, "POST /invoke")?;
                Ok(match control {
                    Some(_) => Invoker::Client,
                    None => Invoker::Operator,
                })
            }
        }
    }
}

/// What bounds a server's connections.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// How long shutdown waits for the requests in hand.
    pub drain_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
}

impl Limits {
    /// Draining for `drain_timeout`, at most [`DEFAULT_MAX_CONNECTIONS`]
    /// open.
    pub fn new(drain_timeout: Duration) -> Limits {
        Limits {
            drain_timeout,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }

    /// Of the connections, the last ones open kept for the control plane:
    /// an eighth of them, at most [`MAX_RESERVED`].
    fn reserved(&self) -> usize {
        (self.max_connections / 8).min(MAX_RESERVED)
    }
}

/// The most connections kept for the control plane.
pub const MAX_RESERVED: usize = 16;

/// What a server does with its requests, and what it counts of its
/// connections. Every method but [`Service::handle`] defaults to nothing.
pub trait Service: Send + Sync + 'static {
    /// The answer to `request`.
    fn handle(
        &self,
        request: Request<Incoming>,
    ) -> impl Future<Output = Response<Full<Bytes>>> + Send;

    /// A connection was accepted.
    fn connection(&self) {}

    /// An accept failed.
    fn accept_error(&self) {}

    /// A connection past [`Limits::max_connections`] was refused, or a
    /// request other than a control one came on a connection kept for
    /// the control plane.
    fn refused(&self) {}

    /// Whether `request` is one of the control plane's, which the last
    /// connections are kept for ([`Limits`]). By default none is.
    fn control(&self, request: &Request<Incoming>) -> bool {
        let _ = request;
        false
    }

    /// A connection ended in an error (a malformed message, a reset).
    fn connection_error(&self) {}

    /// Shutdown began: the listener is closed, and the requests being
    /// served are still to be answered.
    fn stopping(&self) {}

    /// The drain timeout passed with connections still open; they are cut
    /// next.
    fn cut(&self) {}
}

/// The connections a drain timeout cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cut {
    /// Those cut while the service was answering their request: each a
    /// request left without its answer.
    pub answering: usize,
    /// Those cut while no request of theirs was with the service: one
    /// still being read, or an answer still being written.
    pub other: usize,
}

impl Cut {
    /// Every connection cut.
    pub fn total(self) -> usize {
        self.answering + self.other
    }
}

impl fmt::Display for Cut {
    /// `N connections cut`, and, if some were, which.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} connections cut", self.total())?;
        if self.total() > 0 {
            write!(
                f,
                " ({} awaiting their answer, {} while a request was read or an answer written)",
                self.answering, self.other
            )?;
        }
        Ok(())
    }
}

/// Serves HTTP/1.1 on `listener` with `service` (under TLS with `tls`)
/// until `shutdown` resolves, at most `limits.max_connections` at once,
/// then drains for at most `limits.drain_timeout` (the module docs' step
/// 4). Returns what the drain timeout cut.
pub async fn serve<S: Service>(
    listener: TcpListener,
    service: Arc<S>,
    tls: Option<ServerTls>,
    shutdown: impl Future<Output = ()>,
    limits: Limits,
) -> Cut {
    let drain_timeout = limits.drain_timeout;
    let (stop, stopping) = watch::channel(false);
    // Requests with the service now, over every connection: an HTTP/1.1
    // connection has one at a time.
    let answering = Arc::new(AtomicUsize::new(0));
    // Refused connections being answered now.
    let refusing = Arc::new(AtomicUsize::new(0));
    let mut connections = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) if full(&mut connections, limits.max_connections) => {
                    service.refused();
                    if tls.is_none() && refusing.load(Ordering::SeqCst) < MAX_REFUSING {
                        tokio::spawn(refuse(stream, Arc::clone(&refusing)));
                    }
                    // Past those, dropped at once: a flood of refusals
                    // holds no more descriptors than the limit allows.
                }
                Ok((stream, _)) => {
                    service.connection();
                    // Answers are small and written whole: send them now.
                    let _ = stream.set_nodelay(true);
                    let control_only =
                        connections.len() >= limits.max_connections - limits.reserved();
                    let service = Arc::clone(&service);
                    let (stopping, answering) = (stopping.clone(), Arc::clone(&answering));
                    let tls = tls.clone();
                    connections.spawn(async move {
                        match tls {
                            None => connection(stream, service, stopping, answering, control_only).await,
                            Some(tls) => match tls.accept(stream).await {
                                Ok(stream) => {
                                    connection(stream, service, stopping, answering, control_only).await;
                                }
                                Err(_) => service.connection_error(),
                            },
                        }
                    });
                }
                Err(error) => {
                    service.accept_error();
                    if starved(&error) {
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                    }
                }
            },
            // Reap finished connections as they go, so the set holds
            // only open ones.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }

    drop(listener);
    service.stopping();
    stop.send_replace(true);
    let drained = tokio::time::timeout(drain_timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        service.cut();
        let open = connections.len();
        let answering = answering.load(Ordering::SeqCst).min(open);
        connections.shutdown().await;
        Cut {
            answering,
            other: open - answering,
        }
    } else {
        Cut::default()
    }
}

/// The 503 of a request other than a control one on a connection kept
/// for the control plane; the connection closes after it.
fn kept_for_control() -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(
        b"overloaded: the last connections are kept for the control plane\n",
    )));
    *response.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
    crate::wire::response::retry_later(&mut response);
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    headers.insert(
        crate::wire::ERROR_HEADER,
        hyper::header::HeaderValue::from_static("overloaded"),
    );
    response
}

/// Whether `max` connections are open, those that ended reaped first:
/// under a flood of accepts the loop's reaping branch may not get its
/// turn, and ended connections must not hold places.
fn full(connections: &mut JoinSet<()>, max: usize) -> bool {
    while connections.try_join_next().is_some() {}
    connections.len() >= max
}

/// Answers a connection past the limit its 503 and closes it, giving it
/// [`REFUSAL_WRITE`] at most; `refusing` counts it meanwhile. The close is
/// a half-close, then what the client sent is read and dropped, so that
/// the client reads the answer (closing on unread bytes would reset the
/// connection, and the answer with it).
async fn refuse(mut stream: TcpStream, refusing: Arc<AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _counted = Answering::new(refusing);
    let _ = tokio::time::timeout(REFUSAL_WRITE, async {
        stream.write_all(REFUSAL).await?;
        stream.shutdown().await?;
        let mut sink = [0; 1024];
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    })
    .await;
}

/// One of a count, counted while it lives (a request with the service, a
/// refusal being written): a cut connection drops it mid-answer, and the
/// count goes down all the same.
struct Answering(Arc<AtomicUsize>);

impl Answering {
    fn new(count: Arc<AtomicUsize>) -> Answering {
        count.fetch_add(1, Ordering::SeqCst);
        Answering(count)
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether an accept failed for want of a resource that only time gives
/// back: retrying at once would spin.
fn starved(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Serves one connection until it closes, or until shutdown lets it
/// finish the request it holds.
async fn connection<S: Service>(
    stream: impl Io,
    service: Arc<S>,
    mut stopping: watch::Receiver<bool>,
    answering: Arc<AtomicUsize>,
    control_only: bool,
) {
    let handler = Arc::clone(&service);
    let serving = service_fn(move |request| {
        let handler = Arc::clone(&handler);
        let answering = Arc::clone(&answering);
        async move {
            if control_only && !handler.control(&request) {
                handler.refused();
                return Ok::<_, Infallible>(kept_for_control());
            }
            let _with_service = Answering::new(answering);
            Ok(handler.handle(request).await)
        }
    });
    // The timer gives hyper its header read timeout (30 s by default), so
    // an idle or stalled connection does not stay open forever.
    let mut connection = pin!(
        http1::Builder::new()
            .timer(TokioTimer::new())
            .serve_connection(TokioIo::new(stream), serving)
    );
    let result = tokio::select! {
        result = connection.as_mut() => result,
        // The guard `wait_for` returns must not live across the await.
        () = async { drop(stopping.wait_for(|&stop| stop).await) } => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if result.is_err() {
        service.connection_error();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use tokio::sync::Notify;

    /// `/hold` is answered never; `/big` with 64 MiB, which a client that
    /// does not read leaves half written.
    struct Holding {
        held: Notify,
        big: Notify,
    }

    impl Service for Holding {
        async fn handle(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
            if request.uri().path() == "/hold" {
                self.held.notify_one();
                std::future::pending::<()>().await;
            }
            self.big.notify_one();
            Response::new(Full::new(Bytes::from(vec![b'x'; 64 << 20])))
        }
    }

    /// The drain timeout cuts a connection whose request the service holds
    /// and one whose answer is still being written, and tells them apart.
    #[test]
    fn a_cut_says_which_connections_held_a_request() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let service = Arc::new(Holding {
            held: Notify::new(),
            big: Notify::new(),
        });
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let ask = |path: &str| {
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            write!(stream, "GET {path} HTTP/1.1\r\nhost: t\r\n\r\n").unwrap();
            stream
        };
        let (hold, big) = (ask("/hold"), ask("/big"));
        let cut = runtime.block_on(serve(
            listener,
            Arc::clone(&service),
            None,
            async {
                service.held.notified().await;
                service.big.notified().await;
            },
            Limits::new(Duration::from_millis(50)),
        ));
        assert_eq!(
            cut,
            Cut {
                answering: 1,
                other: 1
            }
        );
        assert_eq!(cut.total(), 2);
        assert_eq!(
            cut.to_string(),
            "2 connections cut (1 awaiting their answer, 1 while a request was read or an answer \
             written)"
        );
        assert_eq!(Cut::default().to_string(), "0 connections cut");
        for mut stream in [hold, big] {
            let mut rest = Vec::new();
            // Closed: whatever was written is read, then the end.
            let _ = stream.read_to_end(&mut rest);
            assert!(rest.len() < 64 << 20, "no answer came whole");
        }
    }
}
