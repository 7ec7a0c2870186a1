//! `faasched bench runtime`: the live node runtime's costs.

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::bench::runtime::{self, CommandRequest, Settings};
use faasched_lab::workload::count;

/// The WebAssembly node runtime on this machine, sledgescale on one
/// dispatcher and one worker (pinned to CPUs 0 and 1 where there are more
/// than two): a hot no-op's round trip in process and over HTTP on
/// loopback (p50, p99, max), one worker's no-ops per second with --window
/// in flight, and an urgent no-op's round trip while a 20 ms spin runs on
/// the worker, which SledgeScale's dispatcher preempts for it. Each with
/// sleeping idle threads, then with polling ones. Last, a fresh no-op
/// sandbox's set-up from the pool. Needs a release build.
#[derive(ClapArgs, Debug)]
pub struct Bench {
    /// Sequential round trips per latency (after a tenth as many to warm up).
    #[arg(long, default_value_t = 20_000, value_parser = count)]
    round_trips: u64,
    /// No-ops of the throughput measurement.
    #[arg(long, default_value_t = 200_000, value_parser = count)]
    requests: u64,
    /// No-ops kept in flight by it.
    #[arg(long, default_value_t = 64, value_parser = count)]
    window: u64,
    /// Preemption rounds.
    #[arg(long, default_value_t = 200, value_parser = count)]
    preemptions: u64,
    /// Also measure the round trip in process of the WASI command in FILE
    /// (with --query and --body): functions/c/hello.c, as
    /// scripts/build-functions builds it, is target/functions/hello.wasm.
    #[arg(long, value_name = "FILE")]
    command: Option<std::path::PathBuf>,
    /// The command's query, its QUERY_STRING (`n=1000`); by default none.
    #[arg(long, requires = "command")]
    query: Option<String>,
    /// A file whose bytes are the command's body, its standard input
    /// (functions/inputs/grace-hopper.jpg for thumbnail); by default none.
    #[arg(long, value_name = "FILE", requires = "command")]
    body: Option<std::path::PathBuf>,
    /// Print `{"settings", "cpus", "sandbox_setup", "modes": [{"mode",
    /// "noop", "command", "noop_http", "noop_per_s", "preempting_noop",
    /// "switch"}]}`, latencies as `{"count", "p50_us", "p99_us", "max_us"}`
    /// (`command` null without --command).
    #[arg(long)]
    json: bool,
}

impl Bench {
    pub fn execute(self) -> Result<()> {
        let settings = Settings {
            round_trips: self.round_trips,
            requests: self.requests,
            window: self.window,
            preemptions: self.preemptions,
        };
        let command = self
            .command
            .as_deref()
            .map(|module| CommandRequest::read(module, self.query, self.body.as_deref()))
            .transpose()?;
        runtime::run(settings, command.as_ref(), self.json)
    }
}
