//! `faasched bench gateway`: what the cluster gateway adds to an invocation.

use crate::os::args::count;
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::bench::gateway::{self, Routed};
use faasched_lab::bench::runtime::Latency;
use faasched_lab::bench::{BUILD, release_only};
use faasched_lab::cluster::catalog::contenders;
use faasched_lab::outln;

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

fn latency(l: &Latency) -> String {
    format!(
        "p50 {:>7.1} us  p99 {:>8.1} us  max {:>9.1} us",
        l.p50_us, l.p99_us, l.max_us
    )
}

impl Bench {
    pub fn execute(self) -> Result<()> {
        release_only("gateway")?;
        // Refuse an unknown router before starting anything.
        contenders(&self.policy)?;
        let json = self.json;
        if !json {
            outln!(
                "{BUILD} build, 2 nodes of sledgescale 1 dispatcher x 1 worker, {} sequential no-ops each",
                self.round_trips
            )?;
        }
        let measured = gateway::measure(
            self.round_trips,
            &self.policy,
            |r: &Routed| {
                if !json {
                    outln!(
                        "{:<14} via gateway  {}  decision p50 {:>5.2} us  overhead p50 {:>6.1} us  ({} received, {} answered)",
                        r.policy,
                        latency(&r.round_trip),
                        r.decision_p50_us,
                        r.overhead_p50_us,
                        r.received,
                        r.answered
                    )?;
                }
                Ok(())
            },
            |direct| {
                if !json {
                    outln!("{:<14} to a node    {}", "direct", latency(direct))?;
                }
                Ok(())
            },
        )?;
        if json {
            outln!("{}", serde_json::to_string_pretty(&measured)?)?;
        }
        Ok(())
    }
}
