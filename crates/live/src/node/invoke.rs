//! What the node runtime's ingress and its dispatchers say to each other:
//! an [`Invoke`] in, exactly one [`Answer`] out through its [`Reply`].
//!
//! The ingress (HTTP) parses a request into an [`Invoke`] and hands it to a
//! [`Backend`] with a [`Reply`]; the backend (the dispatchers and workers)
//! calls the reply once, whatever happens: the function's result, or a
//! [`Failure`] saying why there is none. Keeping the transport apart from
//! the scheduling is what lets the transport's cost be measured apart (an
//! in-process caller uses the same [`Backend`] without HTTP).

use crate::node::manifest::Settings;
use bytes::Bytes;
use faasched_model::Nanos;
use faasched_model::node::Refusal;
use hyper::HeaderMap;
use hyper::header::{AUTHORIZATION, HeaderName, HeaderValue, PROXY_AUTHORIZATION};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Set when nobody waits for an invocation's answer any more (its client
/// left): the runtime does not start it, or stops it at its next check, and
/// answers it [`Failure::Cancelled`], freeing its sandbox. Clones share the
/// flag.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Not cancelled yet.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels it.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// The flag itself, for an executor that checks it as it runs.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }
}

impl PartialEq for Cancel {
    /// Two invocations compare by what they ask, not by their flags.
    fn eq(&self, _other: &Cancel) -> bool {
        true
    }
}

impl Eq for Cancel {}

/// The headers a function never sees: they carry the node's own tokens.
pub const NODE_HEADERS: [HeaderName; 2] = [AUTHORIZATION, PROXY_AUTHORIZATION];

/// One invocation as the ingress received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invoke {
    /// The function (module) to run: a built-in (`noop`, `fib`, `spin`,
    /// ...) or a registered one.
    pub function: String,
    /// Its arguments, the URL's query as sent (`n=25` of `fib?n=25`,
    /// `w=640&h=480` of `resize?w=640&h=480`); `None` without one. The
    /// executor parses it: each function decides what its keys must be
    /// (a WASI command reads it whole, as `QUERY_STRING`).
    pub query: Option<String>,
    /// The request's headers, which a WASI command reads as CGI
    /// meta-variables (`HTTP_*`, `CONTENT_TYPE`); empty from an in-process
    /// caller.
    pub headers: HeaderMap,
    /// The request's body: a WASI command's standard input. A function of
    /// the `run` ABI takes none.
    pub body: Bytes,
    /// The workload function it stands for (`x-faasched-function`), which
    /// keys its work estimate; by default [`Invoke::function`].
    pub label: Option<String>,
    /// Relative deadline (`x-faasched-deadline-us`); by default the
    /// runtime's.
    pub deadline: Option<Nanos>,
    /// When the ingress received it: the runtime's latency counts from
    /// here.
    pub received: Instant,
    /// Set if its answer is no longer wanted.
    pub cancel: Cancel,
}

impl Invoke {
    /// The name its estimate and deadline are kept under.
    pub fn label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.function)
    }

    /// Its headers a function may see: all but [`NODE_HEADERS`].
    pub fn function_headers(&self) -> impl Iterator<Item = (&HeaderName, &HeaderValue)> {
        self.headers
            .iter()
            .filter(|(name, _)| !NODE_HEADERS.contains(name))
    }

    /// The call as one string, `function` or `function?query`.
    pub fn call(&self) -> String {
        match &self.query {
            Some(q) => format!("{}?{q}", self.function),
            None => self.function.clone(),
        }
    }
}

/// What a WASI command or a `wasi:http` component answered, beside its
/// value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// A command's output, beside its exit status.
    Command {
        /// Its standard output: the response, CGI headers first if it has
        /// any.
        stdout: Bytes,
        /// The start of its standard error: its log.
        stderr: Bytes,
    },
    /// A component's response (its log is kept by the executor).
    Response(faasched_wasm::Response),
}

/// What a finished invocation returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completed {
    /// The function's result; a WASI command's exit status.
    pub value: i64,
    /// What a WASI command or a component answered; `None` for a
    /// function of the `run` ABI.
    pub written: Option<Written>,
    /// CPU time its sandbox ran, ns.
    pub cpu: Nanos,
    /// Times it was preempted.
    pub preemptions: u32,
    /// From [`Invoke::received`] to its completion, ns.
    pub runtime: Nanos,
    /// From [`Invoke::received`] to its first run on a worker, ns.
    pub started: Nanos,
    /// The dispatcher whose group ran it.
    pub dispatcher: u32,
    /// The worker it finished on, in its dispatcher's group.
    pub worker: u32,
    /// Whether it started its container cold (a node with containers).
    pub cold: bool,
}

/// Why an invocation has no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No function of that name.
    UnknownFunction(String),
    /// The request was malformed (what was wrong).
    BadRequest(String),
    /// The function trapped (the runtime's message).
    Trap(String),
    /// It ran past its CPU-time limit and was stopped.
    Timeout {
        /// The limit, ns.
        limit: Nanos,
    },
    /// It tried to grow its memory past the sandbox's limit.
    Memory,
    /// A WASI command wrote more to its standard output than the node
    /// keeps.
    OutputLimit {
        /// The most bytes kept.
        limit: usize,
    },
    /// No sandbox or container memory was free for it.
    Overloaded,
    /// Admission control turned it away (why, in its kind); a policy
    /// with nowhere to put it is [`Failure::Overloaded`].
    Refused(Refusal),
    /// The runtime is stopping and did not run it.
    ShuttingDown,
    /// Its client left before the answer: it was not run, or was stopped.
    Cancelled,
    /// Anything else (a bug of ours: the message says what).
    Internal(String),
}

impl Failure {
    /// The short name clients read in `x-faasched-error`.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::UnknownFunction(_) => "unknown-function",
            Failure::BadRequest(_) => "bad-request",
            Failure::Trap(_) => "trap",
            Failure::Timeout { .. } => "timeout",
            Failure::Memory => "memory",
            Failure::OutputLimit { .. } => "output-limit",
            Failure::Overloaded => "overloaded",
            Failure::Refused(why) => why.kind(),
            Failure::ShuttingDown => "shutting-down",
            Failure::Cancelled => "cancelled",
            Failure::Internal(_) => "internal",
        }
    }

    /// The HTTP status that carries it: 4xx where the request is at fault,
    /// 5xx where the function or the runtime is.
    pub fn status(&self) -> u16 {
        match self {
            Failure::UnknownFunction(_) => 404,
            Failure::BadRequest(_) => 400,
            // nginx's "client closed request": nobody reads it.
            Failure::Cancelled => 499,
            Failure::Trap(_)
            | Failure::Memory
            | Failure::OutputLimit { .. }
            | Failure::Internal(_) => 500,
            Failure::Overloaded | Failure::Refused(_) | Failure::ShuttingDown => 503,
            Failure::Timeout { .. } => 504,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::UnknownFunction(name) => write!(f, "no function named {name:?}"),
            Failure::BadRequest(what) => write!(f, "bad request: {what}"),
            Failure::Trap(message) => write!(f, "the function trapped: {message}"),
            Failure::Timeout { limit } => write!(
                f,
                "the function ran past its CPU-time limit of {} ms and was stopped",
                limit / 1_000_000
            ),
            Failure::Memory => f.write_str("the function grew its memory past the sandbox's limit"),
            Failure::OutputLimit { limit } => write!(
                f,
                "the function's answer (a command's standard output, a component's body) is \
                 longer than the {limit} bytes kept"
            ),
            Failure::Overloaded => f.write_str("the runtime refused the request: overloaded"),
            Failure::Refused(why) => f.write_str(match why {
                Refusal::Unplaced => "the node's policy had nowhere to put the request",
                Refusal::QueueFull => {
                    "the node refused the request: it holds its most requests (--max-queued)"
                }
                Refusal::BacklogFull => {
                    "the node refused the request: its queued work is at its bound (--max-backlog-ms)"
                }
                Refusal::OverShare => {
                    "the node refused the request: its function holds its share of the queue (--fair-share)"
                }
                Refusal::Late => {
                    "the node refused the request: the work queued ahead of it would make it miss its deadline (--refuse-late)"
                }
            }),
            Failure::ShuttingDown => f.write_str("the runtime is shutting down"),
            Failure::Cancelled => f.write_str("the client left before the answer"),
            Failure::Internal(what) => write!(f, "internal error: {what}"),
        }
    }
}

impl std::error::Error for Failure {}

/// An invocation's outcome.
pub type Answer = Result<Completed, Failure>;

/// Where an invocation's one [`Answer`] goes.
pub type Reply = Box<dyn FnOnce(Answer) + Send>;

/// What runs invocations: the dispatchers and workers behind an ingress.
pub trait Backend: Send + Sync {
    /// Accepts `invoke`; `reply` is called exactly once, on any thread,
    /// possibly before this returns (a refusal).
    fn invoke(&self, invoke: Invoke, reply: Reply);

    /// Refuses at once, on the caller's thread, an invocation the backend
    /// can tell will fail before it is queued (an unknown function, a bad
    /// argument, a body for a function that takes none), so that it holds
    /// no queue slot. Cheap: it parses, it runs nothing.
    fn check(&self, _invoke: &Invoke) -> Result<(), Failure> {
        Ok(())
    }

    /// Registers a module (`.wasm` bytes or `.wat` text) under `name` with
    /// what its manifest gives it, or says why not
    /// ([`Failure::BadRequest`] for a malformed module, settings past the
    /// node's, or a deadline the node's own `--deadline` gives).
    fn register(&self, name: &str, module: &[u8], settings: &Settings) -> Result<(), Failure>;

    /// Removes the module registered under `name`, or says why not
    /// ([`Failure::UnknownFunction`]; [`Failure::BadRequest`] for a
    /// built-in).
    fn unregister(&self, name: &str) -> Result<(), Failure>;

    /// What function `name` (a WASI command) last wrote to standard
    /// error, its last bytes, oldest first; [`Failure::UnknownFunction`]
    /// for no function of that name.
    fn log(&self, name: &str) -> Result<Bytes, Failure> {
        Err(Failure::UnknownFunction(name.to_owned()))
    }

    /// Appends the backend's metrics in Prometheus text format.
    fn metrics(&self, out: &mut String);

    /// The backend's state for `GET /status`.
    fn status(&self) -> serde_json::Value;

    /// Stops accepting: every later [`Backend::invoke`] is answered
    /// [`Failure::ShuttingDown`]; what was accepted still gets its answer.
    fn shutdown(&self);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_has_a_kind_and_a_status_of_its_side() {
        let all = [
            Failure::UnknownFunction("x".into()),
            Failure::BadRequest("x".into()),
            Failure::Trap("x".into()),
            Failure::Timeout { limit: 5_000_000 },
            Failure::Memory,
            Failure::OutputLimit { limit: 4 },
            Failure::Overloaded,
            Failure::Refused(Refusal::QueueFull),
            Failure::Refused(Refusal::BacklogFull),
            Failure::Refused(Refusal::OverShare),
            Failure::Refused(Refusal::Late),
            Failure::ShuttingDown,
            Failure::Cancelled,
            Failure::Internal("x".into()),
        ];
        let kinds: Vec<_> = all.iter().map(Failure::kind).collect();
        let mut unique = kinds.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "{kinds:?}");
        let client: Vec<_> = all.iter().filter(|f| f.status() < 500).collect();
        assert_eq!(
            client,
            [
                &Failure::UnknownFunction("x".into()),
                &Failure::BadRequest("x".into()),
                &Failure::Cancelled
            ]
        );
        assert_eq!(
            Failure::Timeout { limit: 5_000_000 }.to_string(),
            "the function ran past its CPU-time limit of 5 ms and was stopped"
        );
    }
}
