//! `faasched bench`: the simulator's speed, the learner's, and the live
//! steering's costs, as medians of repeated runs.

mod agent;
mod gateway;
mod runtime;

use anyhow::Result;
use clap::Subcommand;
use faasched_lab::bench::{cluster, learn, node, sim, watch};

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Simulated invocations per wall-second (workload generation and engine;
    /// metrics aggregation is excluded): (a) srpt on a 5,000-invocation
    /// Huawei-like window on 1 core, the job of ALPS's own simulator; (b) cfs on
    /// 1,000,000 Huawei-like invocations, 56 cores, 90% load; (c) the same with
    /// fifo and srpt.
    Sim(sim::Options),
    /// Simulated requests per wall-second through the node engine (workload
    /// generation and engine; metrics aggregation is excluded) for every node
    /// policy, sledgescale first: 1 dispatcher × 6 workers at 80% of the
    /// `exponential` workload's capacity (mean work 100 µs, so 48,000
    /// requests/s). First it runs sledgescale on --requests and on four times
    /// as many and prints the process's peak resident memory after each:
    /// the engine keeps only the requests in flight, so it should not grow.
    Node(node::Options),
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
    Cluster(cluster::Options),
    /// The ALPS learner's time per window (SRPT simulation plus training) for
    /// windows of 100, 500, 1,000 and 5,000 finished invocations of the
    /// Huawei-like workload on 56 cores, to set beside ALPS Table 2.
    Learn(learn::Options),
    /// Live: how promptly and at what CPU cost a watcher notices that a real
    /// process used a given CPU time (a POSIX CPU-time timer, as faasched's
    /// steering uses; its sleep-then-check fallback; SFS's 1 ms polling),
    /// and what one class change costs
    /// (sched_setattr against a fork+exec of chrt, as SFS runs schedtool).
    /// Spins one process (SCHED_FIFO on the last CPU when privileged) for a
    /// few seconds.
    Watch(watch::Options),
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
            Command::Sim(o) => sim::run(o),
            Command::Node(o) => node::run(o),
            Command::Cluster(o) => cluster::run(o),
            Command::Learn(o) => learn::run(o),
            Command::Watch(o) => watch::run(o),
            Command::Agent(a) => a.execute(),
            Command::Runtime(r) => r.execute(),
            Command::Gateway(g) => g.execute(),
        }
    }
}
