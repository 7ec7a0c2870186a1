//! What a sandbox's guest runs with: its store's data (the memory it may
//! grow to) and its worker's preemption flag.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::{Engine, ResourceLimiter};
use wasmtime_wasi::p1::WasiP1Ctx;

use crate::http::HttpHost;

/// A worker's preemption flag: the dispatcher (any thread) calls
/// [`Preempt::request`]; the sandbox the worker is running yields at its
/// next epoch check.
///
/// Clones share the flag; pass a worker's sandboxes a handle from the same
/// [`Runtime::preempt`](crate::Runtime::preempt) they run on, since [`Preempt::request`] advances
/// that runtime's epoch (another runtime's guest would only notice at its
/// next tick). The flag stays set until a running guest takes
/// it, so a request made while the worker runs no guest preempts the next
/// guest it resumes at once; a worker that picks its next request after
/// seeing new work can [`Preempt::take`] the flag first.
#[derive(Clone)]
pub struct Preempt {
    pub(crate) flag: Arc<AtomicBool>,
    engine: Engine,
}

impl std::fmt::Debug for Preempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preempt")
            .field("requested", &self.is_requested())
            .finish_non_exhaustive()
    }
}

impl Preempt {
    pub(crate) fn new(engine: Engine) -> Self {
        Self {
            flag: Arc::new(AtomicBool::new(false)),
            engine,
        }
    }

    /// Asks the worker's running guest to yield: sets the flag, then
    /// advances the engine epoch so that every running guest checks it.
    /// Safe from any thread; costs two atomic operations.
    pub fn request(&self) {
        self.flag.store(true, Ordering::Release);
        self.engine.increment_epoch();
    }

    /// Clears the flag; true if it was set.
    pub fn take(&self) -> bool {
        self.flag.swap(false, Ordering::AcqRel)
    }

    /// Whether a request is pending.
    pub fn is_requested(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
}

/// The error the limiter ends a request asking for too much memory with.
#[derive(Debug, thiserror::Error)]
#[error("memory limit exceeded: asked for {asked} bytes")]
pub(crate) struct OverMemory {
    pub(crate) asked: u64,
}

/// A store's data: the per-sandbox memory limit, and what the host gives
/// the function's kind.
pub(crate) struct Guest {
    /// The most its memories may hold together: a component's several
    /// memories share one limit.
    pub(crate) memory_limit: u64,
    /// What its memories hold now, bytes.
    pub(crate) memory_used: u64,
    pub(crate) host: Host,
}

/// What the host gives a function beyond its memory, by its kind.
pub(crate) enum Host {
    /// Nothing: a `run` module imports nothing.
    Bare,
    /// A command's WASI preview 1 context (its pipes and environment).
    Command(Box<WasiP1Ctx>),
    /// A component's WASI preview 2 and wasi:http contexts.
    Http(Box<HttpHost>),
}

impl Guest {
    /// The WASI preview 1 context the linker's functions reach: only a
    /// command imports them, and a command's store always has one.
    pub(crate) fn wasi(&mut self) -> &mut WasiP1Ctx {
        match &mut self.host {
            Host::Command(ctx) => ctx,
            _ => unreachable!("only a command imports WASI preview 1, and its store has a context"),
        }
    }

    /// A component's host: only a component imports WASI preview 2 or
    /// wasi:http, and a component's store always has one.
    pub(crate) fn http_host(&mut self) -> &mut HttpHost {
        match &mut self.host {
            Host::Http(host) => host,
            _ => unreachable!("only a component imports WASI preview 2, and its store has a host"),
        }
    }
}

impl ResourceLimiter for Guest {
    /// Called for every memory as it is made (from 0) and grown: the
    /// memories' sum is what the limit bounds.
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let asked = self
            .memory_used
            .saturating_sub(current as u64)
            .saturating_add(desired as u64);
        if asked > self.memory_limit {
            // An error, not `Ok(false)`: the request ends with a fault that
            // says why, instead of the guest seeing memory.grow return -1.
            return Err(wasmtime::Error::new(OverMemory { asked }));
        }
        self.memory_used = asked;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // The pool bounds table elements.
        Ok(true)
    }
}
