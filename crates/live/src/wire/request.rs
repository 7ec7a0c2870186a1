//! From an HTTP request's method, path, query, headers and body to a
//! [`Route`] and an [`Invoke`], or a [`Malformed`] saying what was wrong:
//! the node ingress's rules, which the cluster gateway applies too before
//! it forwards. No I/O but reading the body ([`read_body`]): everything
//! here is checked before a backend, or a gateway's node, sees anything.

use super::{DEADLINE_HEADER, FUNCTION_HEADER};
use crate::http::BodyPace;
use crate::node::invoke::Invoke;
use bytes::Bytes;
use faasched_model::Nanos;
use http_body_util::BodyExt;
use hyper::body::Body;
use hyper::header::{ALLOW, HeaderMap, HeaderName};
use hyper::{Method, StatusCode};
use std::time::Instant;

/// The longest function or module name, bytes: a name is a key, not data,
/// and an error message quotes it.
pub const MAX_NAME: usize = 128;

/// What a request asks for, known from its path alone: the label its
/// counters are kept under, even when the rest of it is malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteKind {
    /// `/invoke/...`
    Invoke,
    /// `/register/...`
    Register,
    /// `/functions/...`
    Functions,
    /// `/metrics`
    Metrics,
    /// `/status`
    Status,
    /// `/load`
    Load,
    /// Anything else.
    Other,
}

impl RouteKind {
    /// Every kind, in the order the metrics list them.
    pub const ALL: [RouteKind; 7] = [
        RouteKind::Invoke,
        RouteKind::Register,
        RouteKind::Functions,
        RouteKind::Metrics,
        RouteKind::Status,
        RouteKind::Load,
        RouteKind::Other,
    ];

    /// The kind of `path`.
    pub fn of(path: &str) -> RouteKind {
        if path.starts_with("/invoke/") || path == "/invoke" {
            RouteKind::Invoke
        } else if path.starts_with("/register/") || path == "/register" {
            RouteKind::Register
        } else if path.starts_with("/functions/") || path == "/functions" {
            RouteKind::Functions
        } else if path == "/metrics" {
            RouteKind::Metrics
        } else if path == "/status" {
            RouteKind::Status
        } else if path == "/load" {
            RouteKind::Load
        } else {
            RouteKind::Other
        }
    }

    /// Its label in the metrics.
    pub fn label(self) -> &'static str {
        match self {
            RouteKind::Invoke => "invoke",
            RouteKind::Register => "register",
            RouteKind::Functions => "functions",
            RouteKind::Metrics => "metrics",
            RouteKind::Status => "status",
            RouteKind::Load => "load",
            RouteKind::Other => "other",
        }
    }
}

/// A request the ingress refuses before the backend sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// The 4xx status that says so.
    pub status: StatusCode,
    /// What was wrong, for the response body.
    pub what: String,
    /// A header the refusal carries: a 405's `Allow` (the methods the
    /// route allows), a 401's `WWW-Authenticate`.
    pub header: Option<(HeaderName, &'static str)>,
}

impl Malformed {
    /// A 400 saying `what`.
    pub fn bad(what: impl Into<String>) -> Malformed {
        Malformed {
            status: StatusCode::BAD_REQUEST,
            what: what.into(),
            header: None,
        }
    }

    /// A 413: the body is longer than `limit` bytes.
    pub fn too_large(what: &str, limit: usize) -> Malformed {
        Malformed {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            what: format!("{what} is longer than {limit} bytes"),
            header: None,
        }
    }
}

/// A request's route, its names checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `POST /invoke/{function}`
    Invoke(String),
    /// `POST /register/{name}`
    Register(String),
    /// `DELETE /functions/{name}`
    Unregister(String),
    /// `GET /functions/{name}/log`
    Log(String),
    /// `GET /metrics`
    Metrics,
    /// `GET /status`
    Status,
    /// `GET /load`
    Load,
}

/// Parses `method` and `path` into a route: 404 for a path that is none,
/// 405 for a method the route does not take, 400 for a bad name.
pub fn route(method: &Method, path: &str) -> Result<Route, Malformed> {
    let (allow, route) = match RouteKind::of(path) {
        RouteKind::Invoke => (
            "POST",
            name_in(path, "/invoke/", "function").map(Route::Invoke),
        ),
        RouteKind::Register => (
            "POST",
            name_in(path, "/register/", "module").map(Route::Register),
        ),
        RouteKind::Functions => match path
            .strip_suffix("/log")
            .filter(|rest| rest.starts_with("/functions/"))
        {
            Some(rest) => (
                "GET",
                name_in(rest, "/functions/", "function").map(Route::Log),
            ),
            None => (
                "DELETE",
                name_in(path, "/functions/", "module").map(Route::Unregister),
            ),
        },
        RouteKind::Metrics => ("GET", Ok(Route::Metrics)),
        RouteKind::Status => ("GET", Ok(Route::Status)),
        RouteKind::Load => ("GET", Ok(Route::Load)),
        RouteKind::Other => {
            return Err(Malformed {
                status: StatusCode::NOT_FOUND,
                what: format!(
                    "no route {}: the routes are POST /invoke/NAME, POST /register/NAME, DELETE /functions/NAME, GET /functions/NAME/log, GET /metrics, GET /status and GET /load",
                    shown(path)
                ),
                header: None,
            });
        }
    };
    if method.as_str() != allow {
        return Err(Malformed {
            status: StatusCode::METHOD_NOT_ALLOWED,
            what: format!(
                "{} takes {allow}, not {}",
                shown(path),
                shown(method.as_str())
            ),
            header: Some((ALLOW, allow)),
        });
    }
    route
}

/// The name after `prefix` in `path`, checked.
fn name_in(path: &str, prefix: &str, what: &str) -> Result<String, Malformed> {
    let name = path.strip_prefix(prefix).unwrap_or("");
    check_name(name, what).map_err(Malformed::bad)?;
    Ok(name.to_owned())
}

/// Checks a function or module name: 1 to [`MAX_NAME`] bytes of ASCII
/// letters, digits, `_`, `-` and `.`, not only dots. Names travel in paths
/// and headers and key the backend's tables, so nothing that needs
/// escaping is a name.
pub fn check_name(name: &str, what: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("the path names no {what}"));
    }
    if name.len() > MAX_NAME {
        return Err(format!(
            "the {what} name {} is longer than {MAX_NAME} bytes",
            shown(name)
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "the {what} name {} has {bad:?}: a name is ASCII letters, digits, '_', '-' and '.'",
            shown(name)
        ));
    }
    if name.chars().all(|c| c == '.') {
        return Err(format!("the {what} name {} is only dots", shown(name)));
    }
    Ok(())
}

/// Parses an invocation of `function` from its query and headers; its
/// `received` is now. The query is kept as sent (none if empty): what it
/// must be is the function's ([`arguments`] for the `run` ABI), and the
/// headers and body are the caller's to hand over to a WASI command.
pub fn invoke(
    function: String,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<Invoke, Malformed> {
    let query = query.filter(|q| !q.is_empty()).map(str::to_owned);
    let label = match header(headers, FUNCTION_HEADER)? {
        Some(label) => {
            check_name(label, "function")
                .map_err(|what| Malformed::bad(format!("{FUNCTION_HEADER}: {what}")))?;
            Some(label.to_owned())
        }
        None => None,
    };
    let deadline = match header(headers, DEADLINE_HEADER)? {
        Some(value) => Some(deadline(value)?),
        None => None,
    };
    Ok(Invoke {
        function,
        query,
        headers: HeaderMap::new(),
        body: Bytes::new(),
        label,
        deadline,
        received: Instant::now(),
        cancel: Default::default(),
    })
}

/// Most parameters a query may carry.
pub const MAX_PARAMETERS: usize = 8;

/// The query's `name=value` arguments as sent, each `value` a decimal
/// `i64`, no name twice; none for no query or an empty one. Which names a
/// function takes is its executor's to check.
pub fn arguments(query: Option<&str>) -> Result<Option<String>, Malformed> {
    let query = match query {
        None | Some("") => return Ok(None),
        Some(query) => query,
    };
    let mut names: Vec<&str> = Vec::new();
    for parameter in query.split('&') {
        if names.len() == MAX_PARAMETERS {
            return Err(Malformed::bad(format!(
                "the query {} has more than {MAX_PARAMETERS} parameters",
                shown(query)
            )));
        }
        let Some((name, value)) = parameter.split_once('=') else {
            return Err(Malformed::bad(format!(
                "the query parameter {} has no value: write NAME=INTEGER",
                shown(parameter)
            )));
        };
        if name.is_empty()
            || name.len() > MAX_NAME
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(Malformed::bad(format!(
                "the query parameter's name {} is not 1 to {MAX_NAME} ASCII letters, digits or '_'",
                shown(name)
            )));
        }
        if names.contains(&name) {
            return Err(Malformed::bad(format!(
                "the query parameter {name} is given more than once"
            )));
        }
        value.parse::<i64>().map_err(|_| {
            Malformed::bad(format!(
                "the query parameter {name}'s value {} is not a decimal integer between {} and {}",
                shown(value),
                i64::MIN,
                i64::MAX
            ))
        })?;
        names.push(name);
    }
    Ok(Some(query.to_owned()))
}

/// A relative deadline in µs as the header gives it, in ns.
pub fn deadline(value: &str) -> Result<Nanos, Malformed> {
    let bad =
        |why: &str| Malformed::bad(format!("{DEADLINE_HEADER}: {} is not {why}", shown(value)));
    let micros = value
        .parse::<u64>()
        .map_err(|_| bad("a whole number of microseconds"))?;
    if micros == 0 {
        return Err(bad("positive"));
    }
    micros
        .checked_mul(1_000)
        .ok_or_else(|| bad("at most u64::MAX nanoseconds"))
}

/// The value of `name`, which may appear at most once and must be visible
/// ASCII.
fn header<'h>(headers: &'h HeaderMap, name: &'static str) -> Result<Option<&'h str>, Malformed> {
    let name = HeaderName::from_static(name);
    let mut values = headers.get_all(&name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Malformed::bad(format!("{name} appears more than once")));
    }
    let value = value
        .to_str()
        .map_err(|_| Malformed::bad(format!("{name} is not visible ASCII")))?;
    Ok(Some(value))
}

/// How many of the largest invocation bodies a front holds at once (read,
/// queued or running, or on their way to a node); a body past that
/// budget is refused 503 `overloaded` with `Retry-After: 1` before it is
/// read.
pub const BODIES_HELD: usize = 64;

/// The invocation bodies a front (a node's ingress, a gateway) holds:
/// each at most [`Bodies::max`] bytes, and [`BODIES_HELD`] of the largest
/// in sum, counted in KiB. A body takes its declared length from the
/// budget (the most a body may be, if it declares none) until its answer.
#[derive(Debug)]
pub struct Bodies {
    max: usize,
    held: tokio::sync::Semaphore,
}

/// A body read within its front's budget, and the share it holds until
/// dropped.
#[derive(Debug)]
pub struct Held<'a> {
    /// The body.
    pub body: Bytes,
    _share: Option<tokio::sync::SemaphorePermit<'a>>,
}

impl Bodies {
    /// A budget of bodies of at most `max` bytes each.
    pub fn new(max: usize) -> Bodies {
        let held = usize::try_from(kib(max))
            .unwrap_or(usize::MAX)
            .saturating_mul(BODIES_HELD)
            .min(tokio::sync::Semaphore::MAX_PERMITS);
        Bodies {
            max,
            held: tokio::sync::Semaphore::new(held),
        }
    }

    /// Reads `body` ([`read_body`], at `pace`) within the budget; `None`
    /// when the bodies held leave no room for it (the caller answers 503
    /// `overloaded`).
    ///
    /// # Errors
    ///
    /// [`read_body`]'s: longer than [`Bodies::max`], malformed, too slow.
    pub async fn read<B>(
        &self,
        body: B,
        pace: BodyPace,
        what: &str,
    ) -> Result<Option<Held<'_>>, Malformed>
    where
        B: Body<Data = Bytes>,
        B::Error: std::fmt::Display,
    {
        let declared = match body.size_hint().upper() {
            Some(0) => 0,
            upper => upper.map_or(self.max, |n| usize::try_from(n).unwrap_or(usize::MAX)),
        };
        let share = match declared.min(self.max) {
            0 => None,
            bytes => match self.held.try_acquire_many(kib(bytes)) {
                Ok(permit) => Some(permit),
                Err(_) => return Ok(None),
            },
        };
        let body = read_body(body, self.max, pace, what).await?;
        Ok(Some(Held {
            body,
            _share: share,
        }))
    }
}

/// `bytes` in whole KiB, rounded up: the unit of the body budget.
fn kib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
}

/// Reads a body of at most `limit` bytes (`what` it is, for the error)
/// at `pace`: a body that comes slower is refused 408.
pub async fn read_body<B>(
    body: B,
    limit: usize,
    pace: BodyPace,
    what: &str,
) -> Result<Bytes, Malformed>
where
    B: Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    // A declared length past the limit is refused before a byte is read.
    if body.size_hint().lower() > limit as u64 {
        return Err(Malformed::too_large(what, limit));
    }
    let started = Instant::now();
    let mut body = std::pin::pin!(body);
    let mut read: Vec<u8> = Vec::new();
    loop {
        let left = pace.due(read.len()).saturating_sub(started.elapsed());
        let frame = match tokio::time::timeout(left, body.as_mut().frame()).await {
            Ok(Some(Ok(frame))) => frame,
            Ok(None) => return Ok(Bytes::from(read)),
            Ok(Some(Err(error))) => return Err(Malformed::bad(format!("reading {what}: {error}"))),
            Err(_) => {
                return Err(Malformed {
                    status: StatusCode::REQUEST_TIMEOUT,
                    what: format!(
                        "{what} came too slowly: {} bytes in {:.1} s, where {:?} and then {} \
                         bytes a second are the least",
                        read.len(),
                        started.elapsed().as_secs_f64(),
                        pace.grace,
                        pace.min_rate
                    ),
                    header: None,
                });
            }
        };
        if let Ok(data) = frame.into_data() {
            if read.len() + data.len() > limit {
                return Err(Malformed::too_large(what, limit));
            }
            read.extend_from_slice(&data);
        }
    }
}

/// `text` quoted for an error message, cut to its first 64 characters: a
/// message names what was wrong without echoing a whole hostile request.
pub fn shown(text: &str) -> String {
    const MAX: usize = 64;
    if text.chars().count() <= MAX {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head:?}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    #[test]
    fn routes_take_their_method_and_a_checked_name() {
        assert_eq!(
            route(&Method::POST, "/invoke/fib"),
            Ok(Route::Invoke("fib".into()))
        );
        assert_eq!(
            route(&Method::POST, "/register/my-fn.v2"),
            Ok(Route::Register("my-fn.v2".into()))
        );
        assert_eq!(route(&Method::GET, "/metrics"), Ok(Route::Metrics));
        assert_eq!(route(&Method::GET, "/status"), Ok(Route::Status));

        let refused = route(&Method::GET, "/invoke/fib").unwrap_err();
        assert_eq!(refused.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(refused.header, Some((ALLOW, "POST")));
        assert_eq!(
            route(&Method::POST, "/status").unwrap_err().header,
            Some((ALLOW, "GET"))
        );
        assert_eq!(
            route(&Method::POST, "/nowhere").unwrap_err().status,
            StatusCode::NOT_FOUND
        );
        for path in [
            "/invoke/",
            "/invoke",
            "/invoke/a/b",
            "/invoke/a%20b",
            "/invoke/..",
            "/register/",
        ] {
            let refused = route(&Method::POST, path).unwrap_err();
            assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{path}");
        }
        let long = format!("/invoke/{}", "a".repeat(MAX_NAME + 1));
        assert!(
            route(&Method::POST, &long)
                .unwrap_err()
                .what
                .contains("longer than 128 bytes")
        );
        assert_eq!(
            route(&Method::POST, &long[..long.len() - 1]),
            Ok(Route::Invoke("a".repeat(MAX_NAME)))
        );
    }

    #[test]
    fn integer_arguments_pass_as_sent() {
        assert_eq!(arguments(None), Ok(None));
        assert_eq!(arguments(Some("")), Ok(None));
        assert_eq!(arguments(Some("n=25")), Ok(Some("n=25".into())));
        assert_eq!(
            arguments(Some("w=640&h=-9223372036854775808")),
            Ok(Some("w=640&h=-9223372036854775808".into()))
        );
        let nine = (0..9)
            .map(|i| format!("p{i}=1"))
            .collect::<Vec<_>>()
            .join("&");
        for (query, says) in [
            (nine.as_str(), "more than 8"),
            ("n=1&n=2", "more than once"),
            ("n", "no value"),
            ("n=1&", "no value"),
            ("=1", "name"),
            ("n%20=1", "name"),
            ("n=", "not a decimal integer"),
            ("n=abc", "not a decimal integer"),
            ("n=1.5", "not a decimal integer"),
            ("n=9223372036854775808", "not a decimal integer"),
        ] {
            let refused = arguments(Some(query)).unwrap_err();
            assert_eq!(refused.status, StatusCode::BAD_REQUEST);
            assert!(refused.what.contains(says), "{query}: {}", refused.what);
        }
    }

    #[test]
    fn headers_give_label_and_deadline_in_ns() {
        let mut headers = HeaderMap::new();
        headers.insert(FUNCTION_HEADER, HeaderValue::from_static("resize"));
        headers.insert(DEADLINE_HEADER, HeaderValue::from_static("2500"));
        let parsed = invoke("fib".into(), Some("n=3"), &headers).unwrap();
        assert_eq!(parsed.function, "fib");
        assert_eq!(parsed.query.as_deref(), Some("n=3"));
        assert_eq!(parsed.label.as_deref(), Some("resize"));
        assert_eq!(parsed.deadline, Some(2_500_000));

        for (value, says) in [
            ("0", "positive"),
            ("-1", "whole number"),
            ("1e3", "whole number"),
            ("18446744073709552", "at most"),
        ] {
            let refused = deadline(value).unwrap_err();
            assert!(refused.what.contains(says), "{value}: {}", refused.what);
        }

        let mut twice = HeaderMap::new();
        twice.append(DEADLINE_HEADER, HeaderValue::from_static("1"));
        twice.append(DEADLINE_HEADER, HeaderValue::from_static("2"));
        assert!(
            invoke("f".into(), None, &twice)
                .unwrap_err()
                .what
                .contains("more than once")
        );
        let mut odd = HeaderMap::new();
        odd.insert(
            FUNCTION_HEADER,
            HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
        );
        assert!(
            invoke("f".into(), None, &odd)
                .unwrap_err()
                .what
                .contains("visible ASCII")
        );
        let mut spaced = HeaderMap::new();
        spaced.insert(FUNCTION_HEADER, HeaderValue::from_static("a b"));
        assert!(invoke("f".into(), None, &spaced).is_err());
    }

    #[test]
    fn messages_cut_what_they_quote() {
        let long = "x".repeat(1_000);
        let message = arguments(Some(&format!("n={long}"))).unwrap_err().what;
        assert!(message.len() < 200, "{message}");
        assert!(message.contains("..."));
    }
}
