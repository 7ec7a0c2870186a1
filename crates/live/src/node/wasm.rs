//! The node runtime's [`Executor`]: every request in a fresh WebAssembly
//! sandbox of [`faasched_wasm`], preempted through its worker's flag; with
//! [`Containers`], a request of a function of the node's table runs in its
//! function's container, warm or started cold.

use super::cgi;
use super::containers::{Containers, Lease};
use super::invoke::{Failure, Invoke, Written};
use super::runtime::{Executor, Finished, Step};
use crate::wire::{request, response};
use bytes::Bytes;
use faasched_model::{Nanos, US};
use faasched_wasm::{Call, Deployment, Fault, Input, Kind, Preempt, Request, Runtime, Sandbox};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// The standard error kept per function: its last 64 KiB.
pub const LOG_KEPT: usize = 64 << 10;

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
    /// Each command's standard error, its last [`LOG_KEPT`] bytes: at most
    /// one log per registered function.
    logs: Mutex<HashMap<String, Vec<u8>>>,
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
            logs: Mutex::new(HashMap::new()),
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
    pub fn containers(&self) -> Option<&Arc<Containers>> {
        self.containers.as_ref()
    }

    /// Appends `stderr` to `function`'s log, keeping its last
    /// [`LOG_KEPT`] bytes; nothing for a function removed meanwhile.
    fn append_log(&self, function: &str, stderr: &[u8]) {
        if stderr.is_empty() || !self.with_runtime(|r| r.contains(function)) {
            return;
        }
        let mut logs = self.logs.lock().unwrap_or_else(|e| e.into_inner());
        let log = logs.entry(function.to_owned()).or_default();
        log.extend_from_slice(&stderr[stderr.len().saturating_sub(LOG_KEPT)..]);
        let excess = log.len().saturating_sub(LOG_KEPT);
        log.drain(..excess);
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
        | Fault::Deployment { .. }
        | Fault::Builtin(_)) => Failure::BadRequest(f.to_string()),
        f @ Fault::Trap { .. } => Failure::Trap(f.to_string()),
        Fault::Timeout { limit, .. } => Failure::Timeout { limit },
        Fault::MemoryLimit { .. } => Failure::Memory,
        Fault::OutputLimit { limit, .. } => Failure::OutputLimit { limit },
        Fault::Capacity { .. } => Failure::Overloaded,
        Fault::Aborted(_) => Failure::Cancelled,
        f => Failure::Internal(f.to_string()),
    }
}

/// What a component is handed for `invoke`: `POST /invoke/NAME?QUERY`,
/// its headers but the node's own tokens, its body.
fn request(invoke: &Invoke) -> Result<Request, Failure> {
    let target = match &invoke.query {
        Some(query) => format!("/invoke/{}?{query}", invoke.function),
        None => format!("/invoke/{}", invoke.function),
    };
    let uri = target
        .parse()
        .map_err(|e| Failure::BadRequest(format!("the request target {target:?}: {e}")))?;
    Ok(Request {
        method: hyper::Method::POST,
        uri,
        headers: invoke
            .function_headers()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect(),
        body: invoke.body.clone(),
    })
}

/// What `invoke` calls on `runtime`, checked: a `run` function's query is
/// integer arguments and it takes no body; a command takes any query and
/// body.
fn call(runtime: &Runtime, invoke: &Invoke) -> Result<Call, Failure> {
    let call = runtime.call(&invoke.call()).map_err(failure)?;
    if call.kind == Kind::Run {
        request::arguments(invoke.query.as_deref())
            .map_err(|malformed| Failure::BadRequest(malformed.what))?;
        if !invoke.body.is_empty() {
            return Err(Failure::BadRequest(format!(
                "{} takes its arguments in the query, not a body (only a WASI command reads one)",
                invoke.function
            )));
        }
    }
    Ok(call)
}

impl Executor for WasmExecutor {
    type Job = WasmJob;

    fn check(&self, invoke: &Invoke) -> Result<(), Failure> {
        call(
            &self.runtime.read().unwrap_or_else(|e| e.into_inner()),
            invoke,
        )
        .map(drop)
    }

    fn start(&self, worker: usize, invoke: &Invoke) -> Result<WasmJob, Failure> {
        let mut runtime = self.runtime.read().unwrap_or_else(|e| e.into_inner());
        let call = call(&runtime, invoke)?;
        let input = match call.kind {
            Kind::Run => Input::Arg(call.arg),
            Kind::Command => Input::Command {
                stdin: invoke.body.clone(),
                env: cgi::environment(invoke),
            },
            Kind::Component => Input::Request(request(invoke)?),
        };
        let preempt = &self.preempts[worker];
        let lease = match &self.containers {
            Some(c) if c.holds(invoke.label()) => {
                let loader = runtime.loader(&call.function).map_err(failure)?;
                // A cold start loads code for milliseconds to seconds: not
                // under the runtime's lock, which a registration waits on
                // and every start behind it.
                drop(runtime);
                let lease = c.acquire(invoke.label(), loader)?;
                runtime = self.runtime.read().unwrap_or_else(|e| e.into_inner());
                lease
            }
            _ => None,
        };
        let mut sandbox = match &lease {
            Some(lease) => Sandbox::start_image(&runtime, preempt, lease.image(), input),
            None => Sandbox::start(&runtime, preempt, &call.function, input),
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
        let kind = job.sandbox.kind();
        match job.sandbox.resume() {
            faasched_wasm::Step::Done(Ok(out)) => Step::Done(Ok(Finished {
                value: out.value,
                written: match (kind, out.response) {
                    (Kind::Run, _) => None,
                    (_, response) => {
                        self.append_log(job.sandbox.function(), &out.stderr);
                        Some(match response {
                            Some(response) => Written::Response(response),
                            None => Written::Command {
                                stdout: out.stdout,
                                stderr: out.stderr,
                            },
                        })
                    }
                },
                cpu: out.stats.cpu,
                cold: job.lease.as_ref().is_some_and(Lease::cold),
            })),
            faasched_wasm::Step::Done(Err(fault)) => {
                // A command's log matters most when it failed.
                self.append_log(job.sandbox.function(), &job.sandbox.stderr());
                Step::Done(Err(failure(fault)))
            }
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
        let Some(s) = self.with_runtime(Runtime::cache_stats) else {
            return;
        };
        response::counters(
            out,
            "faasched_wasm_cache",
            &[
                (
                    "hits",
                    "Modules loaded compiled from the disk cache.",
                    s.hits,
                ),
                (
                    "misses",
                    "Modules compiled: the disk cache had none.",
                    s.misses,
                ),
                (
                    "rejected",
                    "Disk cache entries found unusable (torn, corrupted, refused) and compiled again.",
                    s.rejected,
                ),
                (
                    "write_errors",
                    "Compiled modules the disk cache could not keep.",
                    s.write_errors,
                ),
            ],
        );
    }

    fn status(&self) -> Option<serde_json::Value> {
        self.containers.as_ref().map(|c| c.status())
    }

    /// Compiles outside the runtime's lock, so that requests go on
    /// starting meanwhile (a shared lock would not do: a registration
    /// waiting to add its module would hold every new reader back until
    /// the compile ends), and takes the lock only to add the compiled
    /// module.
    fn register(&self, name: &str, module: &[u8], deployment: Deployment) -> Result<(), Failure> {
        let compiler = self
            .runtime
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .compiler();
        let prepared = compiler
            .prepare_with(name, module, deployment)
            .map_err(failure)?;
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
            .map_err(failure)?;
        if let Some(c) = &self.containers {
            c.forget(name);
        }
        self.logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        Ok(())
    }

    fn log(&self, name: &str) -> Result<Bytes, Failure> {
        if !self.with_runtime(|r| r.contains(name)) {
            return Err(Failure::UnknownFunction(name.to_owned()));
        }
        let logs = self.logs.lock().unwrap_or_else(|e| e.into_inner());
        Ok(logs
            .get(name)
            .map_or_else(Bytes::new, |log| Bytes::copy_from_slice(log)))
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
                let registered = executor.register("big", module.as_bytes(), Deployment::default());
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
        assert!(executor.with_runtime(|r| r.contains("big")));
        // A name taken while it compiled is refused when it is added.
        let taken = executor
            .register("big", big_module(1).as_bytes(), Deployment::default())
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
            ColdStart { wait: Some(0.0) },
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
                    headers: Default::default(),
                    body: Default::default(),
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

    /// A manifest's deadline is what the dispatchers give its function's
    /// requests, until the function is removed; a function the node's
    /// `--deadline` names cannot have another.
    #[test]
    fn a_registered_functions_deadline_is_its_requests() {
        use crate::node::manifest::Settings;
        use faasched_workload::node::{DEFAULT_DEADLINE_FACTOR, Deadline, Deadlines};
        let mut config = faasched_wasm::Config::new();
        config.max_sandboxes(2).spin_steps_per_ms(1000);
        let executor = WasmExecutor::new(Runtime::new(&config).unwrap(), 1);
        let node = Node::start(
            RuntimeConfig {
                deadlines: Deadlines::parse("pinned=2x").unwrap(),
                ..RuntimeConfig::default()
            },
            vec![Box::new(SledgeScale::new(Scan::Paper, PreemptTest::Paper))],
            Arc::new(executor),
        )
        .unwrap();
        let module = big_module(1);
        let settings = Settings {
            deadline: Some(Deadline::Absolute(7_000_000)),
            ..Settings::default()
        };
        assert_eq!(
            node.deadline("f"),
            Deadline::Factor(DEFAULT_DEADLINE_FACTOR)
        );
        node.register_function("f", module.as_bytes(), &settings)
            .unwrap();
        assert_eq!(node.deadline("f"), Deadline::Absolute(7_000_000));
        node.unregister_function("f").unwrap();
        assert_eq!(
            node.deadline("f"),
            Deadline::Factor(DEFAULT_DEADLINE_FACTOR)
        );
        let refused = node
            .register_function("pinned", module.as_bytes(), &settings)
            .unwrap_err();
        assert!(
            matches!(refused, Failure::BadRequest(ref m) if m.contains("--deadline names `pinned`")),
            "{refused:?}"
        );
        assert_eq!(node.deadline("pinned"), Deadline::Factor(2.0));
    }
}
