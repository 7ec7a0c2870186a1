//! One node as the gateway reaches it: its address, its kept-alive
//! connections (invariant 3's pool, which forwarding and polling share)
//! and its counters.

use super::lock;
use crate::tls::{self, ClientTls};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self as client, SendRequest};
use hyper::header::HeaderValue;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, OnceLock};

/// The longest node address a registration may give, bytes: a DNS name
/// (253) and a port, with room to spare.
const MAX_ADDRESS: usize = 300;

/// Why an exchange with a node failed, and whether the request may have
/// reached it: an invocation that may have is never sent again (it may
/// have run), one that surely did not may go to another node.
#[derive(Debug)]
pub(super) enum Failed {
    /// No byte of the request reached the node: the connect failed, or
    /// the connection gave the request back unsent.
    Unsent(String),
    /// The request may have reached the node.
    Sent(String),
}

impl Failed {
    /// What happened, for the client's 502.
    pub(super) fn what(&self) -> &str {
        match self {
            Failed::Unsent(what) | Failed::Sent(what) => what,
        }
    }
}

/// One node: its address and kept-alive connections.
pub(super) struct NodeLink {
    pub(super) addr: String,
    /// The id the node gave (its `GET /load`'s `node`) when it
    /// registered or first reported, if it gave one.
    pub(super) id: OnceLock<String>,
    pub(super) authority: HeaderValue,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
    /// The most idle connections kept.
    pool: usize,
    /// How the node is spoken to under TLS, if it is.
    tls: Option<ClientTls>,
    pub(super) requests: AtomicU64,
    pub(super) errors: AtomicU64,
    /// Invocations it answered from a container it started cold.
    pub(super) cold: AtomicU64,
}

impl NodeLink {
    /// A link to `addr`, if it is `HOST:PORT` ([`is_address`]), keeping
    /// at most `pool` idle connections, under TLS with `tls`.
    pub(super) fn new(addr: &str, pool: usize, tls: Option<ClientTls>) -> Option<NodeLink> {
        if !is_address(addr) {
            return None;
        }
        Some(NodeLink {
            addr: addr.to_owned(),
            id: OnceLock::new(),
            authority: HeaderValue::from_str(addr).ok()?,
            idle: Mutex::new(Vec::new()),
            pool,
            tls,
            requests: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            cold: AtomicU64::new(0),
        })
    }

    /// Sends `request` on a kept-alive connection to the node, or a new
    /// one. A kept connection that gives the request back unsent (it
    /// closed meanwhile) hands it to the next; a new one that cannot
    /// connect, or gives it back, fails [`Failed::Unsent`].
    pub(super) async fn exchange(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> Result<(Response<Incoming>, SendRequest<Full<Bytes>>), Failed> {
        loop {
            let kept = lock(&self.idle).pop();
            let (mut sender, fresh) = match kept {
                Some(mut kept) => {
                    if kept.is_closed() || kept.ready().await.is_err() {
                        continue;
                    }
                    (kept, false)
                }
                None => (
                    connect(&self.addr, self.tls.as_ref())
                        .await
                        .map_err(Failed::Unsent)?,
                    true,
                ),
            };
            match sender.try_send_request(request).await {
                Ok(response) => return Ok((response, sender)),
                Err(mut e) => {
                    let what = format!("sending the request: {}", e.error());
                    match e.take_message() {
                        Some(back) if !fresh => request = back,
                        Some(_) => return Err(Failed::Unsent(what)),
                        None => return Err(Failed::Sent(what)),
                    }
                }
            }
        }
    }

    /// Keeps `sender` for the next request, once its answer was read
    /// whole, unless it is closed or the pool is full.
    pub(super) fn give_back(&self, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = lock(&self.idle);
        if idle.len() < self.pool {
            idle.push(sender);
        }
    }
}

/// Whether `addr` is `HOST:PORT`: a host of ASCII letters, digits, `.`,
/// `-`, `_`, `:`, `[` and `]` (a name, an IPv4 or a bracketed IPv6
/// address), a port that is a number, at most [`MAX_ADDRESS`] bytes, so
/// that it is a valid `Host`, path segment and metrics label as it is.
pub(in crate::cluster) fn is_address(addr: &str) -> bool {
    let Some((host, port)) = addr.rsplit_once(':') else {
        return false;
    };
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'));
    host_ok && addr.len() <= MAX_ADDRESS && port.parse::<u16>().is_ok()
}

/// A new HTTP/1.1 connection to `addr`, under TLS with `tls`, its driver
/// spawned.
pub(in crate::cluster) async fn connect(
    addr: &str,
    tls: Option<&ClientTls>,
) -> Result<SendRequest<Full<Bytes>>, String> {
    let stream = tls::dial(addr, tls)
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    let (sender, connection) = client::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    tokio::spawn(async move {
        // Its end (the node closed it, or failed) shows on the sender.
        let _ = connection.await;
    });
    Ok(sender)
}
