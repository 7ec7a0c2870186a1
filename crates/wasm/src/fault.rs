//! Everything that can go wrong, as one typed enum.

use faasched_model::Nanos;

/// The crate's result type.
pub type Result<T, E = Fault> = std::result::Result<T, E>;

/// Why a module was refused, a runtime could not be built, or a request
/// ended without a value.
///
/// None of these panics or poisons the runtime: after any of them the next
/// request on the same thread runs normally.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Fault {
    /// A module offered to [`Runtime::register`](crate::Runtime::register)
    /// does not compile, does not follow the ABI (see the crate docs), or
    /// does not fit a sandbox (an initial memory over the memory limit).
    #[error("module `{name}` refused: {reason}")]
    Malformed {
        /// The name it was to register under.
        name: String,
        /// What was wrong, in wasmtime's words where it found the fault.
        reason: String,
    },
    /// A second module under a name already taken, or a name that is not
    /// 1-64 characters of `[A-Za-z0-9_-]`.
    #[error("cannot register `{name}`: {reason}")]
    BadName {
        /// The name asked for.
        name: String,
        /// Why it cannot be used.
        reason: &'static str,
    },
    /// The runtime holds as many user modules as it takes.
    #[error(
        "cannot register `{name}`: the runtime holds {limit} registered modules, its most; \
         remove one first"
    )]
    Full {
        /// The name asked for.
        name: String,
        /// The most user modules it holds.
        limit: usize,
    },
    /// A module that took longer to compile than the limit.
    #[error(
        "module `{name}` refused: it took {took_ms} ms to compile, more than the {limit_ms} ms a \
         module may"
    )]
    SlowCompile {
        /// The name asked for.
        name: String,
        /// How long its compile took, ms.
        took_ms: u64,
        /// The limit, ms.
        limit_ms: u64,
    },
    /// A [`Deployment`](crate::Deployment) past the runtime's limits, or
    /// one that does not fit the module (an environment for a `run`
    /// module).
    #[error("cannot deploy `{name}`: {reason}")]
    Deployment {
        /// The name asked for.
        name: String,
        /// What was wrong.
        reason: String,
    },
    /// A built-in function, which cannot be removed.
    #[error("`{0}` is built in and cannot be removed")]
    Builtin(String),
    /// No function registered under this name.
    #[error("unknown function `{0}`")]
    UnknownFunction(String),
    /// The argument is outside what the function accepts, or a call string
    /// (`fib?n=30`) does not parse.
    #[error("bad argument for `{function}`: {reason}")]
    BadArgument {
        /// The function called.
        function: String,
        /// What was wrong.
        reason: String,
    },
    /// The guest trapped (`unreachable`, out-of-bounds access, division by
    /// zero, stack overflow, ...).
    #[error("`{function}` trapped: {message}")]
    Trap {
        /// The function called.
        function: String,
        /// wasmtime's description of the trap.
        message: String,
    },
    /// The request used more CPU time than the runtime's limit, summed over
    /// all its runs between preemptions (temporal isolation).
    #[error("`{function}` used more than its CPU limit of {limit} ns")]
    Timeout {
        /// The function called.
        function: String,
        /// The limit, in ns.
        limit: Nanos,
    },
    /// The guest asked to grow its linear memory past the per-sandbox limit.
    #[error("`{function}` asked for {asked} bytes of memory, over the limit of {limit} bytes")]
    MemoryLimit {
        /// The function called.
        function: String,
        /// The memory size it asked for, in bytes.
        asked: u64,
        /// The limit, in bytes.
        limit: u64,
    },
    /// A command wrote more to its standard output, or a component to its
    /// response body, than the runtime keeps
    /// ([`Config::max_output`](crate::Config::max_output)): its answer would
    /// be cut short, so it has none.
    #[error("`{function}` answered more than the {limit} bytes kept")]
    OutputLimit {
        /// The function called.
        function: String,
        /// The most bytes kept.
        limit: usize,
    },
    /// Every sandbox slot of the pool is in use: a sandbox must end or be
    /// dropped before another starts.
    #[error("no free sandbox for `{function}`: all {slots} slots are in use")]
    Capacity {
        /// The function called.
        function: String,
        /// The pool's size.
        slots: u32,
    },
    /// The request's abort flag was set
    /// ([`Sandbox::abort_on`](crate::Sandbox::abort_on)): nobody wanted its
    /// result any more, and it stopped at its next check.
    #[error("`{0}` aborted: its result is no longer wanted")]
    Aborted(String),
    /// [`Sandbox::resume`](crate::Sandbox::resume) was called again after it
    /// returned [`Step::Done`](crate::Step::Done).
    #[error("`{0}` already finished")]
    Finished(String),
    /// A [`Config`](crate::Config) value out of range, or wasmtime refused
    /// the engine it describes.
    #[error("bad runtime configuration: {0}")]
    Config(String),
}
