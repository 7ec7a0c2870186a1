//! The node runtime's [`Executor`]: every request in a fresh WebAssembly
//! sandbox of [`faasched_wasm`], preempted through its worker's flag.

use super::invoke::{Failure, Invoke};
use super::runtime::{Executor, Step};
use faasched_model::{Nanos, US};
use faasched_wasm::{Fault, Preempt, Runtime, Sandbox};
use std::sync::RwLock;

/// A request's sandbox and the worker whose flag it yields to.
pub struct WasmJob {
    sandbox: Sandbox,
    worker: usize,
}

/// Sandboxes on a [`faasched_wasm::Runtime`], a preemption flag per worker.
pub struct WasmExecutor {
    runtime: RwLock<Runtime>,
    preempts: Vec<Preempt>,
}

impl WasmExecutor {
    /// Runs on `runtime` for `workers` workers (numbered across the node
    /// runtime).
    pub fn new(runtime: Runtime, workers: usize) -> WasmExecutor {
        let preempts = (0..workers).map(|_| runtime.preempt()).collect();
        WasmExecutor {
            runtime: RwLock::new(runtime),
            preempts,
        }
    }

    /// The sandbox runtime, to read its settings.
    pub fn with_runtime<T>(&self, f: impl FnOnce(&Runtime) -> T) -> T {
        f(&self.runtime.read().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A sandbox's fault as the request's failure.
fn failure(fault: Fault) -> Failure {
    match fault {
        Fault::UnknownFunction(name) => Failure::UnknownFunction(name),
        f @ (Fault::BadArgument { .. } | Fault::Malformed { .. } | Fault::BadName { .. }) => {
            Failure::BadRequest(f.to_string())
        }
        f @ Fault::Trap { .. } => Failure::Trap(f.to_string()),
        Fault::Timeout { limit, .. } => Failure::Timeout { limit },
        Fault::MemoryLimit { .. } => Failure::Memory,
        Fault::Capacity { .. } => Failure::Overloaded,
        Fault::Aborted(_) => Failure::Cancelled,
        f => Failure::Internal(f.to_string()),
    }
}

impl Executor for WasmExecutor {
    type Job = WasmJob;

    fn start(&self, worker: usize, invoke: &Invoke) -> Result<WasmJob, Failure> {
        let runtime = self.runtime.read().unwrap_or_else(|e| e.into_inner());
        let call = runtime.call(&invoke.call()).map_err(failure)?;
        let mut sandbox =
            Sandbox::start(&runtime, &self.preempts[worker], &call.function, call.arg)
                .map_err(failure)?;
        sandbox.abort_on(invoke.cancel.flag());
        Ok(WasmJob { sandbox, worker })
    }

    fn resume(&self, worker: usize, job: &mut WasmJob) -> Step {
        if job.worker != worker {
            // Taken back and resumed elsewhere: it answers its new worker.
            job.sandbox.rebind(&self.preempts[worker]);
            job.worker = worker;
        }
        match job.sandbox.resume() {
            faasched_wasm::Step::Done(Ok(out)) => Step::Done(Ok((out.value, out.stats.cpu))),
            faasched_wasm::Step::Done(Err(fault)) => Step::Done(Err(failure(fault))),
            faasched_wasm::Step::Preempted => Step::Stopped,
        }
    }

    fn preempt(&self, worker: usize) {
        self.preempts[worker].request();
    }

    fn work(&self, invoke: &Invoke) -> Option<Nanos> {
        if invoke.function != "spin" {
            return None;
        }
        let us: u64 = invoke.query.as_deref()?.strip_prefix("us=")?.parse().ok()?;
        Some(us.saturating_mul(US))
    }

    fn register(&self, name: &str, module: &[u8]) -> Result<(), Failure> {
        self.runtime
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .register(name, module)
            .map_err(failure)
    }
}
