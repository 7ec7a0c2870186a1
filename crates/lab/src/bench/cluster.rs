//! `bench cluster`: simulated invocations per wall-second through the
//! cluster engine, workload generation and engine (metrics aggregation
//! excluded), for every router of the catalogue; whether the engine's
//! memory grows with a run's length; and the time of one routing decision.
//! [`export`] writes the job itself as files, for another simulator to run
//! the same invocations on the same cluster.

use super::{
    BUILD, Engine, Peaks, check_ended, instructions, median, peak_rss_mib, release_only, speeds,
};
use crate::cluster::catalog::{KeepAliveSpec, ROUTERS, RouterSpec};
use crate::cluster::run::{ClusterOptions, ClusterWorkload, ServerModel};
use crate::outln;
use crate::output::write_workload;
use anyhow::{Context, Result, anyhow, bail};
use faasched_model::cluster::{
    Choice, InvocationInfo, InvocationOutcome, Route, ServerId, Servers,
};
use faasched_model::{FunctionId, Phase, SEC, Time};
use faasched_report::Staged;
use faasched_sim::cluster::{ClusterConfig, ClusterStats};
use faasched_workload::cluster::AzureFunctions;
use faasched_workload::node::Length;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Servers in the cluster timed.
pub const SERVERS: u32 = 100;
/// Cores of each.
pub const CORES: u32 = 4;
/// Memory of each for containers, MB: 2 GB per core, the ratio of the
/// paper's simulated cluster (512 GB for 256 CPUs, ch-rlu-hpdc22 §6.3) and
/// of its live invokers (32 GB for 16 cores, §6.1).
pub const MEMORY_MB: u32 = 8 * 1024;
/// Functions of the `azure-functions` population (the paper's "1000
/// randomly chosen functions", §6.3).
pub const FUNCTIONS: u32 = 1000;
/// The offered CPU over the cluster's cores: busy enough that loads pass
/// CH-RLU's bound on the popular functions' home servers and invocations
/// are forwarded, queue and start cold, not so busy that the backlog (and
/// with it the cost per invocation) grows with the run.
pub const LOAD: f64 = 0.7;
/// The keep-alive policy on every server (the paper runs GreedyDual on its
/// invokers under every router but OW+TTL, §5, §6.1).
pub const KEEP_ALIVE: &str = "greedy-dual";
/// The router whose speed and decision time are the headline, whose
/// memory is checked, and whose run makes the view decisions are timed on.
pub const HEADLINE: &str = "ch-rlu";
/// Decisions timed together, one sample: one call to the clock per
/// thousand keeps its own cost out of a decision's tens of nanoseconds.
pub const PER_SAMPLE: u32 = 1000;
/// Invocations the headline router routes before the cluster's view is
/// taken for the decision timing: long enough (about half an hour
/// simulated) for every server to have published loads many times and
/// filled its memory with warm containers.
pub const WARMUP: u64 = 100_000;

/// One router's speed through the engine.
#[derive(Serialize, Debug)]
pub struct Measured {
    /// The router, by its catalogue name.
    pub router: &'static str,
    /// What ran each server's work (`ps`, `node:POLICY`, `os:POLICY`).
    pub server: String,
    /// [`KEEP_ALIVE`].
    pub keep_alive: &'static str,
    /// [`FUNCTIONS`].
    pub functions: u32,
    /// [`SERVERS`].
    pub servers: u32,
    /// [`CORES`].
    pub cores: u32,
    /// [`MEMORY_MB`].
    pub memory_mb: u32,
    /// [`LOAD`].
    pub load: f64,
    /// Mean arrival rate of the simulated invocations, per simulated
    /// second.
    pub rate_per_s: f64,
    /// Invocations per run.
    pub invocations: u64,
    /// [`BUILD`].
    pub build: &'static str,
    /// Seed of the population, its arrivals and the router.
    pub seed: u64,
    /// Median wall time of one run.
    pub wall_s: f64,
    /// Invocations over that.
    pub invocations_per_s: f64,
    /// Simulated time from the first arrival to the last finish, s (the
    /// same every run).
    pub simulated_s: f64,
    /// Engine events the run processed (the same every run).
    pub events: u64,
    /// Median user-space instructions of one run; `null` where this
    /// machine has no hardware counter.
    pub instructions: Option<u64>,
    /// Invocations that started cold (the same every run).
    pub cold_starts: u64,
    /// Invocations dropped by the router or for memory (the same every
    /// run).
    pub dropped: u64,
    /// Those of them the router dropped (the rest found no memory on their
    /// server).
    pub dropped_by_router: u64,
    /// Runs timed.
    pub runs: u32,
    /// Peak resident memory of this process so far (VmHWM), MiB.
    pub peak_rss_mib: Option<f64>,
}

/// Whether memory grows with a run's length: [`HEADLINE`] run once on
/// `invocations` and once on [`LONGER`](super::LONGER) times as many, before anything
/// else in the process, the peak resident memory read after each.
#[derive(Serialize, Debug)]
pub struct Memory {
    /// The router run.
    pub router: &'static str,
    /// Invocations of the short run.
    pub short_invocations: u64,
    /// Invocations of the long run.
    pub long_invocations: u64,
    /// Peak resident memory of this process (VmHWM) after the short run,
    /// MiB; None where /proc/self/status cannot be read.
    pub short_peak_rss_mib: Option<f64>,
    /// The same after the long run.
    pub long_peak_rss_mib: Option<f64>,
    /// The long run's peak over the short one's, MiB.
    pub growth_mib: Option<f64>,
}

/// The cluster's state the decisions are timed on: what [`HEADLINE`]'s
/// router saw after the first [`WARMUP`] invocations of a run.
#[derive(Serialize, Debug)]
pub struct View {
    /// The router whose run it was taken from.
    pub router: &'static str,
    /// Invocations routed before it ([`WARMUP`]).
    pub after_invocations: u64,
    /// Servers.
    pub servers: usize,
    /// Mean published load (1-minute load average over cores).
    pub mean_load: f64,
    /// The highest published load.
    pub max_load: f64,
    /// Idle warm containers over all servers.
    pub warm_containers: u64,
    /// Invocations running over all servers.
    pub running: u64,
}

/// One router's decision time.
#[derive(Serialize, Debug)]
pub struct Decision {
    /// The router, by its catalogue name.
    pub router: &'static str,
    /// Servers it chose among.
    pub servers: usize,
    /// Decisions per timed sample ([`PER_SAMPLE`]).
    pub per_sample: u32,
    /// Samples timed.
    pub samples: u32,
    /// The median over samples of a sample's wall time over its
    /// decisions, ns.
    pub median_ns: f64,
    /// Decisions that dropped the invocation.
    pub drops: u64,
}

/// What [`measure`] measured.
#[derive(Serialize, Debug)]
pub struct Speeds {
    /// The memory check.
    pub memory: Memory,
    /// Each router's speed, in catalogue order ([`HEADLINE`] first).
    pub routers: Vec<Measured>,
}

/// What [`decisions`] measured.
#[derive(Serialize, Debug)]
pub struct Decisions {
    /// The view the decisions were timed on.
    pub view: View,
    /// Each router's decision time, in catalogue order ([`HEADLINE`]
    /// first).
    pub decisions: Vec<Decision>,
}

/// The function table [`export`] writes: `name,memory_mb,warm_ms,cold_ms`
/// ([`faasched_workload::cluster::TABLE_HEADER`]), in function id order.
pub const EXPORT_FUNCTIONS: &str = "functions.csv";
/// The invocation stream [`export`] writes: a workload CSV (v1), a row per
/// invocation in arrival order, its one CPU phase its work.
pub const EXPORT_INVOCATIONS: &str = "invocations.csv";
/// The cluster [`export`] writes, as [`Job`] in JSON.
pub const EXPORT_CLUSTER: &str = "cluster.json";

/// The job every run of the bench times, as [`export`] writes it to
/// [`EXPORT_CLUSTER`] beside the functions and the invocations.
#[derive(Serialize, Debug)]
pub struct Job {
    /// [`SERVERS`].
    pub servers: u32,
    /// [`CORES`].
    pub cores: u32,
    /// [`MEMORY_MB`].
    pub memory_mb: u32,
    /// [`FUNCTIONS`].
    pub functions: u32,
    /// [`LOAD`].
    pub load: f64,
    /// [`KEEP_ALIVE`].
    pub keep_alive: &'static str,
    /// Seconds between the servers' load publications (the engine's
    /// default).
    pub publish_s: f64,
    /// Seconds an invocation waits on its server for memory before it is
    /// dropped (the engine's default); None: it waits for ever.
    pub memory_wait_s: Option<f64>,
    /// Seed of the population and its arrivals.
    pub seed: u64,
    /// Invocations in [`EXPORT_INVOCATIONS`].
    pub invocations: u64,
    /// Mean arrival rate, per simulated second.
    pub rate_per_s: f64,
}

/// Writes the job a run of `invocations` invocations of seed `seed` times
/// into directory `dir` (made if missing): [`EXPORT_FUNCTIONS`],
/// [`EXPORT_INVOCATIONS`] and [`EXPORT_CLUSTER`], all put in place together
/// once all are written (a failure leaves none, or earlier ones as they
/// were). Times are exact in the table and rounded to the microsecond in the
/// stream, as the workload CSV holds them.
pub fn export(dir: &Path, invocations: u64, seed: u64) -> Result<Job> {
    let setup = Setup::new(seed, ServerModel::Ps)?;
    let table = setup.functions.table();
    let job = Job {
        servers: SERVERS,
        cores: CORES,
        memory_mb: MEMORY_MB,
        functions: FUNCTIONS,
        load: LOAD,
        keep_alive: KEEP_ALIVE,
        publish_s: setup.config.publish as f64 / SEC as f64,
        memory_wait_s: setup.config.memory_wait.map(|w| w as f64 / SEC as f64),
        seed,
        invocations,
        rate_per_s: setup.functions.summary().rate_per_s,
    };
    let stream = setup.functions.invocations(Length::Count(invocations))?;
    let mut staged = Staged::new();
    staged.create_dir(dir)?;
    staged.write(&dir.join(EXPORT_FUNCTIONS), table.to_csv().as_bytes())?;
    let rows = stream.map(|inv| {
        let f = inv.function;
        let (Some(function), Some(profile)) = (table.functions().get(f), table.profile(f)) else {
            return Err(faasched_workload::Error::invalid(
                "function",
                format!(
                    "invocation {} names function {} of a table of {}",
                    inv.id.0,
                    f.0,
                    table.len()
                ),
            ));
        };
        Ok(faasched_model::Invocation {
            id: inv.id.0,
            function: function.clone(),
            arrival: inv.arrival,
            phases: [Phase::Cpu(inv.work)].into_iter().collect(),
            memory_mb: profile.memory_mb,
            deadline: None,
        })
    });
    write_workload(&dir.join(EXPORT_INVOCATIONS), rows, &mut staged)?;
    let json = serde_json::to_string_pretty(&job)?;
    staged.write(&dir.join(EXPORT_CLUSTER), format!("{json}\n").as_bytes())?;
    staged
        .commit()
        .with_context(|| format!("writing the job into {}", dir.display()))?;
    Ok(job)
}

/// The cluster and population every run shares, as `cluster simulate`
/// sets them up from [`Setup::options`].
struct Setup {
    config: ClusterConfig,
    functions: AzureFunctions,
    keep_alive: &'static KeepAliveSpec,
    seed: u64,
    /// What runs each server's work.
    server: ServerModel,
}

impl Setup {
    fn new(seed: u64, server: ServerModel) -> Result<Setup> {
        let setup = Setup::options(seed, server, 1).setup()?;
        let ClusterWorkload::Azure { functions, .. } = setup.workload else {
            bail!("the benchmark's workload is not azure-functions");
        };
        Ok(Setup {
            config: setup.config,
            functions: *functions,
            keep_alive: setup.keep_alive,
            seed,
            server,
        })
    }

    /// The job of `invocations` invocations as `cluster simulate` takes
    /// it: the cluster, the population and its keep-alive, its servers run
    /// as `server` says.
    fn options(seed: u64, server: ServerModel, invocations: u64) -> ClusterOptions {
        ClusterOptions {
            functions: Some(FUNCTIONS),
            servers: SERVERS,
            cores: CORES,
            memory_gb: f64::from(MEMORY_MB) / 1024.0,
            load: LOAD,
            invocations: Some(invocations),
            seed,
            keep_alive: KEEP_ALIVE.to_string(),
            server,
            ..ClusterOptions::default()
        }
    }

    /// One run of a fresh `router` over `invocations` generated
    /// invocations, every outcome dropped as it comes; an error unless every
    /// invocation finished or was dropped.
    fn run(&self, router: &RouterSpec, invocations: u64) -> Result<ClusterStats> {
        self.run_with(&mut *router.build(self.seed)?, invocations)
    }

    /// [`Setup::run`] with `router` as it is.
    fn run_with(&self, router: &mut dyn Route, invocations: u64) -> Result<ClusterStats> {
        let name = router.name().to_string();
        let stats = Setup::options(self.seed, self.server, invocations)
            .setup()?
            .serve(
                &name,
                router,
                |_| self.keep_alive.build(),
                |_: InvocationOutcome| {},
            )?;
        let (arrived, finished, dropped) = (stats.invocations, stats.finished, stats.dropped());
        check_ended(
            &name,
            "invocations",
            invocations,
            arrived,
            finished,
            dropped,
        )?;
        Ok(stats)
    }

    /// What [`HEADLINE`] saw when the invocation after the first
    /// [`WARMUP`] of a run arrived.
    fn view(&self) -> Result<Servers> {
        let mut taker = ViewTaker {
            inner: ROUTERS.lookup(HEADLINE)?.build(self.seed)?,
            at: WARMUP,
            view: None,
        };
        self.run_with(&mut taker, WARMUP + 1)?;
        taker
            .view
            .ok_or_else(|| anyhow!("{HEADLINE} was never asked to route invocation {WARMUP}"))
    }
}

/// A router that passes every call on, and keeps a copy of the servers as
/// they are when the invocation of id `at` arrives.
struct ViewTaker {
    inner: Box<dyn Route + Send>,
    at: u64,
    view: Option<Servers>,
}

impl Route for ViewTaker {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn route(&mut self, now: Time, inv: &InvocationInfo, servers: &Servers) -> Choice {
        if inv.id.0 == self.at {
            self.view = Some(servers.clone());
        }
        self.inner.route(now, inv, servers)
    }

    fn on_loads(&mut self, now: Time, servers: &Servers) {
        self.inner.on_loads(now, servers)
    }

    fn on_finish(&mut self, now: Time, outcome: &InvocationOutcome) {
        self.inner.on_finish(now, outcome)
    }
}

impl Engine for Setup {
    type Policy = &'static RouterSpec;
    type Stats = ClusterStats;
    const UNIT: &'static str = "invocations";

    fn headline(&self) -> Result<&'static RouterSpec> {
        Ok(ROUTERS.lookup(HEADLINE)?)
    }

    fn policies(&self) -> Vec<&'static RouterSpec> {
        ROUTERS.iter().collect()
    }

    fn stream(&self, n: u64) -> Result<()> {
        self.functions.invocations(Length::Count(n))?;
        Ok(())
    }

    fn run(&self, router: &'static RouterSpec, n: u64) -> Result<ClusterStats> {
        Setup::run(self, router, n)
    }
}

/// Summarises `servers` for the report.
fn describe(servers: &Servers, functions: u32) -> View {
    let loads: Vec<f64> = servers.iter().map(|(_, v)| v.load).collect();
    let warm = servers
        .iter()
        .map(|(s, _)| {
            (0..functions)
                .map(|f| u64::from(servers.warm(s, FunctionId(f))))
                .sum::<u64>()
        })
        .sum();
    View {
        router: HEADLINE,
        after_invocations: WARMUP,
        servers: servers.len(),
        mean_load: loads.iter().sum::<f64>() / loads.len().max(1) as f64,
        max_load: loads.iter().copied().fold(0.0, f64::max),
        warm_containers: warm,
        running: servers.iter().map(|(_, v)| u64::from(v.running)).sum(),
    }
}

/// Times `samples` samples of [`PER_SAMPLE`] `route()` calls of a fresh
/// `spec` on the fixed `view`, fed the stream's invocations from the one
/// the view was taken for on. Between samples, untimed, the router hears
/// of every invocation finished by then (each finishes its warm time after
/// its arrival) and of a load publication every publication period, as in
/// a run, so that its state (OpenWhisk's outstanding memory, CH-RLU's
/// popular functions) stays what it would be; the view itself does not
/// change. A fresh router starts with none of that state: the median
/// over many samples is the decision time once it has built it.
fn time_decisions(
    setup: &Setup,
    spec: &RouterSpec,
    view: &Servers,
    samples: u32,
) -> Result<Decision> {
    let total = u64::from(samples)
        .checked_mul(u64::from(PER_SAMPLE))
        .and_then(|n| n.checked_add(WARMUP))
        .ok_or_else(|| anyhow!("{samples} samples of {PER_SAMPLE} decisions overflow a count"))?;
    let profiles = setup.functions.table().profiles();
    let mut stream = setup
        .functions
        .invocations(Length::Count(total))?
        .skip(WARMUP as usize)
        .map(|inv| InvocationInfo {
            id: inv.id,
            arrival: inv.arrival,
            profile: profiles[inv.function.0 as usize],
        });
    let mut router = spec.build(setup.seed)?;
    let mut batch: Vec<InvocationInfo> = Vec::with_capacity(PER_SAMPLE as usize);
    let mut choices: Vec<Choice> = Vec::with_capacity(PER_SAMPLE as usize);
    let mut running: Vec<InvocationOutcome> = Vec::new();
    let mut per_decision = Vec::with_capacity(samples as usize);
    let mut drops = 0;
    let mut next_publication: Option<Time> = None;
    for _ in 0..samples {
        batch.clear();
        batch.extend(stream.by_ref().take(PER_SAMPLE as usize));
        let (Some(first), Some(last)) = (batch.first(), batch.last()) else {
            bail!("the decision stream ended early");
        };
        let (first, last) = (first.arrival, last.arrival);
        let due = next_publication.get_or_insert(first);
        while *due <= first {
            router.on_loads(*due, view);
            *due += setup.config.publish;
        }
        choices.clear();
        let t = Instant::now();
        for inv in &batch {
            choices.push(router.route(inv.arrival, inv, view));
        }
        let elapsed = t.elapsed();
        per_decision.push(elapsed.as_nanos() as f64 / batch.len() as f64);
        for (inv, choice) in batch.iter().zip(&choices) {
            let server: Option<ServerId> = match choice {
                Choice::Server(s) => Some(*s),
                Choice::Drop => None,
            };
            let outcome = InvocationOutcome {
                info: *inv,
                work: inv.profile.warm,
                server,
                cold: false,
                first_run: server.map(|_| inv.arrival),
                finish: server.map(|_| inv.arrival.saturating_add(inv.profile.warm)),
                inside: None,
            };
            match outcome.finish {
                Some(_) => running.push(outcome),
                None => {
                    drops += 1;
                    router.on_finish(inv.arrival, &outcome);
                }
            }
        }
        running.retain(|o| match o.finish {
            Some(at) if at <= last => {
                router.on_finish(at, o);
                false
            }
            _ => true,
        });
    }
    Ok(Decision {
        router: spec.name,
        servers: view.len(),
        per_sample: PER_SAMPLE,
        samples,
        median_ns: median(per_decision),
        drops,
    })
}

/// Checks memory first (`memory` gets it), then times every router of the
/// catalogue `runs` times on `invocations` invocations of seed `seed`, its
/// servers run as `server` says, handing each result to `each` as it
/// comes. Call it before anything else in the process runs a cluster: the
/// memory check reads the process's high-water mark.
pub fn measure(
    runs: u32,
    invocations: u64,
    seed: u64,
    server: ServerModel,
    memory: impl FnOnce(&Memory) -> Result<()>,
    mut each: impl FnMut(&Measured) -> Result<()>,
) -> Result<Speeds> {
    let setup = Setup::new(seed, server)?;
    let memory_of = |p: &Peaks| Memory {
        router: HEADLINE,
        short_invocations: p.short_n,
        long_invocations: p.long_n,
        short_peak_rss_mib: p.short,
        long_peak_rss_mib: p.long,
        growth_mib: p.growth,
    };
    let summary = setup.functions.summary();
    let mut routers = Vec::new();
    let peaks = speeds(
        &setup,
        runs,
        invocations,
        |p| memory(&memory_of(p)),
        |spec, timed| {
            let (wall_s, stats) = (timed.wall_s, timed.last);
            let m = Measured {
                router: spec.name,
                server: server.to_string(),
                keep_alive: KEEP_ALIVE,
                functions: FUNCTIONS,
                servers: SERVERS,
                cores: CORES,
                memory_mb: MEMORY_MB,
                load: LOAD,
                rate_per_s: summary.rate_per_s,
                invocations,
                build: BUILD,
                seed,
                wall_s,
                invocations_per_s: invocations as f64 / wall_s,
                simulated_s: stats.span as f64 / SEC as f64,
                events: stats.events,
                instructions: timed.instructions,
                cold_starts: stats.cold_starts(),
                dropped: stats.dropped(),
                dropped_by_router: stats.dropped_by_router,
                runs,
                peak_rss_mib: peak_rss_mib(),
            };
            each(&m)?;
            routers.push(m);
            Ok(())
        },
    )?;
    Ok(Speeds {
        memory: memory_of(&peaks),
        routers,
    })
}

/// Takes the view [`HEADLINE`] sees after [`WARMUP`] invocations of seed
/// `seed` (`view` gets it), then times `samples` samples of
/// [`PER_SAMPLE`] decisions of every router of the catalogue on it, handing
/// each result to `each` as it comes.
pub fn decisions(
    samples: u32,
    seed: u64,
    view: impl FnOnce(&View) -> Result<()>,
    mut each: impl FnMut(&Decision) -> Result<()>,
) -> Result<Decisions> {
    let setup = Setup::new(seed, ServerModel::Ps)?;
    let servers = setup.view()?;
    let v = describe(&servers, FUNCTIONS);
    view(&v)?;
    let mut decisions = Vec::new();
    for spec in ROUTERS.iter() {
        let d = time_decisions(&setup, spec, &servers, samples)?;
        each(&d)?;
        decisions.push(d);
    }
    Ok(Decisions { view: v, decisions })
}

/// What `faasched bench cluster` times (or exports), and how it prints.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Runs per router; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Invocations per run (the memory check's long run has four times as
    /// many).
    #[arg(long, default_value_t = 1_000_000, value_parser = crate::workload::count)]
    pub invocations: u64,
    /// Samples of 1,000 routing decisions per router; the median is
    /// reported.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub samples: u32,
    /// Seed of the population, its arrivals and the routers. Recorded
    /// results use the default.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// What runs each server's work, as `cluster simulate --server` takes
    /// it: `ps`, `node:POLICY` (node:sledgescale, say) or `os:POLICY`. The
    /// routing decisions are timed on processor-sharing servers whatever
    /// this says.
    #[arg(long, default_value = "ps")]
    pub server: ServerModel,
    /// Print `{"memory": {...}, "routers": [{"router", "invocations",
    /// "wall_s", "invocations_per_s", "events", "instructions", ...}] (null
    /// instructions where no hardware counter exists), "view": {...}, "decisions":
    /// [{"router", "median_ns", ...}]}`.
    #[arg(long)]
    pub json: bool,
    /// Time nothing: write the job a run times (--invocations, --seed) into
    /// this directory for another simulator to run: functions.csv (the
    /// function table), invocations.csv (a workload CSV) and cluster.json
    /// (servers, cores, memory, keep-alive).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["runs", "samples", "json"])]
    pub export: Option<PathBuf>,
}

/// Everything `bench cluster --json` prints, in this order.
#[derive(Serialize)]
struct Printed<'a> {
    memory: &'a Memory,
    routers: &'a [Measured],
    view: &'a View,
    decisions: &'a [Decision],
}

/// Exports the job, or in a release build checks memory, times every
/// router ([`measure`]) and its decisions ([`decisions`]), and prints them.
pub fn run(o: Options) -> Result<()> {
    if let Some(dir) = &o.export {
        let job = export(dir, o.invocations, o.seed)?;
        eprintln!(
            "wrote {} invocations of seed {} ({} functions on {} servers × {} cores, {} MB each) to {}: {EXPORT_FUNCTIONS}, {EXPORT_INVOCATIONS}, {EXPORT_CLUSTER}",
            job.invocations,
            job.seed,
            job.functions,
            job.servers,
            job.cores,
            job.memory_mb,
            dir.display(),
        );
        return Ok(());
    }
    release_only("cluster")?;
    let mib = |v: Option<f64>| v.unwrap_or(f64::NAN);
    if !o.json {
        outln!(
            "{BUILD} build, seed {}, azure-functions: {FUNCTIONS} functions on {SERVERS} servers × {CORES} cores ({MEMORY_MB} MB each, run as {}) at {:.0}% load, {KEEP_ALIVE} keep-alive",
            o.seed,
            o.server,
            LOAD * 100.0,
        )?;
        outln!("{}", instructions::note())?;
    }
    let speeds = measure(
        o.runs,
        o.invocations,
        o.seed,
        o.server,
        |m| match o.json {
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
        |m| match o.json {
            true => Ok(()),
            false => outln!(
                "{:<18} {:>9} invocations at {:>5.1}/s  median {:>8.4} s  {:>10.0} invocations/s  {:>5.2} events/invocation{}  {:>5.3} cold/invocation  {:>5.3} dropped/invocation ({:.3} by the router)  peak RSS {:.0} MiB",
                m.router,
                m.invocations,
                m.rate_per_s,
                m.wall_s,
                m.invocations_per_s,
                m.events as f64 / m.invocations as f64,
                instructions::per_event(m.instructions, m.events),
                m.cold_starts as f64 / m.invocations as f64,
                m.dropped as f64 / m.invocations as f64,
                m.dropped_by_router as f64 / m.invocations as f64,
                mib(m.peak_rss_mib)
            ),
        },
    )?;
    let decisions = decisions(
        o.samples,
        o.seed,
        |v| match o.json {
            true => Ok(()),
            false => outln!(
                "route() on {} servers as {} saw them after {} invocations (mean load {:.2}, max {:.2}, {} idle warm containers, {} running), median of {} samples of {PER_SAMPLE} decisions:",
                v.servers,
                v.router,
                v.after_invocations,
                v.mean_load,
                v.max_load,
                v.warm_containers,
                v.running,
                o.samples,
            ),
        },
        |d| match o.json {
            true => Ok(()),
            false => outln!(
                "{:<18} {:>10.1} ns/decision  {:>5.3} dropped/decision",
                d.router,
                d.median_ns,
                d.drops as f64 / (f64::from(d.samples) * f64::from(d.per_sample))
            ),
        },
    )?;
    if o.json {
        let printed = Printed {
            memory: &speeds.memory,
            routers: &speeds.routers,
            view: &decisions.view,
            decisions: &decisions.decisions,
        };
        outln!("{}", serde_json::to_string_pretty(&printed)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny bench runs every router of the catalogue to the end, the
    /// headline first, and checks memory on the headline.
    #[test]
    fn every_router_runs_on_a_tiny_size() {
        let mut memory = None;
        let mut seen = Vec::new();
        let r = measure(
            1,
            2_000,
            1,
            ServerModel::Ps,
            |m| {
                memory = Some(m.long_invocations);
                Ok(())
            },
            |m| {
                seen.push(m.router);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(memory, Some(8_000));
        assert_eq!(r.memory.router, HEADLINE);
        let names: Vec<&str> = ROUTERS.names().collect();
        assert_eq!(seen, names);
        assert_eq!(r.routers[0].router, HEADLINE);
        for m in &r.routers {
            assert_eq!(m.invocations, 2_000);
            assert!(
                m.events >= m.invocations,
                "{}: {} events",
                m.router,
                m.events
            );
            assert!(m.cold_starts > 0 && m.cold_starts <= m.invocations);
        }
    }

    /// The same bench runs every router on node servers: each invocation
    /// goes through a node engine, its requests counted as its events.
    #[test]
    fn every_router_runs_on_node_servers() {
        let server: ServerModel = "node:sledgescale".parse().unwrap();
        let ps = measure(1, 2_000, 1, ServerModel::Ps, |_| Ok(()), |_| Ok(())).unwrap();
        let node = measure(1, 2_000, 1, server, |_| Ok(()), |_| Ok(())).unwrap();
        assert_eq!(node.routers.len(), ROUTERS.names().count());
        for (n, p) in node.routers.iter().zip(&ps.routers) {
            assert_eq!(
                (n.router, n.server.as_str()),
                (p.router, "node:sledgescale")
            );
            assert_eq!(n.invocations, 2_000);
            // The node engine's events come on top of the cluster's.
            assert!(
                n.events > p.events,
                "{}: {} vs {}",
                n.router,
                n.events,
                p.events
            );
        }
    }

    /// Every router's decisions are timed, the headline first, on a view
    /// of a cluster that has run a while: loads published, warm containers
    /// idle on its servers.
    #[test]
    fn every_router_decides_on_a_warmed_up_view() {
        let mut warm = None;
        let mut timed = Vec::new();
        let r = decisions(
            2,
            1,
            |v| {
                warm = Some(v.warm_containers);
                Ok(())
            },
            |d| {
                timed.push(d.router);
                Ok(())
            },
        )
        .unwrap();
        let names: Vec<&str> = ROUTERS.names().collect();
        assert_eq!(timed, names);
        assert_eq!(r.view.servers, SERVERS as usize);
        assert!(r.view.mean_load > 0.0, "{:?}", r.view);
        assert!(warm.is_some_and(|w| w > 0), "{:?}", r.view);
        for d in &r.decisions {
            assert_eq!((d.servers, d.samples), (SERVERS as usize, 2));
            assert!(d.median_ns > 0.0, "{d:?}");
        }
    }

    /// The exported files are the job: the table reads back to the same
    /// profiles, and the workload CSV to the same invocations, their
    /// arrival and work within the half microsecond the CSV rounds to.
    #[test]
    fn export_reads_back_as_the_generated_job() {
        use faasched_workload::cluster::{FileInvocations, FunctionTable};
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("job");
        let job = export(&dir, 2_000, 7).unwrap();
        assert_eq!(
            (job.servers, job.cores, job.memory_mb),
            (SERVERS, CORES, MEMORY_MB)
        );
        assert_eq!((job.invocations, job.seed), (2_000, 7));

        let setup = Setup::new(7, ServerModel::Ps).unwrap();
        let table = FunctionTable::read_csv(&dir.join(EXPORT_FUNCTIONS)).unwrap();
        assert_eq!(table.profiles(), setup.functions.table().profiles());
        let read = FileInvocations::open(&dir.join(EXPORT_INVOCATIONS), &table).unwrap();
        let generated = setup.functions.invocations(Length::Count(2_000)).unwrap();
        let mut n = 0;
        for (r, g) in read.zip(generated) {
            let r = r.unwrap();
            assert_eq!((r.id, r.function), (g.id, g.function));
            assert!(r.arrival.abs_diff(g.arrival) <= 500, "{r:?} {g:?}");
            assert!(r.work.abs_diff(g.work) <= 500, "{r:?} {g:?}");
            n += 1;
        }
        assert_eq!(n, 2_000);
        let json = std::fs::read_to_string(dir.join(EXPORT_CLUSTER)).unwrap();
        assert!(json.contains("\"keep_alive\": \"greedy-dual\""), "{json}");
    }
}
