//! The answers the node ingress and the cluster gateway both give, built
//! the same way so that a client reads one protocol: plain text, JSON and
//! Prometheus text, a failure naming its kind in [`ERROR_HEADER`], a
//! malformed request's refusal. Each answer comes [`Counted`]: with the
//! error kind its server's response counter keeps it under.

use super::ERROR_HEADER;
use super::request::Malformed;
use crate::node::invoke::Failure;
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use std::fmt::Write as _;

/// A response and the error kind it is counted under.
pub type Counted = (Response<Full<Bytes>>, &'static str);

/// The error kind a response without one is counted under.
pub const OK: &str = "ok";

/// The error kind of a request to a control route without the service's
/// token (a 401).
pub const UNAUTHORIZED: &str = "unauthorized";

/// The error kind of a WASI command that exited with a status other than
/// 0 (a 500).
pub const EXIT_STATUS: &str = "exit-status";

/// The error kind of a WASI command whose output began with a malformed
/// CGI header block (a 502: the function, not the node, is at fault).
pub const BAD_HEADERS: &str = "bad-cgi-headers";

/// A plain-text response.
pub fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A JSON response of `value`, one line.
pub fn json(value: &impl serde::Serialize) -> Response<Full<Bytes>> {
    let mut body =
        serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    body.push('\n');
    let mut response = text(StatusCode::OK, body);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A `GET /metrics` response of `body`, Prometheus text.
pub fn prometheus(body: String) -> Response<Full<Bytes>> {
    let mut response = text(StatusCode::OK, body);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// A metric family's `# HELP` and `# TYPE` lines.
pub fn family(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A metric family of one unlabelled sample: its `# HELP` and `# TYPE`
/// lines, then `name value`.
pub fn single(out: &mut String, name: &str, help: &str, kind: &str, value: impl std::fmt::Display) {
    family(out, name, help, kind);
    let _ = writeln!(out, "{name} {value}");
}

/// Counters, each a family of one sample: `(name, help, value)` as
/// `{prefix}_{name}_total`.
pub fn counters(out: &mut String, prefix: &str, counters: &[(&str, &str, u64)]) {
    for &(name, help, value) in counters {
        single(
            out,
            &format!("{prefix}_{name}_total"),
            help,
            "counter",
            value,
        );
    }
}

/// A plain-text failure: `body` under `status`, its `kind` in
/// [`ERROR_HEADER`], counted under that kind.
pub fn error(status: StatusCode, body: String, kind: &'static str) -> Counted {
    let mut response = text(status, body);
    response.headers_mut().insert(
        HeaderName::from_static(ERROR_HEADER),
        HeaderValue::from_static(kind),
    );
    (response, kind)
}

/// Tells the client of a 503 to come back in a second (`Retry-After: 1`):
/// what refused it (a full queue, a busy compile slot, a connection kept
/// for the control plane) frees up once what the service holds finishes.
pub fn retry_later(response: &mut Response<Full<Bytes>>) {
    response
        .headers_mut()
        .insert(hyper::header::RETRY_AFTER, HeaderValue::from_static("1"));
}

/// The response refusing a malformed request: a [`Failure::BadRequest`]
/// saying what was wrong (an [`UNAUTHORIZED`] one for a 401), with the
/// header the refusal carries (a 405's `Allow`, a 401's
/// `WWW-Authenticate`).
pub fn refusal(malformed: Malformed) -> Counted {
    let (body, kind) = match malformed.status {
        StatusCode::UNAUTHORIZED => (format!("unauthorized: {}\n", malformed.what), UNAUTHORIZED),
        _ => {
            let failure = Failure::BadRequest(malformed.what);
            (format!("{failure}\n"), failure.kind())
        }
    };
    let (mut response, kind) = error(malformed.status, body, kind);
    if let Some((name, value)) = malformed.header {
        response
            .headers_mut()
            .insert(name, HeaderValue::from_static(value));
    }
    (response, kind)
}
