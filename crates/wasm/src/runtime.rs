//! The runtime: one wasmtime engine with a pool of sandbox slots, the
//! registered functions, and the epoch ticker.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use faasched_model::Nanos;
use wasmtime::component::Component;
use wasmtime::{
    Engine, ExternType, InstanceAllocationStrategy, InstancePre, Linker, Module,
    PoolingAllocationConfig, ValType, WasmBacktraceDetails,
};
use wasmtime_wasi_http::p2::bindings::ProxyPre;

use crate::cache::{Cache, CacheStats};
use crate::config::Resolved;
use crate::deployment::Deployment;
use crate::guest::{Guest, Preempt};
use crate::suite::{self, Builtin, Call, SUITE};
use crate::{Config, Fault, Result, shape};
use crate::{command, http};

/// Which of the three ABIs a module follows (see the crate docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Exports `run: (i64) -> i64` and imports nothing: an integer in, an
    /// integer out.
    Run,
    /// A WASI preview 1 command: exports `_start: () -> ()` and imports
    /// only `wasi_snapshot_preview1`; standard input and environment in,
    /// exit status and standard output out.
    Command,
    /// A `wasi:http/proxy` component: exports
    /// `wasi:http/incoming-handler`, imports at most WASI preview 2 and
    /// wasi:http; an HTTP request in, an HTTP response out.
    Component,
}

impl Kind {
    /// The ABI `module` follows, or why it follows neither.
    fn of(module: &Module) -> std::result::Result<Self, String> {
        // `_start`: absent, of type () -> (), or something else.
        let start = match module.get_export("_start") {
            None => None,
            Some(ExternType::Func(ty)) => {
                Some(ty.params().next().is_none() && ty.results().next().is_none())
            }
            Some(_) => Some(false),
        };
        let run = match module.get_export("run") {
            Some(ExternType::Func(ty)) => {
                let params: Vec<_> = ty.params().collect();
                let results: Vec<_> = ty.results().collect();
                matches!(params[..], [ValType::I64]) && matches!(results[..], [ValType::I64])
            }
            _ => false,
        };
        match (start, run) {
            (Some(true), _) => {
                if let Some(import) = module
                    .imports()
                    .find(|i| i.module() != command::WASI_MODULE)
                {
                    return Err(format!(
                        "it imports `{}`.`{}`; a WASI command may import only `{}`",
                        import.module(),
                        import.name(),
                        command::WASI_MODULE
                    ));
                }
                Ok(Kind::Command)
            }
            (Some(false), _) => Err("its `_start` is not a function of type () -> ()".into()),
            (None, true) => {
                if let Some(import) = module.imports().next() {
                    return Err(format!(
                        "it imports `{}`.`{}`; a module exporting `run` may import nothing \
                         (a WASI command exports `_start`)",
                        import.module(),
                        import.name()
                    ));
                }
                Ok(Kind::Run)
            }
            (None, false) => Err(
                "it exports neither a function `run` of type (i64) -> i64 nor a WASI command's \
                 `_start`"
                    .into(),
            ),
        }
    }
}

/// How much of a slot's linear memory and table is reset in place when its
/// sandbox ends, rather than given back to the kernel: the pages it wrote,
/// up to this much (where the kernel has PAGEMAP_SCAN; else its first
/// bytes). A C command writes its static data, stdio buffers, stack and
/// heap on every request, and each page given back costs a page fault on
/// the next and a TLB shootdown (an IPI to the other cores) now. A C
/// hello writes less than 64 KiB, so nothing of it is given back; a `run`
/// module whose memory is smaller resets only what it has.
const KEEP_RESIDENT: usize = 64 << 10;

/// A function compiled and linked, ready to instantiate.
pub(crate) enum Linked {
    /// A core module (`run` or a command).
    Core(InstancePre<Guest>),
    /// A `wasi:http/proxy` component.
    Proxy(ProxyPre<Guest>),
}

/// Core instances, memories and tables the pool holds per sandbox, and the
/// most one component may take: a component instantiates several of each
/// (its modules, WASI preview 1's adapter, the shims that join them), a
/// core module one.
const CORE_INSTANCES_PER_SANDBOX: u32 = 16;
const MEMORIES_PER_SANDBOX: u32 = 2;
const TABLES_PER_SANDBOX: u32 = 4;

/// One registered function: checked, compiled and linked once, so that each
/// request only instantiates it.
pub(crate) struct Function {
    pub linked: Linked,
    pub kind: Kind,
    pub builtin: Option<&'static Builtin>,
    /// Its own limits and environment.
    pub deployment: Deployment,
    /// The module as registered, to compile again into an [`Image`].
    source: Arc<[u8]>,
}

/// What compiles modules for a [`Runtime`] (its engine), without
/// borrowing the runtime: a compile takes as long as the module is large,
/// and requests need the runtime meanwhile.
#[derive(Clone)]
pub struct Compiler {
    engine: Engine,
    /// The runtime's limits: how long a user module's compile may take,
    /// and what a deployment may not pass.
    limits: Resolved,
    cache: Option<Arc<Cache>>,
}

impl Compiler {
    /// Compiles, checks and links a user module for registering under
    /// `name` with [`Runtime::add`].
    ///
    /// # Errors
    ///
    /// [`Fault::BadName`] for a name not 1-64 characters of
    /// `[A-Za-z0-9_-]`; [`Fault::Malformed`] for a module that does not
    /// compile, follows neither ABI of the crate docs (`run: (i64) -> i64`
    /// importing nothing, or a WASI command), declares
    /// more memory than the memory limit, or is past
    /// [`shape`](crate::shape)'s limits (checked before it is compiled);
    /// [`Fault::SlowCompile`] for one whose compile took longer than
    /// [`Config::max_compile`] (it cannot be stopped sooner).
    pub fn prepare(&self, name: &str, module: &[u8]) -> Result<Prepared> {
        self.prepare_with(name, module, Deployment::default())
    }

    /// [`Compiler::prepare`], the function given its own limits and
    /// environment.
    ///
    /// # Errors
    ///
    /// As [`Compiler::prepare`]'s, and [`Fault::Deployment`] for limits
    /// past the runtime's, a malformed environment, or an environment for
    /// a `run` module.
    pub fn prepare_with(
        &self,
        name: &str,
        module: &[u8],
        deployment: Deployment,
    ) -> Result<Prepared> {
        if name.is_empty()
            || name.len() > 64
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(Fault::BadName {
                name: name.to_owned(),
                reason: "names are 1-64 characters of [A-Za-z0-9_-]",
            });
        }
        let wasm = wat::parse_bytes(module).map_err(|e| Fault::Malformed {
            name: name.to_owned(),
            reason: e.to_string(),
        })?;
        deployment.check(name, &self.limits)?;
        shape::check(name, &wasm)?;
        let start = std::time::Instant::now();
        let mut function = self.compile(name, wasm.as_ref().into())?;
        let took = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if took > self.limits.max_compile {
            return Err(Fault::SlowCompile {
                name: name.to_owned(),
                took_ms: took / 1_000_000,
                limit_ms: self.limits.max_compile / 1_000_000,
            });
        }
        if function.kind == Kind::Run && !deployment.env.is_empty() {
            return Err(Fault::Deployment {
                name: name.to_owned(),
                reason: "it exports `run`, which reads no environment".into(),
            });
        }
        if function.kind != Kind::Component && !deployment.allow_outbound.is_empty() {
            return Err(Fault::Deployment {
                name: name.to_owned(),
                reason: "only a wasi:http component makes outgoing requests".into(),
            });
        }
        function.deployment = deployment;
        Ok(Prepared {
            name: name.to_owned(),
            function,
        })
    }

    /// Compiles `bytes` (from the cache if it has them), checks the ABI
    /// and links the module or component.
    fn compile(&self, name: &str, source: Arc<[u8]>) -> Result<Function> {
        let bytes = &source[..];
        let malformed = |reason: String| Fault::Malformed {
            name: name.to_owned(),
            reason,
        };
        let unlinkable =
            |e: wasmtime::Error| Fault::Config(format!("cannot link WASI: {}", describe(&e)));
        let (kind, linked) = if wasmparser::Parser::is_component(bytes) {
            let compile = || Component::new(&self.engine, bytes);
            let component = match &self.cache {
                Some(cache) => cache.compiled(&self.engine, bytes, compile),
                None => compile(),
            }
            .map_err(|e| malformed(describe(&e)))?;
            let mut linker = wasmtime::component::Linker::new(&self.engine);
            http::link(&mut linker).map_err(unlinkable)?;
            let pre = linker
                .instantiate_pre(&component)
                .and_then(ProxyPre::new)
                .map_err(|e| {
                    malformed(format!(
                        "a component must be a wasi:http/proxy one: {}",
                        describe(&e)
                    ))
                })?;
            (Kind::Component, Linked::Proxy(pre))
        } else {
            let compile = || Module::new(&self.engine, bytes);
            let module = match &self.cache {
                Some(cache) => cache.compiled(&self.engine, bytes, compile),
                None => compile(),
            }
            .map_err(|e| malformed(describe(&e)))?;
            let kind = Kind::of(&module).map_err(malformed)?;
            let mut linker = Linker::new(&self.engine);
            if kind == Kind::Command {
                command::link(&mut linker).map_err(unlinkable)?;
            }
            let pre = linker
                .instantiate_pre(&module)
                .map_err(|e| malformed(describe(&e)))?;
            (kind, Linked::Core(pre))
        };
        Ok(Function {
            linked,
            kind,
            builtin: None,
            deployment: Deployment::default(),
            source,
        })
    }
}

/// A user module compiled, checked and linked for its name, not yet
/// registered ([`Compiler::prepare`], then [`Runtime::add`]).
pub struct Prepared {
    name: String,
    function: Function,
}

/// A function compiled and linked anew, on its own: what a container of a
/// serverless platform holds once it has started cold (the runtime's own
/// copy of each function serves the requests that need no cold start).
/// Sandboxes start from it with [`Sandbox::start_image`](crate::Sandbox::start_image).
pub struct Image {
    pub(crate) name: String,
    pub(crate) function: Function,
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Image {
    /// The function it holds.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it is one of the built-in suite's (`spin`, `fib`, ...),
    /// not a module a user registered.
    pub fn is_builtin(&self) -> bool {
        self.function.builtin.is_some()
    }
}

/// What loading a registered function's code again on its own takes,
/// read from the runtime ([`Runtime::loader`]) and run without borrowing
/// it ([`Loader::load`]): a cold start's compile or cache read takes
/// milliseconds to seconds, and requests and registrations need the
/// runtime meanwhile.
pub struct Loader {
    compiler: Compiler,
    name: String,
    source: Arc<[u8]>,
    builtin: Option<&'static Builtin>,
    deployment: Deployment,
}

impl Loader {
    /// The function it loads.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the function is a built-in ([`Image::is_builtin`]).
    pub fn is_builtin(&self) -> bool {
        self.builtin.is_some()
    }

    /// Whether `image` holds the code this loads: the same name, as
    /// registered now (a name removed and registered again is other code,
    /// even with the same bytes).
    pub fn loaded(&self, image: &Image) -> bool {
        image.name == self.name && Arc::ptr_eq(&image.function.source, &self.source)
    }

    /// Compiles the function again, on its own, into an [`Image`]: the
    /// real work of a cold start, every time it is called. That is
    /// parsing, compiling and linking the module, or, with a
    /// [`Config::cache`], reading it compiled from disk, checking its
    /// digest, mapping it and linking it, as a platform that keeps its
    /// functions precompiled does.
    ///
    /// # Errors
    ///
    /// What compiling it again meets ([`Fault::Malformed`] for a cache
    /// entry that no longer fits, say).
    pub fn load(self) -> Result<Image> {
        let mut function = self.compiler.compile(&self.name, self.source)?;
        function.builtin = self.builtin;
        function.deployment = self.deployment;
        Ok(Image {
            name: self.name,
            function,
        })
    }
}

/// The sandbox runtime: built once, registered into, then shared (behind an
/// `Arc`) by every worker thread, each of which starts [`Sandbox`](crate::Sandbox)es on it.
///
/// Dropping it stops and joins the epoch ticker. Sandboxes hold a reference
/// to the engine, not to the runtime, so they may outlive it; they then
/// only see ticks from [`Preempt::request`].
pub struct Runtime {
    pub(crate) engine: Engine,
    functions: BTreeMap<String, Function>,
    pub(crate) limits: Resolved,
    pub(crate) spin_steps_per_ms: u64,
    cache: Option<Arc<Cache>>,
    /// Sandboxes alive now, at most `limits.max_sandboxes`.
    pub(crate) live: Arc<AtomicU32>,
    /// Only held: dropping it stops the thread.
    _ticker: Ticker,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("functions", &self.functions.keys().collect::<Vec<_>>())
            .field("limits", &self.limits)
            .field("spin_steps_per_ms", &self.spin_steps_per_ms)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Builds the engine and its pool, compiles the built-in suite and
    /// starts the epoch ticker; `spin`'s steps per ms are the
    /// configuration's, or 1 until [`Runtime::new`] measures them.
    ///
    /// # Errors
    ///
    /// As [`Runtime::new`]'s.
    pub(crate) fn build(config: &Config) -> Result<Self> {
        let limits = config.resolve()?;
        let mut pool = PoolingAllocationConfig::new();
        // Which pages to reset in place the kernel's PAGEMAP_SCAN says
        // (Linux 6.7 and later; older kernels keep the first bytes): the
        // ones the sandbox wrote, wherever they lie. A C command's stack and
        // heap are a megabyte in, past the first bytes, and without the
        // scan each request faulted them in again.
        pool.linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(KEEP_RESIDENT)
            .pagemap_scan(wasmtime::Enabled::Auto);
        // A sandbox runs one core instance, or one component of several
        // (a C component is its module, WASI's adapter and their shims);
        // the pool's slots are shared by all sandboxes.
        let slots = |per: u32| limits.max_sandboxes.saturating_mul(per);
        // And one sandbox may not take more than a sandbox's share.
        pool.max_core_instances_per_component(CORE_INSTANCES_PER_SANDBOX)
            .max_memories_per_component(MEMORIES_PER_SANDBOX)
            .max_tables_per_component(TABLES_PER_SANDBOX);
        pool.total_component_instances(limits.max_sandboxes)
            .total_core_instances(slots(CORE_INSTANCES_PER_SANDBOX))
            .total_memories(slots(MEMORIES_PER_SANDBOX))
            .total_tables(slots(TABLES_PER_SANDBOX))
            .total_stacks(limits.max_sandboxes)
            .max_memory_size(usize::try_from(limits.memory_limit).map_err(|_| {
                Fault::Config(format!(
                    "memory_limit {} does not fit this machine's address space",
                    limits.memory_limit
                ))
            })?);
        let mut engine_config = wasmtime::Config::new();
        engine_config
            .epoch_interruption(true)
            // A trap's message is the trap alone: no backtrace is walked,
            // whatever WASMTIME_BACKTRACE_DETAILS says.
            .wasm_backtrace_max_frames(None)
            .wasm_backtrace_details(WasmBacktraceDetails::Disable)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&engine_config)
            .map_err(|e| Fault::Config(format!("wasmtime refused the engine: {}", describe(&e))))?;
        let cache = config
            .cache_dir()
            .map(|(dir, max_bytes)| Cache::open(dir, max_bytes).map(Arc::new))
            .transpose()?;
        let ticker = Ticker::start(engine.clone(), Duration::from_nanos(limits.tick))?;
        let mut runtime = Self {
            engine,
            functions: BTreeMap::new(),
            limits,
            spin_steps_per_ms: 1,
            cache,
            live: Arc::new(AtomicU32::new(0)),
            _ticker: ticker,
        };
        for builtin in &SUITE {
            let mut function = runtime
                .compiler()
                .compile(builtin.name, builtin.wat.as_bytes().into())?;
            function.builtin = Some(builtin);
            runtime.functions.insert(builtin.name.to_owned(), function);
        }
        runtime.spin_steps_per_ms = limits.spin_steps_per_ms.unwrap_or(1);
        Ok(runtime)
    }

    /// Registers a user module under `name`: `.wasm` bytes or `.wat` text
    /// that follows the ABI of the crate docs. The module is compiled,
    /// checked and linked here, once; each request then only instantiates
    /// it. It is [`Compiler::prepare`] then [`Runtime::add`], for a caller
    /// that keeps the runtime behind a lock and compiles outside it.
    ///
    /// # Errors
    ///
    /// As [`Compiler::prepare`] and [`Runtime::add`].
    pub fn register(&mut self, name: &str, module: &[u8]) -> Result<()> {
        self.check_free(name)?;
        let prepared = self.compiler().prepare(name, module)?;
        self.add(prepared)
    }

    /// What compiles modules for this runtime without borrowing it.
    pub fn compiler(&self) -> Compiler {
        Compiler {
            engine: self.engine.clone(),
            limits: self.limits,
            cache: self.cache.clone(),
        }
    }

    /// Registers a module [`Compiler::prepare`] made, at once.
    ///
    /// # Errors
    ///
    /// [`Fault::BadName`] if its name was taken since it was prepared.
    ///
    /// [`Fault::Full`] if it holds [`Config::max_modules`] user modules.
    pub fn add(&mut self, prepared: Prepared) -> Result<()> {
        self.check_free(&prepared.name)?;
        let modules = self.functions.values().filter(|f| f.builtin.is_none());
        if modules.count() >= self.limits.max_modules {
            return Err(Fault::Full {
                name: prepared.name,
                limit: self.limits.max_modules,
            });
        }
        self.functions.insert(prepared.name, prepared.function);
        Ok(())
    }

    /// Removes user module `name`: later calls of it are unknown, while
    /// the sandboxes already started from it run on.
    ///
    /// # Errors
    ///
    /// [`Fault::UnknownFunction`]; [`Fault::Builtin`] for a built-in.
    pub fn remove(&mut self, name: &str) -> Result<()> {
        match self.function(name)?.builtin {
            Some(_) => Err(Fault::Builtin(name.to_owned())),
            None => {
                self.functions.remove(name);
                Ok(())
            }
        }
    }

    /// Refuses `name` if a function has it.
    fn check_free(&self, name: &str) -> Result<()> {
        match self.contains(name) {
            true => Err(Fault::BadName {
                name: name.to_owned(),
                reason: "the name is taken",
            }),
            false => Ok(()),
        }
    }

    /// What loads registered function `name` again ([`Loader::load`]).
    ///
    /// # Errors
    ///
    /// [`Fault::UnknownFunction`].
    pub fn loader(&self, name: &str) -> Result<Loader> {
        let registered = self.function(name)?;
        Ok(Loader {
            compiler: self.compiler(),
            name: name.to_owned(),
            source: Arc::clone(&registered.source),
            builtin: registered.builtin,
            deployment: registered.deployment.clone(),
        })
    }

    /// Registered function `name` loaded again, on its own
    /// ([`Loader::load`]).
    ///
    /// # Errors
    ///
    /// [`Fault::UnknownFunction`], and what [`Loader::load`] meets.
    pub fn image(&self, name: &str) -> Result<Image> {
        self.loader(name)?.load()
    }

    /// The registered function called `name`.
    pub(crate) fn function(&self, name: &str) -> Result<&Function> {
        self.functions
            .get(name)
            .ok_or_else(|| Fault::UnknownFunction(name.to_owned()))
    }

    /// The registered names, built-ins included, in order.
    pub fn functions(&self) -> impl Iterator<Item = &str> {
        self.functions.keys().map(String::as_str)
    }

    /// Parses a call string, `name` or `name?key=value&...`, into the
    /// function and argument to start (keys per function in the crate
    /// docs), checking the argument. A command's query is its own (the
    /// caller hands it over in the command's environment): it is not read.
    ///
    /// # Errors
    ///
    /// [`Fault::UnknownFunction`] for a name not registered;
    /// [`Fault::BadArgument`] for a malformed query, an unknown, missing or
    /// repeated key, or a value out of range.
    pub fn call(&self, text: &str) -> Result<Call> {
        let (name, query) = match text.split_once('?') {
            Some((name, query)) => (name, Some(query)),
            None => (text, None),
        };
        let function = self.function(name)?;
        match function.kind {
            Kind::Run => suite::parse(name, query, function.builtin, self.spin_steps_per_ms),
            kind @ (Kind::Command | Kind::Component) => Ok(Call {
                function: name.to_owned(),
                arg: 0,
                kind,
            }),
        }
    }

    /// A new preemption handle for one worker thread: the worker passes it
    /// to every [`Sandbox::start`](crate::Sandbox::start), the dispatcher keeps a clone and calls
    /// [`Preempt::request`].
    pub fn preempt(&self) -> Preempt {
        Preempt::new(self.engine.clone())
    }

    /// `spin` steps per ms of CPU (measured at start unless configured).
    pub fn spin_steps_per_ms(&self) -> u64 {
        self.spin_steps_per_ms
    }

    /// The CPU time one request may use, in ns.
    pub fn cpu_limit(&self) -> Nanos {
        self.limits.cpu_limit
    }

    /// The linear memory one sandbox may grow to, in bytes.
    pub fn memory_limit(&self) -> u64 {
        self.limits.memory_limit
    }

    /// Sandboxes that may be alive at once.
    pub fn max_sandboxes(&self) -> u32 {
        self.limits.max_sandboxes
    }

    /// What the on-disk cache of compiled code has done, if the runtime
    /// has one ([`Config::cache`]).
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.cache.as_ref().map(|c| c.stats())
    }

    /// Whether a function (built-in or registered) is called `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.functions.contains_key(name)
    }

    /// The epoch ticker's period, in ns.
    pub fn tick(&self) -> Nanos {
        self.limits.tick
    }
}

/// A wasmtime error and its causes, joined by ": ".
pub(crate) fn describe(error: &wasmtime::Error) -> String {
    error
        .chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// The background thread that advances the engine epoch every period, so
/// that running guests check their CPU limit (and preemption flag) even
/// when no dispatcher asks. Stopped and joined on drop.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    fn start(engine: Engine, period: Duration) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                // park_timeout may return early (an unpark, or spuriously):
                // an extra tick only makes guests check a little sooner.
                loop {
                    thread::park_timeout(period);
                    if stopped.load(Ordering::Acquire) {
                        break;
                    }
                    engine.increment_epoch();
                }
            })
            .map_err(|e| Fault::Config(format!("cannot start the epoch ticker: {e}")))?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            // The loop cannot panic; a join error would only repeat one.
            let _ = thread.join();
        }
    }
}
