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
//!
//! A component may also wait (on its response body's reader, a timer):
//! then `resume` parks the worker until the guest's waker fires, checking
//! every tick for a preemption request (answered with
//! [`Step::Preempted`], the guest's wait kept), an abort, or the
//! request's limit, which bounds the time it runs and waits together.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

use bytes::Bytes;
use faasched_model::Nanos;
use faasched_sys::clock;
use wasmtime::{Engine, PoolConcurrencyLimitError, Store, UpdateDeadline};
use wasmtime_wasi::I32Exit;

use crate::command::{self, Input, Pipes};
use crate::guest::{Guest, Host, OverMemory, Preempt};
use crate::http::{self, HttpHost, OverOutput, Response};
use crate::runtime::{Function, Image, Kind, Linked, describe};
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
    /// Wall time a component spent waiting (for its response's reader, a
    /// timer) over all its resumes, in ns; 0 for a module.
    pub waited: Nanos,
}

/// A request that ran to completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// What `run` returned (a checksum for the built-in suite), a
    /// command's exit status (0 when it returned from `_start`), or a
    /// component's response status.
    pub value: i64,
    /// What a command wrote to standard output (empty for `run`).
    pub stdout: Bytes,
    /// What a command wrote to standard error, or a component to either
    /// stream, its first [`STDERR_KEPT`](crate::STDERR_KEPT) bytes (empty
    /// for `run`).
    pub stderr: Bytes,
    /// A component's response (`None` for a module).
    pub response: Option<Response>,
    /// What it cost.
    pub stats: Stats,
}

/// What one [`Sandbox::resume`] ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(
    clippy::large_enum_variant,
    reason = "a step is matched as soon as it is returned, never kept"
)]
pub enum Step {
    /// The request ended: its value or the fault that ended it. The slot is
    /// back in the pool.
    Done(Result<Output>),
    /// The guest yielded to a [`Preempt::request`]; resume it later.
    Preempted,
}

/// The guest's call to `run` (or a command's `_start`, whose exit status
/// stands for the value, or a component's handler), suspended between
/// resumes.
type Run = Pin<Box<dyn Future<Output = wasmtime::Result<Ended>> + Send>>;

/// What a guest's call returned.
enum Ended {
    /// `run`'s result or a command's exit status.
    Value(i64),
    /// A component's response.
    Response(Response),
}

/// A sandbox's waker: a guest waiting on something outside it (a
/// component's body reader, a timer) is woken through it, and the worker
/// parked for it is unparked.
#[derive(Default)]
struct Alarm {
    rung: AtomicBool,
    /// The thread that resumes the sandbox now.
    thread: Mutex<Option<Thread>>,
}

impl Wake for Alarm {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.rung.store(true, Ordering::Release);
        if let Some(thread) = &*self.thread.lock().unwrap_or_else(|e| e.into_inner()) {
            thread.unpark();
        }
    }
}

/// One of the [`Config::max_sandboxes`](crate::Config::max_sandboxes)
/// sandboxes a runtime lets live at once, given back when its sandbox is
/// dropped. Counted here, not by the pool: a component takes several of
/// the pool's instances, memories and tables.
pub(crate) struct Slot(Arc<AtomicU32>);

impl Slot {
    /// A slot of `live`'s `max`, if one is free.
    pub(crate) fn take(live: &Arc<AtomicU32>, max: u32) -> Option<Slot> {
        live.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()
        .map(|_| Slot(Arc::clone(live)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a wait for a sandbox's waker ended with.
enum Waited {
    /// The waker fired: poll the guest again.
    Rung,
    /// The worker's preemption flag was set meanwhile.
    Preempted,
    /// The request is over: aborted or past its limit.
    Over(Fault),
}

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
    /// A command's standard output and error, a component's log.
    pipes: Option<Pipes>,
    max_output: usize,
    /// To advance the epoch for a request made before a run.
    engine: Engine,
    /// Its place among the runtime's sandboxes alive at once, until it
    /// ends.
    slot: Option<Slot>,
    /// Wakes the guest when what it waits for is ready.
    alarm: Arc<Alarm>,
    waker: Waker,
    /// How often a waiting sandbox checks its flags.
    tick: Duration,
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
    /// Set when the callback yields: a `Pending` poll was a preemption,
    /// not a wait.
    yielded: AtomicBool,
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
            self.yielded.store(true, Ordering::Relaxed);
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
        let (arg, host, pipes, request) = match (registered.kind, input) {
            (Kind::Run, Input::Arg(arg)) => {
                if let Some(builtin) = registered.builtin {
                    builtin.check(arg).map_err(bad)?;
                }
                (arg, Host::Bare, None, None)
            }
            (Kind::Command, Input::Command { stdin, env }) => {
                let (ctx, pipes) =
                    command::context(function, stdin, &env, &deployed.env, limits.max_output);
                (0, Host::Command(Box::new(ctx)), Some(pipes), None)
            }
            (Kind::Component, Input::Request(request)) => {
                let log = command::log();
                let host = HttpHost::new(function, &deployed.env, &deployed.allow_outbound, &log);
                let pipes = Pipes {
                    stdout: None,
                    stderr: log,
                };
                (0, Host::Http(Box::new(host)), Some(pipes), Some(request))
            }
            (kind, input) => {
                let takes = match kind {
                    Kind::Run => "it takes an integer argument",
                    Kind::Command => "it is a WASI command: it takes standard input",
                    Kind::Component => "it is a wasi:http component: it takes an HTTP request",
                };
                let given = match input {
                    Input::Arg(_) => "an integer",
                    Input::Command { .. } => "standard input",
                    Input::Request(_) => "an HTTP request",
                };
                return Err(bad(format!("{takes}, not {given}")));
            }
        };
        let guard = Arc::new(Guard {
            preempt: Mutex::new(Arc::clone(&preempt.flag)),
            cpu_deadline: AtomicU64::new(cpu.saturating_add(cpu_limit)),
            may_yield: AtomicBool::new(false),
            yielded: AtomicBool::new(false),
            abort: Mutex::new(None),
        });
        let alarm = Arc::new(Alarm::default());
        let slot = Slot::take(&runtime.live, limits.max_sandboxes).ok_or(Fault::Capacity {
            function: function.to_owned(),
            slots: limits.max_sandboxes,
        })?;
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
            slot: Some(slot),
            waker: Waker::from(Arc::clone(&alarm)),
            alarm,
            tick: Duration::from_nanos(limits.tick),
        };
        let mut store = Store::new(
            &runtime.engine,
            Guest {
                memory_limit,
                memory_used: 0,
                host,
            },
        );
        store.limiter(|guest| guest);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |_| guard.on_epoch());
        let waited = || Fault::Trap {
            function: function.to_owned(),
            message: "its start function waited, which a sandbox cannot".into(),
        };
        // Instantiation cannot yield (`may_yield` is false) and a start
        // function's WASI calls only touch memory pipes, so one poll ends
        // it; async only because WASI's functions are.
        let run: Run = match &registered.linked {
            Linked::Core(pre) => {
                let instance = match std::pin::pin!(pre.instantiate_async(&mut store))
                    .poll(&mut Context::from_waker(Waker::noop()))
                {
                    Poll::Ready(instance) => instance.map_err(|e| sandbox.fault(&e))?,
                    Poll::Pending => return Err(waited()),
                };
                if registered.kind == Kind::Run {
                    let run = instance
                        .get_typed_func::<i64, i64>(&mut store, "run")
                        .map_err(|e| sandbox.fault(&e))?;
                    Box::pin(async move { run.call_async(&mut store, arg).await.map(Ended::Value) })
                } else {
                    let start = instance
                        .get_typed_func::<(), ()>(&mut store, "_start")
                        .map_err(|e| sandbox.fault(&e))?;
                    Box::pin(async move {
                        match start.call_async(&mut store, ()).await {
                            Ok(()) => Ok(Ended::Value(0)),
                            Err(e) => match e.downcast_ref::<I32Exit>() {
                                Some(&I32Exit(status)) => Ok(Ended::Value(i64::from(status))),
                                None => Err(e),
                            },
                        }
                    })
                }
            }
            Linked::Proxy(pre) => {
                let proxy = wasmtime_wasi::runtime::with_ambient_tokio_runtime(|| {
                    std::pin::pin!(pre.instantiate_async(&mut store))
                        .poll(&mut Context::from_waker(Waker::noop()))
                });
                let proxy = match proxy {
                    Poll::Ready(proxy) => proxy.map_err(|e| sandbox.fault(&e))?,
                    Poll::Pending => return Err(waited()),
                };
                let request = request.expect("a component's input is a request");
                let max_output = limits.max_output;
                Box::pin(async move {
                    http::exchange(proxy, store, request, max_output)
                        .await
                        .map(Ended::Response)
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
        // Out of `self` while it runs, back in while it is suspended.
        let Some(mut run) = self.run.take() else {
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
        self.set_cpu_deadline(begin, 0);
        let component = self.kind == Kind::Component;
        // Only a component waits on what wakes a thread (a module's pipes
        // never pend); a wait checks the alarm every tick regardless.
        if component {
            *self.alarm.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(thread::current());
        }
        let result = loop {
            self.alarm.rung.store(false, Ordering::Release);
            let mut cx = Context::from_waker(&self.waker);
            // A component's host spawns and times on tokio: wasmtime-wasi's
            // own runtime, when the worker runs none.
            let poll = if component {
                wasmtime_wasi::runtime::with_ambient_tokio_runtime(|| run.as_mut().poll(&mut cx))
            } else {
                run.as_mut().poll(&mut cx)
            };
            if let Poll::Ready(result) = poll {
                break result;
            }
            if self.guard.yielded.swap(false, Ordering::Relaxed) {
                self.stats.cpu += clock::thread_cpu().saturating_sub(begin);
                self.stats.preemptions += 1;
                self.run = Some(run);
                return Step::Preempted;
            }
            let ran = clock::thread_cpu().saturating_sub(begin);
            match self.wait(ran) {
                // What it waited is spent: its CPU deadline comes closer.
                Waited::Rung => self.set_cpu_deadline(clock::thread_cpu(), ran),
                Waited::Preempted => {
                    self.stats.cpu += clock::thread_cpu().saturating_sub(begin);
                    self.stats.preemptions += 1;
                    self.run = Some(run);
                    return Step::Preempted;
                }
                Waited::Over(fault) => {
                    self.stats.cpu += clock::thread_cpu().saturating_sub(begin);
                    drop(run);
                    self.slot = None;
                    return Step::Done(Err(fault));
                }
            }
        };
        self.stats.cpu += clock::thread_cpu().saturating_sub(begin);
        // Its slots back to the pool and the runtime before the answer is
        // read.
        drop(run);
        self.slot = None;
        let stdout = self.stdout();
        if stdout.len() > self.max_output {
            // Whatever the guest did once its writes failed.
            return Step::Done(Err(Fault::OutputLimit {
                function: self.function.clone(),
                limit: self.max_output,
            }));
        }
        Step::Done(match result {
            Ok(Ended::Value(value)) => Ok(Output {
                value,
                stdout,
                stderr: self.stderr(),
                response: None,
                stats: self.stats,
            }),
            Ok(Ended::Response(response)) => Ok(Output {
                value: i64::from(response.status.as_u16()),
                stdout,
                stderr: self.stderr(),
                response: Some(response),
                stats: self.stats,
            }),
            Err(e) => Err(self.fault(&e)),
        })
    }

    /// Sets the CPU-time deadline of the guest's run from `now` (this
    /// thread's CPU clock), `ran` ns already spent in this resume: what is
    /// left of the limit after its earlier runs and all its waits.
    fn set_cpu_deadline(&self, now: Nanos, ran: Nanos) {
        let spent = self.stats.cpu + ran + self.stats.waited;
        let left = self.cpu_limit.saturating_sub(spent);
        self.guard
            .cpu_deadline
            .store(now.saturating_add(left), Ordering::Relaxed);
    }

    /// Parks the worker until the guest's waker fires, checking every tick
    /// whether the worker is asked to preempt, the request was aborted, or
    /// its time (`ran` ns of CPU in this resume, its earlier CPU and
    /// waits) is past its limit.
    fn wait(&mut self, ran: Nanos) -> Waited {
        let began = clock::monotonic();
        let waited = loop {
            if self.alarm.rung.load(Ordering::Acquire) {
                break Waited::Rung;
            }
            if self.guard.aborted() {
                break Waited::Over(Fault::Aborted(self.function.clone()));
            }
            if self.guard.take_preempt() {
                break Waited::Preempted;
            }
            let waiting = clock::monotonic().saturating_sub(began);
            if self.stats.cpu + ran + self.stats.waited + waiting >= self.cpu_limit {
                break Waited::Over(Fault::Timeout {
                    function: self.function.clone(),
                    limit: self.cpu_limit,
                });
            }
            thread::park_timeout(self.tick);
        };
        self.stats.waited += clock::monotonic().saturating_sub(began);
        waited
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
            .and_then(|p| p.stdout.as_ref())
            .map_or_else(Bytes::new, |stdout| stdout.contents())
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
        } else if cause::<OverOutput>(error).is_some() {
            Fault::OutputLimit {
                function,
                limit: self.max_output,
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
