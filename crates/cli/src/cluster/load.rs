//! `faasched cluster load`'s flags; the lab runs it
//! ([`faasched_lab::cluster::load`]).

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::load;
use faasched_lab::output::Outputs;
use std::path::PathBuf;

/// Run CH-RLU's closed-loop clients (its Locust threads) against a live
/// cluster: `faasched cluster gateway` in front of `faasched node serve
/// --functions functionbench` nodes.
///
/// Each of --clients clients keeps one connection and sends POST
/// /invoke/spin?us={the function's warm time, scaled} with
/// x-faasched-function: NAME, the function drawn as `cluster simulate
/// --workload functionbench` draws it (ten copies of each CH-RLU Table 1
/// function, weighted as the Azure trace's), a think time U(0, 1 s) after
/// its last answer. --time-scale shrinks the table's times and the think
/// time alike (give the nodes' --time-scale), so the run is the paper's
/// sped up uniformly. Sending stops after --seconds; the calls in flight
/// then get --drain-ms to be answered. Each answer counts as an invocation
/// of `cluster simulate`'s summary: its node from x-faasched-node, a cold
/// start from x-faasched-cold: 1; a 503, a 502 or no answer is a drop,
/// counted by kind in summary.json's settings.errors. Ctrl-C stops
/// sending and writes what was measured, then exits with an error.
///
/// --workload functionbench-rising is an open loop instead: the
/// invocations `cluster simulate` replays for it (the same seed, the same
/// functions at the same times), each sent at its time × --time-scale
/// whether or not the earlier ones were answered, over --clients
/// connections; a call's latency counts from its time even when it went
/// out late, and how late the calls went out is printed on stderr.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The gateway (or a single node), HOST:PORT
    #[arg(long, value_name = "HOST:PORT")]
    target: String,
    /// functionbench, functionbench-bursts (two of the ten most weighted
    /// functions ten times as frequent every 30 s of the paper's time: its
    /// Fig. 9), or functionbench-rising (open loop, 2 to 18 invocations/s
    /// of the paper's time over 25 minutes, held to 30: its Fig. 10)
    #[arg(long, short = 'w', default_value = "functionbench")]
    workload: String,
    /// Closed-loop clients, one connection each (the paper: 20 for low
    /// load, 120 for heavy; by default 20); in the open loop, the
    /// connections the calls share (by default one per 100 ms of calls at
    /// the peak rate: 180 at --time-scale 0.01)
    #[arg(long)]
    clients: Option<u32>,
    /// Seconds of sending, on the wall clock (by default 60; in the open
    /// loop, the whole burst: its 30 minutes × --time-scale)
    #[arg(long)]
    seconds: Option<f64>,
    /// What the function table's times and the think time are multiplied
    /// by (the nodes' --time-scale)
    #[arg(long, default_value_t = 0.01)]
    time_scale: f64,
    /// Seed of the functions' weights, the bursts and the clients' draws
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
    /// The run's name in the outputs' policy column, e.g. the gateway's
    /// router
    #[arg(long, default_value = "live")]
    label: String,
    /// How long the calls in flight when sending stops get to be answered,
    /// ms
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    drain_ms: u64,
    /// How long a call's answer is awaited at most, ms
    #[arg(long, default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    timeout_ms: u64,
    /// Write summary.json, summary.csv, report.html and requests.csv (one
    /// row per call) into this directory, together, once all are written
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table
    #[arg(long)]
    json: bool,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        load::run(load::Options {
            target: self.target,
            workload: self.workload,
            clients: self.clients,
            seconds: self.seconds,
            time_scale: self.time_scale,
            seed: self.seed,
            label: self.label,
            drain_ms: self.drain_ms,
            timeout_ms: self.timeout_ms,
            outputs: Outputs {
                dir: self.out,
                json: self.json,
            },
        })
    }
}
