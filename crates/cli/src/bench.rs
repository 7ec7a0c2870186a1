//! `faasched bench`: the simulator's speed, the learner's, and the live
//! steering's costs, as medians of repeated runs.

mod agent;
mod gateway;
mod runtime;

use crate::os::args::count;
use anyhow::Result;
use clap::{Args as ClapArgs, Subcommand};
use faasched_lab::bench::{BUILD, cluster, learn, node, release_only, sim};
use faasched_lab::outln;
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
            Command::Sim(s) => s.execute(),
            Command::Node(n) => n.execute(),
            Command::Cluster(c) => c.execute(),
            Command::Learn(l) => l.execute(),
            Command::Watch(w) => w.execute(),
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

impl Watch {
    fn execute(self) -> Result<()> {
        let realtime = faasched_live::os::privilege::probe().realtime;
        let m = faasched_live::os::watchbench::run(self.trials as usize, realtime)?;
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&m)?)?;
            return Ok(());
        }
        outln!(
            "spinning process: {} on the last CPU; targets 10 to 14 ms of its CPU apart",
            if m.realtime {
                "SCHED_FIFO"
            } else {
                "SCHED_OTHER"
            },
        )?;
        outln!(
            "{:<34} {:>7} {:>22} {:>14}",
            "watch method",
            "watches",
            "overshoot µs p50/p99/max",
            "CPU/watch µs"
        )?;
        for w in &m.watching {
            let [p50, p99, max] = w.overshoot_us;
            outln!(
                "{:<34} {:>7} {:>22} {:>14.1}",
                w.method,
                w.watches,
                format!("{p50:.0}/{p99:.0}/{max:.0}"),
                w.watcher_cpu_us
            )?;
        }
        outln!(
            "{:<34} {:>7} {:>22}",
            "class change",
            "changes",
            "median µs"
        )?;
        for c in &m.changing {
            outln!("{:<34} {:>7} {:>22.1}", c.method, c.changes, c.median_us)?;
        }
        Ok(())
    }
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

impl Learn {
    fn execute(self) -> Result<()> {
        release_only("learn")?;
        let results = learn::measure(self.runs, |m| match self.json {
            true => Ok(()),
            false => outln!(
                "window {:>5} records  {:>3} functions  median {:>10.6} s per lesson",
                m.records,
                m.functions,
                m.median_s
            ),
        })?;
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&results)?)?;
        }
        Ok(())
    }
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

impl Sim {
    fn execute(self) -> Result<()> {
        release_only("sim")?;
        if !self.json {
            let hint = match BUILD {
                "release" => " (scripts/pgo-build makes the faster profile-guided one)",
                _ => "",
            };
            outln!("{BUILD} build{hint}, seed {}", self.seed)?;
        }
        let results = sim::measure(self.runs, self.invocations, self.seed, |m| {
            match self.json {
                true => Ok(()),
                false => outln!(
                    "{:<14} {:<5} {:>9} invocations  median {:>8.4} s  {:>10.0} invocations/s  {:>5.1} events/invocation  peak RSS {:.0} MiB",
                    m.scenario,
                    m.policy,
                    m.invocations,
                    m.wall_s,
                    m.invocations_per_s,
                    m.kernel_events as f64 / m.invocations as f64,
                    m.peak_rss_mib.unwrap_or(f64::NAN)
                ),
            }
        })?;
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&results)?)?;
        }
        Ok(())
    }
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

impl Node {
    fn execute(self) -> Result<()> {
        release_only("node")?;
        let mib = |v: Option<f64>| v.unwrap_or(f64::NAN);
        if !self.json {
            outln!(
                "{BUILD} build, seed {}, {} workload, {} dispatcher × {} workers at {:.0}% load",
                self.seed,
                node::WORKLOAD,
                node::DISPATCHERS,
                node::WORKERS,
                node::LOAD * 100.0
            )?;
        }
        let results = node::measure(
            self.runs,
            self.requests,
            self.seed,
            |m| match self.json {
                true => Ok(()),
                false => outln!(
                    "memory: {} peak RSS {:.1} MiB after {} requests, {:.1} MiB after {} ({:+.1} MiB)",
                    m.policy,
                    mib(m.short_peak_rss_mib),
                    m.short_requests,
                    mib(m.long_peak_rss_mib),
                    m.long_requests,
                    mib(m.growth_mib)
                ),
            },
            |m| match self.json {
                true => Ok(()),
                false => outln!(
                    "{:<15} {:>9} requests at {:>6.0}/s  median {:>8.4} s  {:>10.0} requests/s  {:>5.2} events/request  {:>5.3} preemptions/request  peak RSS {:.0} MiB",
                    m.policy,
                    m.requests,
                    m.rate_per_s,
                    m.wall_s,
                    m.requests_per_s,
                    m.events as f64 / m.requests as f64,
                    m.preemptions as f64 / m.requests as f64,
                    mib(m.peak_rss_mib)
                ),
            },
        )?;
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&results)?)?;
        }
        Ok(())
    }
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

impl Cluster {
    fn execute(self) -> Result<()> {
        if let Some(dir) = &self.export {
            let job = cluster::export(dir, self.invocations, self.seed)?;
            eprintln!(
                "wrote {} invocations of seed {} ({} functions on {} servers × {} cores, {} MB each) to {}: {}, {}, {}",
                job.invocations,
                job.seed,
                job.functions,
                job.servers,
                job.cores,
                job.memory_mb,
                dir.display(),
                cluster::EXPORT_FUNCTIONS,
                cluster::EXPORT_INVOCATIONS,
                cluster::EXPORT_CLUSTER
            );
            return Ok(());
        }
        release_only("cluster")?;
        let mib = |v: Option<f64>| v.unwrap_or(f64::NAN);
        if !self.json {
            outln!(
                "{BUILD} build, seed {}, azure-functions: {} functions on {} servers × {} cores ({} MB each) at {:.0}% load, {} keep-alive",
                self.seed,
                cluster::FUNCTIONS,
                cluster::SERVERS,
                cluster::CORES,
                cluster::MEMORY_MB,
                cluster::LOAD * 100.0,
                cluster::KEEP_ALIVE
            )?;
        }
        let speeds = cluster::measure(
            self.runs,
            self.invocations,
            self.seed,
            |m| match self.json {
                true => Ok(()),
                false => outln!(
                    "memory: {} peak RSS {:.1} MiB after {} invocations, {:.1} MiB after {} ({:+.1} MiB)",
                    m.router,
                    mib(m.short_peak_rss_mib),
                    m.short_invocations,
                    mib(m.long_peak_rss_mib),
                    m.long_invocations,
                    mib(m.growth_mib)
                ),
            },
            |m| match self.json {
                true => Ok(()),
                false => outln!(
                    "{:<18} {:>9} invocations at {:>5.1}/s  median {:>8.4} s  {:>10.0} invocations/s  {:>5.2} events/invocation  {:>5.3} cold/invocation  {:>5.3} dropped/invocation ({:.3} by the router)  peak RSS {:.0} MiB",
                    m.router,
                    m.invocations,
                    m.rate_per_s,
                    m.wall_s,
                    m.invocations_per_s,
                    m.events as f64 / m.invocations as f64,
                    m.cold_starts as f64 / m.invocations as f64,
                    m.dropped as f64 / m.invocations as f64,
                    m.dropped_by_router as f64 / m.invocations as f64,
                    mib(m.peak_rss_mib)
                ),
            },
        )?;
        let decisions = cluster::decisions(
            self.samples,
            self.seed,
            |v| match self.json {
                true => Ok(()),
                false => outln!(
                    "route() on {} servers as {} saw them after {} invocations (mean load {:.2}, max {:.2}, {} idle warm containers, {} running), median of {} samples of {} decisions:",
                    v.servers,
                    v.router,
                    v.after_invocations,
                    v.mean_load,
                    v.max_load,
                    v.warm_containers,
                    v.running,
                    self.samples,
                    cluster::PER_SAMPLE
                ),
            },
            |d| match self.json {
                true => Ok(()),
                false => outln!(
                    "{:<18} {:>10.1} ns/decision  {:>5.3} dropped/decision",
                    d.router,
                    d.median_ns,
                    d.drops as f64 / (f64::from(d.samples) * f64::from(d.per_sample))
                ),
            },
        )?;
        if self.json {
            let all = serde_json::json!({
                "memory": speeds.memory,
                "routers": speeds.routers,
                "view": decisions.view,
                "decisions": decisions.decisions,
            });
            outln!("{}", serde_json::to_string_pretty(&all)?)?;
        }
        Ok(())
    }
}
