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
//!    spinning.
//! 3. Shutdown: when the `shutdown` future resolves, the listener is closed
//!    (new connections are refused), [`Service::stopping`] is called, every
//!    connection finishes the request it holds and closes, and [`serve`]
//!    returns once all have, or after the drain timeout, cutting those
//!    still open.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How long the accept loop waits after an accept failed for want of a
/// resource (file descriptors, memory) before it tries again, instead of
/// spinning: 10 ms.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

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

    /// A connection ended in an error (a malformed message, a reset).
    fn connection_error(&self) {}

    /// Shutdown began: the listener is closed, and the requests being
    /// served are still to be answered.
    fn stopping(&self) {}

    /// The drain timeout passed with connections still open; they are cut
    /// next.
    fn cut(&self) {}
}

/// Serves HTTP/1.1 on `listener` with `service` until `shutdown`
/// resolves, then drains for at most `drain_timeout` (the module docs' step
/// 3). Returns how many connections the drain timeout cut.
pub async fn serve<S: Service>(
    listener: TcpListener,
    service: Arc<S>,
    shutdown: impl Future<Output = ()>,
    drain_timeout: Duration,
) -> usize {
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    service.connection();
                    // Answers are small and written whole: send them now.
                    let _ = stream.set_nodelay(true);
                    connections.spawn(connection(stream, Arc::clone(&service), stopping.clone()));
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
        connections.shutdown().await;
        open
    } else {
        0
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
    stream: TcpStream,
    service: Arc<S>,
    mut stopping: watch::Receiver<bool>,
) {
    let handler = Arc::clone(&service);
    let serving = service_fn(move |request| {
        let handler = Arc::clone(&handler);
        async move { Ok::<_, Infallible>(handler.handle(request).await) }
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
