//! `bench node`: simulated requests per wall-second through the node engine,
//! workload generation and engine (metrics aggregation excluded), for every
//! policy of the node catalogue; and whether the engine's memory grows with
//! a run's length.

use super::{BUILD, Engine, Peaks, check_ended, instructions, peak_rss_mib, release_only, speeds};
use crate::node::catalog::{Knowledge, NODE_CATALOG, NodePolicy};
use crate::outln;
use anyhow::{Result, anyhow};
use faasched_policy::node::PreemptTest;
use faasched_sim::node::{self, NodeConfig, NodeStats};
use faasched_workload::node::{Deadlines, Estimate, Length, Params, Workload};
use serde::Serialize;
use std::convert::Infallible;

/// The workload timed: one function, exponential work of mean 100 µs.
pub const WORKLOAD: &str = "exponential";
/// Dispatchers of the node timed.
pub const DISPATCHERS: usize = 1;
/// Workers in its one group.
pub const WORKERS: u32 = 6;
/// The arrival rate as a share of the workload's capacity on [`WORKERS`]
/// workers: loaded enough that queues form and preemptions happen, not so
/// much that the backlog, and with it the cost per request, grows.
pub const LOAD: f64 = 0.8;
/// The policy whose speed is the headline, and whose memory is checked.
pub const HEADLINE: &str = "sledgescale";

/// One policy's result.
#[derive(Serialize, Debug)]
pub struct Measured {
    /// The policy, by its catalogue name.
    pub policy: &'static str,
    /// [`WORKLOAD`].
    pub workload: &'static str,
    /// [`DISPATCHERS`].
    pub dispatchers: usize,
    /// [`WORKERS`].
    pub workers: u32,
    /// Mean arrival rate of the simulated requests, per simulated second.
    pub rate_per_s: f64,
    /// Requests per run.
    pub requests: u64,
    /// [`BUILD`].
    pub build: &'static str,
    /// Seed of the workload.
    pub seed: u64,
    /// Median wall time of one run.
    pub wall_s: f64,
    /// Requests over that.
    pub requests_per_s: f64,
    /// Engine events the run processed (the same every run).
    pub events: u64,
    /// Median user-space instructions of one run; `null` where this
    /// machine has no hardware counter.
    pub instructions: Option<u64>,
    /// Requests taken off a worker before they finished (the same every
    /// run).
    pub preemptions: u64,
    /// Requests the policy dropped (the same every run).
    pub dropped: u64,
    /// Runs timed.
    pub runs: u32,
    /// Peak resident memory of this process so far (VmHWM), MiB.
    pub peak_rss_mib: Option<f64>,
}

/// Whether memory grows with a run's length: [`HEADLINE`] run once on
/// `requests` and once on [`LONGER`](super::LONGER) times as many, before anything else
/// in the process, the peak resident memory read after each.
#[derive(Serialize, Debug)]
pub struct Memory {
    /// The policy run.
    pub policy: &'static str,
    /// Requests of the short run.
    pub short_requests: u64,
    /// Requests of the long run.
    pub long_requests: u64,
    /// Peak resident memory of this process (VmHWM) after the short run,
    /// MiB; None where /proc/self/status cannot be read.
    pub short_peak_rss_mib: Option<f64>,
    /// The same after the long run.
    pub long_peak_rss_mib: Option<f64>,
    /// The long run's peak over the short one's, MiB.
    pub growth_mib: Option<f64>,
}

/// Everything `bench node` measured.
#[derive(Serialize, Debug)]
pub struct Results {
    /// The memory check.
    pub memory: Memory,
    /// Each policy's speed, in catalogue order ([`HEADLINE`] first).
    pub policies: Vec<Measured>,
}

/// The node, workload and stream every run shares.
struct Setup {
    config: NodeConfig,
    workload: Workload,
    knowledge: Knowledge,
    rate_per_s: f64,
    seed: u64,
}

impl Setup {
    fn new(seed: u64) -> Result<Setup> {
        let workload = Workload::builtin(WORKLOAD)?;
        Ok(Setup {
            config: NodeConfig::new(DISPATCHERS, WORKERS as usize),
            rate_per_s: LOAD * workload.capacity(WORKERS),
            // Profiled once, before any timing: a dispatcher plans its
            // reservations before it serves.
            knowledge: Knowledge::of_builtin(&workload, WORKERS, PreemptTest::Paper),
            workload,
            seed,
        })
    }

    /// The stream of `requests` requests every run draws.
    fn params(&self, requests: u64) -> Params {
        Params {
            rate_per_s: self.rate_per_s,
            length: Length::Count(requests),
            seed: self.seed,
            deadlines: Deadlines::default(),
            estimate: Estimate::Exact,
        }
    }

    /// One run of `policy` over `requests` generated requests, every outcome
    /// dropped as it comes; an error unless every request finished or was
    /// dropped.
    fn run(&self, policy: NodePolicy, requests: u64) -> Result<NodeStats> {
        let name = policy.name();
        let stream = self.workload.requests(&self.params(requests))?;
        let mut policies = (0..DISPATCHERS)
            .map(|_| policy.build(&self.knowledge))
            .collect::<Result<Vec<_>>>()?;
        let stats = node::run(
            &self.config,
            &mut policies,
            stream.map(Ok::<_, Infallible>),
            |_| {},
        )
        .map_err(|e| anyhow!("{name}: {e}"))?;
        let (arrived, finished, dropped) = (stats.requests, stats.finished, stats.dropped);
        check_ended(name, "requests", requests, arrived, finished, dropped)?;
        Ok(stats)
    }
}

impl Engine for Setup {
    type Policy = NodePolicy;
    type Stats = NodeStats;
    const UNIT: &'static str = "requests";

    fn headline(&self) -> Result<NodePolicy> {
        Ok(NodePolicy {
            spec: NODE_CATALOG.lookup(HEADLINE)?,
        })
    }

    fn policies(&self) -> Vec<NodePolicy> {
        NODE_CATALOG
            .iter()
            .map(|spec| NodePolicy { spec })
            .collect()
    }

    fn stream(&self, n: u64) -> Result<()> {
        self.workload.requests(&self.params(n))?;
        Ok(())
    }

    fn run(&self, policy: NodePolicy, n: u64) -> Result<NodeStats> {
        Setup::run(self, policy, n)
    }
}

/// Checks memory first (`memory` gets it), then times every node policy
/// `runs` times on `requests` requests of seed `seed`, handing each result
/// to `each` as it comes.
pub fn measure(
    runs: u32,
    requests: u64,
    seed: u64,
    memory: impl FnOnce(&Memory) -> Result<()>,
    mut each: impl FnMut(&Measured) -> Result<()>,
) -> Result<Results> {
    let setup = Setup::new(seed)?;
    let memory_of = |p: &Peaks| Memory {
        policy: HEADLINE,
        short_requests: p.short_n,
        long_requests: p.long_n,
        short_peak_rss_mib: p.short,
        long_peak_rss_mib: p.long,
        growth_mib: p.growth,
    };
    let mut policies = Vec::new();
    let peaks = speeds(
        &setup,
        runs,
        requests,
        |p| memory(&memory_of(p)),
        |p, timed| {
            let (wall_s, stats) = (timed.wall_s, timed.last);
            let m = Measured {
                policy: p.name(),
                workload: WORKLOAD,
                dispatchers: DISPATCHERS,
                workers: WORKERS,
                rate_per_s: setup.rate_per_s,
                requests,
                build: BUILD,
                seed,
                wall_s,
                requests_per_s: requests as f64 / wall_s,
                events: stats.events,
                instructions: timed.instructions,
                preemptions: stats.preemptions,
                dropped: stats.dropped,
                runs,
                peak_rss_mib: peak_rss_mib(),
            };
            each(&m)?;
            policies.push(m);
            Ok(())
        },
    )?;
    Ok(Results {
        memory: memory_of(&peaks),
        policies,
    })
}

/// What `faasched bench node` times, and how it prints.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Runs per policy; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Requests per run (the memory check's long run has four times as
    /// many).
    #[arg(long, default_value_t = 1_000_000, value_parser = crate::workload::count)]
    pub requests: u64,
    /// Seed of the workload. Recorded results use the default.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print `{"memory": {...}, "policies": [{"policy", "requests", "wall_s",
    /// "requests_per_s", "events", "instructions", ...}]}` (`instructions`
    /// null where no hardware counter exists).
    #[arg(long)]
    pub json: bool,
}

/// Checks memory and times every policy ([`measure`]) in a release build,
/// and prints them.
pub fn run(o: Options) -> Result<()> {
    release_only("node")?;
    let mib = |v: Option<f64>| v.unwrap_or(f64::NAN);
    if !o.json {
        outln!(
            "{BUILD} build, seed {}, {WORKLOAD} workload, {DISPATCHERS} dispatcher × {WORKERS} workers at {:.0}% load",
            o.seed,
            LOAD * 100.0
        )?;
        outln!("{}", instructions::note())?;
    }
    let results = measure(
        o.runs,
        o.requests,
        o.seed,
        |m| match o.json {
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
        |m| match o.json {
            true => Ok(()),
            false => outln!(
                "{:<15} {:>9} requests at {:>6.0}/s  median {:>8.4} s  {:>10.0} requests/s  {:>5.2} events/request{}  {:>5.3} preemptions/request  peak RSS {:.0} MiB",
                m.policy,
                m.requests,
                m.rate_per_s,
                m.wall_s,
                m.requests_per_s,
                m.events as f64 / m.requests as f64,
                instructions::per_event(m.instructions, m.events),
                m.preemptions as f64 / m.requests as f64,
                mib(m.peak_rss_mib)
            ),
        },
    )?;
    if o.json {
        outln!("{}", serde_json::to_string_pretty(&results)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny bench runs every policy of the catalogue to the end, the
    /// headline first, and checks memory on the headline.
    #[test]
    fn every_policy_runs_on_a_tiny_size() {
        let mut memory = None;
        let mut seen = Vec::new();
        let r = measure(
            1,
            2_000,
            1,
            |m| {
                memory = Some(m.long_requests);
                Ok(())
            },
            |m| {
                seen.push(m.policy);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(memory, Some(8_000));
        assert_eq!(r.memory.policy, HEADLINE);
        let names: Vec<&str> = NODE_CATALOG.names().collect();
        assert_eq!(seen, names);
        assert_eq!(r.policies[0].policy, HEADLINE);
        for m in &r.policies {
            assert_eq!(m.requests, 2_000);
            assert!(m.events >= m.requests, "{}: {} events", m.policy, m.events);
            // 80% of the capacity of six workers of 100 µs on average.
            assert!((m.rate_per_s - 48_000.0).abs() < 1e-6, "{}", m.rate_per_s);
        }
    }
}
