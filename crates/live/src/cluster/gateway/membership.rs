//! Nodes joining and leaving while the gateway serves (invariant 6):
//! `PUT /nodes/{HOST:PORT}` registers a node, `DELETE` says it left, each
//! under the lock a decision takes, the router told at once when the up
//! nodes change.

use super::forward::NODE_UNREACHABLE;
use super::link::NodeLink;
use super::outage::probe;
use super::{Inner, State, lock};
use crate::auth;
use crate::cluster::table::Membership;
use crate::wire::request::{self, Malformed, read_body};
use crate::wire::response::{self, Counted, OK, text};
use faasched_model::Time;
use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// The error kind of a `DELETE /nodes/{HOST:PORT}` of a node the gateway's
/// table does not have.
pub const UNKNOWN_NODE: &str = "unknown-node";

/// The 502 of a `PUT` of an address where no node answers `GET /load`.
fn not_a_node(addr: &str, why: &str) -> Counted {
    response::error(
        StatusCode::BAD_GATEWAY,
        format!("node {addr} did not answer GET /load, so it is not taken: {why}\n"),
        NODE_UNREACHABLE,
    )
}

impl Inner {
    /// `PUT` or `DELETE /nodes/{HOST:PORT}` (invariant 6).
    pub(super) async fn membership(
        &self,
        request: Request<Incoming>,
    ) -> Result<Counted, Malformed> {
        let (method, link) = self.node_request(request).await?;
        if method == Method::PUT && lock(&self.state).find(&link.addr).is_none() {
            // A node joins only once it answers as one, and says who it
            // is: an address of no node is refused, one of a node in the
            // table under another address is that node.
            match probe(&link).await {
                Ok(report) => {
                    if let Some(id) = report.node {
                        let _ = link.id.set(id);
                    }
                }
                Err(e) => return Ok(not_a_node(&link.addr, &e)),
            }
        }
        let mut state = lock(&self.state);
        let epoch = state.table.epoch();
        let answer = if method == Method::PUT {
            self.join(&mut state, link)
        } else {
            self.leave(&mut state, &link.addr)
        };
        state.changed_since(epoch, self.now());
        Ok(answer)
    }

    /// A membership request's method and node, checked: `PUT` or
    /// `DELETE`, no query, no body, a path naming a `HOST:PORT`.
    async fn node_request(
        &self,
        request: Request<Incoming>,
    ) -> Result<(Method, NodeLink), Malformed> {
        const ALLOW: &str = "PUT, DELETE";
        let (parts, body) = request.into_parts();
        let path = parts.uri.path();
        let method = &parts.method;
        auth::check(
            self.front.token.as_ref(),
            &parts.headers,
            "a change of the gateway's nodes",
        )?;
        if method != Method::PUT && method != Method::DELETE {
            return Err(Malformed {
                status: StatusCode::METHOD_NOT_ALLOWED,
                what: format!(
                    "{} takes {ALLOW}, not {}",
                    request::shown(path),
                    request::shown(method.as_str())
                ),
                header: Some((hyper::header::ALLOW, ALLOW)),
            });
        }
        if parts.uri.query().is_some() {
            return Err(Malformed::bad(format!("{method} /nodes takes no query")));
        }
        read_body(body, 0, self.front.body_pace, "a node registration's body").await?;
        let addr = path.strip_prefix("/nodes/").unwrap_or("");
        if addr.is_empty() {
            return Err(Malformed::bad(format!(
                "{method} /nodes/HOST:PORT: the path names no node"
            )));
        }
        let Some(link) = NodeLink::new(addr, self.pool, self.node_tls.clone()) else {
            return Err(Malformed::bad(format!(
                "node address {} is not HOST:PORT",
                request::shown(addr)
            )));
        };
        Ok((method.clone(), link))
    }

    /// A `PUT`: `link`'s node joins the table as
    /// [`Membership::Registered`], unless it is in it already (a
    /// heartbeat, which changes nothing).
    fn join(&self, state: &mut State, link: NodeLink) -> Counted {
        if state.find(&link.addr).is_some() {
            let body = format!("node {} is in the table\n", link.addr);
            return (text(StatusCode::OK, body), OK);
        }
        if let Some(known) = link.id.get().and_then(|id| state.find_id(id)) {
            let body = format!(
                "node {} is in the table as {}: one node, two addresses\n",
                link.addr, state.links[&known].addr
            );
            return (text(StatusCode::OK, body), OK);
        }
        let body = format!("node {} registered\n", link.addr);
        let id = state.table.add(Membership::Registered);
        state.links.insert(id, Arc::new(link));
        self.metrics.registrations.fetch_add(1, Ordering::Relaxed);
        (text(StatusCode::CREATED, body), OK)
    }

    /// A `DELETE`: the node at `addr` leaves the table (a static one stays
    /// in it, down), or is answered 404 [`UNKNOWN_NODE`].
    fn leave(&self, state: &mut State, addr: &str) -> Counted {
        let Some(id) = state.find(addr) else {
            return response::error(
                StatusCode::NOT_FOUND,
                format!("node {addr} is not in the gateway's table\n"),
                UNKNOWN_NODE,
            );
        };
        state.take_down(id);
        self.metrics.leaves.fetch_add(1, Ordering::Relaxed);
        (text(StatusCode::OK, format!("node {addr} left\n")), OK)
    }
}

impl State {
    /// Tells the router of the up nodes now if they changed since
    /// `epoch` (invariant 6).
    pub(super) fn changed_since(&mut self, epoch: u64, now: Time) {
        if self.table.epoch() != epoch {
            self.router.on_loads(now, self.table.servers());
        }
    }

    /// Takes node `id` out of the up nodes: a static one down (its next
    /// report takes it back), a registered one dropped with its link.
    pub(super) fn take_down(&mut self, id: usize) {
        self.table.leave(id);
        if !self.table.contains(id) {
            self.links.remove(&id);
        }
    }

    /// Whether a node in the table before `node` gave the id `reported`:
    /// `node` is then its alias. Remembers `node`'s id, the first it gave.
    pub(super) fn alias(&self, node: usize, reported: Option<&str>) -> bool {
        let (Some(link), Some(reported)) = (self.links.get(&node), reported) else {
            return false;
        };
        let id = link.id.get_or_init(|| reported.to_owned());
        self.links
            .iter()
            .any(|(&other, l)| other < node && l.id.get() == Some(id))
    }

    /// The id of the node at `addr`, if it is in the table.
    fn find(&self, addr: &str) -> Option<usize> {
        self.links
            .iter()
            .find(|(_, l)| l.addr == addr)
            .map(|(&id, _)| id)
    }

    /// The table's id of the node that said its id is `node`, if any.
    pub(super) fn find_id(&self, node: &str) -> Option<usize> {
        self.links
            .iter()
            .find(|(_, l)| l.id.get().map(String::as_str) == Some(node))
            .map(|(&id, _)| id)
    }
}
