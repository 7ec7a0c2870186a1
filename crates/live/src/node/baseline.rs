//! The baseline: what a user would run instead of a scheduling node. Each
//! invocation is a task on a multi-threaded tokio runtime that runs its
//! function in a fresh sandbox to its end, as `wasmtime serve` serves a
//! component: no dispatcher, no deadline, no preemption. Who runs next is
//! tokio's scheduler (a worker's own tasks first in, first out, idle
//! workers stealing), and a long request holds its thread until it ends.
//!
//! It is a [`Backend`], so the same ingress serves it: the same HTTP, the
//! same sandboxes and functions, the same answers; only the scheduling
//! differs, which is what a comparison against it measures. A component
//! that waits (on a timer, an outgoing request) holds its thread while it
//! waits, where `wasmtime serve` would yield it (the suite's functions
//! but `fetch-http` do not wait); what it waits for is driven by a runtime
//! of its own, so that it is woken though every task thread is busy.

use super::invoke::{Answer, Backend, Completed, Failure, Invoke, Reply};
use super::manifest::Settings;
use super::runtime::{Executor, Step, pin_to};
use crate::wire::response;
use faasched_model::Nanos;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Invocations on tokio tasks, each run to its end on `executor`.
pub struct Baseline<E: Executor> {
    executor: Arc<E>,
    tasks: tokio::runtime::Runtime,
    /// What the sandboxes' hosts spawn and time on (a component's body,
    /// its outgoing requests): not `tasks`, whose threads a waiting
    /// sandbox holds.
    io: tokio::runtime::Runtime,
    threads: usize,
    accepting: AtomicBool,
    counts: Arc<Counts>,
}

/// What the baseline has done.
#[derive(Default)]
struct Counts {
    accepted: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
}

impl<E: Executor> Baseline<E> {
    /// Runs invocations on `threads` tokio worker threads over `executor`
    /// (which it asks for worker 0's sandboxes: nobody preempts them),
    /// the threads pinned to `cpus` in turn as they start (none: left to
    /// the kernel).
    ///
    /// # Errors
    ///
    /// The runtime's threads could not start.
    pub fn start(executor: Arc<E>, threads: usize, cpus: &[usize]) -> std::io::Result<Baseline<E>> {
        let cpus: Arc<[usize]> = cpus.into();
        let started = AtomicUsize::new(0);
        let tasks = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("baseline")
            .on_thread_start(move || {
                if !cpus.is_empty() {
                    let n = started.fetch_add(1, Ordering::Relaxed);
                    pin_to(Some(cpus[n % cpus.len()]));
                }
            })
            .enable_all()
            .build()?;
        let io = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("baseline-io")
            .enable_all()
            .build()?;
        Ok(Baseline {
            executor,
            tasks,
            io,
            threads: threads.max(1),
            accepting: AtomicBool::new(true),
            counts: Arc::default(),
        })
    }

    /// The executor its sandboxes run on.
    pub fn executor(&self) -> &E {
        &self.executor
    }
}

/// Runs `invoke` to its end on `executor`, on the calling thread.
fn run<E: Executor>(executor: &E, invoke: &Invoke) -> Answer {
    if invoke.cancel.is_cancelled() {
        return Err(Failure::Cancelled);
    }
    let since = |at: std::time::Instant| at.elapsed().as_nanos() as Nanos;
    let started = since(invoke.received);
    let mut job = executor.start(0, invoke)?;
    let finished = loop {
        // Nobody asks worker 0 to stop: a stop is a spurious one.
        if let Step::Done(done) = executor.resume(0, &mut job) {
            break done?;
        }
    };
    Ok(Completed {
        value: finished.value,
        written: finished.written,
        cpu: finished.cpu,
        preemptions: 0,
        runtime: since(invoke.received),
        started,
        dispatcher: 0,
        worker: 0,
        cold: finished.cold,
    })
}

impl<E: Executor> Backend for Baseline<E> {
    fn invoke(&self, invoke: Invoke, reply: Reply) {
        if !self.accepting.load(Ordering::Acquire) {
            return reply(Err(Failure::ShuttingDown));
        }
        self.counts.accepted.fetch_add(1, Ordering::Relaxed);
        let executor = Arc::clone(&self.executor);
        let counts = Arc::clone(&self.counts);
        let io = self.io.handle().clone();
        self.tasks.spawn(async move {
            let answer = {
                let _io = io.enter();
                run(&*executor, &invoke)
            };
            let count = match answer {
                Ok(_) => &counts.completed,
                Err(_) => &counts.failed,
            };
            count.fetch_add(1, Ordering::Relaxed);
            reply(answer);
        });
    }

    fn check(&self, invoke: &Invoke) -> Result<(), Failure> {
        self.executor.check(invoke)
    }

    fn log(&self, name: &str) -> Result<bytes::Bytes, Failure> {
        self.executor.log(name)
    }

    /// A manifest's deadline is taken and kept by nobody: the baseline
    /// schedules by none.
    fn register(&self, name: &str, module: &[u8], settings: &Settings) -> Result<(), Failure> {
        self.executor
            .register(name, module, settings.deployment.clone())
    }

    fn unregister(&self, name: &str) -> Result<(), Failure> {
        self.executor.unregister(name)
    }

    fn metrics(&self, out: &mut String) {
        let c = &self.counts;
        response::counters(
            out,
            "faasched_baseline",
            &[
                (
                    "accepted",
                    "Invocations the baseline took.",
                    c.accepted.load(Ordering::Relaxed),
                ),
                (
                    "completed",
                    "Invocations that returned a value.",
                    c.completed.load(Ordering::Relaxed),
                ),
                (
                    "failed",
                    "Invocations that ended without one.",
                    c.failed.load(Ordering::Relaxed),
                ),
            ],
        );
        self.executor.write_metrics(out);
    }

    fn status(&self) -> serde_json::Value {
        let c = &self.counts;
        json!({
            "baseline": true,
            "threads": self.threads,
            "accepting": self.accepting.load(Ordering::Acquire),
            "accepted": c.accepted.load(Ordering::Relaxed),
            "completed": c.completed.load(Ordering::Relaxed),
            "failed": c.failed.load(Ordering::Relaxed),
        })
    }

    fn shutdown(&self) {
        self.accepting.store(false, Ordering::Release);
    }
}
