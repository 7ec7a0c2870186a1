//! What one function is given beyond its module when it is registered
//! ([`Compiler::prepare_with`](crate::Compiler::prepare_with)): limits
//! tighter than the runtime's, and environment variables for a WASI
//! command. A node's manifests are read into one.

use faasched_model::Nanos;

use crate::config::Resolved;
use crate::{Fault, Result};

/// Bytes of `NAME=value` a deployment may give a command, over all its
/// variables: each request's instance copies them.
pub const MAX_ENV_BYTES: usize = 64 << 10;

/// Hosts a deployment may let a component reach.
pub const MAX_OUTBOUND: usize = 64;

/// One function's own settings; each left unset is the runtime's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deployment {
    /// Linear memory one of its sandboxes may grow to, bytes: a multiple
    /// of 64 KiB, at most the runtime's
    /// [`memory_limit`](crate::Config::memory_limit) (the pool's slots are
    /// that large).
    pub memory_limit: Option<u64>,
    /// CPU time one of its requests may use, ns, at most the runtime's
    /// [`cpu_limit`](crate::Config::cpu_limit).
    pub cpu_limit: Option<Nanos>,
    /// Environment variables a WASI command sees after those of its
    /// [`Input`](crate::Input), in order; a `run` module has none.
    pub env: Vec<(String, String)>,
    /// Where a component's outgoing requests may go: `host` or
    /// `host:port` (port 80 if none), plain HTTP only, matched exactly
    /// (case aside); every other request is refused. None by default;
    /// only a component makes requests.
    pub allow_outbound: Vec<String>,
}

impl Deployment {
    /// Refuses settings past the runtime's `limits`, for function `name`.
    pub(crate) fn check(&self, name: &str, limits: &Resolved) -> Result<()> {
        let refuse = |reason: String| {
            Err(Fault::Deployment {
                name: name.to_owned(),
                reason,
            })
        };
        if let Some(memory) = self.memory_limit
            && (memory == 0 || !memory.is_multiple_of(64 << 10) || memory > limits.memory_limit)
        {
            return refuse(format!(
                "its memory limit {memory} is not a multiple of 65536 from 65536 to the node's {}",
                limits.memory_limit
            ));
        }
        if let Some(cpu) = self.cpu_limit
            && (cpu == 0 || cpu > limits.cpu_limit)
        {
            return refuse(format!(
                "its CPU limit {cpu} ns is not from 1 ns to the node's {} ns",
                limits.cpu_limit
            ));
        }
        let mut bytes = 0;
        for (key, value) in &self.env {
            if key.is_empty() || key.contains(['=', '\0']) || value.contains('\0') {
                return refuse(format!(
                    "environment variable `{key}`: a name is non-empty without `=` or NUL, a \
                     value without NUL"
                ));
            }
            bytes += key.len() + value.len() + 2;
        }
        if self.allow_outbound.len() > MAX_OUTBOUND {
            return refuse(format!(
                "it allows {} outbound hosts, more than the {MAX_OUTBOUND} a function may",
                self.allow_outbound.len()
            ));
        }
        for host in &self.allow_outbound {
            if outbound_key(host).is_none() {
                return refuse(format!(
                    "outbound host `{host}` is not `host` or `host:port` (no scheme, path or \
                     user)"
                ));
            }
        }
        if bytes > MAX_ENV_BYTES {
            return refuse(format!(
                "its environment is {bytes} bytes, more than the {MAX_ENV_BYTES} a function may \
                 have"
            ));
        }
        Ok(())
    }
}

/// `host:port` in lower case (port 80 if `authority` names none), or
/// `None` for what is not a bare authority: the form an allowed host and
/// an outgoing request's target are compared in.
pub(crate) fn outbound_key(authority: &str) -> Option<String> {
    let parsed: http::uri::Authority = authority.parse().ok()?;
    if parsed.as_str().contains('@') || parsed.host().is_empty() {
        return None;
    }
    Some(format!(
        "{}:{}",
        parsed.host().to_ascii_lowercase(),
        parsed.port_u16().unwrap_or(80)
    ))
}
