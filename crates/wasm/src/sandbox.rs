//! One request in its own fresh instance, driven step by step by the
//! worker thread that owns it, and the flag that preempts it.
//!
//! How a request runs:
//! 1. [`Sandbox::start`] takes a slot from the pool, instantiates the
//!    function (running its start function, if any, to completion) and
//!    makes the call to `run`, without running it yet.
//! 2. [`Sandbox::resume`] runs the guest on its own fiber stack until it
//!    returns, faults, or is preempted: the dispatcher calls
//!    [`Preempt::request`], which sets the worker's flag and advances the
//!    engine epoch; at its next epoch check (function entry or loop
//!    back-edge) the guest's callback sees the flag, clears it and yields,
//!    and `resume` returns [`Step::Preempted`] with the guest's state kept.
//! 3. The worker may run other sandboxes on the same thread, then resume
//!    this one, any number of times, until [`Step::Done`].
//! 4. Dropping a sandbox at any point (a client that went away) unwinds its
//!    fiber and gives its slot back to the pool.
//!
//! Every epoch check also compares the thread's CPU clock with the
//! request's CPU deadline: CPU time is summed over the request's runs, so
//! the time it spends preempted does not count against it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use faasched_model::Nanos;
use faasched_sys::clock;
use wasmtime::{Engine, PoolConcurrencyLimitError, Store, UpdateDeadline};
use wasmtime_wasi::I32Exit;

use crate::command::{self, Input, Pipes};
use crate::guest::{Guest, OverMemory, Preempt};
use crate::runtime::{Function, Image, Kind, describe};
use crate::{Fault, Result, Runtime};

/// What one request cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Wall time of [`Sandbox::start`], in ns: a store, a pool slot, the
    /// instantiation (with the start function, if any) and the export
    /// lookup.
    pub setup: Nanos,
    /// CPU time of the calling thread over all [`Sandbox::resume`] calls,
    /// in ns: the guest's execution time plus the fiber switches.
    pub cpu: Nanos,
    /// How many times the request yielded to a preemption.
    pub preemptions: u32,
}

/// A request that ran to completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// What `run` returned (a checksum for the built-in suite), or a
    /// command's exit status (0 when it returned from `_start`).
    pub value: i64,
    /// What a command wrote to standard output (empty for `run`).
    pub stdout: Bytes,
    /// What a command wrote to standard error, its first
    /// [`STDERR_KEPT`](crate::STDERR_KEPT) bytes (empty for `run`).
    pub stderr: Bytes,
    /// What it cost.
    pub stats: Stats,
}

/// What one [`Sandbox::resume`] ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The request ended: its value or the fault that ended it. The slot is
    /// back in the pool.
    Done(Result<Output>),
    /// The guest yielded to a [`Preempt::request`]; resume it later.
    Preempted,
}

/// The guest's call to `run` (or a command's `_start`, whose exit status
/// stands for the value), suspended between resumes.
type Run = Pin<Box<dyn Future<Output = wasmtime::Result<i64>> + Send>>;

/// One request in a fresh instance. `Send`: a sandbox may move between
/// threads between resumes, though SledgeScale's workers keep theirs.
pub struct Sandbox {
    /// Declared first so that it drops first: dropping it unwinds the
    /// guest's fiber, then frees the store and its pool slot.
    run: Option<Run>,
    function: String,
    kind: Kind,
    guard: Arc<Guard>,
    stats: Stats,
    cpu_limit: Nanos,
    memory_limit: u64,
    slots: u32,
    /// A command's standard output and error.
    pipes: Option<Pipes>,
    max_output: usize,
    /// To advance the epoch for a request made before a run.
    engine: Engine,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("function", &self.function)
            .field("finished", &self.run.is_none())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// What the epoch callback reads: shared between the sandbox and its store.
struct Guard {
    /// The preemption flag of the worker running the sandbox: replaced when
    /// the sandbox moves to another worker ([`Sandbox::rebind`]), read at
    /// epoch checks only.
    preempt: Mutex<Arc<AtomicBool>>,
    /// The thread CPU time (ns) at which the current run exceeds the limit.
    cpu_deadline: AtomicU64,
    /// False while instantiating: a start function runs synchronously and
    /// cannot yield.
    may_yield: AtomicBool,
    /// Set by whoever no longer wants the result (a client that left):
    /// the guest stops at its next check with [`Fault::Aborted`].
    abort: Mutex<Option<Arc<AtomicBool>>>,
}

impl Guard {
    /// The epoch-deadline callback: stop a request over its CPU limit,
    /// yield to a preemption request, otherwise continue to the next tick.
    fn on_epoch(&self) -> wasmtime::Result<UpdateDeadline> {
        if clock::thread_cpu() >= self.cpu_deadline.load(Ordering::Relaxed) {
            return Err(wasmtime::Error::new(CpuLimit));
        }
        if self.aborted() {
            return Err(wasmtime::Error::new(Aborted));
        }
        if self.may_yield.load(Ordering::Relaxed) && self.take_preempt() {
            // wasmtime sets the next deadline when the guest is resumed,
            // relative to the epoch then: a deadline of 1 would miss a
            // request made while the guest waited preempted (its epoch bump
            // came before the resume), and the guest would run on to the
            // ticker's next tick. A deadline of 0 has it look at its first
            // check after every resume.
            Ok(UpdateDeadline::Yield(0))
        } else {
            Ok(UpdateDeadline::Continue(1))
        }
    }

    /// Clears the worker's preemption flag; true if it was set.
    fn take_preempt(&self) -> bool {
        let preempt = self.preempt.lock().unwrap_or_else(|e| e.into_inner());
        preempt.load(Ordering::Acquire) && preempt.swap(false, Ordering::AcqRel)
    }

    /// Whether the request's abort flag is set.
    fn aborted(&self) -> bool {
        let abort = self.abort.lock().unwrap_or_else(|e| e.into_inner());
        abort.as_ref().is_some_and(|a| a.load(Ordering::Acquire))
    }

    /// Whether the worker's preemption flag is set.
    fn preempt_requested(&self) -> bool {
        let preempt = self.preempt.lock().unwrap_or_else(|e| e.into_inner());
        preempt.load(Ordering::Acquire)
    }
}

/// The error the epoch callback ends an aborted request with.
#[derive(Debug, thiserror::Error)]
#[error("aborted")]
struct Aborted;

/// The error the epoch callback ends a request over its CPU limit with.
#[derive(Debug, thiserror::Error)]
#[error("CPU limit exceeded")]
struct CpuLimit;

impl Sandbox {
    /// Starts `function` on `input` (an integer for a `run` module) in a
    /// fresh instance for a worker whose flag is `preempt`; the guest runs
    /// on the first [`Sandbox::resume`].
    ///
    /// # Errors
    ///
    /// [`Fault::UnknownFunction`]; [`Fault::BadArgument`] for a built-in
    /// given an argument out of range, or an input of the other ABI's kind;
    /// [`Fault::Capacity`] when every pool slot is in use; [`Fault::Trap`],
    /// [`Fault::Timeout`] or [`Fault::MemoryLimit`] from a start function.
    pub fn start(
        runtime: &Runtime,
        preempt: &Preempt,
        function: &str,
        input: impl Into<Input>,
    ) -> Result<Self> {
        let wall = clock::monotonic();
        let registered = runtime.function(function)?;
        Self::start_from(runtime, preempt, function, registered, input.into(), wall)
    }

    /// [`Sandbox::start`] from `image` (a container's own compiled copy of
    /// its function) rather than the runtime's copy.
    ///
    /// # Errors
    ///
    /// As [`Sandbox::start`], but for an unknown function.
    pub fn start_image(
        runtime: &Runtime,
        preempt: &Preempt,
        image: &Image,
        input: impl Into<Input>,
    ) -> Result<Self> {
        let wall = clock::monotonic();
        Self::start_from(
            runtime,
            preempt,
            &image.name,
            &image.function,
            input.into(),
            wall,
        )
    }

    fn start_from(
        runtime: &Runtime,
        preempt: &Preempt,
        function: &str,
        registered: &Function,
        input: Input,
        wall: Nanos,
    ) -> Result<Self> {
        let cpu = clock::thread_cpu();
        let limits = runtime.limits;
        let deployed = &registered.deployment;
        let cpu_limit = deployed.cpu_limit.unwrap_or(limits.cpu_limit);
        let memory_limit = deployed.memory_limit.unwrap_or(limits.memory_limit);
        let bad = |reason: String| Fault::BadArgument {
            function: function.to_owned(),
            reason,
        };
        let (arg, wasi, pipes) = match (registered.kind, input) {
            (Kind::Run, Input::Arg(arg)) => {
                if let Some(builtin) = registered.builtin {
                    builtin.check(arg).map_err(bad)?;
                }
                (arg, None, None)
            }
            (Kind::Command, Input::Command { stdin, env }) => {
                let (ctx, pipes) =
                    command::context(function, stdin, &env, &deployed.env, limits.max_output);
                (0, Some(ctx), Some(pipes))
            }
            (Kind::Run, Input::Command { .. }) => {
                return Err(bad(
                    "it takes an integer argument, not standard input".into()
                ));
            }
            (Kind::Command, Input::Arg(_)) => {
                return Err(bad(
                    "it is a WASI command: it takes standard input, not an integer".into(),
                ));
            }
        };
        let guard = Arc::new(Guard {
            preempt: Mutex::new(Arc::clone(&preempt.flag)),
            cpu_deadline: AtomicU64::new(cpu.saturating_add(cpu_limit)),
            may_yield: AtomicBool::new(false),
            abort: Mutex::new(None),
        });
        let mut sandbox = Self {
            run: None,
            function: function.to_owned(),
            kind: registered.kind,
            guard: Arc::clone(&guard),
            stats: Stats::default(),
            cpu_limit,
            memory_limit,
            slots: limits.max_sandboxes,
            pipes,
            max_output: limits.max_output,
            engine: runtime.engine.clone(),
        };
        let mut store = Store::new(&runtime.engine, Guest { memory_limit, wasi });
        store.limiter(|guest| guest);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |_| guard.on_epoch());
        // Instantiation cannot yield (`may_yield` is false) and a start
        // function's WASI calls only touch memory pipes, so one poll ends
        // it; async only because WASI's functions are.
        let instance = match std::pin::pin!(registered.pre.instantiate_async(&mut store))
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(instance) => instance.map_err(|e| sandbox.fault(&e))?,
            Poll::Pending => {
                return Err(Fault::Trap {
                    function: function.to_owned(),
                    message: "its start function waited, which a sandbox cannot".into(),
                });
            }
        };
        let run: Run = match registered.kind {
            Kind::Run => {
                let run = instance
                    .get_typed_func::<i64, i64>(&mut store, "run")
                    .map_err(|e| sandbox.fault(&e))?;
                Box::pin(async move { run.call_async(&mut store, arg).await })
            }
            Kind::Command => {
                let start = instance
                    .get_typed_func::<(), ()>(&mut store, "_start")
                    .map_err(|e| sandbox.fault(&e))?;
                Box::pin(async move {
                    match start.call_async(&mut store, ()).await {
                        Ok(()) => Ok(0),
                        Err(e) => match e.downcast_ref::<I32Exit>() {
                            Some(&I32Exit(status)) => Ok(i64::from(status)),
                            None => Err(e),
                        },
                    }
                })
            }
        };
        sandbox.guard.may_yield.store(true, Ordering::Relaxed);
        sandbox.run = Some(run);
        sandbox.stats.setup = clock::monotonic().saturating_sub(wall);
        Ok(sandbox)
    }

    /// Makes `preempt` the flag this sandbox yields to: a preempted sandbox
    /// resumed by another worker (a policy that takes requests back to a
    /// central queue) must answer that worker's preemption requests, not
    /// those of the worker it left. `preempt` must come from the runtime
    /// the sandbox runs on.
    pub fn rebind(&mut self, preempt: &Preempt) {
        *self.guard.preempt.lock().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&preempt.flag);
    }

    /// Makes `abort` the flag that ends this request: once it is set the
    /// guest stops at its next check (the runtime's ticker makes one every
    /// tick) and [`Sandbox::resume`] returns [`Fault::Aborted`], freeing the
    /// slot. For a result nobody waits for any more.
    pub fn abort_on(&mut self, abort: Arc<AtomicBool>) {
        *self.guard.abort.lock().unwrap_or_else(|e| e.into_inner()) = Some(abort);
    }

    /// Runs the guest on the calling thread until it returns, faults, or
    /// yields to a preemption request. After [`Step::Done`] it only answers
    /// `Done(Err(Fault::Finished))`.
    pub fn resume(&mut self) -> Step {
        let Some(run) = self.run.as_mut() else {
            return Step::Done(Err(Fault::Finished(self.function.clone())));
        };
        // A request made before this run began may have advanced the epoch
        // before the guest's deadline was set (while the sandbox started):
        // the guest would not look at the flag until the ticker's next
        // tick. Advancing the epoch again makes it look at its first check.
        // (A guest that yielded looks at its first check anyway.)
        if self.guard.preempt_requested() {
            self.engine.increment_epoch();
        }
        let begin = clock::thread_cpu();
        let left = self.cpu_limit.saturating_sub(self.stats.cpu);
        self.guard
            .cpu_deadline
            .store(begin.saturating_add(left), Ordering::Relaxed);
        // No executor: the only thing that suspends the guest is the epoch
        // callback's yield, and the next resume is its wake-up.
        let poll = run.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        self.stats.cpu += clock::thread_cpu().saturating_sub(begin);
        match poll {
            Poll::Pending => {
                self.stats.preemptions += 1;
                Step::Preempted
            }
            Poll::Ready(result) => {
                self.run = None;
                let stdout = self.stdout();
                if stdout.len() > self.max_output {
                    // Whatever the guest did once its writes failed.
                    return Step::Done(Err(Fault::OutputLimit {
                        function: self.function.clone(),
                        limit: self.max_output,
                    }));
                }
                Step::Done(match result {
                    Ok(value) => Ok(Output {
                        value,
                        stdout,
                        stderr: self.stderr(),
                        stats: self.stats,
                    }),
                    Err(e) => Err(self.fault(&e)),
                })
            }
        }
    }

    /// What the request has cost so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// What a command has written to standard error so far, its first
    /// [`STDERR_KEPT`](crate::STDERR_KEPT) bytes: its log, also when it
    /// ended in a fault (empty for `run`).
    pub fn stderr(&self) -> Bytes {
        self.pipes
            .as_ref()
            .map_or_else(Bytes::new, |p| p.stderr.contents())
    }

    /// What a command has written to standard output so far.
    fn stdout(&self) -> Bytes {
        self.pipes
            .as_ref()
            .map_or_else(Bytes::new, |p| p.stdout.contents())
    }

    /// The ABI of the function it runs.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The function this sandbox runs.
    pub fn function(&self) -> &str {
        &self.function
    }

    /// Whether the request has ended.
    pub fn is_finished(&self) -> bool {
        self.run.is_none()
    }

    /// The fault a wasmtime error stands for.
    fn fault(&self, error: &wasmtime::Error) -> Fault {
        let function = self.function.clone();
        if cause::<Aborted>(error).is_some() {
            Fault::Aborted(function)
        } else if cause::<CpuLimit>(error).is_some() {
            Fault::Timeout {
                function,
                limit: self.cpu_limit,
            }
        } else if let Some(over) = cause::<OverMemory>(error) {
            Fault::MemoryLimit {
                function,
                asked: over.asked,
                limit: self.memory_limit,
            }
        } else if cause::<PoolConcurrencyLimitError>(error).is_some() {
            Fault::Capacity {
                function,
                slots: self.slots,
            }
        } else {
            Fault::Trap {
                function,
                message: describe(error),
            }
        }
    }
}

/// The first error of type `E` in `error`'s chain of causes.
fn cause<E: std::error::Error + 'static>(error: &wasmtime::Error) -> Option<&E> {
    error.chain().find_map(|e| e.downcast_ref::<E>())
}
