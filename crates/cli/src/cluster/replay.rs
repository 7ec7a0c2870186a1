//! `faasched cluster replay`'s flags, and the replay's that `cluster
//! compare` shares; the lab runs it ([`faasched_lab::cluster::replay`]).

use super::gateway::router;
use super::up::NodeArgs;
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::replay::{self, ReplayOptions};
use faasched_lab::output::Outputs;
use std::path::PathBuf;

/// Run each router live, one after another, each over fresh nodes started
/// here (`cluster up`'s) with CH-RLU's clients against it (`cluster
/// load`'s), and summarise the runs side by side as `cluster simulate`
/// does: the same table and, with --out, summary.json, summary.csv and
/// report.html, one row per router.
///
/// Every router starts from cold nodes and sees the same clients (the same
/// seed draws the same functions and think times, though what the answers'
/// times make of them is the machine's; with functionbench-rising, the same
/// invocations at the same times).
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    run: ReplayArgs,
    /// Write summary.json, summary.csv and report.html into this directory,
    /// together, once all are written.
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    json: bool,
}

/// What a live replay runs, as `cluster replay` and `cluster compare` take
/// it.
#[derive(ClapArgs, Debug)]
pub struct ReplayArgs {
    /// Routers to run, comma-separated, each over fresh nodes.
    #[arg(
        long,
        short = 'p',
        value_delimiter = ',',
        default_value = "ch-rlu,ch-bl,openwhisk,least-loaded",
        value_parser = router
    )]
    policy: Vec<String>,
    #[command(flatten)]
    nodes: NodeArgs,
    /// `functionbench`, `functionbench-bursts` (Fig. 9's bursts) or
    /// `functionbench-rising` (Fig. 10's open-loop rising burst, `cluster
    /// load`'s).
    #[arg(long, short = 'w', default_value = "functionbench")]
    workload: String,
    /// The function table's times and the clients' think time multiplied
    /// by this, on the nodes, the gateway and the clients alike.
    #[arg(long, default_value_t = 0.01)]
    time_scale: f64,
    /// How often the nodes publish their loads and the gateway polls
    /// them, ms (the kernel's 5 s scaled by --time-scale by default).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    period_ms: Option<u64>,
    /// Closed-loop clients per run (by default 4); in the open loop, the
    /// connections (by default `cluster load`'s).
    #[arg(long)]
    clients: Option<u32>,
    /// Seconds each router's clients send (by default 60; in the open
    /// loop, the whole burst: its 30 minutes × --time-scale).
    #[arg(long)]
    seconds: Option<f64>,
    /// Seed of the routers' and the clients' draws.
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
}

impl ReplayArgs {
    /// The replay as the lab takes it.
    pub fn options(self) -> ReplayOptions {
        ReplayOptions {
            policy: self.policy,
            nodes: self.nodes.options(),
            workload: self.workload,
            time_scale: self.time_scale,
            period_ms: self.period_ms,
            clients: self.clients,
            seconds: self.seconds,
            seed: self.seed,
        }
    }
}

impl Args {
    pub fn execute(self) -> Result<()> {
        replay::run(replay::Options {
            replay: self.run.options(),
            outputs: Outputs {
                dir: self.out,
                json: self.json,
            },
        })
    }
}
