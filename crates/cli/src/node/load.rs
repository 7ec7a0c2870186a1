//! `faasched node load`: drive a live node runtime over HTTP with a
//! workload's requests and measure them; a table and (with `--out`)
//! requests.csv and summary.json.

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::node::load::LoadOptions;

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
/// deadline in headers (docs/RUNTIME.md, "HTTP API"), or, for a workload
/// function given a --function, `POST /invoke/CALL` with them and its
/// --body: the paper's workloads on real functions. Sending stops after
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
    #[command(flatten)]
    run: LoadOptions,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        self.run.run()
    }
}
