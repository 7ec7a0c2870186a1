//! The node runtime's [`Executor`]: every request in a fresh WebAssembly
//! sandbox of [`faasched_wasm`], preempted through its worker's flag; with
//! [`Containers`], a request of a function of the node's table runs in its
//! function's container, warm or started cold.

use super::containers::{Containers, Lease};
use super::invoke::{Failure, Invoke};
use super::runtime::{Executor, Finished, Step};
use faasched_model::{Nanos, US};
use faasched_wasm::{Fault, Preempt, Runtime, Sandbox};
use std::sync::{Arc, RwLock};

/// A request's sandbox and the worker whose flag it yields to.
pub struct WasmJob {
    sandbox: Sandbox,
    worker: usize,
    /// Its container, idle again once the job is dropped.
    lease: Option<Lease>,
}

/// Sandboxes on a [`faasched_wasm::Runtime`], a preemption flag per worker.
pub struct WasmExecutor {
    runtime: RwLock<Runtime>,
    preempts: Vec<Preempt>,
    containers: Option<Arc<Containers>>,
}

impl WasmExecutor {
    /// Runs on `runtime` for `workers` workers (numbered across the node
    /// runtime).
    pub fn new(runtime: Runtime, workers: usize) -> WasmExecutor {
        let preempts = (0..workers).map(|_| runtime.preempt()).collect();
        WasmExecutor {
            runtime: RwLock::new(runtime),
            preempts,
            containers: None,
        }
    }

    /// Runs the functions of `containers`' table in containers.
    pub fn with_containers(self, containers: Arc<Containers>) -> WasmExecutor {
        WasmExecutor {
            containers: Some(containers),
            ..self
        }
    }

    /// The node's containers, if it keeps any.
    pub fn containers(&self) -> Option<&Containers> {
        self.containers.as_deref()
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
        f @ (Fault::BadArgument { .. }
        | Fault::Malformed { .. }
        | Fault::BadName { .. }
        | Fault::Full { .. }
        | Fault::SlowCompile { .. }
        | Fault::Builtin(_)) => Failure::BadRequest(f.to_string()),
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
        let preempt = &self.preempts[worker];
        let lease = match &self.containers {
            Some(c) => c.acquire(invoke.label(), &call.function, &runtime)?,
            None => None,
        };
        let mut sandbox = match &lease {
            Some(lease) => Sandbox::start_image(&runtime, preempt, lease.image(), call.arg),
            None => Sandbox::start(&runtime, preempt, &call.function, call.arg),
        }
        .map_err(failure)?;
        sandbox.abort_on(invoke.cancel.flag());
        Ok(WasmJob {
            sandbox,
            worker,
            lease,
        })
    }

    fn resume(&self, worker: usize, job: &mut WasmJob) -> Step {
        if job.worker != worker {
            // Taken back and resumed elsewhere: it answers its new worker.
            job.sandbox.rebind(&self.preempts[worker]);
            job.worker = worker;
        }
        match job.sandbox.resume() {
            faasched_wasm::Step::Done(Ok(out)) => Step::Done(Ok(Finished {
                value: out.value,
                cpu: out.stats.cpu,
                cold: job.lease.as_ref().is_some_and(Lease::cold),
            })),
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

    fn write_metrics(&self, out: &mut String) {
        if let Some(c) = &self.containers {
            c.write_metrics(out);
        }
    }

    fn status(&self) -> Option<serde_json::Value> {
        self.containers.as_ref().map(|c| c.status())
    }

    /// Compiles outside the runtime's lock, so that requests go on
    /// starting meanwhile (a shared lock would not do: a registration
    /// waiting to add its module would hold every new reader back until
    /// the compile ends), and takes the lock only to add the compiled
    /// module.
    fn register(&self, name: &str, module: &[u8]) -> Result<(), Failure> {
        let compiler = self
            .runtime
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .compiler();
        let prepared = compiler.prepare(name, module).map_err(failure)?;
        self.runtime
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .add(prepared)
            .map_err(failure)
    }

    fn unregister(&self, name: &str) -> Result<(), Failure> {
        self.runtime
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name)
            .map_err(failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::containers::ColdStart;
    use crate::node::invoke::{Answer, Completed};
    use crate::node::runtime::{Runtime as Node, RuntimeConfig};
    use faasched_model::FunctionId;
    use faasched_model::cluster::FunctionProfile;
    use faasched_policy::cluster::Lru;
    use faasched_policy::node::{PreemptTest, Scan, SledgeScale};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    /// A module of `functions` functions, `run` the first: long to compile.
    fn big_module(functions: usize) -> String {
        let mut wat = String::from("(module\n");
        wat.push_str("(func (export \"run\") (param i64) (result i64) local.get 0)\n");
        for i in 0..functions {
            wat.push_str(&format!(
                "(func $f{i} (param i64) (result i64) local.get 0 i64.const {i} i64.add)\n"
            ));
        }
        wat.push(')');
        wat
    }

    /// While a large module compiles, the runtime stays free for the
    /// requests: many reads of it finish between the registration's start
    /// and its end. Were the registration to hold the lock while it
    /// compiles, none could but one that slipped in before it took it.
    #[test]
    fn a_registration_compiles_without_holding_the_runtime() {
        let mut config = faasched_wasm::Config::new();
        config.max_sandboxes(2).spin_steps_per_ms(1000);
        let executor = Arc::new(WasmExecutor::new(Runtime::new(&config).unwrap(), 1));
        let module = big_module(3_000);
        let began = Arc::new(std::sync::Barrier::new(2));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let registering = {
            let (executor, began, done) =
                (Arc::clone(&executor), Arc::clone(&began), Arc::clone(&done));
            std::thread::spawn(move || {
                began.wait();
                let registered = executor.register("big", module.as_bytes());
                done.store(true, std::sync::atomic::Ordering::SeqCst);
                registered
            })
        };
        began.wait();
        let mut reads_during = 0;
        let cap = Instant::now();
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            let builtins = executor.with_runtime(|r| r.functions().count());
            assert!(builtins > 0);
            if !done.load(std::sync::atomic::Ordering::SeqCst) {
                reads_during += 1;
            }
            assert!(
                cap.elapsed() < Duration::from_secs(120),
                "the compile never ended"
            );
        }
        registering.join().unwrap().unwrap();
        assert!(
            reads_during >= 10,
            "only {reads_during} reads while the module compiled"
        );
        assert!(executor.with_runtime(|r| r.functions().any(|f| f == "big")));
        // A name taken while it compiled is refused when it is added.
        let taken = executor
            .register("big", big_module(1).as_bytes())
            .unwrap_err();
        assert!(
            matches!(taken, Failure::BadRequest(ref m) if m.contains("taken")),
            "{taken:?}"
        );
    }

    /// A node whose table holds `fn-a` (256 MB of 256): its first request
    /// starts a container cold, the next takes it warm; a request outside
    /// the table runs as before.
    #[test]
    fn requests_of_a_table_function_run_in_its_container_cold_then_warm() {
        let mut config = faasched_wasm::Config::new();
        config.max_sandboxes(8).spin_steps_per_ms(1000);
        let profile = FunctionProfile {
            function: FunctionId(0),
            memory_mb: 256,
            warm: 1_000_000,
            cold: 2_000_000,
        };
        let containers = Arc::new(Containers::new(
            256,
            Box::new(Lru::new()),
            [("fn-a".to_string(), profile)],
            ColdStart { scale: 0.0 },
        ));
        let executor = WasmExecutor::new(Runtime::new(&config).unwrap(), 1)
            .with_containers(Arc::clone(&containers));
        let node = Node::start(
            RuntimeConfig::default(),
            vec![Box::new(SledgeScale::new(Scan::Paper, PreemptTest::Paper))],
            Arc::new(executor),
        )
        .unwrap();
        let ask = |label: &str| -> Completed {
            let (tx, rx) = mpsc::channel::<Answer>();
            node.submit(
                Invoke {
                    function: "fib".into(),
                    query: Some("n=20".into()),
                    label: Some(label.into()),
                    deadline: None,
                    received: Instant::now(),
                    cancel: Default::default(),
                },
                Box::new(move |a| tx.send(a).unwrap()),
            );
            rx.recv_timeout(Duration::from_secs(60)).unwrap().unwrap()
        };
        let first = ask("fn-a");
        assert_eq!((first.value, first.cold), (6765, true));
        assert!(!ask("fn-a").cold);
        assert!(!ask("other").cold);
        let s = containers.stats();
        assert_eq!((s.cold_starts, s.warm_starts, s.containers), (1, 1, 1));
    }
}
