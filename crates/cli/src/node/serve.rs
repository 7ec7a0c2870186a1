//! `faasched node serve`'s flags, or the whole configuration as JSON; the
//! lab serves it ([`faasched_lab::node::serve`]).

use super::args::{PreemptArg, policy_help};
use super::containers::ContainerArgs;
use super::functions::FunctionArgs;
use super::host::HostArgs;
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::node::admission::Admit;
use faasched_lab::node::admission::AdmitArgs;
use faasched_lab::node::live::{
    DEFAULT_MAX_COMPILE, DEFAULT_MAX_MODULES, DEFAULT_MAX_OUTPUT, Host, Register, seconds,
};
use faasched_lab::node::run::Deadlines;
use faasched_lab::node::serve::{
    self, Announce, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS, Estimate, PreemptTest,
    ServeOptions,
};
use faasched_lab::text;
use faasched_lab::tls::TlsFiles;
use std::path::PathBuf;

/// Serve WebAssembly functions over HTTP: dispatcher threads place each
/// request on a worker thread by a node policy (the simulator's, unchanged),
/// and the worker runs it in a fresh sandbox, preemptible at any loop.
///
/// Built-in functions: noop, fib?n=N, spin?us=N (N µs of CPU, calibrated at
/// start), hash?n=BYTES, matmul?n=N, resize?w=W&h=H; `POST /register/NAME`
/// adds a module (docs/RUNTIME.md gives its ABI). Try:
///
///   curl -X POST '127.0.0.1:8080/invoke/fib?n=25'
///
///   curl 127.0.0.1:8080/metrics
///
/// GET /load reports the node's 1-minute load average over its workers
/// (or --load-cores),
/// the kernel's, of its requests running and queued, for a cluster gateway.
/// With --register the node registers with that gateway itself.
///
/// SIGTERM or Ctrl-C stops accepting, answers every request already read,
/// and exits.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Address to listen on (port 0 picks a free one, printed on stderr).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// The node policy every dispatcher runs.
    #[arg(long, short = 'p', default_value = "sledgescale", long_help = policy_help())]
    policy: String,
    /// Workers in each dispatcher's group.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: u32,
    /// Dispatchers, each over its own group of --workers; requests go to
    /// them in turn.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    dispatchers: u32,
    /// A built-in workload whose functions requests name in
    /// x-faasched-function (their ids, and what darc plans from).
    #[arg(long, short = 'w')]
    workload: Option<String>,
    /// Relative deadline of a request without x-faasched-deadline-us, or
    /// whose client lacks --token-file's token (only the operator may
    /// choose how urgent a request is): a factor of its estimate (`10x`,
    /// SledgeScale's) or a time (`100ms`), per function
    /// (`fib=2ms,*=10x`). A factor keeps long functions preemptible; a
    /// time shorter than a request's work leaves it no slack, and
    /// sledgescale never preempts a request without slack.
    #[arg(long, value_name = "SPEC", default_value = "*=10x")]
    deadline: Deadlines,
    /// What policies are told of a request's work: `exact` (spin's µs; for
    /// other functions, the median below) or `median` (the median of the
    /// function's last 256 CPU times, SledgeScale's estimator).
    #[arg(long, value_parser = text::choice::<Estimate>(&["exact", "median"]), default_value = "exact")]
    estimate: Estimate,
    /// `sledgescale`'s preemption test.
    #[arg(long, value_enum, default_value_t = PreemptArg::Paper)]
    preempt_test: PreemptArg,
    /// Seconds to answer the requests already read after SIGTERM.
    #[arg(long, default_value_t = 10.0)]
    drain_s: f64,
    /// Memory for containers, MB: what --functions' containers share, and
    /// what GET /load reports to a gateway.
    #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..))]
    memory_mb: u32,
    #[command(flatten)]
    containers: ContainerArgs,
    /// How often the load average samples the requests running and
    /// queued, ms (the kernel's 5 s by default).
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    load_period_ms: u64,
    /// The cores GET /load averages the load over, as the kernel's load
    /// average is read over a machine's cores; by default the workers
    /// (dispatchers × workers). Give it where several workers share a core.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    load_cores: Option<u32>,
    /// A cluster gateway (`faasched cluster gateway`) to register with,
    /// HOST:PORT: at start and every --load-period-ms after, so that a
    /// gateway that restarted learns the node again; before draining on
    /// SIGTERM the node says it leaves. A failed registration is said on
    /// stderr and tried again the next period.
    #[arg(long, value_name = "HOST:PORT")]
    register: Option<String>,
    /// The node's HOST:PORT as the gateway is to reach it (by default the
    /// address it listens on: give this when listening on 0.0.0.0).
    #[arg(long, value_name = "HOST:PORT", requires = "register")]
    advertise: Option<String>,
    /// A file holding the token (one line, at least 32 characters: `openssl
    /// rand -hex 32`) that POST /register must present as `Authorization:
    /// Bearer TOKEN`; with --register the node presents it to the gateway,
    /// so give both the same file. Without it, anyone who reaches the node
    /// may register code.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Listen on an address others can reach without --token-file, the
    /// node's code open to change by anyone who reaches it. Without this
    /// flag such a node is refused.
    #[arg(long, conflicts_with = "token_file")]
    no_token: bool,
    /// A file holding the token every invocation must present as
    /// `Authorization: Bearer TOKEN` (a gateway forwards its clients'
    /// header, so give it the same file). Without it, anyone who reaches
    /// the node may invoke its functions.
    #[arg(long, value_name = "FILE")]
    invoke_token_file: Option<PathBuf>,
    /// Modules POST /register may hold at once; one more is refused (400)
    /// until DELETE /functions/NAME removes one.
    #[arg(long, default_value_t = DEFAULT_MAX_MODULES as u32, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    max_modules: u32,
    /// Seconds a registered module may take to compile; one that takes
    /// longer is refused (400) once its compile ends (a compile cannot be
    /// stopped sooner; it runs on one thread, one module at a time).
    #[arg(long, default_value_t = DEFAULT_MAX_COMPILE as f64 / 1e9)]
    max_compile_s: f64,
    /// The largest invocation body, KiB: a WASI command's standard input
    /// (a function of the `run` ABI takes none). A longer one is refused
    /// (413); the node holds at most 64 of the largest at once.
    #[arg(long, default_value_t = (DEFAULT_MAX_BODY_BYTES >> 10) as u32, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    max_body_kib: u32,
    /// The most a WASI command may write to standard output, or a
    /// wasi:http component answer in its body, KiB; one that answers more
    /// is answered 500 `output-limit`, not cut short.
    #[arg(long, default_value_t = (DEFAULT_MAX_OUTPUT >> 10) as u32, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    max_output_kib: u32,
    #[command(flatten)]
    functions: FunctionArgs,
    /// Serve as the baseline a user would run instead, the way `wasmtime
    /// serve` serves a component: --workers threads of a multi-threaded
    /// tokio runtime, each request a task that runs its function in a
    /// fresh sandbox to its end; no dispatcher, no deadline, no
    /// preemption. The same HTTP, sandboxes and functions as the node, so
    /// a load against each compares their scheduling alone.
    #[arg(long, conflicts_with_all = ["dispatchers", "workload"])]
    baseline: bool,
    /// Connections open at once; one more is answered 503 and closed, so
    /// that slow clients cannot take every file descriptor.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS as u32, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: u32,
    #[command(flatten)]
    admit: AdmitArgs,
    #[command(flatten)]
    tls: TlsFiles,
    #[command(flatten)]
    host: HostArgs,
    /// Read the whole configuration from FILE (`-`: standard input) as
    /// JSON instead of flags, one field per option (docs/RUNTIME.md shows
    /// one); once listening, print `{"listening":"HOST:PORT"}` on stdout
    /// instead of the "listening on" line on stderr: how `cluster up`
    /// starts its nodes.
    #[arg(long, value_name = "FILE", exclusive = true)]
    config: Option<PathBuf>,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        match &self.config {
            Some(file) => serve::run(&ServeOptions::read(file)?, Announce::Json),
            None => serve::run(&self.options()?, Announce::Human),
        }
    }

    /// The options as the lab takes them; errors name the flag.
    fn options(self) -> Result<ServeOptions> {
        Ok(ServeOptions {
            listen: self.listen,
            policy: self.policy,
            dispatchers: self.dispatchers,
            workers: self.workers,
            workload: self.workload,
            deadline: self.deadline,
            estimate: self.estimate,
            preempt_test: match self.preempt_test {
                PreemptArg::Paper => PreemptTest::Paper,
                PreemptArg::Code => PreemptTest::Code,
            },
            drain_s: self.drain_s,
            memory_mb: self.memory_mb,
            containers: self.containers.options(),
            load_period_ms: self.load_period_ms,
            load_cores: self.load_cores,
            register: self.register.map(|gateway| Register {
                gateway,
                advertise: self.advertise,
            }),
            host: Host {
                max_modules: self.max_modules as usize,
                max_compile: seconds(self.max_compile_s, "--max-compile-s")?,
                max_output: (self.max_output_kib as usize) << 10,
                cache: self.functions.cache_dir,
                ..self.host.host()?
            },
            token_file: self.token_file,
            invoke_token_file: self.invoke_token_file,
            no_token: self.no_token,
            max_connections: self.max_connections as usize,
            max_body: (self.max_body_kib as usize) << 10,
            deploy: self.functions.deploy,
            baseline: self.baseline,
            admission: self.admit.admit(Admit::SERVE),
            tls: self.tls,
        })
    }
}
