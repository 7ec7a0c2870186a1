//! `wasi:http/proxy` components: the request a component is handed, the
//! host it runs with (WASI preview 2 and wasi:http on wasmtime-wasi-http),
//! and the exchange that calls its handler and reads its response.
//!
//! A component reaches nothing outside its request: no preopened
//! directory, no socket, no name lookup, no inherited stream; its standard
//! output and error both go to its log. An outgoing request
//! (`wasi:http/outgoing-handler`) goes out only to a host its
//! [`Deployment::allow_outbound`](crate::Deployment::allow_outbound)
//! names, over plain HTTP; any other is refused with
//! `HTTP-request-denied`.

use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, StatusCode};
use http_body_util::{BodyExt, Full};
use wasmtime::Store;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView};
use wasmtime_wasi_http::p2::bindings::Proxy;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::{WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

use crate::deployment::outbound_key;
use crate::guest::Guest;

/// What a component is handed: one HTTP request, whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Its method.
    pub method: http::Method,
    /// Its target, as the component reads it back (`path-with-query`,
    /// `authority`; without an authority the component sees `localhost`).
    pub uri: http::Uri,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: Bytes,
}

/// A component's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Its status.
    pub status: StatusCode,
    /// Its headers, as the component set them (wasmtime-wasi-http refuses
    /// hop-by-hop ones such as `Connection` or `Transfer-Encoding`).
    pub headers: HeaderMap,
    /// Its whole body, at most [`Config::max_output`](crate::Config::max_output)
    /// bytes (more is [`Fault::OutputLimit`](crate::Fault::OutputLimit)).
    pub body: Bytes,
}

/// What a component's store holds beyond its memory limit: WASI preview
/// 2's context, wasi:http's, and the table of the resources they hand out.
pub(crate) struct HttpHost {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    outbound: Outbound,
}

impl HttpHost {
    /// The context a component named `name` runs with: `env` as its
    /// environment, its arguments its name alone, standard output and
    /// error into `log`, its outgoing requests to `allowed` (keys of
    /// [`outbound_key`]) only.
    pub(crate) fn new(
        name: &str,
        env: &[(String, String)],
        allowed: &[String],
        log: &MemoryOutputPipe,
    ) -> Self {
        let wasi = WasiCtxBuilder::new()
            .stdout(log.clone())
            .stderr(log.clone())
            .args(&[name])
            .envs(env)
            .build();
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        let mut http = WasiHttpCtx::new();
        http.set_field_size_limit(MAX_FIELDS_BYTES);
        Self {
            wasi,
            table,
            http,
            outbound: Outbound {
                allowed: allowed.iter().filter_map(|a| outbound_key(a)).collect(),
                sent: 0,
            },
        }
    }

    pub(crate) fn wasi(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }

    pub(crate) fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.outbound,
        }
    }
}

/// How long an allowed outgoing request may take to connect, or to begin
/// its response, at most (a component may ask for less).
const OUTBOUND_TIMEOUT: Duration = Duration::from_secs(10);

/// Outgoing requests one request's component may make; past them each is
/// refused (`connection-limit-reached`).
pub const MAX_OUTBOUND_REQUESTS: u32 = 64;

/// Resources (fields, bodies, streams, requests, ...) one component may
/// hold at once: host memory its memory limit does not count.
const MAX_RESOURCES: usize = 4096;

/// Bytes one set of header fields may hold (wasmtime-wasi-http's
/// in-memory measure): 64 KiB, past what HTTP front ends take.
const MAX_FIELDS_BYTES: usize = 64 << 10;

/// The hooks of a component's outgoing requests: one to an allowed host
/// is sent over plain HTTP/1.1 on a connection of its own; any other is
/// refused.
struct Outbound {
    /// [`outbound_key`]s of the hosts allowed.
    allowed: Vec<String>,
    /// Outgoing requests sent so far.
    sent: u32,
}

/// What an outgoing request's hook returns: the response, and a future
/// the host awaits for the request's own errors (none here: the
/// connection's task reports its own).
type Sent = wasmtime_wasi_http::Result<(
    http::Response<WasiBody>,
    Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
)>;

impl WasiHttpHooks for Outbound {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        _done: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Box<dyn Future<Output = Sent> + Send> {
        let target = request
            .uri()
            .authority()
            .and_then(|a| outbound_key(a.as_str()))
            .filter(|_| request.uri().scheme() == Some(&http::uri::Scheme::HTTP))
            .filter(|key| self.allowed.contains(key));
        let Some(target) = target else {
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        };
        if self.sent >= MAX_OUTBOUND_REQUESTS {
            return Box::new(async { Err(wasmtime_wasi_http::Error::ConnectionLimitReached) });
        }
        self.sent += 1;
        let at_most =
            |asked: Option<Duration>| asked.map_or(OUTBOUND_TIMEOUT, |t| t.min(OUTBOUND_TIMEOUT));
        let connect_timeout = at_most(options.and_then(|o| o.connect_timeout));
        let first_byte_timeout = at_most(options.and_then(|o| o.first_byte_timeout));
        Box::new(send(request, target, connect_timeout, first_byte_timeout))
    }
}

/// Sends `request` to `target` (`host:port`) on a new connection.
async fn send(
    mut request: http::Request<WasiBody>,
    target: String,
    connect_timeout: Duration,
    first_byte_timeout: Duration,
) -> Sent {
    use wasmtime_wasi_http::Error;
    let stream = tokio::time::timeout(connect_timeout, tokio::net::TcpStream::connect(&target))
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::Connect)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(wasmtime_wasi_http::io::TokioIo::new(stream)).await?;
    // The connection's own task: it ends when the response is read whole,
    // or is dropped with its runtime.
    tokio::spawn(connection);
    // Origin form on the wire: the path and query alone.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *request.uri_mut() = path.parse().map_err(|_| Error::HttpRequestUriInvalid)?;
    let response = tokio::time::timeout(first_byte_timeout, sender.send_request(request))
        .await
        .map_err(|_| Error::ConnectionReadTimeout)??;
    let response = response.map(|body| body.map_err(Error::from).boxed_unsync());
    Ok((response, Box::new(async { Ok(()) })))
}

impl wasmtime_wasi::WasiView for Guest {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        self.http_host().wasi()
    }
}

impl WasiHttpView for Guest {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        self.http_host().http()
    }
}

/// Adds WASI preview 2 (its command-line interfaces too: a Python
/// component's interpreter needs them) and wasi:http to `linker`.
pub(crate) fn link(linker: &mut Linker<Guest>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
}

/// The error an exchange ends with when the body is longer than kept.
#[derive(Debug, thiserror::Error)]
#[error("its response body is longer than the {0} bytes kept")]
pub(crate) struct OverOutput(pub usize);

/// Calls `proxy`'s handler on `request` in `store` and reads its response,
/// its body at most `max_output` bytes.
///
/// The handler and the reading run side by side in one future: a
/// component writing a body longer than the stream's buffer waits for the
/// reader, and the reader for the component. The store moves into the
/// handler's call, so that when the handler returns, whatever it left
/// open (a body never finished, a response never set) is dropped, and
/// the reader sees the end. A body the component never finished reads as
/// ended where it stopped: wasmtime-wasi-http's body tells a dropped one
/// from a finished one apart only by its trailers, which it does not
/// report (a limitation, named in docs/RUNTIME.md).
pub(crate) async fn exchange(
    proxy: Proxy,
    mut store: Store<Guest>,
    request: Request,
    max_output: usize,
) -> wasmtime::Result<Response> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let mut view = store.data_mut().http_host().http();
    let body = Full::new(request.body)
        .map_err(|never: Infallible| -> wasmtime_wasi_http::Error { match never {} });
    let mut incoming = http::Request::new(body);
    *incoming.method_mut() = request.method;
    *incoming.headers_mut() = request.headers;
    *incoming.uri_mut() = match request.uri.authority() {
        Some(_) => request.uri,
        None => {
            let mut parts = request.uri.into_parts();
            parts.scheme = Some(http::uri::Scheme::HTTP);
            parts.authority = Some(http::uri::Authority::from_static("localhost"));
            if parts.path_and_query.is_none() {
                parts.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
            }
            http::Uri::from_parts(parts)?
        }
    };
    let incoming = view.new_incoming_request(Scheme::Http, incoming)?;
    let outparam = view.new_response_outparam(sender)?;
    let handler = proxy.wasi_http_incoming_handler();
    let mut handle = pin!(handler.call_handle(store, incoming, outparam));
    let mut read = pin!(async move {
        let response = match receiver.await {
            Ok(Ok(response)) => response,
            Ok(Err(code)) => wasmtime::bail!("it answered with the error {code:?}"),
            Err(_) => wasmtime::bail!("it returned without setting a response"),
        };
        let (parts, mut body) = response.into_parts();
        let mut bytes = BytesMut::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| wasmtime::format_err!("its response body: {e}"))?;
            if let Ok(data) = frame.into_data() {
                if bytes.len() + data.len() > max_output {
                    return Err(wasmtime::Error::new(OverOutput(max_output)));
                }
                bytes.extend_from_slice(&data);
            }
        }
        Ok(Response {
            status: parts.status,
            headers: parts.headers,
            body: bytes.freeze(),
        })
    });
    let mut handled = false;
    let mut response = None;
    poll_fn(|cx| {
        if !handled {
            match handle.as_mut().poll(cx) {
                Poll::Ready(Ok(())) => handled = true,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {}
            }
        }
        if response.is_none() {
            match read.as_mut().poll(cx) {
                Poll::Ready(Ok(r)) => response = Some(r),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {}
            }
        }
        match (handled, response.take()) {
            (true, Some(r)) => Poll::Ready(Ok(r)),
            (_, r) => {
                response = r;
                Poll::Pending
            }
        }
    })
    .await
}
