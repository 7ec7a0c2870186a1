//! The node runtime, live: WebAssembly sandboxes on worker threads under a
//! node policy from the catalogue, served over HTTP (`faasched node
//! serve`) or driven in process (`faasched bench runtime`).

use super::admission::Admission;
use super::catalog::{Knowledge, node_policies};
use crate::cluster::catalog::KeepAliveSpec;
use anyhow::{Context, Result, bail};
use faasched_live::cluster::Registration;
use faasched_live::http::FrontConfig;
use faasched_live::node::baseline::Baseline;
use faasched_live::node::containers::{ColdStart, ColdStarts, Containers};
use faasched_live::node::ingress::{self, Drained, Ingress, LoadConfig, StopSignal};
use faasched_live::node::invoke::Backend;
use faasched_live::node::runtime::{Policies, Runtime, RuntimeConfig};
use faasched_live::node::wasm::WasmExecutor;
use faasched_live::tls::ClientTls;
use faasched_model::node::Estimate;
use faasched_model::{MS, Nanos, SEC};
use faasched_policy::node::PreemptTest;
use faasched_workload::cluster::FunctionTable;
use faasched_workload::node::{Deadlines, Workload};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Where and within what limits a live node's threads and sandboxes run:
/// what a node served and a replay share.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// CPUs to pin the threads to, dispatchers first; empty leaves them
    /// unpinned.
    pub cpus: Vec<usize>,
    /// Idle threads spin instead of sleeping.
    pub poll: bool,
    /// CPU time one request may use, ns.
    #[serde(rename = "cpu_limit_ns")]
    pub cpu_limit: Nanos,
    /// Linear memory one sandbox may grow to, bytes.
    #[serde(rename = "memory_limit_bytes")]
    pub memory_limit: u64,
    /// Sandboxes alive at once.
    pub max_sandboxes: u32,
    /// User modules registered at once.
    #[serde(default = "default_max_modules")]
    pub max_modules: usize,
    /// How long a user module may take to compile, ns.
    #[serde(rename = "max_compile_ns", default = "default_max_compile")]
    pub max_compile: Nanos,
    /// Bytes of standard output a WASI command may write.
    #[serde(rename = "max_output_bytes", default = "default_max_output")]
    pub max_output: usize,
    /// `spin`'s steps per ms of CPU; `None`: measured at each launch.
    pub spin_steps_per_ms: Option<u64>,
    /// Where compiled code is kept between runs
    /// ([`faasched_wasm::Config::cache`]); `None`: nowhere.
    #[serde(rename = "cache_dir", default)]
    pub cache: Option<std::path::PathBuf>,
}

pub use faasched_wasm::{DEFAULT_MAX_COMPILE, DEFAULT_MAX_MODULES, DEFAULT_MAX_OUTPUT};

/// [`Host::max_output`] where a configuration leaves it out.
fn default_max_output() -> usize {
    DEFAULT_MAX_OUTPUT
}

/// [`Host::max_modules`] where a configuration leaves it out.
fn default_max_modules() -> usize {
    DEFAULT_MAX_MODULES
}

/// [`Host::max_compile`] where a configuration leaves it out.
fn default_max_compile() -> Nanos {
    DEFAULT_MAX_COMPILE
}

impl Host {
    /// The same host with `spin` measured once, here, for every later
    /// launch: runs of several policies then spin the same steps for the
    /// same work, where a measurement per launch would give each policy a
    /// workload a few percent heavier or lighter than the last.
    pub fn with_spin_measured(self) -> Result<Host> {
        if self.spin_steps_per_ms.is_some() {
            return Ok(self);
        }
        let sandboxes = faasched_wasm::Runtime::new(&self.sandboxes())
            .context("the sandboxes, to measure spin")?;
        Ok(Host {
            spin_steps_per_ms: Some(sandboxes.spin_steps_per_ms()),
            ..self
        })
    }

    pub(crate) fn sandboxes(&self) -> faasched_wasm::Config {
        let mut config = faasched_wasm::Config::new();
        config
            .max_sandboxes(self.max_sandboxes)
            .max_modules(self.max_modules)
            .max_compile(self.max_compile)
            .max_output(self.max_output)
            .memory_limit(self.memory_limit)
            .cpu_limit(self.cpu_limit);
        if let Some(steps) = self.spin_steps_per_ms {
            config.spin_steps_per_ms(steps);
        }
        if let Some(dir) = &self.cache {
            config.cache(dir);
        }
        config
    }

    /// The sandboxes (compiling the suite and calibrating `spin`) for
    /// `workers` workers; with `containers`, the functions of their table
    /// run in containers.
    pub fn executor(
        &self,
        workers: usize,
        containers: Option<&NodeContainers>,
    ) -> Result<Arc<WasmExecutor>> {
        let sandboxes = faasched_wasm::Runtime::new(&self.sandboxes()).context("the sandboxes")?;
        let mut executor = WasmExecutor::new(sandboxes, workers);
        if let Some(c) = containers {
            executor = executor.with_containers(Arc::new(c.build()));
        }
        Ok(Arc::new(executor))
    }

    /// Starts the sandboxes ([`Host::executor`]) and the threads of
    /// `config` under `policies`, one per dispatcher.
    pub fn launch(
        &self,
        config: RuntimeConfig,
        policies: Policies,
        containers: Option<&NodeContainers>,
    ) -> Result<Runtime<WasmExecutor>> {
        let executor = self.executor(config.dispatchers * config.workers, containers)?;
        let config = RuntimeConfig {
            cpus: self.cpus.clone(),
            poll: self.poll,
            ..config
        };
        Runtime::start(config, policies, executor).context("starting the node's threads")
    }
}

/// A positive, finite number of ms (`--cpu-limit-ms`) as ns.
pub fn positive_ms(text: &str) -> Result<Nanos> {
    text.parse()
        .ok()
        .and_then(ns)
        .ok_or_else(|| anyhow::anyhow!("{text} is not a positive number of ms"))
}

/// `value` seconds, above 0 and at most a day, as ns; an error naming
/// `flag`.
pub fn seconds(value: f64, flag: &str) -> Result<Nanos> {
    if !(value.is_finite() && value > 0.0 && value <= 86_400.0) {
        bail!("{flag}: {value} is not a number of seconds above 0 and at most a day");
    }
    Ok((value * SEC as f64).round() as Nanos)
}

/// `ms` as ns, if it is a positive, finite number.
fn ns(ms: f64) -> Option<Nanos> {
    (ms.is_finite() && ms > 0.0).then(|| (ms * MS as f64).round() as Nanos)
}

/// CPUs given as a list of CPUs and ranges (`--cpus 2-4,7`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

impl std::str::FromStr for CpuList {
    type Err = anyhow::Error;

    /// `2-4,7` as [2, 3, 4, 7].
    fn from_str(text: &str) -> Result<CpuList> {
        let mut cpus = Vec::new();
        for part in text.split(',') {
            let bad = || anyhow::anyhow!("`{part}` is not a CPU or a range like 2-5");
            match part.split_once('-') {
                Some((lo, hi)) => {
                    let (lo, hi): (usize, usize) = (
                        lo.parse().map_err(|_| bad())?,
                        hi.parse().map_err(|_| bad())?,
                    );
                    if lo > hi {
                        return Err(bad());
                    }
                    cpus.extend(lo..=hi);
                }
                None => cpus.push(part.parse().map_err(|_| bad())?),
            }
        }
        Ok(CpuList(cpus))
    }
}

/// The largest `--cold-wait`: a hundred times a function's cold − warm is
/// far past any platform's container start, and a larger share could
/// hold a worker asleep for years.
pub const MAX_COLD_WAIT: f64 = 100.0;

/// A node's containers: the functions that run in them, the memory they
/// share and the keep-alive that keeps them ([`Containers`]).
#[derive(Clone, Debug)]
pub struct NodeContainers {
    /// The functions, by the name requests give in `x-faasched-function`:
    /// memory, warm and cold time (times as the run scales them).
    pub table: FunctionTable,
    /// Memory for containers, MB.
    pub memory_mb: u64,
    /// The keep-alive policy.
    pub keep_alive: &'static KeepAliveSpec,
    /// What a cold start waits after loading the function's code.
    pub cold_start: ColdStart,
}

impl NodeContainers {
    /// The containers of `functions` (a live cluster workload's name, or a
    /// table CSV's path) with `memory_mb` for them: the table's times
    /// multiplied by `time_scale`, kept by the keep-alive policy named
    /// `keep_alive`, a cold start waiting `cold_wait` of the function's
    /// cold − warm time after loading its code ([`ColdStart::wait`]).
    /// Errors name the option.
    pub fn new(
        functions: &str,
        time_scale: f64,
        keep_alive: &str,
        cold_wait: Option<f64>,
        memory_mb: u64,
    ) -> Result<NodeContainers> {
        if let Some(share) = cold_wait.filter(|s| !(0.0..=MAX_COLD_WAIT).contains(s)) {
            bail!("--cold-wait {share}: give a share from 0 to {MAX_COLD_WAIT}");
        }
        let table = if std::path::Path::new(functions).is_file() {
            FunctionTable::read_csv(std::path::Path::new(functions))
                .with_context(|| format!("--functions {functions}"))?
        } else {
            crate::cluster::live::function_table(functions).context("--functions")?
        };
        Ok(NodeContainers {
            table: table.scaled(time_scale).context("--time-scale")?,
            memory_mb,
            keep_alive: crate::cluster::catalog::keep_alive(keep_alive).context("--keep-alive")?,
            cold_start: ColdStart { wait: cold_wait },
        })
    }

    fn build(&self) -> Containers {
        Containers::new(
            self.memory_mb,
            self.keep_alive.build(),
            self.table.iter().map(|(f, p)| (f.name.to_string(), *p)),
            self.cold_start,
        )
    }
}

/// A live node: its layout, its policy and where it runs.
#[derive(Clone, Debug)]
pub struct LiveNode {
    /// The node policy, as the catalogue names it.
    pub policy: String,
    /// Dispatchers, each with its own group of workers.
    pub dispatchers: u32,
    /// Workers per dispatcher.
    pub workers: u32,
    /// A built-in workload whose functions the requests name
    /// (`x-faasched-function`): their ids, and what DARC plans from.
    pub workload: Option<String>,
    /// The relative deadline of a request that names none, or whose
    /// client may not choose one (see [`RuntimeConfig::deadlines`]).
    pub deadlines: Deadlines,
    /// What policies are told of a request's work: what it asks (`spin`'s
    /// µs), or the median of its function's last runs.
    pub estimator: Estimate,
    /// `sledgescale`'s preemption test.
    pub preempt_test: PreemptTest,
    /// Its threads and sandboxes.
    pub host: Host,
    /// Its containers, if its functions run in them.
    pub containers: Option<NodeContainers>,
    /// The bounds each dispatcher admits requests under.
    pub admission: Admission,
}

impl LiveNode {
    /// Starts the sandboxes and the threads.
    pub fn start(&self) -> Result<Runtime<WasmExecutor>> {
        let [policy] = &node_policies(std::slice::from_ref(&self.policy))?[..] else {
            bail!("one node policy at a time");
        };
        let workload = self
            .workload
            .as_deref()
            .map(Workload::builtin)
            .transpose()?;
        let knowledge = match &workload {
            Some(w) => Knowledge::of_builtin(w, self.workers, self.preempt_test),
            None => Knowledge {
                workers: self.workers,
                preempt_test: self.preempt_test,
                darc_types: Vec::new(),
                darc_paper: None,
                stretch: 1,
                admission: Default::default(),
            },
        }
        .admitting(self.admission);
        let policies = (0..self.dispatchers)
            .map(|_| policy.build(&knowledge))
            .collect::<Result<Vec<_>>>()
            .with_context(|| match &workload {
                Some(_) => format!("policy {}", self.policy),
                None => format!(
                    "policy {} (a policy that plans from the workload needs --workload)",
                    self.policy
                ),
            })?;
        let config = RuntimeConfig {
            dispatchers: self.dispatchers as usize,
            workers: self.workers as usize,
            deadlines: self.deadlines.clone(),
            estimator: self.estimator,
            functions: workload
                .iter()
                .flat_map(|w| w.functions.iter().map(|f| f.name.to_string()))
                .collect(),
            ..RuntimeConfig::default()
        };
        self.host.launch(config, policies, self.containers.as_ref())
    }
}

impl LiveNode {
    /// Starts the baseline on its sandboxes: [`LiveNode::workers`] tokio
    /// threads, each request run to its end on one; no policy, deadline or
    /// dispatcher.
    pub fn start_baseline(&self) -> Result<Baseline<WasmExecutor>> {
        let executor = self.host.executor(1, self.containers.as_ref())?;
        Baseline::start(executor, self.workers as usize, &self.host.cpus)
            .context("starting the baseline's threads")
    }
}

/// What a served node did before it stopped.
#[derive(Debug)]
pub struct Served {
    /// How the ingress drained.
    pub drained: Drained,
    /// The signal that stopped it.
    pub signal: Option<StopSignal>,
    /// What each function's cold starts cost, by its module's name (none
    /// without containers).
    pub cold_starts: BTreeMap<String, ColdStarts>,
}

/// Where a served node registers itself, if anywhere.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Register {
    /// The cluster gateway, `HOST:PORT`.
    pub gateway: String,
    /// The node's `HOST:PORT` as the gateway is to reach it; by default
    /// the address it listens on.
    pub advertise: Option<String>,
}

/// A served node's HTTP front, as [`serve`] sets it up.
pub struct Front<'a> {
    /// How long a shutdown drains.
    pub drain: Duration,
    /// What `GET /load` reports.
    pub load: LoadConfig,
    /// The largest invocation body, bytes.
    pub max_body: usize,
    /// The gateway to register with, if any.
    pub register: Option<&'a Register>,
    /// Functions registered before the node listens.
    pub deployed: &'a [super::deploy::Deployed],
    /// Serve as the baseline ([`LiveNode::start_baseline`]), not the node.
    pub baseline: bool,
    /// Its tokens (the control one is also what the node presents to its
    /// gateway), connections, a body's pace and TLS.
    pub front: FrontConfig,
    /// The gateway is spoken to under TLS, checked against this CA.
    pub gateway_tls: Option<ClientTls>,
}

/// Serves `node` on `listen` until SIGTERM or SIGINT, then drains (for at
/// most `front.drain`) and stops; publishes its load on `GET /load` under
/// `front.load`; `ready` learns the address once it listens. With
/// `front.register`, the node registers with its gateway once it listens
/// and every load period after (failures said on stderr, never fatal),
/// and says it leaves before it drains ([`Registration`]). `ready` is
/// also told `spin`'s steps per ms in the node's sandboxes.
pub fn serve(
    node: &LiveNode,
    listen: &str,
    front: Front<'_>,
    ready: impl FnOnce(SocketAddr, u64),
) -> Result<Served> {
    let Front {
        drain,
        load,
        max_body,
        register,
        deployed,
        baseline,
        front,
        gateway_tls,
    } = front;
    let spin = |e: &WasmExecutor| e.with_runtime(|r| r.spin_steps_per_ms());
    let (runtime, spin, containers): (Arc<dyn Backend>, u64, _) = if baseline {
        let b = node.start_baseline()?;
        let steps = spin(b.executor());
        let containers = b.executor().containers().cloned();
        (Arc::new(b), steps, containers)
    } else {
        let r = node.start()?;
        let steps = spin(r.executor());
        let containers = r.executor().containers().cloned();
        (Arc::new(r), steps, containers)
    };
    for d in deployed {
        runtime
            .register(&d.name, &d.module, &d.settings)
            .map_err(|f| anyhow::anyhow!("{}: {f}", d.manifest.display()))?;
    }
    let tokio = ingress::runtime().context("the ingress's runtime")?;
    let served = tokio.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("cannot listen on {listen}"))?;
        let addr = listener.local_addr()?;
        let registration = register
            .map(|r| {
                let advertise = r.advertise.clone().unwrap_or_else(|| addr.to_string());
                Registration::new(&r.gateway, &advertise, load.sampling_period()).map(
                    |registration| {
                        registration
                            .token(front.token.clone())
                            .tls(gateway_tls.clone())
                    },
                )
            })
            .transpose()?;
        ready(addr, spin);
        let stop = ingress::shutdown_signal().context("the stop signals")?;
        let (leave, leaving) = tokio::sync::oneshot::channel::<()>();
        let heartbeat = registration.map(|registration| {
            tokio::spawn(async move {
                registration
                    .run(
                        async {
                            let _ = leaving.await;
                        },
                        |failure| eprintln!("faasched node serve: {failure}"),
                    )
                    .await;
            })
        });
        let mut signal = None;
        let mut ingress = Ingress::new(runtime.clone());
        ingress
            .drain_timeout(drain)
            .load_report(load)
            .max_body_bytes(max_body)
            .front(front.clone());
        let drained = ingress
            .serve(listener, async {
                signal = Some(stop.await);
                // The gateway stops routing here before the node drains.
                if let Some(heartbeat) = heartbeat {
                    let _ = leave.send(());
                    let _ = heartbeat.await;
                }
            })
            .await
            .context("serving")?;
        anyhow::Ok(Served {
            drained,
            signal,
            cold_starts: containers.map(|c| c.cold_starts()).unwrap_or_default(),
        })
    })?;
    // The ingress has let go of it: stopping joins the threads.
    drop(runtime);
    Ok(served)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_ranges_and_refuse_nonsense() {
        let cpus = |text: &str| text.parse::<CpuList>().map(|l| l.0);
        assert_eq!(cpus("2-4,7").unwrap(), [2, 3, 4, 7]);
        assert_eq!(cpus("0").unwrap(), [0]);
        for bad in ["", "a", "4-2", "1-", "1,,2"] {
            assert!(cpus(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cpu_limit_is_a_positive_number_of_ms() {
        assert_eq!(positive_ms("1000").unwrap(), 1_000 * MS);
        assert_eq!(positive_ms("0.5").unwrap(), MS / 2);
        for bad in ["0", "-1", "NaN", "inf", "x"] {
            assert!(positive_ms(bad).is_err(), "{bad}");
        }
    }
    use crate::node::catalog::NODE_CATALOG;
    use faasched_live::node::invoke::{Answer, Invoke};
    use faasched_model::{MS, SEC};
    use std::sync::mpsc;
    use std::time::Instant;

    /// Every node policy of the catalogue runs live: a dispatcher and six
    /// workers (the paper's node, which `darc-paper` needs) serve a mix of
    /// `bimodal-high`'s two functions, short ones due soon and longer ones
    /// due late, and answer each request once with its result.
    #[test]
    fn every_catalogued_policy_serves_a_bimodal_mix() {
        let workload = Workload::builtin("bimodal-high").unwrap();
        let labels: Vec<&str> = workload.functions.iter().map(|f| f.name).collect();
        for spec in NODE_CATALOG.iter() {
            let node = LiveNode {
                policy: spec.name.to_string(),
                dispatchers: 1,
                workers: 6,
                workload: Some("bimodal-high".into()),
                deadlines: Deadlines::default(),
                estimator: Estimate::Given,
                preempt_test: PreemptTest::Paper,
                host: Host {
                    cpus: Vec::new(),
                    poll: false,
                    cpu_limit: SEC,
                    memory_limit: 1 << 20,
                    max_sandboxes: 64,
                    max_modules: faasched_wasm::DEFAULT_MAX_MODULES,
                    max_compile: faasched_wasm::DEFAULT_MAX_COMPILE,
                    max_output: faasched_wasm::DEFAULT_MAX_OUTPUT,
                    cache: None,
                    spin_steps_per_ms: None,
                },
                containers: None,
                admission: Admission::default(),
            };
            let runtime = node
                .start()
                .unwrap_or_else(|e| panic!("{}: {e:#}", spec.name));
            let (tx, rx) = mpsc::channel::<(u64, Answer)>();
            for i in 0..60u64 {
                let long = i % 3 == 0;
                let tx = tx.clone();
                runtime.submit(
                    Invoke {
                        function: "spin".into(),
                        query: Some(format!("us={}", if long { 2_000 } else { 20 })),
                        headers: Default::default(),
                        body: Default::default(),
                        label: Some(labels[usize::from(long) % labels.len()].to_string()),
                        deadline: Some(if long { 200 * MS } else { 2 * MS }),
                        received: Instant::now(),
                        cancel: Default::default(),
                    },
                    Box::new(move |a| tx.send((i, a)).unwrap()),
                );
            }
            drop(tx);
            let mut seen = [false; 60];
            while let Ok((i, answer)) = rx.recv_timeout(Duration::from_secs(60)) {
                assert!(answer.is_ok(), "{}: request {i}: {answer:?}", spec.name);
                assert!(
                    !std::mem::replace(&mut seen[i as usize], true),
                    "{}: twice",
                    spec.name
                );
            }
            assert!(seen.iter().all(|&s| s), "{}: unanswered", spec.name);
            assert_eq!(runtime.in_flight(), 0, "{}", spec.name);
        }
    }

    /// A node with FunctionBench's table (times a thousandth) in 512 MB
    /// under GreedyDual: a function's first request starts its container
    /// cold, the next finds it warm; a 512 MB function then evicts what is
    /// idle, and the first function starts cold again.
    #[test]
    fn a_node_with_containers_starts_cold_then_warm_and_evicts_for_memory() {
        let node = LiveNode {
            policy: "sledgescale".into(),
            dispatchers: 1,
            workers: 1,
            workload: None,
            deadlines: Deadlines::default(),
            estimator: Estimate::Given,
            preempt_test: PreemptTest::Paper,
            host: Host {
                cpus: Vec::new(),
                poll: false,
                cpu_limit: SEC,
                memory_limit: 1 << 20,
                max_sandboxes: 8,
                max_modules: faasched_wasm::DEFAULT_MAX_MODULES,
                max_compile: faasched_wasm::DEFAULT_MAX_COMPILE,
                max_output: faasched_wasm::DEFAULT_MAX_OUTPUT,
                cache: None,
                spin_steps_per_ms: Some(1000),
            },
            containers: Some(NodeContainers {
                table: FunctionTable::functionbench().scaled(0.001).unwrap(),
                memory_mb: 512,
                keep_alive: crate::cluster::catalog::keep_alive("greedy-dual").unwrap(),
                cold_start: ColdStart::default(),
            }),
            admission: Admission::default(),
        };
        let runtime = node.start().unwrap();
        let ask = |label: &str| {
            let (tx, rx) = mpsc::channel::<Answer>();
            runtime.submit(
                Invoke {
                    function: "spin".into(),
                    query: Some("us=100".into()),
                    headers: Default::default(),
                    body: Default::default(),
                    label: Some(label.into()),
                    deadline: None,
                    received: Instant::now(),
                    cancel: Default::default(),
                },
                Box::new(move |a| tx.send(a).unwrap()),
            );
            rx.recv_timeout(Duration::from_secs(60))
                .unwrap()
                .unwrap()
                .cold
        };
        assert!(ask("web-serving"));
        assert!(!ask("web-serving"));
        assert!(ask("aes-encryption"), "256 + 256 MB fit");
        assert!(ask("video-encoding"), "512 MB: both idle ones go");
        assert!(ask("web-serving"));
        let status = runtime.status_json();
        let c = &status["executor"];
        assert_eq!(
            (c["cold_starts"].as_u64(), c["warm_starts"].as_u64()),
            (Some(4), Some(1))
        );
        assert_eq!(c["evictions"].as_u64(), Some(3), "{c}");
    }
}
