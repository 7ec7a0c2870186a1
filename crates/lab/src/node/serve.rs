//! `faasched node serve`: a live node over HTTP until a signal, its options
//! as plain data. People give them as flags; a process that starts nodes
//! (`cluster up`) gives them whole as JSON on the node's stdin (their serde
//! form, [`ServeOptions::read`]) and learns where the node listens from one
//! JSON line on its stdout ([`Ready`]), rather than writing flags and
//! reading a line meant for people.

use super::admission::Admit;
use super::deploy;
use super::live::{Front, Host, LiveNode, NodeContainers, Register, serve};
use crate::outln;
use crate::tls::TlsFiles;
use anyhow::{Context, Result, bail};
use faasched_live::auth::{self, Token};
use faasched_live::http::FrontConfig;
use faasched_live::node::ingress::{LoadConfig, StopSignal};
pub use faasched_policy::node::PreemptTest;
use faasched_workload::node::Deadlines;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Linear memory one sandbox may grow to, MiB: `--memory-limit-mib`'s
/// default, which the nodes `cluster up` starts keep too.
pub const MEMORY_LIMIT_MIB: u64 = 64;

/// What `node serve` runs: its flags' values, or (`--config`) the JSON that
/// gives them all at once, every field named as here (an unknown one is
/// refused).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeOptions {
    /// Address to listen on, `HOST:PORT` (port 0 picks a free one).
    pub listen: String,
    /// The node policy every dispatcher runs, as the catalogue names it.
    pub policy: String,
    /// Dispatchers, each over its own group of workers.
    pub dispatchers: u32,
    /// Workers in each dispatcher's group.
    pub workers: u32,
    /// A built-in workload whose functions requests name in
    /// `x-faasched-function`.
    pub workload: Option<String>,
    /// The relative deadline of a request that names none, or whose
    /// client may not choose one, as a spec (`*=10x`, `fib=2ms`); empty:
    /// 10 times its estimate, SledgeScale's.
    #[serde(with = "crate::text")]
    pub deadline: Deadlines,
    /// What policies are told of a request's work.
    pub estimate: Estimate,
    /// `sledgescale`'s preemption test: `paper` or `code`.
    #[serde(with = "PreemptTestName")]
    pub preempt_test: PreemptTest,
    /// Seconds to answer the requests already read after SIGTERM.
    pub drain_s: f64,
    /// Memory for containers, MB: what the containers share, and what
    /// `GET /load` reports.
    pub memory_mb: u32,
    /// The containers, if the functions of a table run in them.
    pub containers: Option<ContainerOptions>,
    /// How often the load average samples the requests, ms.
    pub load_period_ms: u64,
    /// The cores `GET /load` averages the load over; `None`: the workers.
    pub load_cores: Option<u32>,
    /// The gateway the node registers with, if any.
    pub register: Option<Register>,
    /// Where its threads and sandboxes run.
    pub host: Host,
    /// The file of the token that `POST /register` must present and that
    /// the node presents when it registers with its gateway; none: the
    /// node's routes are open to whoever reaches it.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// The file of the token every invocation must present; none: anyone
    /// who reaches the node may invoke its functions.
    #[serde(default)]
    pub invoke_token_file: Option<PathBuf>,
    /// Serve an address others can reach without a token (see
    /// [`control_token`]).
    #[serde(default)]
    pub no_token: bool,
    /// Connections open at once; one more is refused 503.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// The largest invocation body, bytes (a WASI command's standard
    /// input).
    #[serde(rename = "max_body_bytes", default = "default_max_body")]
    pub max_body: usize,
    /// The bounds each dispatcher admits requests under; left out, a
    /// served node's ([`Admit::SERVE`]).
    #[serde(default = "Admit::serve")]
    pub admission: Admit,
    /// Its TLS files, if it serves TLS or speaks it to its gateway.
    #[serde(default)]
    pub tls: TlsFiles,
    /// A directory of function manifests to register before it serves
    /// ([`deploy`](super::deploy)).
    #[serde(default)]
    pub deploy: Option<PathBuf>,
    /// Serve as the baseline instead: `workers` tokio threads, each
    /// request run to its end on one, no policy or deadline
    /// ([`Baseline`](faasched_live::node::baseline::Baseline)).
    #[serde(default)]
    pub baseline: bool,
}

/// What policies are told of a request's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Estimate {
    /// What the request asks (`spin`'s µs); for other functions, the
    /// median.
    Exact,
    /// The median of the function's last 256 CPU times, SledgeScale's
    /// estimator.
    Median,
}

/// [`PreemptTest`]'s serde form, by name.
#[derive(Serialize, Deserialize)]
#[serde(remote = "PreemptTest", rename_all = "lowercase")]
enum PreemptTestName {
    Paper,
    Code,
}

/// A node's containers as its options give them.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerOptions {
    /// A live cluster workload's function table (`functionbench`) or a
    /// table CSV's path.
    pub functions: String,
    /// The table's warm and cold times multiplied by this.
    pub time_scale: f64,
    /// The keep-alive policy, as the catalogue names it.
    pub keep_alive: String,
    /// What a cold start waits after loading the function's code, as a
    /// share of the function's (scaled) cold − warm time; `None`: 1 for a
    /// built-in standing in for the table's function (`spin`), 0 for a
    /// real one.
    #[serde(default)]
    pub cold_wait: Option<f64>,
}

/// How a served node says where it listens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Announce {
    /// A line for people on stderr, "... listening on HOST:PORT ...".
    Human,
    /// One [`Ready`] line on stdout, for the process that started it.
    Json,
}

/// The line a node started with [`Announce::Json`] prints on stdout once
/// it listens: `{"listening":"127.0.0.1:41234"}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ready {
    /// Where it listens.
    pub listening: SocketAddr,
}

impl ServeOptions {
    /// The options as JSON from `source` (`-`: standard input); errors name
    /// the source and the field.
    pub fn read(source: &Path) -> Result<ServeOptions> {
        let text = if source == Path::new("-") {
            std::io::read_to_string(std::io::stdin()).context("reading standard input")?
        } else {
            std::fs::read_to_string(source)
                .with_context(|| format!("cannot read {}", source.display()))?
        };
        serde_json::from_str(&text).with_context(|| format!("--config {}", source.display()))
    }

    /// The node these options describe; errors name the option.
    pub(crate) fn node(&self) -> Result<LiveNode> {
        Ok(LiveNode {
            policy: self.policy.clone(),
            dispatchers: self.dispatchers,
            workers: self.workers,
            workload: self.workload.clone(),
            deadlines: self.deadline.clone(),
            estimator: match self.estimate {
                Estimate::Exact => faasched_model::node::Estimate::Given,
                Estimate::Median => faasched_model::node::Estimate::PAPER_MEDIAN,
            },
            preempt_test: self.preempt_test,
            host: self.host.clone(),
            containers: self
                .containers
                .as_ref()
                .map(|c| c.containers(u64::from(self.memory_mb)))
                .transpose()?,
            admission: self.admission.rules()?,
        })
    }
}

impl ContainerOptions {
    /// The containers of a node with `memory_mb` for them. Errors name the
    /// option.
    fn containers(&self, memory_mb: u64) -> Result<NodeContainers> {
        NodeContainers::new(
            &self.functions,
            self.time_scale,
            &self.keep_alive,
            self.cold_wait,
            memory_mb,
        )
    }
}

/// A drain of `seconds` (`--drain-s`, a node's or a gateway's); an error
/// naming the flag if it is not a number of seconds.
pub fn drain(seconds: f64) -> Result<Duration> {
    if !(seconds.is_finite() && seconds >= 0.0) {
        bail!("--drain-s: {seconds} is not a number of seconds");
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The signal that stopped a server, as its last lines name it;
/// `otherwise` if it stopped of itself.
pub fn stopped_by(signal: Option<StopSignal>, otherwise: &'static str) -> &'static str {
    match signal {
        Some(StopSignal::Terminate) => "SIGTERM",
        Some(StopSignal::Interrupt) => "SIGINT",
        None => otherwise,
    }
}

pub use faasched_live::http::DEFAULT_MAX_CONNECTIONS;
pub use faasched_live::node::ingress::DEFAULT_MAX_BODY_BYTES;

/// [`ServeOptions::max_body`] where a configuration leaves it out.
fn default_max_body() -> usize {
    DEFAULT_MAX_BODY_BYTES
}

/// [`ServeOptions::max_connections`] where a configuration leaves it out.
fn default_max_connections() -> usize {
    faasched_live::http::DEFAULT_MAX_CONNECTIONS
}

/// The token in `file`, if one is given.
pub fn read_token(file: Option<&Path>) -> Result<Option<Token>> {
    Ok(file.map(Token::read).transpose()?)
}

/// The token of a service's control routes, read from `file`. A service
/// that would listen on `listen`, an address others can reach (not
/// loopback), without one is refused unless `open` says to serve it so:
/// a node's or a gateway's control routes are open to whoever reaches it
/// unless a token guards them.
pub fn control_token(file: Option<&Path>, listen: &str, open: bool) -> Result<Option<Token>> {
    let token = read_token(file).context("--token-file")?;
    if !open && auth::exposed(listen, token.as_ref()) {
        bail!(
            "--listen {listen}: others can reach this address, and without --token-file they \
             could change what it runs; give --token-file FILE (`openssl rand -hex 32 > FILE`), \
             or --no-token to serve it open"
        );
    }
    Ok(token)
}

/// Serves the node `options` describe until SIGTERM or SIGINT, saying where
/// it listens as `announce` asks and, on stderr, its containers and, at the
/// end, what it did; an error if an invocation was cut unanswered.
pub fn run(options: &ServeOptions, announce: Announce) -> Result<()> {
    let drain = drain(options.drain_s)?;
    let token = control_token(
        options.token_file.as_deref(),
        &options.listen,
        options.no_token,
    )?;
    let invoke_token =
        read_token(options.invoke_token_file.as_deref()).context("--invoke-token-file")?;
    let tls = options.tls.read()?;
    let deployed = match &options.deploy {
        Some(dir) => deploy::read_dir(dir)?,
        None => Vec::new(),
    };
    let node = options.node()?;
    let mut load = LoadConfig::new();
    load.cores(
        options
            .load_cores
            .unwrap_or(node.dispatchers * node.workers),
    )
    .memory_mb(options.memory_mb)
    .period(Duration::from_millis(options.load_period_ms));
    // Printing the readiness line can only fail once the process that
    // reads it has gone; the node serves all the same, and says so last.
    let mut announced = Ok(());
    let front = Front {
        drain,
        load,
        max_body: options.max_body,
        register: options.register.as_ref(),
        deployed: &deployed,
        baseline: options.baseline,
        front: FrontConfig {
            token,
            invoke_token,
            max_connections: options.max_connections,
            tls: tls.listener,
            ..FrontConfig::default()
        },
        gateway_tls: tls.peers,
    };
    let served = serve(&node, &options.listen, front, |addr, spin| {
        match announce {
            Announce::Human if options.baseline => eprintln!(
                "faasched node serve: the baseline, {} tokio thread(s) running each request to \
                 its end, listening on {addr} (spin: {spin} steps per ms)",
                node.workers
            ),
            Announce::Human => {
                eprintln!(
                    "faasched node serve: {} on {} dispatcher(s) x {} worker(s), listening on \
                         {addr} (spin: {spin} steps per ms)",
                    node.policy, node.dispatchers, node.workers
                );
            }
            Announce::Json => {
                announced = serde_json::to_string(&Ready { listening: addr })
                    .map_err(anyhow::Error::from)
                    .and_then(|line| outln!("{line}"));
            }
        }
        if let Some(c) = &node.containers {
            eprintln!(
                "faasched node serve: containers of {} functions in {} MB under {}; \
                     a cold start loads the function's code, then waits {} of cold - warm",
                c.table.len(),
                c.memory_mb,
                c.keep_alive.name,
                match c.cold_start.wait {
                    Some(share) => share.to_string(),
                    None => "1 (a built-in's) or 0 (a real function's)".to_string(),
                }
            );
        }
    })?;
    let d = &served.drained;
    eprintln!(
        "faasched node serve: stopped by {}; {} invocations accepted, {} left unanswered, {}",
        stopped_by(served.signal, "the ingress"),
        d.accepted,
        d.unanswered,
        d.connections_cut
    );
    for (function, c) in &served.cold_starts {
        let ms = |ns: u64| ns as f64 / 1e6;
        eprintln!(
            "faasched node serve: {function}: {} cold start(s), loading its code {:.2} ms on \
             average ({:.2} ms at most), then waiting {:.2} ms on average",
            c.count,
            ms(c.mean_load()),
            ms(c.max_load),
            ms(c.mean_wait()),
        );
    }
    if d.unanswered > 0 {
        bail!("{} invocations were cut unanswered", d.unanswered);
    }
    announced
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> ServeOptions {
        ServeOptions {
            listen: "127.0.0.1:0".into(),
            policy: "jsq".into(),
            dispatchers: 1,
            workers: 2,
            workload: None,
            deadline: "fib=2ms".parse().unwrap(),
            estimate: Estimate::Exact,
            preempt_test: PreemptTest::Paper,
            drain_s: 10.0,
            memory_mb: 2048,
            containers: Some(ContainerOptions {
                functions: "functionbench".into(),
                time_scale: 0.01,
                keep_alive: "greedy-dual".into(),
                cold_wait: None,
            }),
            load_period_ms: 50,
            load_cores: Some(1),
            register: None,
            token_file: None,
            invoke_token_file: None,
            no_token: false,
            max_connections: default_max_connections(),
            max_body: default_max_body(),
            deploy: None,
            baseline: false,
            admission: Admit::SERVE,
            tls: TlsFiles::default(),
            host: Host {
                cpus: vec![0],
                poll: false,
                cpu_limit: 1_000_000_000,
                memory_limit: MEMORY_LIMIT_MIB << 20,
                max_sandboxes: 128,
                max_modules: faasched_wasm::DEFAULT_MAX_MODULES,
                max_compile: faasched_wasm::DEFAULT_MAX_COMPILE,
                max_output: faasched_wasm::DEFAULT_MAX_OUTPUT,
                cache: None,
                spin_steps_per_ms: None,
            },
        }
    }

    #[test]
    fn the_options_go_through_json_and_back() {
        let json = serde_json::to_value(options()).unwrap();
        assert_eq!(json["preempt_test"], "paper");
        assert_eq!(json["estimate"], "exact");
        assert_eq!(json["deadline"], "fib=2ms");
        assert_eq!(json["host"]["memory_limit_bytes"], 64 << 20);
        let back: ServeOptions = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(back).unwrap(), json);
        // Left out, a served node's admission bounds.
        let mut older = json;
        older.as_object_mut().unwrap().remove("admission");
        let back: ServeOptions = serde_json::from_value(older).unwrap();
        assert_eq!(back.admission, Admit::SERVE);
    }

    #[test]
    fn unknown_and_missing_fields_are_named() {
        let mut json = serde_json::to_value(options()).unwrap();
        json["wrokers"] = 3.into();
        let e = serde_json::from_value::<ServeOptions>(json.clone())
            .unwrap_err()
            .to_string();
        assert!(e.contains("wrokers"), "{e}");
        let map = json.as_object_mut().unwrap();
        map.remove("wrokers");
        map.remove("listen");
        let e = serde_json::from_value::<ServeOptions>(json)
            .unwrap_err()
            .to_string();
        assert!(e.contains("listen"), "{e}");
    }

    #[test]
    fn bad_containers_and_drains_are_refused_naming_the_flag() {
        let mut o = options();
        for bad in [-1.0, 1e300, f64::NAN] {
            o.containers.as_mut().unwrap().cold_wait = Some(bad);
            assert!(format!("{:#}", o.node().unwrap_err()).contains("--cold-wait"));
        }
        o.containers.as_mut().unwrap().cold_wait = Some(1.0);
        o.containers.as_mut().unwrap().keep_alive = "nope".into();
        assert!(format!("{:#}", o.node().unwrap_err()).contains("--keep-alive"));
        assert!(
            drain(f64::NAN)
                .unwrap_err()
                .to_string()
                .contains("--drain-s")
        );
        assert_eq!(drain(1.5).unwrap(), Duration::from_millis(1500));
    }
}
