//! A live cluster on this machine (`faasched cluster up`): node runtimes as
//! child processes of this one, each pinned to cores of its own, and the
//! gateway in front of them, stopped together.
//!
//! Each node is `faasched node serve --config -` (this same binary) on a
//! free loopback port, in a process group of its own (a Ctrl-C reaches the
//! supervisor, which stops the nodes after its gateway has drained), told
//! to die with its parent (SIGKILL if the supervisor dies outright). It is
//! given its options as JSON on stdin ([`ServeOptions`]) and says where it
//! listens in one JSON line on stdout ([`Ready`]); its stderr is passed
//! on, prefixed with the node's number. Dropping [`Nodes`] kills whatever
//! is still running, and a node that does not start is killed at once, so
//! no exit path leaves a node behind.

use super::gateway::GatewayOptions;
use super::live::cpu_limit_ms;
use crate::node::live::Host;
use crate::node::serve::{
    ContainerOptions, Estimate, MEMORY_LIMIT_MIB, PreemptTest, Ready, ServeOptions,
};
use anyhow::{Context, Result, anyhow, bail};
use faasched_model::{MS, Nanos};
use faasched_sys::process;
use faasched_workload::node::Deadlines;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a node may take past its own drain to exit after SIGTERM
/// before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// How long a node may take to say it listens (it compiles the functions'
/// modules and measures `spin` first) before it is killed.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// What `faasched cluster up` runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The nodes.
    pub nodes: ClusterNodes,
    /// The gateway in front of them.
    pub gateway: GatewayOptions,
}

/// A live cluster's nodes, as `cluster up` and `cluster replay` start them.
#[derive(Clone, Debug, clap::Args)]
pub struct ClusterNodes {
    /// Node runtimes to start.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub nodes: u32,
    /// CPUs of each node, its own where the machine has them (the
    /// dispatcher shares the first); its load is reported over them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub cores_per_node: u32,
    /// Worker threads of each node per core. While a node has fewer
    /// invocations in flight than workers, each runs on a thread of its
    /// own and the kernel shares the node's cores among them, as it shares
    /// a server's cores among containers (OpenWhisk runs each invocation in
    /// a container of its own, capped at one core): processor sharing, as
    /// `cluster simulate` models a server. One worker per core queues
    /// instead.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub workers_per_core: u32,
    /// The node policy every node runs among its workers (`jsq`: each
    /// invocation to the worker with the fewest unfinished, so a thread of
    /// its own while there are enough).
    #[arg(long, default_value = "jsq")]
    pub node_policy: String,
    /// Memory for containers of each node, MB.
    #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..))]
    pub memory_mb: u32,
    /// The nodes' keep-alive policy: greedy-dual, ttl or lru.
    #[arg(long, default_value = "greedy-dual")]
    pub keep_alive: String,
    /// What a cold start waits after loading the function's code, as a
    /// share of the function's (scaled) cold − warm time. By default 1 for
    /// `spin` standing in for the table's function (loading it costs
    /// nothing of the function's) and 0 for a real function, whose cold
    /// start is its load; given (0 to 100), the share for every function.
    #[arg(long)]
    pub cold_wait: Option<f64>,
    /// Register the functions DIR's manifests describe on every node
    /// (`node serve --deploy`): real functions for the calls to name
    /// (`scripts/build-functions` writes the suite's, with a manifest each,
    /// into target/functions). Needs --cache-dir.
    #[arg(long, value_name = "DIR", requires = "cache_dir")]
    pub deploy: Option<PathBuf>,
    /// The compiled code every node loads its functions from, at start and
    /// at every cold start (`node serve --cache-dir`); compiled into it
    /// here first, once, where it lacks them: a cold start of a real
    /// function is then a load from it, as on a platform that keeps its
    /// functions precompiled.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl ClusterNodes {
    /// Workers of each node.
    pub fn workers(&self) -> u32 {
        self.cores_per_node.saturating_mul(self.workers_per_core)
    }

    /// What each `node serve` is given (bar the CPUs it is pinned to):
    /// these options, with the workload's functions in containers at
    /// `time_scale` (and a CPU limit that lets the longest of them run),
    /// publishing its load over its cores every `period_ms` (as often as
    /// the gateway polls) and draining `drain_s`. Errs on an unknown
    /// workload or a bad scale.
    pub fn serve_options(
        &self,
        workload: &str,
        time_scale: f64,
        period_ms: u64,
        drain_s: f64,
    ) -> Result<ServeOptions> {
        let cpu_limit_ms =
            cpu_limit_ms(workload, time_scale).with_context(|| format!("--workload {workload}"))?;
        let workers = self.workers();
        Ok(ServeOptions {
            listen: "127.0.0.1:0".to_string(),
            policy: self.node_policy.clone(),
            dispatchers: 1,
            workers,
            workload: None,
            deadline: Deadlines::default(),
            estimate: Estimate::Exact,
            preempt_test: PreemptTest::Paper,
            drain_s,
            memory_mb: self.memory_mb,
            containers: Some(ContainerOptions {
                functions: workload.to_string(),
                time_scale,
                keep_alive: self.keep_alive.clone(),
                cold_wait: self.cold_wait,
            }),
            load_period_ms: period_ms,
            load_cores: Some(self.cores_per_node),
            register: None,
            token_file: None,
            invoke_token_file: None,
            no_token: false,
            max_connections: faasched_live::http::DEFAULT_MAX_CONNECTIONS,
            max_body: faasched_live::node::ingress::DEFAULT_MAX_BODY_BYTES,
            deploy: self.deploy.as_deref().map(absolute).transpose()?,
            baseline: false,
            // The cluster simulator's servers admit every invocation (they
            // share their cores, and wait for memory), and a live cluster
            // is set beside it: its nodes admit everything too.
            admission: Default::default(),
            // Its nodes listen on loopback, beside the gateway.
            tls: Default::default(),
            host: Host {
                cpus: Vec::new(),
                poll: false,
                cpu_limit: (cpu_limit_ms * MS as f64).round() as Nanos,
                memory_limit: MEMORY_LIMIT_MIB << 20,
                // A sandbox for every worker's invocation at least, beyond
                // the node's default of 128.
                max_sandboxes: workers.max(128),
                max_modules: faasched_wasm::DEFAULT_MAX_MODULES,
                max_compile: faasched_wasm::DEFAULT_MAX_COMPILE,
                max_output: faasched_wasm::DEFAULT_MAX_OUTPUT,
                cache: self.cache_dir.as_deref().map(absolute).transpose()?,
                spin_steps_per_ms: None,
            },
        })
    }
}

/// Compiles the functions `node` deploys into its cache, once, before any
/// node starts and registers them from there; the functions read.
pub fn precompile(node: &ServeOptions) -> Result<Vec<crate::node::deploy::Deployed>> {
    crate::node::deploy::read_compiled(node.deploy.as_deref(), &node.host)
}

/// `path` from the root, as a node started elsewhere reads it.
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| path.display().to_string())
}

/// Starts the nodes, then the gateway in front of them in this process;
/// once a signal has stopped the gateway, stops every node and says how
/// they ended. An error if the gateway failed or a node did not stop
/// cleanly.
pub fn run(o: Options) -> Result<()> {
    let g = &o.gateway;
    // Checked before any node starts.
    let drain = g.spec(Vec::new())?.drain;
    let node = ServeOptions {
        // The gateway's tokens guard the nodes' code and invocations too.
        token_file: g.token_file.clone(),
        invoke_token_file: g.invoke_token_file.clone(),
        ..o.nodes
            .serve_options(&g.workload, g.time_scale, g.period_ms, g.drain_s)?
    };
    precompile(&node)?;
    let nodes =
        Nodes::start(o.nodes.nodes, o.nodes.cores_per_node, &node).context("starting the nodes")?;
    for (i, n) in nodes.nodes.iter().enumerate() {
        eprintln!(
            "faasched cluster up: node {i} (pid {}, {}) at {}",
            n.child.id(),
            match &n.cpus[..] {
                [] => "unpinned".to_string(),
                [c] => format!("CPUs {c}"),
                [first, .., last] => format!("CPUs {first}-{last}"),
            },
            n.addr
        );
    }
    let served = g.serve(nodes.addrs().iter().map(|a| a.to_string()).collect());
    let exits = nodes.stop(drain);
    let unclean: Vec<String> = exits
        .iter()
        .filter(|e| !e.clean)
        .map(|e| e.addr.to_string())
        .collect();
    eprintln!(
        "faasched cluster up: {} node(s) stopped, {} cleanly",
        exits.len(),
        exits.len() - unclean.len()
    );
    served?;
    if !unclean.is_empty() {
        bail!("nodes that did not stop cleanly: {}", unclean.join(", "));
    }
    Ok(())
}

/// One node process.
struct Node {
    child: Child,
    pidfd: OwnedFd,
    addr: SocketAddr,
    cpus: Vec<usize>,
}

/// The node processes of a live cluster.
pub struct Nodes {
    nodes: Vec<Node>,
}

/// How one node ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeExit {
    /// Its address.
    pub addr: SocketAddr,
    /// Whether it exited with status 0 after SIGTERM (it answered all it
    /// had accepted); false if it failed or had to be killed.
    pub clean: bool,
}

impl Nodes {
    /// Starts `count` nodes of `cores` cores, each serving `node`: node i
    /// pinned to CPUs `i·cores .. (i+1)·cores` where the machine has that
    /// many, unpinned otherwise.
    pub fn start(count: u32, cores: u32, node: &ServeOptions) -> Result<Nodes> {
        if count == 0 || cores == 0 || node.workers == 0 {
            bail!("a cluster needs at least one node of at least one core and one worker");
        }
        // The containers checked here, once, rather than
        // by every node as it fails to start.
        node.node()?;
        let exe = std::env::current_exe().context("this program's path, to start its nodes")?;
        let pin = faasched_sys::sched::online_cpus() >= (count * cores) as usize;
        let mut nodes = Nodes { nodes: Vec::new() };
        for i in 0..count {
            let cpus = match pin {
                true => (i * cores..(i + 1) * cores).map(|c| c as usize).collect(),
                false => Vec::new(),
            };
            let options = ServeOptions {
                host: Host {
                    cpus,
                    ..node.host.clone()
                },
                ..node.clone()
            };
            nodes.nodes.push(Node::start(i, &exe, &options)?);
        }
        Ok(nodes)
    }

    /// Each node's address, in order.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(|n| n.addr).collect()
    }

    /// Stops every node with SIGTERM (each answers what it accepted, for
    /// `drain` at most) and waits for them, killing any that outlives its
    /// drain by [`EXIT_GRACE`].
    pub fn stop(mut self, drain: Duration) -> Vec<NodeExit> {
        for n in &self.nodes {
            let _ = process::signal(&n.pidfd, libc::SIGTERM);
        }
        let deadline = Instant::now() + drain + EXIT_GRACE;
        let mut exits = Vec::new();
        for n in &mut self.nodes {
            let clean = loop {
                match n.child.try_wait() {
                    Ok(Some(status)) => break status.success(),
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    _ => {
                        let _ = n.child.kill();
                        let _ = n.child.wait();
                        break false;
                    }
                }
            };
            exits.push(NodeExit {
                addr: n.addr,
                clean,
            });
        }
        exits
    }
}

impl Drop for Nodes {
    /// Kills and reaps whatever still runs (an error, a panic, a stop that
    /// already waited finds nothing left).
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if matches!(n.child.try_wait(), Ok(None)) {
                let _ = n.child.kill();
            }
            let _ = n.child.wait();
        }
    }
}

impl Node {
    /// Starts node `i`, `exe node serve --config -` given `options`, and
    /// waits until it says where it listens; one that fails to, or takes
    /// longer than [`READY_TIMEOUT`], is killed, its last words on stderr
    /// passed on before the error.
    fn start(i: u32, exe: &Path, options: &ServeOptions) -> Result<Node> {
        let mut command = Command::new(exe);
        command
            .args(["node", "serve", "--config", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        process::dies_with_parent(&mut command, libc::SIGKILL);
        let mut child = command
            .spawn()
            .with_context(|| format!("starting node {i}"))?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let passed_on = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("node {i}: {line}");
            }
        });
        let ready = process::pidfd_open(child.id() as libc::pid_t)
            .context("its pidfd")
            .and_then(|pidfd| Ok((pidfd, ready(&mut child, options)?)));
        match ready {
            Ok((pidfd, addr)) => Ok(Node {
                child,
                pidfd,
                addr,
                cpus: options.host.cpus.clone(),
            }),
            Err(e) => {
                let _ = child.kill();
                let status = child.wait();
                // Its stderr ends with it: what it said comes first.
                let _ = passed_on.join();
                let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
                Err(e.context(format!("node {i} did not start ({status})")))
            }
        }
    }
}

/// Writes `options` to a node's stdin, then reads its [`Ready`] line from
/// its stdout, for [`READY_TIMEOUT`] at most: the address it listens on.
fn ready(child: &mut Child, options: &ServeOptions) -> Result<SocketAddr> {
    let mut stdin = child.stdin.take().expect("stdin is piped");
    serde_json::to_writer(&mut stdin, options)
        .map_err(anyhow::Error::from)
        .and_then(|()| Ok(stdin.flush()?))
        .context("giving it its options")?;
    // Its end of the pipe reads to the end of the options.
    drop(stdin);
    let stdout = child.stdout.take().expect("stdout is piped");
    let (line, read) = mpsc::channel();
    std::thread::spawn(move || {
        let mut first = String::new();
        let _ = line.send(BufReader::new(stdout).read_line(&mut first).map(|_| first));
    });
    let first = read
        .recv_timeout(READY_TIMEOUT)
        .map_err(|_| {
            anyhow!(
                "it did not say where it listens within {} s",
                READY_TIMEOUT.as_secs()
            )
        })?
        .context("reading its stdout")?;
    if first.is_empty() {
        bail!("it exited before saying where it listens");
    }
    let ready: Ready = serde_json::from_str(&first)
        .with_context(|| format!("its readiness line `{}`", first.trim_end()))?;
    Ok(ready.listening)
}
