//! `faasched cluster up`'s flags, and the nodes' that `cluster replay`
//! shares; the lab runs it ([`faasched_lab::cluster::up`]).

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::gateway::GatewayOptions;
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
    nodes: ClusterNodes,
    #[command(flatten)]
    gateway: GatewayOptions,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        up::run(up::Options {
            nodes: self.nodes,
            gateway: self.gateway,
        })
    }
}
