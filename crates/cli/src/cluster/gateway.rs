//! `faasched cluster gateway`'s flags; the lab serves it
//! ([`faasched_lab::cluster::gateway`]).

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::gateway::GatewayOptions;

/// Route invocations over live node runtimes (`faasched node serve`) with a
/// cluster router, the simulator's, unchanged.
///
/// Every `POST /invoke/NAME?QUERY` is routed by the function it names
/// (x-faasched-function, else NAME), whose memory, warm and cold times come
/// from --workload's table; it goes to the chosen node over a kept-alive
/// connection with its headers, and the node's answer comes back with
/// x-faasched-node: HOST:PORT. The gateway polls every node's GET /load
/// every --period-ms (its load average over its cores) and routes on the
/// last reports; a node that misses 3 polls in a row is routed around
/// until it answers again. Nodes may also register themselves (`node
/// serve --register`, or PUT /nodes/HOST:PORT; DELETE to leave): a
/// registered node is routed to at once and dropped once it misses 3 polls,
/// until it registers again. A node that fails before its answer gets the
/// client a 502 with x-faasched-error: node-unreachable; a router's drop,
/// or no node up, a 503 overloaded. GET /metrics and GET /status tell the
/// rest. Try:
///
///   curl -X POST -H 'x-faasched-function: aes-encryption-0' '127.0.0.1:8080/invoke/spin?us=587'
///
/// SIGTERM or Ctrl-C stops accepting, answers every request already read,
/// prints the decision time and the forwarding overhead, and exits.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// A node runtime, HOST:PORT (repeat for each), kept for the gateway's
    /// life; none if the nodes register themselves.
    #[arg(long = "node", value_name = "HOST:PORT")]
    nodes: Vec<String>,
    #[command(flatten)]
    gateway: GatewayOptions,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        self.gateway.serve(self.nodes)
    }
}
