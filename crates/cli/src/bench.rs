//! `faasched bench`: the simulator's speed, the learner's, and the live
//! steering's costs, as medians of repeated runs.

mod agent;
mod gateway;
mod runtime;

use crate::os::args::count;
use anyhow::Result;
use clap::{Args as ClapArgs, Subcommand};
use faasched_lab::bench::{cluster, learn, node, sim, watch};
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Simulated invocations per wall-second (workload generation and engine;
    /// metrics aggregation is excluded): (a) srpt on a 5,000-invocation
    /// Huawei-like window on 1 core, the job of ALPS's own simulator; (b) cfs on
    /// 1,000,000 Huawei-like invocations, 56 cores, 90% load; (c) the same with
    /// fifo and srpt.
    Sim(Sim),
    /// Simulated requests per wall-second through the node engine (workload
    /// generation and engine; metrics aggregation is excluded) for every node
    /// policy, sledgescale first: 1 dispatcher × 6 workers at 80% of the
    /// `exponential` workload's capacity (mean work 100 µs, so 48,000
    /// requests/s). First it runs sledgescale on --requests and on four times
    /// as many and prints the process's peak resident memory after each:
    /// the engine keeps only the requests in flight, so it should not grow.
    Node(Node),
    /// Simulated invocations per wall-second through the cluster engine
    /// (workload generation and engine; metrics aggregation is excluded) for
    /// every cluster router, ch-rlu first, with greedy-dual keep-alive on
    /// every server: 100 servers × 4 cores and 8 GB, an azure-functions
    /// population of 1,000 functions at 70% load. First it runs ch-rlu on
    /// --invocations and on four times as many and prints the process's
    /// peak resident memory after each: the engine keeps only the
    /// invocations in flight and the containers, so it should not grow.
    /// Last, the median time of one routing decision of each router on
    /// the 100 servers as ch-rlu saw them after 100,000 invocations.
    Cluster(Cluster),
    /// The ALPS learner's time per window (SRPT simulation plus training) for
    /// windows of 100, 500, 1,000 and 5,000 finished invocations of the
    /// Huawei-like workload on 56 cores, to set beside ALPS Table 2.
    Learn(Learn),
    /// Live: how promptly and at what CPU cost a watcher notices that a real
    /// process used a given CPU time (faasched's sleep-then-check, a POSIX
    /// CPU-time timer, SFS's 1 ms polling), and what one class change costs
    /// (sched_setattr against a fork+exec of chrt, as SFS runs schedtool).
    /// Spins one process (SCHED_FIFO on the last CPU when privileged) for a
    /// few seconds.
    Watch(Watch),
    /// The agent's CPU per invocation and share of one core while it is
    /// handed 100 short processes a second (`faasched agent`).
    Agent(agent::Bench),
    /// Live: the WebAssembly node runtime on this machine (sledgescale, one
    /// dispatcher, one worker): a hot no-op's round trip through the
    /// dispatcher to a worker and back, in process and over HTTP on
    /// loopback; one worker's no-ops per second; an urgent no-op's round
    /// trip while a long spin runs (preempted for it). With sleeping
    /// workers, then polling ones.
    Runtime(runtime::Bench),
    /// Live: what the cluster gateway adds to an invocation on this machine:
    /// no-ops to a node runtime directly and through a gateway under each
    /// router, with the gateway's decision time and forwarding overhead.
    Gateway(gateway::Bench),
}

impl Command {
    pub fn execute(self) -> Result<()> {
        match self {
            Command::Sim(s) => sim::run(sim::Options {
                runs: s.runs,
                invocations: s.invocations,
                seed: s.seed,
                json: s.json,
            }),
            Command::Node(n) => node::run(node::Options {
                runs: n.runs,
                requests: n.requests,
                seed: n.seed,
                json: n.json,
            }),
            Command::Cluster(c) => cluster::run(cluster::Options {
                runs: c.runs,
                invocations: c.invocations,
                samples: c.samples,
                seed: c.seed,
                json: c.json,
                export: c.export,
            }),
            Command::Learn(l) => learn::run(learn::Options {
                runs: l.runs,
                json: l.json,
            }),
            Command::Watch(w) => watch::run(watch::Options {
                trials: w.trials,
                json: w.json,
            }),
            Command::Agent(a) => a.execute(),
            Command::Runtime(r) => r.execute(),
            Command::Gateway(g) => g.execute(),
        }
    }
}

#[derive(ClapArgs, Debug)]
pub struct Watch {
    /// Targets watched per method (10 to 14 ms of CPU apart); class changes
    /// are ten times as many.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    trials: u32,
    /// Print the measurements as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(ClapArgs, Debug)]
pub struct Learn {
    /// Runs per window size; the median is reported.
    #[arg(long, default_value_t = 21, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Print `[{"records", "median_s"}]`.
    #[arg(long)]
    json: bool,
}

#[derive(ClapArgs, Debug)]
pub struct Sim {
    /// Runs per scenario, ten times as many for the millisecond-long (a);
    /// the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Invocations of the large scenarios (b, c).
    #[arg(long, default_value_t = 1_000_000, value_parser = count)]
    invocations: u64,
    /// Seed of the scenarios' workloads (and of the kernel's random
    /// disciplines). Recorded results use the default; `scripts/pgo-build`
    /// trains on another, so that the build it makes never saw the workload
    /// it is measured on.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print `[{"scenario", "policy", "invocations", "wall_s", "invocations_per_s"}]`.
    #[arg(long)]
    json: bool,
}

#[derive(ClapArgs, Debug)]
pub struct Node {
    /// Runs per policy; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Requests per run (the memory check's long run has four times as
    /// many).
    #[arg(long, default_value_t = 1_000_000, value_parser = count)]
    requests: u64,
    /// Seed of the workload. Recorded results use the default.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print `{"memory": {...}, "policies": [{"policy", "requests", "wall_s",
    /// "requests_per_s", ...}]}`.
    #[arg(long)]
    json: bool,
}

#[derive(ClapArgs, Debug)]
pub struct Cluster {
    /// Runs per router; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Invocations per run (the memory check's long run has four times as
    /// many).
    #[arg(long, default_value_t = 1_000_000, value_parser = count)]
    invocations: u64,
    /// Samples of 1,000 routing decisions per router; the median is
    /// reported.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    samples: u32,
    /// Seed of the population, its arrivals and the routers. Recorded
    /// results use the default.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print `{"memory": {...}, "routers": [{"router", "invocations",
    /// "wall_s", "invocations_per_s", ...}], "view": {...}, "decisions":
    /// [{"router", "median_ns", ...}]}`.
    #[arg(long)]
    json: bool,
    /// Time nothing: write the job a run times (--invocations, --seed) into
    /// this directory for another simulator to run: functions.csv (the
    /// function table), invocations.csv (a workload CSV) and cluster.json
    /// (servers, cores, memory, keep-alive).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["runs", "samples", "json"])]
    export: Option<PathBuf>,
}
