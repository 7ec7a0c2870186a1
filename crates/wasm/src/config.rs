//! What a [`Runtime`](crate::Runtime) is built from: user-set knobs here,
//! resolved and checked by [`Runtime::new`](crate::Runtime::new).

use std::path::{Path, PathBuf};

use faasched_model::Nanos;

use crate::{Fault, Result};

/// Sandboxes the pool holds at once, by default: a few per worker for the
/// node sizes the paper runs (6 to 20 workers), each with its preempted
/// requests waiting.
pub const DEFAULT_MAX_SANDBOXES: u32 = 128;
/// Linear memory one sandbox may grow to, by default: 64 MiB.
pub const DEFAULT_MEMORY_LIMIT: u64 = 64 << 20;
/// CPU time one request may use over all its runs, by default: 1 s. The
/// paper's temporal-isolation threshold is not given; 1 s is 10 times the
/// longest function of its synthetic workloads.
pub const DEFAULT_CPU_LIMIT: Nanos = 1_000_000_000;
/// How often the background ticker advances the engine epoch, by default:
/// 1 ms. Every tick makes each running guest check its CPU limit (and the
/// preemption flag), so a runaway request overshoots its limit by about one
/// tick; a shorter tick costs every running guest more checks.
pub const DEFAULT_TICK: Nanos = 1_000_000;

/// User modules registered at once, by default: 64. Each holds its
/// compiled code for the runtime's life, so a node that takes modules
/// from clients bounds them.
pub const DEFAULT_MAX_MODULES: usize = 64;

/// How long a user module may take to compile, by default: 30 s. A
/// compile cannot be interrupted, so one that takes longer runs to its end
/// on its one thread and the module is refused then; within the
/// [`shape`](crate::shape) limits the slowest found took 10 s.
pub const DEFAULT_MAX_COMPILE: Nanos = 30_000_000_000;

/// A command's standard output kept, by default: 4 MiB. A command that
/// writes more fails ([`Fault::OutputLimit`](crate::Fault::OutputLimit))
/// rather than have its answer cut short.
pub const DEFAULT_MAX_OUTPUT: usize = 4 << 20;

/// wasm page size, in bytes.
const PAGE: u64 = 64 << 10;

/// Knobs of a [`Runtime`](crate::Runtime); each left unset takes the
/// default its setter names.
#[derive(Debug, Clone, Default)]
pub struct Config {
    max_sandboxes: Option<u32>,
    memory_limit: Option<u64>,
    cpu_limit: Option<Nanos>,
    tick: Option<Nanos>,
    spin_steps_per_ms: Option<u64>,
    max_modules: Option<usize>,
    max_compile: Option<Nanos>,
    max_output: Option<usize>,
    cache: Option<PathBuf>,
    cache_max_bytes: Option<u64>,
}

impl Config {
    /// A configuration with every knob at its default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sandboxes alive at once (started and not yet finished or dropped),
    /// over all threads: the pooling allocator reserves this many instance,
    /// memory, table and fiber-stack slots up front. By default
    /// [`DEFAULT_MAX_SANDBOXES`].
    pub fn max_sandboxes(&mut self, count: u32) -> &mut Self {
        self.max_sandboxes = Some(count);
        self
    }

    /// Linear memory one sandbox may grow to, in bytes: a multiple of the
    /// 64 KiB wasm page, at most 4 GiB. By default [`DEFAULT_MEMORY_LIMIT`].
    pub fn memory_limit(&mut self, bytes: u64) -> &mut Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// CPU time one request may use, summed over its runs, in ns. By
    /// default [`DEFAULT_CPU_LIMIT`].
    pub fn cpu_limit(&mut self, limit: Nanos) -> &mut Self {
        self.cpu_limit = Some(limit);
        self
    }

    /// Period of the epoch ticker, in ns, at least 10 µs. By default
    /// [`DEFAULT_TICK`].
    pub fn tick(&mut self, period: Nanos) -> &mut Self {
        self.tick = Some(period);
        self
    }

    /// Steps of the `spin` function per ms of CPU, used to turn
    /// `spin?us=N` into a step count. By default measured when the runtime
    /// starts (a few ms of CPU); set it to skip the measurement or to make
    /// runs comparable across machines.
    pub fn spin_steps_per_ms(&mut self, steps: u64) -> &mut Self {
        self.spin_steps_per_ms = Some(steps);
        self
    }

    /// User modules registered at once (the built-ins aside); one more is
    /// refused until one is removed. By default [`DEFAULT_MAX_MODULES`].
    pub fn max_modules(&mut self, count: usize) -> &mut Self {
        self.max_modules = Some(count);
        self
    }

    /// How long a user module may take to compile, ns; one that takes
    /// longer is refused once its compile ends ([`Fault::SlowCompile`]).
    /// By default [`DEFAULT_MAX_COMPILE`].
    ///
    /// [`Fault::SlowCompile`]: crate::Fault::SlowCompile
    pub fn max_compile(&mut self, limit: Nanos) -> &mut Self {
        self.max_compile = Some(limit);
        self
    }

    /// Bytes of standard output a command may write, or of response body
    /// a component; past them it fails with [`Fault::OutputLimit`]. By
    /// default [`DEFAULT_MAX_OUTPUT`].
    ///
    /// [`Fault::OutputLimit`]: crate::Fault::OutputLimit
    pub fn max_output(&mut self, bytes: usize) -> &mut Self {
        self.max_output = Some(bytes);
        self
    }

    /// Keeps compiled code on disk in `dir` (created mode 0700 if absent;
    /// it must be this user's and writable by no one else), so that a
    /// module already compiled once by an engine of the same settings,
    /// here or by an earlier run, loads in milliseconds rather than
    /// compiling again: at registration and at every cold start
    /// ([`Runtime::image`](crate::Runtime::image)). By default nothing is
    /// kept.
    pub fn cache(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.cache = Some(dir.into());
        self
    }

    /// Bytes the [`cache`](Self::cache) directory may hold; past them the
    /// entries used least recently are removed. By default
    /// [`DEFAULT_CACHE_MAX_BYTES`](crate::DEFAULT_CACHE_MAX_BYTES).
    pub fn cache_max_bytes(&mut self, bytes: u64) -> &mut Self {
        self.cache_max_bytes = Some(bytes);
        self
    }

    /// The cache directory and its bound, if one is set.
    pub(crate) fn cache_dir(&self) -> Option<(&Path, u64)> {
        self.cache.as_deref().map(|dir| {
            (
                dir,
                self.cache_max_bytes
                    .unwrap_or(crate::cache::DEFAULT_CACHE_MAX_BYTES),
            )
        })
    }

    /// Every knob resolved and checked.
    pub(crate) fn resolve(&self) -> Result<Resolved> {
        let resolved = Resolved {
            max_sandboxes: self.max_sandboxes.unwrap_or(DEFAULT_MAX_SANDBOXES),
            memory_limit: self.memory_limit.unwrap_or(DEFAULT_MEMORY_LIMIT),
            cpu_limit: self.cpu_limit.unwrap_or(DEFAULT_CPU_LIMIT),
            tick: self.tick.unwrap_or(DEFAULT_TICK),
            spin_steps_per_ms: self.spin_steps_per_ms,
            max_modules: self.max_modules.unwrap_or(DEFAULT_MAX_MODULES),
            max_compile: self.max_compile.unwrap_or(DEFAULT_MAX_COMPILE),
            max_output: self.max_output.unwrap_or(DEFAULT_MAX_OUTPUT),
        };
        let bad = |what: String| Err(Fault::Config(what));
        if resolved.max_sandboxes == 0 {
            return bad("max_sandboxes must be at least 1".into());
        }
        let memory = resolved.memory_limit;
        if memory == 0 || !memory.is_multiple_of(PAGE) || memory > 1 << 32 {
            return bad(format!(
                "memory_limit {memory} is not a multiple of 65536 between 65536 and 4294967296"
            ));
        }
        if resolved.cpu_limit == 0 {
            return bad("cpu_limit must be at least 1 ns".into());
        }
        if resolved.tick < 10_000 {
            return bad(format!("tick {} ns is under 10 µs", resolved.tick));
        }
        if resolved.spin_steps_per_ms == Some(0) {
            return bad("spin_steps_per_ms must be at least 1".into());
        }
        Ok(resolved)
    }
}

/// A [`Config`] with every knob resolved and checked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved {
    pub max_sandboxes: u32,
    pub memory_limit: u64,
    pub cpu_limit: Nanos,
    pub tick: Nanos,
    pub spin_steps_per_ms: Option<u64>,
    pub max_modules: usize,
    pub max_compile: Nanos,
    pub max_output: usize,
}
