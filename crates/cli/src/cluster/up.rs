//! `faasched cluster up`'s flags, and the nodes' that `cluster replay`
//! shares; the lab runs it ([`faasched_lab::cluster::up`]).

use super::gateway::GatewayArgs;
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::up::{self, ClusterNodes};

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
    nodes: u32,
    /// CPUs of each node, its own where the machine has them (the
    /// dispatcher shares the first); its load is reported over them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    cores_per_node: u32,
    /// Worker threads of each node per core. While a node has fewer
    /// invocations in flight than workers, each runs on a thread of its
    /// own and the kernel shares the node's cores among them, as it shares
    /// a server's cores among containers (OpenWhisk runs each invocation in
    /// a container of its own, capped at one core): processor sharing, as
    /// `cluster simulate` models a server. One worker per core queues
    /// instead.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
    workers_per_core: u32,
    /// The node policy every node runs among its workers (`jsq`: each
    /// invocation to the worker with the fewest unfinished, so a thread of
    /// its own while there are enough).
    #[arg(long, default_value = "jsq")]
    node_policy: String,
    /// Memory for containers of each node, MB.
    #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..))]
    memory_mb: u32,
    /// The nodes' keep-alive policy: greedy-dual, ttl or lru.
    #[arg(long, default_value = "greedy-dual")]
    keep_alive: String,
    /// What a cold start waits after compiling, as a share of the
    /// function's (scaled) cold − warm time.
    #[arg(long, default_value_t = 1.0)]
    cold_wait: f64,
}

impl NodeArgs {
    /// The nodes as the lab takes them.
    pub fn options(self) -> ClusterNodes {
        ClusterNodes {
            nodes: self.nodes,
            cores_per_node: self.cores_per_node,
            workers_per_core: self.workers_per_core,
            node_policy: self.node_policy,
            memory_mb: self.memory_mb,
            keep_alive: self.keep_alive,
            cold_wait: self.cold_wait,
        }
    }
}

impl Args {
    pub fn execute(self) -> Result<()> {
        up::run(up::Options {
            nodes: self.nodes.options(),
            gateway: self.gateway.options(),
        })
    }
}
