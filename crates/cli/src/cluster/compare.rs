//! `faasched cluster compare`: each router live over fresh nodes, then the
//! cluster simulator on the same run with the costs measured here, side by
//! side.

use super::publish::publish_files;
use super::replay::{ReplayArgs, each_run};
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::cluster::compare::{CompareSpec, compare, measure_spin};
use faasched_lab::interrupt;
use faasched_lab::output::publish_comparison;
use std::path::PathBuf;

/// Run each router live, as `cluster replay` does, then simulate the same
/// run (workload, seed, nodes as servers, their cores, memory and
/// keep-alive, the load period) with the costs measured on this machine,
/// and set the two worlds side by side: per router the invocations, cold
/// starts, global latency increase, median slowdown, p99 latency and load
/// variance, simulated / live, then each world's ranking of the routers by
/// global increase, cold starts and load variance.
///
/// The costs the simulator is given: `spin`'s CPU time over the work
/// asked (warm times), a compile of the function plus the nodes' wait (cold
/// starts), each live call's latency less its node's time (transport; the
/// median over all the runs' calls). The simulator runs the paper's clock
/// (the live run's divided by --time-scale); its latencies are shown on
/// the live clock. Every node spins the steps per ms measured here once.
/// Try, on two cores:
///
///   faasched cluster compare -p ch-rlu,least-loaded --clients 4 --seconds 60
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    run: ReplayArgs,
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
        // The options checked before anything is measured or started.
        self.run.spec(&[])?;
        let spin = measure_spin()?;
        eprintln!("spin: {spin} steps per ms here, given to every node");
        let nodes = &self.run.nodes;
        let spec = CompareSpec {
            replay: self
                .run
                .spec(&["--spin-steps-per-ms".to_string(), spin.to_string()])?,
            memory_mb: nodes.memory_mb,
            keep_alive: nodes.keep_alive.clone(),
            cold_wait: nodes.cold_wait,
            spin_steps_per_ms: spin,
        };
        self.run.announce();
        interrupt::catch()?;
        let compared = compare(&spec, &interrupt::requested, each_run)?;
        interrupt::check()?;
        let c = &compared.costs;
        eprintln!(
            "costs measured: warm {:.3} of the work asked, compile {:.3} ms, transport {:.3} ms \
             (median of {} calls)",
            c.warm_ratio,
            c.compile as f64 / 1e6,
            c.transport as f64 / 1e6,
            c.transport_calls
        );
        let mut live = self.run.settings(&compared.live);
        live["spin_steps_per_ms"] = serde_json::json!(spin);
        live["transport_calls"] = serde_json::json!(c.transport_calls);
        live["seconds_paper"] =
            serde_json::json!(spec.replay.load.seconds / spec.replay.load.time_scale);
        let json = serde_json::to_string_pretty(&serde_json::json!({
            "sim_settings": compared.sim_settings,
            "live_settings": live,
            "costs": compared.costs,
            "comparison": compared.comparison,
        }))? + "\n";
        let live_rows: Vec<_> = compared.live.iter().map(|l| l.row.clone()).collect();
        publish_comparison(
            self.out.as_deref(),
            self.json,
            &json,
            &compared.comparison.to_csv(),
            &compared.comparison.render(),
            |world, sub, staged| match world {
                "sim" => publish_files(
                    sub,
                    "faasched cluster compare: simulated",
                    &compared.sim_settings,
                    &compared.sim,
                    staged,
                ),
                _ => publish_files(
                    sub,
                    "faasched cluster compare: live",
                    &live,
                    &live_rows,
                    staged,
                ),
            },
        )
    }
}
