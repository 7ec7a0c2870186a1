//! `faasched cluster gateway`'s flags; the lab serves it
//! ([`faasched_lab::cluster::gateway`]).

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::catalog::ROUTERS;
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
    gateway: GatewayArgs,
}

/// The gateway's own options, as `cluster gateway` and `cluster up` take
/// them.
#[derive(ClapArgs, Debug)]
pub struct GatewayArgs {
    /// The router (`faasched cluster simulate --help` lists them).
    #[arg(long, short = 'p', default_value = "ch-rlu", value_parser = router)]
    policy: String,
    /// The workload whose function table gives each function's memory,
    /// warm and cold time: functionbench (ten copies of each CH-RLU Table 1
    /// function, `aes-encryption-0` .. `-9`, ...).
    #[arg(long, short = 'w', default_value = "functionbench")]
    workload: String,
    /// Address to listen on (port 0 picks a free one, printed on stderr).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// How often every node's load is polled, ms (the nodes publish every
    /// --load-period-ms; 5 s, the kernel's, by default).
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    period_ms: u64,
    /// Seed of the router's random draws.
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
    /// Seconds to answer the requests already read after SIGTERM.
    #[arg(long, default_value_t = 10.0)]
    drain_s: f64,
    /// Seconds an invocation waits for its node's answer; past them the
    /// client gets 502 node-unreachable, so a node that hangs holds nothing
    /// for ever.
    #[arg(long, default_value_t = 60.0)]
    forward_timeout_s: f64,
    /// The function table's warm and cold times multiplied by this: give
    /// the nodes' --time-scale.
    #[arg(long, default_value_t = 0.01)]
    time_scale: f64,
}

/// `--policy`: a router of the catalogue.
pub(super) fn router(name: &str) -> Result<String, String> {
    ROUTERS
        .lookup(name)
        .map(|r| r.name.to_owned())
        .map_err(|e| e.to_string())
}

impl Args {
    pub fn execute(self) -> Result<()> {
        self.gateway.options().serve(self.nodes)
    }
}

impl GatewayArgs {
    /// The options as the lab takes them.
    pub fn options(self) -> GatewayOptions {
        GatewayOptions {
            policy: self.policy,
            workload: self.workload,
            listen: self.listen,
            period_ms: self.period_ms,
            seed: self.seed,
            drain_s: self.drain_s,
            forward_timeout_s: self.forward_timeout_s,
            time_scale: self.time_scale,
        }
    }
}
