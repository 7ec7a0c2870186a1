//! `faasched cluster load`: CH-RLU's Locust clients against a live
//! cluster; the table of `cluster simulate` and (with `--out`) its
//! summary.json, summary.csv and report.html, plus requests.csv.

use super::publish::publish;
use anyhow::{Context, Result, bail};
use clap::Args as ClapArgs;
use faasched_lab::cluster::load::LiveLoadSpec;
use faasched_lab::interrupt;
use faasched_live::node::load::End;
use faasched_model::MS;
use faasched_report::Staged;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

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
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The gateway (or a single node), HOST:PORT
    #[arg(long, value_name = "HOST:PORT")]
    target: String,
    /// functionbench, or functionbench-bursts (two of the ten most
    /// weighted functions ten times as frequent every 30 s of the paper's
    /// time: its Fig. 9)
    #[arg(long, short = 'w', default_value = "functionbench")]
    workload: String,
    /// Closed-loop clients, one connection each (the paper: 20 for low
    /// load, 120 for heavy)
    #[arg(long, default_value_t = 20)]
    clients: u32,
    /// Seconds of sending, on the wall clock
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
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
        let spec = LiveLoadSpec {
            target: self.target.clone(),
            workload: self.workload.clone(),
            clients: self.clients,
            seconds: self.seconds,
            time_scale: self.time_scale,
            seed: self.seed,
            label: self.label.clone(),
            drain: self.drain_ms * MS,
            timeout: self.timeout_ms * MS,
        };
        eprintln!(
            "time scale {}: the functions' times and the think time are {} of the paper's",
            self.time_scale, self.time_scale
        );
        interrupt::catch()?;
        let load = spec.run(&interrupt::requested)?;
        let rows = [load.row.clone()];
        publish(
            self.out.as_deref(),
            self.json,
            "faasched cluster load",
            &load.settings,
            &rows,
            Some(("requests.csv", &|dir, staged| {
                write_requests(dir, &load, staged)
            })),
        )?;
        if load.run.end == End::Interrupted {
            let signal = interrupt::requested_by().unwrap_or(0);
            bail!(
                "interrupted by signal {signal} after {} calls were sent; what was measured is {}",
                load.run.records.len(),
                match &self.out {
                    Some(dir) => format!("in {}", dir.display()),
                    None => "printed above".to_string(),
                }
            );
        }
        Ok(())
    }
}

/// Writes requests.csv into `dir`, staged with the other files.
fn write_requests(
    dir: &Path,
    load: &faasched_lab::cluster::load::LiveLoad,
    staged: &mut Staged,
) -> Result<()> {
    let path = dir.join("requests.csv");
    let mut csv = BufWriter::new(staged.create(&path)?);
    load.write_csv(&mut csv)
        .with_context(|| format!("writing {}", path.display()))?;
    csv.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
