//! An invocation's way to its node and back (invariants 3, 4 and 8): its
//! request forwarded over the node's kept-alive connections within the
//! forward timeout, the node's answer passed on whole (up to the
//! gateway's limit) with [`NODE_HEADER`] added, or a 502 if the node fails
//! first. Never a retry once any byte of the request may have reached the
//! node: an invocation is not idempotent. One that surely did not (a
//! refused connect) goes to the router's next choice.

use super::decision::{Answered, Decision, Started};
use super::link::{self, NodeLink};
use super::metrics::record;
use super::{Inner, nanos};
use crate::wire::response::{self, Counted, OK};
use crate::wire::{COLD_HEADER, ERROR_HEADER, NODE_HEADER, RUNTIME_HEADER, hop_by_hop};
use bytes::Bytes;
use faasched_model::Nanos;
use faasched_model::cluster::FunctionProfile;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::header::{self, HeaderName};
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The error kind of a node that failed before its answer.
pub const NODE_UNREACHABLE: &str = "node-unreachable";

/// The error kind of a node answer longer than the gateway passes on.
pub const RESPONSE_TOO_LARGE: &str = "response-too-large";

/// Why a node's answer did not come back: its error kind, what
/// happened, and whether the request surely never reached the node.
struct NoAnswer {
    kind: &'static str,
    what: String,
    unsent: bool,
}

impl From<link::Failed> for NoAnswer {
    fn from(failed: link::Failed) -> NoAnswer {
        NoAnswer {
            kind: NODE_UNREACHABLE,
            unsent: matches!(failed, link::Failed::Unsent(_)),
            what: failed.what().to_owned(),
        }
    }
}

/// How many nodes one invocation is offered to when each refuses it
/// unsent: every refusal takes its node out, so the router runs out of
/// nodes first on a small cluster; this bounds the work on a large one.
const MAX_REFUSALS: usize = 8;

/// Counts an invocation answered when dropped, on every path: a client
/// that leaves drops the request's future, and the answer it never reads
/// is still counted (invariant 4).
struct Answering<'a> {
    inner: &'a Inner,
    /// Set while its node has it.
    started: Option<Started>,
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        if let Some(started) = self.started.take() {
            // Left before the node answered: the node's time is lost, the
            // router learns nothing of the outcome but its end.
            self.inner.finish(started, None);
        }
        self.inner.metrics.answered.fetch_add(1, Ordering::SeqCst);
    }
}

impl Inner {
    /// Invariants 2 to 4 for one invocation of `profile`, well-formed,
    /// `parts` its request, `received` when it came, `deadline` its
    /// relative deadline if it names one.
    pub(super) async fn forward(
        &self,
        profile: FunctionProfile,
        parts: &Parts,
        body: &Bytes,
        received: Instant,
        deadline: Option<Nanos>,
    ) -> Counted {
        let (patience, why) = self.patience(deadline);
        self.metrics.received.fetch_add(1, Ordering::SeqCst);
        let mut answering = Answering {
            inner: self,
            started: None,
        };
        let mut refusals = 0;
        let (link, (mut response, kind)) = loop {
            let (started, link) = match self.decide(profile) {
                Decision::Forward(started, link) => (started, link),
                Decision::Drop { info, no_node } => return self.dropped(info, no_node),
            };
            answering.started = Some(started);
            link.requests.fetch_add(1, Ordering::Relaxed);
            let sending = send(&link, parts, body, self.max_response_bytes);
            let sent = tokio::time::timeout(patience, sending)
                .await
                .unwrap_or_else(|_| {
                    // Its connection is dropped with the future: in an
                    // unknown state, it is not reused, and the node sees
                    // its client leave and stops the invocation.
                    Err(NoAnswer {
                        kind: NODE_UNREACHABLE,
                        what: format!("no answer within {patience:?} ({why})"),
                        unsent: false,
                    })
                });
            answering.started = None;
            match sent {
                Ok(response) => {
                    break (
                        Arc::clone(&link),
                        self.answered(started, &link, response, received),
                    );
                }
                Err(no) if no.unsent && refusals < MAX_REFUSALS => {
                    // Not run: out with the node, and to the next choice.
                    refusals += 1;
                    self.finish(started, None);
                    link.errors.fetch_add(1, Ordering::Relaxed);
                    self.take_out(started.node());
                    self.metrics.rerouted.fetch_add(1, Ordering::Relaxed);
                }
                Err(no) => break (Arc::clone(&link), self.unreachable(started, &link, &no)),
            }
        };
        response
            .headers_mut()
            .insert(HeaderName::from_static(NODE_HEADER), link.authority.clone());
        drop(answering);
        (response, kind)
    }

    /// How long an invocation due in `deadline` waits for its node, and
    /// why: the forward timeout, or [`GatewayConfig::deadline_factor`]
    /// times its deadline where that is shorter, so that an answer long
    /// past any use holds neither the client nor the node.
    ///
    /// [`GatewayConfig::deadline_factor`]: super::GatewayConfig::deadline_factor
    fn patience(&self, deadline: Option<Nanos>) -> (Duration, String) {
        if let (Some(deadline), Some(factor)) = (deadline, self.deadline_factor) {
            let by_deadline = Duration::from_nanos(deadline.saturating_mul(u64::from(factor)));
            if by_deadline < self.forward_timeout {
                return (by_deadline, format!("{factor} times its deadline"));
            }
        }
        (self.forward_timeout, "the forward timeout".to_owned())
    }

    /// The node's answer, as it is: its cold start counted, its outcome
    /// told, the gateway's time less the node's own recorded as the
    /// forwarding overhead.
    fn answered(
        &self,
        started: Started,
        link: &NodeLink,
        response: Response<Full<Bytes>>,
        received: Instant,
    ) -> Counted {
        let cold = response
            .headers()
            .get(COLD_HEADER)
            .is_some_and(|v| v.as_bytes() == b"1");
        if cold {
            link.cold.fetch_add(1, Ordering::Relaxed);
        }
        let ok = response.status().is_success();
        self.finish(started, Some(Answered { ok, cold }));
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
            None => OK,
            Some(error) => {
                self.metrics.node_failure(error.as_bytes());
                "node-error"
            }
        };
        (response, kind)
    }

    /// The 502 of a node whose answer did not come back (it failed
    /// first, or its answer was too long), counted against it (and, if
    /// it failed, as unreachable).
    fn unreachable(&self, started: Started, link: &NodeLink, failed: &NoAnswer) -> Counted {
        self.finish(started, None);
        if failed.kind == NODE_UNREACHABLE {
            // A node that took the request and failed may be gone: a
            // probe says so within a second, not three polls.
            self.suspect(started.node());
        }
        link.errors.fetch_add(1, Ordering::Relaxed);
        let what = match failed.kind {
            RESPONSE_TOO_LARGE => "answered too much",
            _ => {
                self.metrics.unreachable.fetch_add(1, Ordering::Relaxed);
                "failed before its answer"
            }
        };
        response::error(
            StatusCode::BAD_GATEWAY,
            format!("node {} {what}: {}\n", link.addr, failed.what),
            failed.kind,
        )
    }
}

/// Sends the invocation `parts` describe to `link`'s node and reads its
/// answer whole, adding nothing, if it is at most `limit` bytes long.
async fn send(
    link: &NodeLink,
    parts: &Parts,
    body: &Bytes,
    limit: usize,
) -> Result<Response<Full<Bytes>>, NoAnswer> {
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path(), |p| p.as_str());
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(path)
        .body(Full::new(body.clone()))
        .map_err(|e| link::Failed::Unsent(format!("building the request: {e}")))?;
    let headers = request.headers_mut();
    for (name, value) in &parts.headers {
        if !hop_by_hop(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    headers.insert(header::HOST, link.authority.clone());
    let (response, sender) = link.exchange(request).await?;
    let (mut head, body) = response.into_parts();
    // A body past the limit is read no further: its connection, in the
    // middle of an answer, is dropped.
    let body = Limited::new(body, limit)
        .collect()
        .await
        .map_err(|e| match e.downcast_ref::<LengthLimitError>() {
            Some(_) => NoAnswer {
                kind: RESPONSE_TOO_LARGE,
                what: format!("its answer is longer than {limit} bytes"),
                unsent: false,
            },
            None => link::Failed::Sent(format!("reading the answer: {e}")).into(),
        })?
        .to_bytes();
    // The connection is reused only once its answer was read whole.
    link.give_back(sender);
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
