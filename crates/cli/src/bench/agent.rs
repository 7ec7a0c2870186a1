//! `faasched bench agent`: the agent's CPU per invocation.

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use faasched_lab::bench::{agent, release_only};
use faasched_lab::outln;

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
        release_only("agent")?;
        let exe = std::env::current_exe().context("finding the faasched binary")?;
        let settings = agent::Settings {
            policy: self.policy.clone(),
            rate: self.rate,
            seconds: self.seconds,
            runs: self.runs,
            functions: self.functions,
        };
        let m = agent::measure(&exe, settings, |run, r| {
            if !self.json {
                eprintln!(
                    "run {}: {} invocations, agent {:.1} µs CPU each, {:.3}% of one core, {:.2} wake-ups each ({:.0}/s achieved, {} reaped before the last reading)",
                    run + 1,
                    r.invocations,
                    r.cpu_per_invocation_us,
                    r.core_percent,
                    r.wakeups_per_invocation,
                    r.achieved_rate,
                    r.estimated
                );
            }
        })?;
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&m)?)?;
        } else {
            outln!(
                "agent ({}) at {}/s for {} s, median of {} runs: {:.1} µs of CPU per invocation, \
                 {:.3}% of one core, {:.2} wake-ups per invocation\n\
                 a bare wake-up (a thread blocked in read, woken by a byte) costs {:.1} µs of CPU here",
                self.policy,
                self.rate,
                self.seconds,
                self.runs,
                m.median_cpu_per_invocation_us,
                m.median_core_percent,
                m.median_wakeups_per_invocation,
                m.bare_wakeup_us
            )?;
        }
        Ok(())
    }
}
