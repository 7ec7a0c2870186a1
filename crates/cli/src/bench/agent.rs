//! `faasched bench agent`: the agent's CPU per invocation.

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::bench::agent::{self, Settings};

/// The agent's CPU cost: it starts an agent on a socket of its own and,
/// each run, hands it `--rate` short processes a second for `--seconds`
/// through `faasched exec` (each runs `true`), then reads the agent's CPU
/// time from /proc/PID/schedstat. Reports CPU per invocation and as a share
/// of one core, per run and the median. Needs a release build, and the
/// policy's privileges (root for alps).
#[derive(ClapArgs, Debug)]
pub struct Bench {
    /// The agent's policy.
    #[arg(long, short = 'p', default_value = "alps")]
    policy: String,
    /// Invocations handed over per second.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=2000))]
    rate: u32,
    /// Length of one run, s.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=600))]
    seconds: u32,
    /// Runs; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Distinct functions the invocations cycle through.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    functions: u32,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

impl Bench {
    pub fn execute(self) -> Result<()> {
        let settings = Settings {
            policy: self.policy,
            rate: self.rate,
            seconds: self.seconds,
            runs: self.runs,
            functions: self.functions,
        };
        agent::run(settings, self.json)
    }
}
