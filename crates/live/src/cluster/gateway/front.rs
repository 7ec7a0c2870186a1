//! The gateway's HTTP front: each request's path to its handler, and
//! invariant 1's refusals. A request the node ingress would refuse
//! ([`crate::wire::request`]'s rules) is refused here the same way, and so
//! is an invocation of a function the workload's table does not have:
//! neither reaches a node.

use super::{Inner, lock};
use crate::http::Service;
use crate::node::invoke::{Failure, Invoke};
use crate::wire::FUNCTION_HEADER;
use crate::wire::request::{self, Malformed, RouteKind};
use crate::wire::response::{self, Counted, OK, json, refusal};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The error kind of a function the workload's table does not have, as
/// the node runtime names its unknown functions.
const UNKNOWN_FUNCTION: &str = "unknown-function";

/// The server the gateway is to hyper.
pub(super) struct Front(pub(super) Arc<Inner>);

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

    fn refused(&self) {
        let metrics = &self.0.metrics;
        metrics.refused_connections.fetch_add(1, Ordering::Relaxed);
    }

    fn control(&self, request: &Request<Incoming>) -> bool {
        let path = request.uri().path();
        path == "/nodes" || path.starts_with("/nodes/")
    }
}

impl Inner {
    /// Routes a request to its handler. Of the node ingress's routes, the
    /// gateway takes the invocations, the metrics and the status; its own
    /// are the nodes' joins and leaves.
    async fn respond(&self, request: Request<Incoming>) -> Result<Counted, Malformed> {
        let path = request.uri().path();
        if path == "/nodes" || path.starts_with("/nodes/") {
            return self.membership(request).await;
        }
        match RouteKind::of(path) {
            RouteKind::Invoke | RouteKind::Metrics | RouteKind::Status => {}
            RouteKind::Register | RouteKind::Functions | RouteKind::Load | RouteKind::Other => {
                return Err(Malformed {
                    status: StatusCode::NOT_FOUND,
                    what: format!(
                        "no route {}: the gateway's routes are POST /invoke/NAME, PUT and DELETE /nodes/HOST:PORT, GET /metrics and GET /status",
                        request::shown(path)
                    ),
                    header: None,
                });
            }
        }
        match request::route(request.method(), path)? {
            request::Route::Invoke(function) => self.invoke(function, request).await,
            request::Route::Metrics => Ok((response::prometheus(self.render()), OK)),
            request::Route::Status => Ok((json(&self.status()), OK)),
            request::Route::Register(_)
            | request::Route::Unregister(_)
            | request::Route::Log(_)
            | request::Route::Load => {
                unreachable!("refused above by their route kind")
            }
        }
    }

    /// An invocation of `function`: parsed and its function looked up
    /// (invariant 1), then decided and forwarded.
    async fn invoke(
        &self,
        function: String,
        request: Request<Incoming>,
    ) -> Result<Counted, Malformed> {
        let received = Instant::now();
        // The node decides what the invoker may choose; the deadline here
        // only bounds how long the gateway waits for it.
        self.front.invoker(request.headers())?;
        let (parts, body) = request.into_parts();
        // The query and body go to the node as sent: what a function
        // takes is its node's to check.
        let Some(held) = self
            .bodies
            .read(body, self.front.body_pace, "an invocation's body")
            .await?
        else {
            let (mut response, kind) = response::error(
                StatusCode::SERVICE_UNAVAILABLE,
                "the gateway holds as many invocation bodies as it takes; send again in a second\n"
                    .into(),
                Failure::Overloaded.kind(),
            );
            response::retry_later(&mut response);
            return Ok((response, kind));
        };
        let invoke = request::invoke(function, parts.uri.query(), &parts.headers)?;
        match self.profiles.get(invoke.label()) {
            Some(&profile) => Ok(self
                .forward(profile, &parts, &held.body, received, invoke.deadline)
                .await),
            None => Ok(unknown_function(&invoke)),
        }
    }
}

/// The 404 of an invocation whose function the workload's table does not
/// have, naming it and where its name came from.
fn unknown_function(invoke: &Invoke) -> Counted {
    let how = if invoke.label.is_some() {
        FUNCTION_HEADER.to_owned()
    } else {
        format!("the path (or name one in {FUNCTION_HEADER})")
    };
    response::error(
        StatusCode::NOT_FOUND,
        format!(
            "function {} of {how} is not in the gateway's workload\n",
            request::shown(invoke.label())
        ),
        UNKNOWN_FUNCTION,
    )
}
