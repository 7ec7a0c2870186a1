//! `faasched node load`: drive a live node runtime over HTTP with a
//! workload's requests and measure them; a table and (with `--out`)
//! requests.csv and summary.json.

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::node::load::{LoadOptions, connections};
use faasched_lab::node::run::Deadlines;
use std::path::PathBuf;

/// Drive a live node runtime (`faasched node serve`) with a workload's
/// requests over HTTP, and measure each one's latency from when it was meant
/// to be sent.
///
/// Open loop (the default): the workload's seeded request stream, the one
/// `node simulate` runs for the same --workload, --rate, --seconds and
/// --seed, fixes when each request is sent. Requests go out over
/// --connections kept-alive connections; a request that finds them all busy
/// waits for one, and that wait counts in its latency (latency = completion
/// − intended send time, so a stalled server cannot hide its stall by
/// slowing the client down: no coordinated omission).
///
/// Closed loop (--closed N): N clients, each sending its next request as
/// soon as the previous one is answered, for the highest throughput the
/// runtime sustains; the stream gives the functions and work, not the times.
///
/// A request is `POST /invoke/spin?us=WORK` with its workload function and
/// deadline in headers (docs/RUNTIME.md, "HTTP API"). Sending stops after
/// --seconds; requests in flight then get --drain-ms to finish. Ctrl-C stops
/// early, still writes what was measured, and exits with status 1. Failed
/// requests (no connection, a reset, a timeout, a non-2xx answer) are
/// counted by kind; only a target that refuses the first connection is an
/// error.
///
/// Example: `faasched node load --target 127.0.0.1:8080 --workload
/// bimodal-high --rate 2000 --seconds 10 --out load-2000`.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The node runtime to load, as HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    target: String,
    /// A built-in node workload: fixed, bimodal-high, bimodal-extreme,
    /// sd-vbs, exponential, lognormal (SledgeScale's Table 3), colocated
    /// (its Fig. 1).
    #[arg(long, short = 'w', value_name = "NAME", default_value = "exponential")]
    workload: String,
    /// Offered requests per second (open loop).
    #[arg(long, required_unless_present = "closed", conflicts_with = "closed")]
    rate: Option<f64>,
    /// Seconds of sending (open loop: the stream's arrivals in that time).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Connections kept alive for the open loop [default: one per 10 ms of
    /// requests at --rate, at least 16, at most 512].
    #[arg(long, value_name = "C", value_parser = connections, conflicts_with = "closed")]
    connections: Option<usize>,
    /// Closed loop with N clients, each on its own connection, sending back
    /// to back.
    #[arg(long, value_name = "N", value_parser = connections)]
    closed: Option<usize>,
    /// Seed of the request stream (arrivals, functions, work).
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
    /// Relative deadlines sent with each request, as `node simulate` takes
    /// them: `10x` of the work (the default), a time (`500us`), per function
    /// (`sift=1.13ms,*=10x`).
    #[arg(long, value_name = "SPEC")]
    deadline: Option<Deadlines>,
    /// How long a request waits for its whole response once sent, ms.
    #[arg(long, value_name = "MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    timeout_ms: u64,
    /// How long the requests in flight get to finish after --seconds, ms.
    #[arg(long, value_name = "MS", default_value_t = 5_000,
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    drain_ms: u64,
    /// Write requests.csv (one row per request) and summary.json into this
    /// directory, put in place together once both are written.
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    json: bool,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        LoadOptions {
            target: self.target,
            workload: self.workload,
            rate: self.rate,
            seconds: self.seconds,
            connections: self.connections,
            closed: self.closed,
            seed: self.seed,
            deadline: self.deadline,
            timeout_ms: self.timeout_ms,
            drain_ms: self.drain_ms,
            out: self.out,
            json: self.json,
        }
        .run()
    }
}
