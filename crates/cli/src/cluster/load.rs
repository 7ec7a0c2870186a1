//! `faasched cluster load`: CH-RLU's Locust clients (or Fig. 10's
//! open-loop rising burst) against a live cluster; the table of `cluster
//! simulate` and (with `--out`) its summary.json, summary.csv and
//! report.html, plus requests.csv.

use super::publish::publish;
use anyhow::{Context, Result, bail};
use clap::Args as ClapArgs;
use faasched_lab::cluster::load::{LiveLoad, LiveLoadSpec, OpenLoop, open_loop};
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
        let open = open_loop(&self.workload, self.time_scale);
        let (clients, seconds) = OpenLoop::sized(
            &self.workload,
            self.time_scale,
            self.clients,
            self.seconds,
            (CLIENTS, SECONDS),
        );
        let spec = LiveLoadSpec {
            target: self.target.clone(),
            workload: self.workload.clone(),
            clients,
            seconds,
            time_scale: self.time_scale,
            seed: self.seed,
            label: self.label.clone(),
            drain: self.drain_ms * MS,
            timeout: self.timeout_ms * MS,
        };
        match open {
            None => eprintln!(
                "time scale {}: the functions' times and the think time are {} of the paper's",
                self.time_scale, self.time_scale
            ),
            Some(_) => eprintln!(
                "time scale {}: the functions' times and the invocations' times are {} of the \
                 paper's; {} s of sending over {} connections",
                self.time_scale, self.time_scale, spec.seconds, spec.clients
            ),
        }
        interrupt::catch()?;
        let load = spec.run(&interrupt::requested)?;
        report_lateness(&load);
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

/// Closed-loop clients unless --clients says.
const CLIENTS: u32 = 20;

/// Seconds of a closed loop's sending unless --seconds says.
const SECONDS: f64 = 60.0;

/// Says on stderr how late an open loop's calls were sent (a late call's
/// latency counts from its time all the same: this is the sender's share).
pub fn report_lateness(load: &LiveLoad) {
    if let Some(late) = load.late {
        eprintln!(
            "{}: calls sent late by p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            load.row.policy,
            late.p50 as f64 / 1e3,
            late.p99 as f64 / 1e3,
            late.max as f64 / 1e3,
        );
    }
}

/// Writes requests.csv into `dir`, staged with the other files.
fn write_requests(dir: &Path, load: &LiveLoad, staged: &mut Staged) -> Result<()> {
    let path = dir.join("requests.csv");
    let mut csv = BufWriter::new(staged.create(&path)?);
    load.write_csv(&mut csv)
        .with_context(|| format!("writing {}", path.display()))?;
    csv.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
