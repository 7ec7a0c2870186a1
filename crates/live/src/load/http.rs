//! The HTTP side of a call: where it goes ([`Http`]), what is sent, how
//! the connection is made, and what the answer says (docs/RUNTIME.md,
//! "HTTP API"; a gateway's answer names its node, docs/CLUSTER.md).

use super::HttpCall;
use super::config::LoadConfig;
use super::outcome::{Answer, Failure, LoadError};
use super::transport::{Came, Transport};
use crate::auth::Token;
use crate::tls::{self, ClientTls};
use crate::wire::{
    COLD_HEADER, DEADLINE_HEADER, ERROR_HEADER, FUNCTION_HEADER, NODE_HEADER, PREEMPTIONS_HEADER,
    RUNTIME_CPU_HEADER, RUNTIME_HEADER,
};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HOST, HeaderMap, HeaderValue};
use hyper::{Method, Response, Uri};
use hyper_util::rt::TokioIo;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout, timeout_at};

/// The longest error kind kept from [`ERROR_HEADER`]: the runtime's are a
/// word or two; a longer one is not the runtime's.
const MAX_KIND: usize = 32;

/// One open connection's sending half.
pub(crate) type Sender = SendRequest<Full<Bytes>>;

/// A connection of the open loop: its number, and its sender (`None`: to
/// open again).
type Slot = (u32, Option<Sender>);

/// Where calls go: a target's resolved address, the target as given
/// (the name its TLS certificate must carry), and how it is spoken to.
#[derive(Clone, Debug)]
pub(crate) struct Dest {
    addr: SocketAddr,
    target: Arc<str>,
    tls: Option<ClientTls>,
}

/// A node runtime's or a gateway's `HOST:PORT`, resolved: the transport of
/// calls over HTTP/1.1 connections kept alive.
#[derive(Debug)]
pub struct Http {
    dest: Dest,
    /// The open loop's free connections, once started; sized so that
    /// giving one back never waits.
    free: Option<(mpsc::Sender<Slot>, mpsc::Receiver<Slot>)>,
    /// What every request presents, once started.
    token: Option<Token>,
}

impl Http {
    /// Calls to `target`, `HOST:PORT`, resolved to its first address; a
    /// bad one is [`LoadError::Invalid`] naming the target.
    pub fn to(target: &str) -> Result<Http, LoadError> {
        let bad = |why: String| LoadError::invalid("target", format!("`{target}`: {why}"));
        if target
            .rsplit_once(':')
            .is_none_or(|(host, _)| host.is_empty())
        {
            return Err(bad("give HOST:PORT, e.g. 127.0.0.1:8080".into()));
        }
        let addr = target
            .to_socket_addrs()
            .map_err(|e| bad(e.to_string()))?
            .next()
            .ok_or_else(|| bad("names no address".into()))?;
        Ok(Http {
            dest: Dest {
                addr,
                target: target.into(),
                tls: None,
            },
            free: None,
            token: None,
        })
    }

    /// Calls under TLS, the target's certificate checked against `tls`'s
    /// CA; with `None`, plain HTTP.
    pub fn tls(mut self, tls: Option<ClientTls>) -> Http {
        self.dest.tls = tls;
        self
    }

    /// `HOST:PORT` as given.
    pub fn target(&self) -> &str {
        &self.dest.target
    }

    pub(crate) fn dest(&self) -> &Dest {
        &self.dest
    }

    /// Opens `config.mode.connections()` connections, each given the
    /// config's timeout.
    pub(crate) async fn connect_all(&self, config: &LoadConfig) -> Result<Vec<Sender>, LoadError> {
        let per_call = Duration::from_nanos(config.timeout);
        let mut senders = Vec::new();
        for _ in 0..config.mode.connections() {
            let sender = match timeout(per_call, connect(&self.dest)).await {
                Ok(connected) => connected,
                Err(_) => Err(io::Error::from(io::ErrorKind::TimedOut)),
            }
            .map_err(|source| LoadError::Connect {
                target: self.dest.target.to_string(),
                source,
            })?;
            senders.push(sender);
        }
        Ok(senders)
    }

    fn started(&self) -> &(mpsc::Sender<Slot>, mpsc::Receiver<Slot>) {
        self.free
            .as_ref()
            .expect("the open loop starts its transport first")
    }
}

impl<C: HttpCall> Transport<C> for Http {
    type Lane = Option<Sender>;

    async fn start(&mut self, config: &LoadConfig) -> Result<(), LoadError> {
        let senders = self.connect_all(config).await?;
        let (tx, rx) = mpsc::channel::<Slot>(senders.len());
        for (i, sender) in (0u32..).zip(senders) {
            let _ = tx.try_send((i, Some(sender)));
        }
        self.free = Some((tx, rx));
        self.token.clone_from(&config.token);
        Ok(())
    }

    async fn free(&mut self) -> (u32, Option<Sender>) {
        let (_, rx) = self
            .free
            .as_mut()
            .expect("the open loop starts its transport first");
        rx.recv().await.expect("the transport keeps a sender")
    }

    fn unused(&self, number: u32, lane: Option<Sender>) {
        let _ = self.started().0.try_send((number, lane));
    }

    fn send(
        &self,
        number: u32,
        lane: Option<Sender>,
        call: &C,
        _due: Instant,
        by: Instant,
    ) -> impl Future<Output = Came> + Send + 'static {
        let message = presenting(call.request(&self.dest.target), self.token.as_ref());
        let (dest, free) = (self.dest.clone(), self.started().0.clone());
        async move {
            let (lane, result) = match timeout_at(by, attempt(lane, &dest, message)).await {
                Ok(outcome) => outcome,
                // The connection is in an unknown state: the next call
                // opens a new one.
                Err(_) => (None, Err(Failure::ResponseTimeout)),
            };
            let came = Instant::now();
            let _ = free.try_send((number, lane));
            (result, came)
        }
    }
}

/// `message` with `token`, if any, as its `Authorization: Bearer`.
pub(crate) fn presenting(
    mut message: hyper::Request<Full<Bytes>>,
    token: Option<&Token>,
) -> hyper::Request<Full<Bytes>> {
    if let Some(token) = token {
        message
            .headers_mut()
            .insert(hyper::header::AUTHORIZATION, token.bearer());
    }
    message
}

/// One request on `slot` (opened again if it is `None` or closed): the
/// connection to give back (`None` if it broke) and the outcome.
pub(crate) async fn attempt(
    slot: Option<Sender>,
    dest: &Dest,
    message: hyper::Request<Full<Bytes>>,
) -> (Option<Sender>, Result<Answer, Failure>) {
    let kept = match slot {
        // A connection the server closed after its last response (`Connection:
        // close`) fails `ready` at once and is opened again.
        Some(mut sender) => match sender.ready().await {
            Ok(()) => Some(sender),
            Err(_) => None,
        },
        None => None,
    };
    let mut sender = match kept {
        Some(sender) => sender,
        None => match connect(dest).await {
            Ok(sender) => sender,
            Err(_) => return (None, Err(Failure::ConnectFailed)),
        },
    };
    let result = exchange(&mut sender, message).await;
    let keep = !matches!(result, Err(Failure::ConnectionLost));
    (keep.then_some(sender), result)
}

/// `POST /invoke/spin?us={work_us}` to `target`, without a body, as
/// [`invoke_call`] labels it.
pub(crate) fn invoke(
    target: &str,
    work_us: u64,
    function: &str,
    deadline_us: Option<u64>,
) -> hyper::Request<Full<Bytes>> {
    let uri = format!("/invoke/spin?us={work_us}")
        .parse()
        .expect("a path of ASCII digits and letters is a URI");
    invoke_call(target, uri, Bytes::new(), function, deadline_us)
}

/// `POST {uri}` (`/invoke/NAME[?QUERY]`) to `target` with `body` (an empty
/// one costs nothing), the workload function named in
/// `x-faasched-function` and, if given, the relative deadline in
/// `x-faasched-deadline-us`.
pub(crate) fn invoke_call(
    target: &str,
    uri: Uri,
    body: Bytes,
    function: &str,
    deadline_us: Option<u64>,
) -> hyper::Request<Full<Bytes>> {
    let mut http = hyper::Request::new(Full::new(body));
    *http.method_mut() = Method::POST;
    *http.uri_mut() = uri;
    let headers = http.headers_mut();
    // A target that is no header value was refused by the config's check
    // (it resolves, so it is a host name or an address).
    if let Ok(host) = HeaderValue::from_str(target) {
        headers.insert(HOST, host);
    }
    // A function name that is no header value (a CSV's) is left out rather
    // than sent mangled.
    if let Ok(name) = HeaderValue::from_str(function) {
        headers.insert(FUNCTION_HEADER, name);
    }
    if let Some(deadline) = deadline_us {
        headers.insert(DEADLINE_HEADER, HeaderValue::from(deadline));
    }
    http
}

/// Opens a connection to `dest` and drives it on a task of its own.
async fn connect(dest: &Dest) -> io::Result<Sender> {
    let stream = TcpStream::connect(dest.addr).await?;
    let stream = tls::over(stream, &dest.target, dest.tls.as_ref()).await?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(io::Error::other)?;
    tokio::spawn(async move {
        // Its errors reach the request that was using it.
        let _ = connection.await;
    });
    Ok(sender)
}

/// Sends `http` on `sender` and reads the whole response.
async fn exchange(
    sender: &mut Sender,
    http: hyper::Request<Full<Bytes>>,
) -> Result<Answer, Failure> {
    sender.ready().await.map_err(|_| Failure::ConnectionLost)?;
    let response = sender
        .send_request(http)
        .await
        .map_err(|_| Failure::ConnectionLost)?;
    let (parts, body) = response.into_parts();
    // The body is the function's result or the error's text: read to keep
    // the connection usable, not kept.
    body.collect().await.map_err(|_| Failure::ConnectionLost)?;
    Ok(answer(&Response::from_parts(parts, ())))
}

/// What `response` says; a header that is absent or not a number is `None`.
fn answer(response: &Response<()>) -> Answer {
    let headers = response.headers();
    let status = response.status();
    Answer {
        status: status.as_u16(),
        runtime_us: number(headers, RUNTIME_HEADER),
        cpu_us: number(headers, RUNTIME_CPU_HEADER),
        preemptions: number(headers, PREEMPTIONS_HEADER),
        node: headers
            .get(NODE_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty()),
        cold: match headers.get(COLD_HEADER).map(|v| v.as_bytes()) {
            Some(b"0") => Some(false),
            Some(b"1") => Some(true),
            _ => None,
        },
        failure: (!status.is_success()).then(|| Failure::Server {
            kind: error_kind(headers).unwrap_or_else(|| format!("http-{}", status.as_u16())),
        }),
        completed: None,
    }
}

fn number(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// [`ERROR_HEADER`]'s kind if it is one: lower-case letters, digits and
/// dashes, at most [`MAX_KIND`] long (it becomes a CSV cell and a JSON key).
fn error_kind(headers: &HeaderMap) -> Option<String> {
    let kind = headers.get(ERROR_HEADER)?.to_str().ok()?.trim();
    let plain = !kind.is_empty()
        && kind.len() <= MAX_KIND
        && kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    plain.then(|| kind.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_presented_as_a_bearer() {
        let token = Token::new("0123456789abcdef0123456789abcdef").unwrap();
        let message = presenting(invoke("h:1", 5, "f", None), Some(&token));
        assert!(token.admits(message.headers()));
        let bare = presenting(invoke("h:1", 5, "f", None), None);
        assert!(!bare.headers().contains_key(hyper::header::AUTHORIZATION));
    }

    #[test]
    fn a_call_carries_work_function_and_deadline() {
        let http = invoke("127.0.0.1:9", 26, "image-resize", Some(265));
        assert_eq!(http.method(), Method::POST);
        assert_eq!(http.uri(), "/invoke/spin?us=26");
        assert_eq!(http.headers()[FUNCTION_HEADER], "image-resize");
        assert_eq!(http.headers()[DEADLINE_HEADER], "265");
        assert_eq!(http.headers()[HOST], "127.0.0.1:9");
        // A name no header can carry is left out, not a panic; no deadline,
        // no header.
        let http = invoke("127.0.0.1:9", 1, "bad\nname", None);
        assert!(!http.headers().contains_key(FUNCTION_HEADER));
        assert!(!http.headers().contains_key(DEADLINE_HEADER));
    }

    #[test]
    fn a_bad_target_is_named() {
        assert_eq!(
            Http::to("127.0.0.1:8080").unwrap().target(),
            "127.0.0.1:8080"
        );
        for target in ["127.0.0.1", ":80", "127.0.0.1:http-ish"] {
            let e = Http::to(target).unwrap_err().to_string();
            assert!(e.contains("target") && e.contains(target), "{e}");
        }
    }

    #[test]
    fn answers_read_their_headers_and_error_kinds() {
        let ok = Response::builder()
            .status(200)
            .header(RUNTIME_HEADER, "120")
            .header(RUNTIME_CPU_HEADER, "100")
            .header(PREEMPTIONS_HEADER, "x")
            .body(())
            .unwrap();
        let a = answer(&ok);
        assert_eq!(
            (a.status, a.runtime_us, a.cpu_us),
            (200, Some(120), Some(100))
        );
        assert_eq!((a.preemptions, a.failure), (None, None));
        assert_eq!((a.node, a.cold), (None, None));
        let routed = |cold: &str| {
            answer(
                &Response::builder()
                    .header(NODE_HEADER, " 127.0.0.1:7 ")
                    .header(COLD_HEADER, cold)
                    .body(())
                    .unwrap(),
            )
        };
        assert_eq!(routed("1").node.as_deref(), Some("127.0.0.1:7"));
        assert_eq!(
            (routed("1").cold, routed("0").cold, routed("yes").cold),
            (Some(true), Some(false), None)
        );
        let overloaded = Response::builder()
            .status(503)
            .header(ERROR_HEADER, "overloaded")
            .body(())
            .unwrap();
        let kind = |r| match answer(&r).failure {
            Some(Failure::Server { kind }) => kind,
            f => panic!("{f:?}"),
        };
        assert_eq!(kind(overloaded), "overloaded");
        let odd = Response::builder()
            .status(500)
            .header(ERROR_HEADER, "Not,A Kind")
            .body(())
            .unwrap();
        assert_eq!(kind(odd), "http-500");
    }
}
