//! `faasched bench gateway`: what the cluster gateway adds to an invocation.

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::bench::gateway::{self, Options};
use faasched_lab::workload::count;

/// The cluster gateway on this machine: two node runtimes (sledgescale, one
/// dispatcher x one worker each) on loopback, and a client sending no-ops
/// back to back on one kept-alive connection, to a node directly and then
/// through a gateway under each --policy. Prints each round trip (p50, p99,
/// max), and the gateway's own median decision time (the router alone)
/// and forwarding overhead (its time for an invocation less the node's
/// x-faasched-runtime-us). Needs a release build.
#[derive(ClapArgs, Debug)]
pub struct Bench {
    /// Sequential no-ops per measurement (after a tenth as many to warm up).
    #[arg(long, default_value_t = 20_000, value_parser = count)]
    round_trips: u64,
    /// Routers, comma-separated, each behind a gateway of its own.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = "ch-rlu,ch-bl,openwhisk,least-loaded"
    )]
    policy: Vec<String>,
    /// Print `{"round_trips", "direct", "routed": [{"policy", "round_trip",
    /// "decision_p50_us", "overhead_p50_us", "received", "answered"}]}`,
    /// latencies as `{"count", "p50_us", "p99_us", "max_us"}`.
    #[arg(long)]
    json: bool,
}

impl Bench {
    pub fn execute(self) -> Result<()> {
        gateway::run(Options {
            round_trips: self.round_trips,
            policies: self.policy,
            json: self.json,
        })
    }
}
