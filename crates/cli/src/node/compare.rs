//! `faasched node compare`: the same node runs simulated and live, side by
//! side, with each world's ranking of the policies.

use super::args::NodeArgs;
use super::host::HostArgs;
use super::replay::{live_settings, measured_spin, replayed};
use super::simulate::Sweep;
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::node::compare::compare;
use faasched_lab::output::publish_comparison;
use faasched_report::node::{write_outputs, write_report};
use std::path::PathBuf;

/// Simulate a node run and replay it live under each policy, and set the
/// two side by side.
///
/// Per policy, over all requests: latency percentiles, the p99.9 slowdown,
/// the miss rate and preemptions per request, simulated and live; then,
/// per rate, the order each world puts the policies in by p99.9 slowdown
/// and whether it is the same. The simulation charges the node's costs of
/// `--costs` (the file `faasched node calibrate` writes from this machine);
/// the replay is `faasched node replay` with the same options. Try, on two
/// cores:
///
///   faasched node compare -w bimodal-high --workers 1 --stretch 10 --load 0.7 -p sledgescale,rr,shinjuku
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    node: NodeArgs,
    #[command(flatten)]
    sweep: Sweep,
    #[command(flatten)]
    host: HostArgs,
    /// Write compare.json and compare.csv, and each world's summary.json,
    /// summary.csv and report.html in sim/ and live/, into this directory,
    /// together, once all are written.
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print compare.json to stdout instead of the table.
    #[arg(long)]
    json: bool,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        let host = measured_spin(self.host.host()?)?;
        let sim = self.sweep.run(&self.node, &mut |setup, policy, bar| {
            setup.run(policy, |_| bar.inc(1))
        })?;
        let mut live = self.sweep.run(&self.node, &mut |setup, policy, bar| {
            replayed(setup, policy, &host, bar)
        })?;
        live_settings(&mut live.settings, &host);
        let comparison = compare(&sim, &live)?;
        let json = serde_json::to_string_pretty(&serde_json::json!({
            "sim_settings": sim.settings,
            "live_settings": live.settings,
            "comparison": comparison,
        }))? + "\n";
        publish_comparison(
            self.out.as_deref(),
            self.json,
            &json,
            &comparison.to_csv(),
            &comparison.render(),
            |world, sub, staged| {
                let (summary, title) = match world {
                    "sim" => (&sim, "faasched node compare: simulated"),
                    _ => (&live, "faasched node compare: live"),
                };
                write_outputs(sub, summary, staged)?;
                write_report(sub, title, summary, staged)?;
                Ok(())
            },
        )
    }
}
