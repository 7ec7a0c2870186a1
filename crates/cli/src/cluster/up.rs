//! `faasched cluster up`: a live cluster on this machine, node runtimes and
//! the gateway in front of them, stopped together.

use super::gateway::GatewayArgs;
use anyhow::{Context, Result, bail};
use clap::Args as ClapArgs;
use faasched_lab::cluster::live::cpu_limit_ms;
use faasched_lab::cluster::up::Nodes;
use std::time::Duration;

/// Start a live cluster here: --nodes node runtimes (`faasched node serve
/// --functions ...`, each a process pinned to --cores-per-node CPUs of its
/// own where the machine has them) and the gateway in front of them
/// (`faasched cluster gateway`), in this process.
///
/// The nodes keep containers of the workload's functions (the function
/// table's times scaled by --time-scale, as the gateway's) within
/// --memory-mb each under
/// --keep-alive; the gateway routes with --policy on their load reports.
/// Try:
///
///   curl -X POST -H 'x-faasched-function: aes-encryption-0' '127.0.0.1:8080/invoke/spin?us=6'
///
/// SIGTERM or Ctrl-C drains the gateway, then stops every node (each
/// answers what it accepted) and exits; no node outlives it.
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    nodes: NodeArgs,
    #[command(flatten)]
    gateway: GatewayArgs,
}

/// A live cluster's nodes, as `cluster up` and `cluster replay` start them.
#[derive(ClapArgs, Debug)]
pub struct NodeArgs {
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
    node_policy: String,
    /// Memory for containers of each node, MB.
    #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..))]
    pub memory_mb: u32,
    /// The nodes' keep-alive policy: greedy-dual, ttl or lru.
    #[arg(long, default_value = "greedy-dual")]
    pub keep_alive: String,
    /// What a cold start waits after compiling, as a share of the
    /// function's (scaled) cold − warm time.
    #[arg(long, default_value_t = 1.0)]
    pub cold_wait: f64,
}

impl NodeArgs {
    /// Workers of each node.
    pub fn workers(&self) -> u32 {
        self.cores_per_node.saturating_mul(self.workers_per_core)
    }

    /// What each `node serve` is given: these options, with the workload's
    /// functions in containers at `time_scale` (and a CPU limit that lets
    /// the longest of them run), publishing its load every `period_ms` (as
    /// often as the gateway polls) and draining `drain_s`. Errs on an
    /// unknown workload or a bad scale.
    pub fn serve_args(
        &self,
        workload: &str,
        time_scale: f64,
        period_ms: u64,
        drain_s: f64,
    ) -> Result<Vec<String>> {
        let cpu_limit_ms =
            cpu_limit_ms(workload, time_scale).with_context(|| format!("--workload {workload}"))?;
        Ok([
            ("--policy", self.node_policy.clone()),
            ("--functions", workload.to_string()),
            ("--time-scale", time_scale.to_string()),
            ("--cpu-limit-ms", cpu_limit_ms.to_string()),
            ("--memory-mb", self.memory_mb.to_string()),
            ("--keep-alive", self.keep_alive.clone()),
            ("--cold-wait", self.cold_wait.to_string()),
            ("--load-period-ms", period_ms.to_string()),
            ("--drain-s", drain_s.to_string()),
        ]
        .into_iter()
        .flat_map(|(k, v)| [k.to_string(), v])
        .collect())
    }
}

impl Args {
    pub fn execute(self) -> Result<()> {
        let g = &self.gateway;
        let node_args = self
            .nodes
            .serve_args(&g.workload, g.time_scale, g.period_ms, g.drain_s)?;
        let nodes = Nodes::start(
            self.nodes.nodes,
            self.nodes.cores_per_node,
            self.nodes.workers(),
            &node_args,
        )
        .context("starting the nodes")?;
        for (i, ((pid, cpus), addr)) in nodes.placement().into_iter().zip(nodes.addrs()).enumerate()
        {
            eprintln!(
                "faasched cluster up: node {i} (pid {pid}, {}) at {addr}",
                cpus.map_or_else(|| "unpinned".to_string(), |c| format!("CPUs {c}"))
            );
        }
        let served = self
            .gateway
            .serve(nodes.addrs().iter().map(|a| a.to_string()).collect());
        let exits = nodes.stop(Duration::from_secs_f64(self.gateway.drain_s.max(0.0)));
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
}
