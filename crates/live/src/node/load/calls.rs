//! Real functions for a workload's requests: `node load`'s and `node
//! replay`'s `--function LABEL=CALL` and `--body LABEL=FILE`.
//!
//! By default every request of a workload is `spin` of its work. [`Calls`]
//! sends the requests of some of its functions to a real function instead:
//!
//! 1. each `--function LABEL=CALL` is parsed on its own ([`Mapping`]):
//!    CALL is `NAME` or `NAME?QUERY`, NAME a function name as the node
//!    takes it ([`MAX_NAME`](crate::wire::MAX_NAME) bytes at most), QUERY
//!    without spaces;
//! 2. [`Calls::new`] checks the labels against the workload's functions
//!    (none unknown, none twice);
//! 3. each `--body LABEL=FILE` ([`BodyFile`]) is read once ([`read_body`]:
//!    a regular file of [`MAX_BODY`] bytes at most) and given to its
//!    label's call ([`Calls::with_body`]);
//! 4. the run asks [`Calls::of`] once per request: a mapped request carries
//!    its call as an `Arc`, so that copying it is a pointer's copy, and
//!    keeps its label and its deadline.

use crate::node::ingress::DEFAULT_MAX_BODY_BYTES;
use crate::wire::request::check_name;
use faasched_model::Functions;
use hyper::Uri;
use hyper::body::Bytes;
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

/// The longest body a call carries, bytes: what a node takes by default
/// (`node serve --max-body-kib`, 1 MiB).
pub const MAX_BODY: usize = DEFAULT_MAX_BODY_BYTES;

/// Why a mapping or a body is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallsError {
    /// Not `LABEL=VALUE`.
    #[error("`{given}` is not {syntax}")]
    Syntax {
        /// What was given.
        given: String,
        /// What it should be: `LABEL=CALL` or `LABEL=FILE`.
        syntax: &'static str,
    },
    /// A call that is not `NAME` or `NAME?QUERY`.
    #[error("the call `{call}`: {why}")]
    Call {
        /// The call as given.
        call: String,
        /// What is wrong with it.
        why: String,
    },
    /// A label that names no function of the workload.
    #[error("`{label}` is no function of the workload, whose functions are {}", functions.join(", "))]
    UnknownLabel {
        /// The label.
        label: String,
        /// The workload's functions, in its order.
        functions: Vec<String>,
    },
    /// A label mapped, or given a body, twice.
    #[error("`{label}` is given twice")]
    Twice {
        /// The label.
        label: String,
    },
    /// Two labels that map the same workload function (one of them the
    /// name of its copies).
    #[error("`{function}` is mapped by both `{first}` and `{second}`")]
    Overlap {
        /// The function.
        function: String,
        /// The label that mapped it first.
        first: String,
        /// The label that mapped it again.
        second: String,
    },
    /// A body for a label whose requests stay `spin`, which reads none.
    #[error("`{label}` has no call to carry a body (its requests are `spin`, which takes none)")]
    Unmapped {
        /// The label.
        label: String,
    },
    /// A body file that cannot be sent.
    #[error("{}: {why}", path.display())]
    Body {
        /// The file.
        path: PathBuf,
        /// Why not.
        why: String,
    },
}

/// What a workload function's requests are sent as: `POST /invoke/NAME`
/// with its query and a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionCall {
    function: String,
    query: Option<String>,
    /// `/invoke/NAME[?QUERY]`, made once.
    uri: Uri,
    body: Bytes,
}

impl FunctionCall {
    /// The function's name.
    pub fn function(&self) -> &str {
        &self.function
    }

    /// The query, without its `?`; `None` without one.
    pub fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }

    /// `/invoke/NAME[?QUERY]`.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// The body; empty by default.
    pub fn body(&self) -> &Bytes {
        &self.body
    }
}

impl FromStr for FunctionCall {
    type Err = CallsError;

    /// `NAME` or `NAME?QUERY`: NAME as the node's names are (1 to
    /// [`MAX_NAME`](crate::wire::MAX_NAME) ASCII letters, digits, `_`, `-`
    /// and `.`), QUERY not empty, without spaces, and a URL's query.
    fn from_str(call: &str) -> Result<FunctionCall, CallsError> {
        let bad = |why: String| CallsError::Call {
            call: call.to_string(),
            why,
        };
        let (function, query) = match call.split_once('?') {
            Some((function, query)) => (function, Some(query)),
            None => (call, None),
        };
        if function.is_empty() {
            return Err(bad("give NAME or NAME?QUERY, e.g. fib?n=10".into()));
        }
        check_name(function, "function").map_err(bad)?;
        if let Some(query) = query {
            if query.is_empty() {
                return Err(bad("the query after `?` is empty".into()));
            }
            if let Some(c) = query.chars().find(|c| !c.is_ascii_graphic() || *c == '#') {
                return Err(bad(format!(
                    "the query has {c:?}: a query is visible ASCII without spaces or `#`"
                )));
            }
        }
        let path = match query {
            Some(query) => format!("/invoke/{function}?{query}"),
            None => format!("/invoke/{function}"),
        };
        let uri = Uri::from_maybe_shared(Bytes::from(path))
            .map_err(|e| bad(format!("the query is no URL's: {e}")))?;
        Ok(FunctionCall {
            function: function.to_string(),
            query: query.map(str::to_string),
            uri,
            body: Bytes::new(),
        })
    }
}

impl fmt::Display for FunctionCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.function)?;
        match &self.query {
            Some(query) => write!(f, "?{query}"),
            None => Ok(()),
        }
    }
}

/// `LABEL=VALUE`, split at the first `=`, both sides not empty.
fn split<'s>(given: &'s str, syntax: &'static str) -> Result<(&'s str, &'s str), CallsError> {
    match given.split_once('=') {
        Some((label, value)) if !label.is_empty() && !value.is_empty() => Ok((label, value)),
        _ => Err(CallsError::Syntax {
            given: given.to_string(),
            syntax,
        }),
    }
}

/// One `--function LABEL=CALL`: the requests of workload function LABEL
/// go to CALL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// The workload function.
    pub label: String,
    /// What its requests are sent as.
    pub call: FunctionCall,
}

impl FromStr for Mapping {
    type Err = CallsError;

    fn from_str(given: &str) -> Result<Mapping, CallsError> {
        let (label, call) = split(given, "LABEL=CALL, e.g. short=hello-http")?;
        Ok(Mapping {
            label: label.to_string(),
            call: call.parse()?,
        })
    }
}

/// One `--body LABEL=FILE`: the requests of workload function LABEL carry
/// FILE's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyFile {
    /// The workload function.
    pub label: String,
    /// The file.
    pub path: PathBuf,
}

impl FromStr for BodyFile {
    type Err = CallsError;

    fn from_str(given: &str) -> Result<BodyFile, CallsError> {
        let (label, path) = split(given, "LABEL=FILE, e.g. short=input.json")?;
        Ok(BodyFile {
            label: label.to_string(),
            path: path.into(),
        })
    }
}

impl fmt::Display for BodyFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.label, self.path.display())
    }
}

/// The bytes of `path`, a regular file of [`MAX_BODY`] bytes at most.
pub fn read_body(path: &Path) -> Result<Bytes, CallsError> {
    let bad = |why: String| CallsError::Body {
        path: path.to_path_buf(),
        why,
    };
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() {
        return Err(bad("is not a regular file".into()));
    }
    let too_long = || {
        bad(format!(
            "is longer than {MAX_BODY} bytes, what a node takes by default (--max-body-kib {})",
            MAX_BODY / 1024
        ))
    };
    if meta.len() > MAX_BODY as u64 {
        return Err(too_long());
    }
    let mut body = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BODY as u64 + 1).read_to_end(&mut body))
        .map_err(|e| bad(e.to_string()))?;
    // It grew since it was measured.
    if body.len() > MAX_BODY {
        return Err(too_long());
    }
    Ok(Bytes::from(body))
}

/// Whether workload function `function` is `label` or one of its copies,
/// `{label}-{i}` (a live cluster's table holds ten copies of each of its
/// functions, `aes-encryption-0` to `aes-encryption-9`).
fn is_of(function: &str, label: &str) -> bool {
    function == label
        || function
            .strip_prefix(label)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
}

/// Which workload functions' requests go to a real function, and with
/// what body; the others' are `spin` of their work. Empty by default.
///
/// A label names a workload function, or, where it names none, every copy
/// of one (`aes-encryption` for `aes-encryption-0` to `-9`), so that one
/// mapping gives a live cluster's copies of a function one call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Calls {
    /// Each label as given, its call and the workload functions it names.
    by_label: BTreeMap<String, (Arc<FunctionCall>, Vec<String>)>,
    /// Each workload function mapped, its call.
    by_function: BTreeMap<String, Arc<FunctionCall>>,
    /// The labels given a body.
    bodies: Vec<String>,
}

impl Calls {
    /// `mappings` over the workload's `functions`: each label one of them
    /// or the name its copies share, no function mapped twice.
    pub fn new(
        functions: &Functions,
        mappings: impl IntoIterator<Item = Mapping>,
    ) -> Result<Calls, CallsError> {
        let mut calls = Calls::default();
        for Mapping { label, call } in mappings {
            let named: Vec<String> = match functions.find(&label) {
                Some(_) => vec![label.clone()],
                None => functions
                    .iter()
                    .map(|f| &*f.name)
                    .filter(|f| is_of(f, &label))
                    .map(str::to_string)
                    .collect(),
            };
            if named.is_empty() {
                return Err(CallsError::UnknownLabel {
                    label,
                    functions: functions.iter().map(|f| f.name.to_string()).collect(),
                });
            }
            if calls.by_label.contains_key(&label) {
                return Err(CallsError::Twice { label });
            }
            if let Some(function) = named.iter().find(|f| calls.by_function.contains_key(*f)) {
                let first = calls
                    .by_label
                    .iter()
                    .find(|(_, (_, fs))| fs.contains(function))
                    .map(|(l, _)| l.clone())
                    .unwrap_or_default();
                return Err(CallsError::Overlap {
                    function: function.clone(),
                    first,
                    second: label,
                });
            }
            let call = Arc::new(call);
            for f in &named {
                calls.by_function.insert(f.clone(), Arc::clone(&call));
            }
            calls.by_label.insert(label, (call, named));
        }
        Ok(calls)
    }

    /// Gives `label`'s call `body`; a label not mapped, or given a body
    /// already, is refused.
    pub fn with_body(&mut self, label: &str, body: Bytes) -> Result<&mut Calls, CallsError> {
        let Some((call, named)) = self.by_label.get_mut(label) else {
            return Err(CallsError::Unmapped {
                label: label.to_string(),
            });
        };
        if self.bodies.iter().any(|l| l == label) {
            return Err(CallsError::Twice {
                label: label.to_string(),
            });
        }
        Arc::make_mut(call).body = body;
        for f in named.iter() {
            self.by_function.insert(f.clone(), Arc::clone(call));
        }
        self.bodies.push(label.to_string());
        Ok(self)
    }

    /// The call of workload function `function`'s requests; `None`: `spin`.
    pub fn of(&self, function: &str) -> Option<&Arc<FunctionCall>> {
        self.by_function.get(function)
    }

    /// Whether every request is `spin`.
    pub fn is_empty(&self) -> bool {
        self.by_label.is_empty()
    }

    /// Each label as given and its call, by label.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &FunctionCall)> {
        self.by_label.iter().map(|(l, (c, _))| (l.as_str(), &**c))
    }
}
