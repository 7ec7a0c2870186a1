//! The same cluster run live and simulated, side by side (`faasched
//! cluster compare`): each router replayed over fresh live nodes
//! ([`replay`]), then the cluster simulator run on the same workload, shape
//! and seed with the costs measured here and on those runs, and the two
//! worlds' global latency increase, cold-start ratio and load variance set
//! side by side with each world's ranking of the routers.
//!
//! The simulator runs on the paper's clock, the live run on the paper's
//! divided by the time scale; everything the simulator is given from the
//! live world is scaled back (a live millisecond at scale 0.01 is 100 ms of
//! the paper's), so the ratios (cold %, slowdowns, load variance) compare
//! directly. What it is given ([`Costs`]):
//!
//! - **warm time**: `spin` run here, with the steps per ms every node is
//!   given, in a sandbox of this process: its CPU time over the work asked
//!   (the simulator's warm times are the table's times this ratio); a
//!   function whose calls go to a real one (`--calls`), that function's
//!   own, measured here ([`super::calibrate`]);
//! - **cold start**: what a live node's cold start does, the function's
//!   module compiled (its CPU time here, the median of several) and then
//!   the node's wait (`--cold-wait` of cold − warm; by default all of it
//!   for `spin`); for a real function, loading its code from the nodes'
//!   cache (measured here) and the wait (by default none); charged as a
//!   wait that takes no core ([`ColdStart::Wall`]): the node's wait sleeps
//!   on the invocation's own worker thread while the others run (the
//!   compile's milliseconds of CPU are counted in the wait: a
//!   simplification);
//! - **transport**: each live call's latency less the node's own time for
//!   it (`x-faasched-runtime-us`): the client's and the gateway's hops,
//!   the median over every answered call of every router's run
//!   ([`ClusterConfig::transport`](faasched_sim::cluster::ClusterConfig::transport)).

use super::calibrate::Measured;
use super::catalog::contenders;
use super::load::LiveLoad;
use super::publish::Rows;
use super::replay::{ReplayOptions, ReplaySpec, each_run, replay};
use super::run::{ClusterOptions, ClusterWorkload, ServerModel};
use crate::compare::{aligned, cell, pair, rank};
use crate::interrupt;
use crate::output::Publish;
use crate::output::{Outputs, publish_comparison};
use anyhow::{Context, Result, bail};
use faasched_live::node::containers::ColdStart as NodeColdStart;
use faasched_model::{Nanos, US};
use faasched_report::cluster::ClusterRow;
use faasched_sim::cluster::ColdStart;
use faasched_sys::clock;
use faasched_workload::cluster::FunctionTable;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How many times each cost measured here is sampled; the median is kept.
pub const COST_SAMPLES: usize = 9;

/// What a comparison runs: the live replay, and what its nodes do that the
/// simulator must be told.
#[derive(Clone, Debug)]
pub struct CompareSpec {
    /// The live side, as `cluster replay` runs it.
    pub replay: ReplaySpec,
    /// Memory for containers of each node, MB.
    pub memory_mb: u32,
    /// The nodes' keep-alive policy.
    pub keep_alive: String,
    /// What a node's cold start waits after loading the function's code,
    /// as a share of the function's cold − warm (`None`: 1 for `spin`, 0
    /// for a real function, [`NodeColdStart::share`]).
    pub cold_wait: Option<f64>,
    /// `spin`'s steps per ms on every node, as measured here.
    pub spin_steps_per_ms: u64,
}

/// The costs the simulator is given, measured on this machine, in the live
/// run's time (not yet scaled to the paper's).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Costs {
    /// `spin`'s CPU time over the work asked, here.
    pub warm_ratio: f64,
    /// Compiling a function's module for a cold start, ns.
    #[serde(rename = "compile_ns")]
    pub compile: Nanos,
    /// Latency less the node's time, median over the answered calls, ns.
    #[serde(rename = "transport_ns")]
    pub transport: Nanos,
    /// Answered calls the transport is the median of.
    pub transport_calls: usize,
}

/// `spin`'s steps per ms on this machine now, for every node of a
/// comparison to spin alike.
pub fn measure_spin() -> Result<u64> {
    let runtime = faasched_wasm::Runtime::new(&faasched_wasm::Config::new())
        .context("the sandboxes, to measure spin")?;
    Ok(runtime.spin_steps_per_ms())
}

/// Measures `spin`'s warm ratio (on a work of `work`, at least 1 µs) and a
/// compile here, with `spin_steps_per_ms` as every node spins; returns
/// (ratio, compile). Both are CPU time of this thread: what other
/// processes take of the machine meanwhile is not the node's cost (and
/// the nodes suffer it live alike).
pub fn measure_here(spin_steps_per_ms: u64, work: Nanos) -> Result<(f64, Nanos)> {
    let mut config = faasched_wasm::Config::new();
    config.spin_steps_per_ms(spin_steps_per_ms);
    let runtime = faasched_wasm::Runtime::new(&config).context("the sandboxes, to measure")?;
    let preempt = runtime.preempt();
    let call = runtime
        .call(&format!("spin?us={}", work / US))
        .context("the spin call")?;
    let mut ratios = Vec::with_capacity(COST_SAMPLES);
    let mut compiles = Vec::with_capacity(COST_SAMPLES);
    for _ in 0..COST_SAMPLES {
        let start = clock::thread_cpu();
        let image = runtime.image(&call.function).context("compiling spin")?;
        compiles.push(clock::thread_cpu().saturating_sub(start));
        let mut sandbox = faasched_wasm::Sandbox::start_image(&runtime, &preempt, &image, call.arg)
            .context("starting spin")?;
        let cpu = loop {
            match sandbox.resume() {
                faasched_wasm::Step::Done(done) => break done.context("running spin")?.stats.cpu,
                faasched_wasm::Step::Preempted => {}
            }
        };
        ratios.push(cpu as f64 / work as f64);
    }
    ratios.sort_by(f64::total_cmp);
    compiles.sort_unstable();
    Ok((ratios[COST_SAMPLES / 2], compiles[COST_SAMPLES / 2]))
}

/// The median over `loads`' answered calls of their latency less their
/// node's runtime, and how many calls that is; `None` without one.
pub fn transport(loads: &[LiveLoad]) -> Option<(Nanos, usize)> {
    let mut hops: Vec<Nanos> = loads
        .iter()
        .flat_map(|l| &l.run.records)
        .filter(|r| r.answered())
        .filter_map(|r| {
            let latency = r.done?.checked_sub(r.sent?)?;
            Some(latency.saturating_sub(r.runtime_us? * US))
        })
        .collect();
    if hops.is_empty() {
        return None;
    }
    hops.sort_unstable();
    Some((hops[hops.len() / 2], hops.len()))
}

/// What the simulation runs each server's work on, for live nodes of
/// `workers` workers on `cores` cores under node policy `policy`: nodes of
/// one worker per core queue their invocations as node servers do, so
/// node servers under the same policy; more workers share the cores, as
/// processor sharing does.
fn simulated_server(workers: u32, cores: u32, policy: &str) -> Result<ServerModel> {
    if workers == cores {
        format!("node:{policy}").parse().context("--node-policy")
    } else {
        Ok(ServerModel::Ps)
    }
}

/// Both worlds of a comparison.
#[derive(Clone, Debug)]
pub struct Compared {
    /// Each router's live run.
    pub live: Vec<LiveLoad>,
    /// The simulator's rows, in the same order.
    pub sim: Vec<ClusterRow>,
    /// The simulation's settings (summary.json's).
    pub sim_settings: Value,
    /// What the simulator was given.
    pub costs: Costs,
    /// The pair.
    pub comparison: Comparison,
}

/// Runs `spec` live, router by router (stopping early when `stop` says so,
/// with `each` told of every run), then simulates it with the costs
/// measured.
pub fn compare(
    spec: &CompareSpec,
    stop: &dyn Fn() -> bool,
    each: impl FnMut(&LiveLoad),
) -> Result<Compared> {
    let r = &spec.replay;
    let scale = r.load.time_scale;
    let options = ClusterOptions {
        server: simulated_server(r.node.workers, r.cores_per_node, &r.node.policy)?,
        workload: r.load.workload.clone(),
        servers: r.nodes,
        cores: r.cores_per_node,
        memory_gb: f64::from(spec.memory_mb) / 1024.0,
        clients: r.load.clients,
        seconds: r.load.seconds / scale,
        seed: r.load.seed,
        keep_alive: spec.keep_alive.clone(),
        publish_s: r.gateway.period.as_secs_f64() / scale,
        cold_start: ColdStart::Wall,
        ..ClusterOptions::default()
    };
    let contenders = contenders(&r.routers)?;
    // Checked before anything runs live.
    let mut setup = options.setup()?;
    let ClusterWorkload::Closed { table, .. } = &setup.workload else {
        bail!("--workload {}: not closed-loop clients", r.load.workload);
    };
    let mut warms: Vec<Nanos> = table.profiles().iter().map(|p| p.warm).collect();
    warms.sort_unstable();
    let typical = ((warms[warms.len() / 2] as f64 * scale) as Nanos).max(US);
    let (warm_ratio, compile) = measure_here(spec.spin_steps_per_ms, typical)?;
    // The real functions' own costs, for both worlds.
    let mut r = r.clone();
    r.prepare()?;
    let r = &r;
    let live = replay(r, stop, each)?;
    if live.len() < r.routers.len() {
        bail!(
            "interrupted after {} of {} routers: nothing to compare",
            live.len(),
            r.routers.len()
        );
    }
    let (transport, transport_calls) = transport(&live)
        .context("no call was answered live: nothing to measure the transport on")?;
    let costs = Costs {
        warm_ratio,
        compile,
        transport,
        transport_calls,
    };
    setup.config.transport = (transport as f64 / scale).round() as Nanos;
    setup
        .config
        .validate()
        .map_err(|e| anyhow::anyhow!("the measured transport: {e}"))?;
    if let ClusterWorkload::Closed { table, .. } = &mut setup.workload {
        *table = measured_table(
            table,
            &costs,
            &r.load.measured,
            NodeColdStart {
                wait: spec.cold_wait,
            },
            scale,
        )?;
    }
    let mut sim = Vec::with_capacity(contenders.len());
    for c in &contenders {
        sim.push(setup.run(c, |_| {})?.row(setup.config.cores));
    }
    let mut sim_settings = setup.describe();
    sim_settings["costs"] = json!({
        "warm_ratio": costs.warm_ratio,
        "compile_ms": costs.compile as f64 / 1e6,
        "cold_wait": spec.cold_wait,
        "real": r.load.measured.len(),
        "transport_ms": costs.transport as f64 / 1e6,
        "time_scale": scale,
    });
    let live_rows: Vec<ClusterRow> = live.iter().map(|l| l.row.clone()).collect();
    let comparison = Comparison::new(&sim, &live_rows, scale);
    Ok(Compared {
        live,
        sim,
        sim_settings,
        costs,
        comparison,
    })
}

/// What `faasched cluster compare` runs, and where its results go.
#[derive(Clone, Debug)]
pub struct Options {
    /// The live side, as `cluster replay` takes it.
    pub replay: ReplayOptions,
    /// Where the results go: compare.json and compare.csv, and each
    /// world's summary in sim/ and live/.
    pub outputs: Outputs,
}

/// Measures `spin` here for every node, compares the worlds ([`compare`])
/// and publishes them side by side; a signal stops the live runs, and
/// nothing is compared.
pub fn run(o: Options) -> Result<()> {
    // The options checked before anything is measured or started.
    let mut replay = o.replay.spec()?;
    let spin = measure_spin()?;
    eprintln!("spin: {spin} steps per ms here, given to every node");
    replay.node.host.spin_steps_per_ms = Some(spin);
    let nodes = &o.replay.nodes;
    let spec = CompareSpec {
        replay,
        memory_mb: nodes.memory_mb,
        keep_alive: nodes.keep_alive.clone(),
        cold_wait: nodes.cold_wait,
        spin_steps_per_ms: spin,
    };
    o.replay.announce();
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
    let mut live = o.replay.settings(&compared.live);
    live["spin_steps_per_ms"] = json!(spin);
    live["transport_calls"] = json!(c.transport_calls);
    live["seconds_paper"] = json!(spec.replay.load.seconds / spec.replay.load.time_scale);
    let json = serde_json::to_string_pretty(&json!({
        "sim_settings": compared.sim_settings,
        "live_settings": live,
        "costs": compared.costs,
        "comparison": compared.comparison,
    }))? + "\n";
    let live_rows: Vec<_> = compared.live.iter().map(|l| l.row.clone()).collect();
    publish_comparison(
        o.outputs.dir.as_deref(),
        o.outputs.json,
        &json,
        &compared.comparison.to_csv(),
        &compared.comparison.render(),
        |world, sub, staged| match world {
            "sim" => Rows::new(&compared.sim_settings, &compared.sim).write(
                sub,
                "faasched cluster compare: simulated",
                staged,
            ),
            _ => Rows::new(&live, &live_rows).write(sub, "faasched cluster compare: live", staged),
        },
    )
}

/// `table` (the paper's times) as the live nodes ran it, on the paper's
/// clock: a function given a real one its measured warm time, and a cold
/// start its measured load plus the node's wait for a real function
/// (`cold_start`'s share of cold − warm, by default none); any other (a
/// `spin`) its warm time the measured ratio, and a cold start the compile
/// measured here plus the node's wait for a built-in (by default the
/// whole cold − warm).
fn measured_table(
    table: &FunctionTable,
    costs: &Costs,
    real: &BTreeMap<String, Measured>,
    cold_start: NodeColdStart,
    scale: f64,
) -> Result<FunctionTable> {
    let paper = |live: Nanos| live as f64 / scale;
    let live = table.scaled(scale)?;
    let mut out = FunctionTable::new();
    for ((f, p), live) in table.iter().zip(live.profiles()) {
        let (warm, extra) = match real.get(&*f.name) {
            Some(m) => {
                let ran = m.profile(live, cold_start);
                (paper(ran.warm), paper(ran.cold_extra()))
            }
            None => (
                p.warm as f64 * costs.warm_ratio,
                paper(costs.compile) + p.cold_extra() as f64 * cold_start.share(true),
            ),
        };
        let warm = (warm.round() as Nanos).max(1);
        let cold = warm.saturating_add(extra.round() as Nanos);
        out.push(&f.name, p.memory_mb, warm, cold)?;
    }
    Ok(out)
}

/// One router's numbers in one world.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Side {
    /// Invocations sent.
    pub invocations: u64,
    /// Of those, dropped.
    pub dropped: u64,
    /// Cold starts, % of the finished.
    pub cold_pct: Option<f64>,
    /// Mean slowdown − 1, %: the paper's global latency increase.
    pub global_increase_pct: Option<f64>,
    /// Median slowdown.
    pub slowdown_p50: Option<f64>,
    /// 99th percentile latency on the live run's clock, ms (the
    /// simulator's times the scale).
    pub latency_p99_ms: Option<f64>,
    /// Mean variance of the published loads across servers (live: 0
    /// unless the gateway measured it).
    pub load_variance: f64,
}

impl Side {
    fn of(row: &ClusterRow, time: f64) -> Side {
        Side {
            invocations: row.invocations,
            dropped: row.dropped,
            cold_pct: row.cold_ratio.map(|r| r * 100.0),
            global_increase_pct: row.global_increase.map(|g| g * 100.0),
            slowdown_p50: row.slowdown_p50,
            latency_p99_ms: row.latency_p99_ms.map(|l| l * time),
            load_variance: row.load_variance,
        }
    }
}

/// What names a row: a router.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Router {
    /// The router.
    pub router: String,
}

/// What a ranking ranks by: one metric, lowest first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct By {
    /// The metric.
    pub by: &'static str,
}

/// One router in both worlds.
pub type Row = crate::compare::Row<Router, Side>;

/// How each world orders the routers by one metric, lowest first.
pub type Ranking = crate::compare::Ranking<By>;

/// The whole comparison, as compare.json holds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Per router.
    pub rows: Vec<Row>,
    /// By global latency increase, cold-start ratio and load variance.
    pub rankings: Vec<Ranking>,
}

/// How a ranking reads its metric from a side.
type Metric = fn(&Side) -> Option<f64>;

/// The metrics the rankings order by, and how to read each.
const RANKED: [(&str, Metric); 3] = [
    ("global_increase_pct", |s| s.global_increase_pct),
    ("cold_pct", |s| s.cold_pct),
    ("load_variance", |s| Some(s.load_variance)),
];

impl Comparison {
    /// Pairs the simulator's rows with the live ones, router by router in
    /// the same order; the simulator's times are multiplied by `scale`.
    pub fn new(sim: &[ClusterRow], live: &[ClusterRow], scale: f64) -> Comparison {
        let rows: Vec<Row> = sim
            .iter()
            .zip(live)
            .map(|(s, l)| Row {
                key: Router {
                    router: s.policy.clone(),
                },
                sim: Side::of(s, scale),
                live: Side::of(l, 1.0),
            })
            .collect();
        let rankings = RANKED
            .iter()
            .map(|&(by, key)| {
                let order = |world: fn(&Row) -> &Side| {
                    rank(rows.iter().map(|r| (r.key.router.as_str(), key(world(r)))))
                };
                Ranking::new(By { by }, order(|r| &r.sim), order(|r| &r.live))
            })
            .collect();
        Comparison { rows, rankings }
    }

    /// compare.csv: a row per router and world.
    pub fn to_csv(&self) -> String {
        let mut out = format!("{COMPARE_CSV_HEADER}\n");
        for r in &self.rows {
            for (world, s) in [("sim", &r.sim), ("live", &r.live)] {
                let _ = writeln!(
                    out,
                    "{},{world},{},{},{},{},{},{},{}",
                    r.key.router,
                    s.invocations,
                    s.dropped,
                    cell(s.cold_pct),
                    cell(s.global_increase_pct),
                    cell(s.slowdown_p50),
                    cell(s.latency_p99_ms),
                    s.load_variance
                );
            }
        }
        out
    }

    /// The table `cluster compare` prints: per router each metric
    /// simulated / live, then each world's rankings.
    pub fn render(&self) -> String {
        let header: [&str; 8] = [
            "router",
            "calls",
            "dropped",
            "cold_%",
            "global_+%",
            "sd_p50",
            "p99_ms",
            "load_var",
        ];
        let lines: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                let (s, l) = (&r.sim, &r.live);
                vec![
                    r.key.router.clone(),
                    format!("{} / {}", s.invocations, l.invocations),
                    format!("{} / {}", s.dropped, l.dropped),
                    pair(s.cold_pct, l.cold_pct, 2),
                    pair(s.global_increase_pct, l.global_increase_pct, 1),
                    pair(s.slowdown_p50, l.slowdown_p50, 2),
                    pair(s.latency_p99_ms, l.latency_p99_ms, 1),
                    pair(Some(s.load_variance), Some(l.load_variance), 4),
                ]
            })
            .collect();
        let mut out = String::from("each cell: simulated / live\n");
        for line in aligned(&header, &lines, usize::MAX) {
            let _ = writeln!(out, "{line}");
        }
        for r in &self.rankings {
            let _ = writeln!(
                out,
                "by {}: simulated {}; live {} ({})",
                r.key.by,
                r.sim.join(" < "),
                r.live.join(" < "),
                r.agreement()
            );
        }
        out
    }
}

/// compare.csv's header.
pub const COMPARE_CSV_HEADER: &str = "router,world,invocations,dropped,cold_pct,\
                                      global_increase_pct,slowdown_p50,latency_p99_ms,load_variance";

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::{MS, SEC};

    #[test]
    fn one_worker_per_core_is_simulated_as_node_servers_under_the_same_policy() {
        let queued = simulated_server(2, 2, "rr").unwrap();
        assert_eq!(queued.to_string(), "node:rr");
        assert!(simulated_server(32, 2, "rr").unwrap().is_ps());
        let e = simulated_server(1, 1, "nope").unwrap_err();
        assert!(format!("{e:#}").contains("--node-policy"), "{e:#}");
    }

    fn row(policy: &str, cold: f64, increase: f64, variance: f64) -> ClusterRow {
        ClusterRow {
            policy: policy.into(),
            invocations: 100,
            cold_ratio: Some(cold),
            global_increase: Some(increase),
            latency_p99_ms: Some(1_000.0),
            load_variance: variance,
            ..ClusterRow::default()
        }
    }

    #[test]
    fn each_world_ranks_the_routers_by_each_metric() {
        let sim = [
            row("ch-rlu", 0.02, 1.0, 0.3),
            row("least-loaded", 0.08, 0.5, 0.1),
        ];
        let live = [
            row("ch-rlu", 0.03, 2.0, 0.2),
            row("least-loaded", 0.05, 3.0, 0.4),
        ];
        let c = Comparison::new(&sim, &live, 0.01);
        assert_eq!(c.rows[0].sim.cold_pct, Some(2.0));
        // The simulator's times are the paper's: shown on the live clock.
        assert_eq!(c.rows[0].sim.latency_p99_ms, Some(10.0));
        assert_eq!(c.rows[0].live.latency_p99_ms, Some(1_000.0));
        let by = |name: &str| c.rankings.iter().find(|r| r.key.by == name).unwrap();
        let increase = by("global_increase_pct");
        assert_eq!(increase.sim, ["least-loaded", "ch-rlu"]);
        assert_eq!(increase.live, ["ch-rlu", "least-loaded"]);
        assert!(!increase.same);
        assert_eq!((increase.pairs, increase.pairs_alike), (1, 0));
        assert!(by("cold_pct").same);
        assert!(!by("load_variance").same);
        let csv = c.to_csv();
        assert_eq!(csv.lines().count(), 5);
        assert!(csv.starts_with(COMPARE_CSV_HEADER));
        assert!(csv.contains("\nch-rlu,sim,100,0,2,100,"), "{csv}");
        let table = c.render();
        assert!(table.contains("2.00 / 3.00"), "{table}");
        // A header cell over every column of the rows.
        let lines: Vec<Vec<&str>> = table
            .lines()
            .skip(1)
            .take(3)
            .map(|l| l.split("  ").filter(|c| !c.trim().is_empty()).collect())
            .collect();
        assert_eq!(lines[0][2].trim(), "dropped", "{table}");
        assert_eq!(lines[0].len(), lines[1].len(), "{table}");
        assert!(
            table.contains(
                "by cold_pct: simulated ch-rlu < least-loaded; live ch-rlu < least-loaded (same)"
            ),
            "{table}"
        );
    }

    #[test]
    fn the_simulated_table_carries_the_measured_costs_on_the_paper_clock() {
        let mut table = FunctionTable::new();
        table.push("f", 256, SEC, 3 * SEC).unwrap();
        let costs = Costs {
            warm_ratio: 1.1,
            compile: 2_000_000,
            transport: 0,
            transport_calls: 0,
        };
        // Warm 1 s × 1.1; cold extra half of the 2 s, plus 2 ms of compile
        // at scale 0.01: 200 ms of the paper's.
        let half = NodeColdStart { wait: Some(0.5) };
        let none = BTreeMap::new();
        let t = measured_table(&table, &costs, &none, half, 0.01).unwrap();
        let p = t.profiles()[0];
        assert_eq!(p.warm, 1_100_000_000);
        assert_eq!(p.cold, 1_100_000_000 + SEC + 200_000_000);
        assert_eq!(p.memory_mb, 256);
        // By default a `spin` waits its whole cold − warm.
        let t = measured_table(&table, &costs, &none, NodeColdStart::default(), 0.01).unwrap();
        assert_eq!(t.profiles()[0].cold, 1_100_000_000 + 2 * SEC + 200_000_000);
    }

    /// A function given a real one runs, on the paper's clock, what the
    /// real one measured: 3 ms of CPU warm and a 0.5 ms load at scale
    /// 0.01 are 300 ms and 50 ms; by default no wait, half of cold − warm
    /// with --cold-wait 0.5; a function without one keeps `spin`'s costs.
    #[test]
    fn a_real_functions_measured_costs_replace_the_tables() {
        let mut table = FunctionTable::new();
        table.push("real", 256, SEC, 3 * SEC).unwrap();
        table.push("spun", 512, SEC, 3 * SEC).unwrap();
        let costs = Costs {
            warm_ratio: 1.0,
            compile: 0,
            transport: 0,
            transport_calls: 0,
        };
        let real = BTreeMap::from([(
            "real".to_string(),
            Measured {
                warm: 3_000_000,
                load: 500_000,
                builtin: false,
            },
        )]);
        let t = measured_table(&table, &costs, &real, NodeColdStart::default(), 0.01).unwrap();
        let (r, s) = (t.profiles()[0], t.profiles()[1]);
        assert_eq!((r.warm, r.cold, r.memory_mb), (300 * MS, 350 * MS, 256));
        assert_eq!((s.warm, s.cold), (SEC, 3 * SEC));
        let half = NodeColdStart { wait: Some(0.5) };
        let t = measured_table(&table, &costs, &real, half, 0.01).unwrap();
        assert_eq!(t.profiles()[0].cold, 350 * MS + SEC);
        assert_eq!(t.profiles()[1].cold, 2 * SEC);
        // A built-in measured waits as a node waits for it: all of
        // cold − warm by default.
        let builtin = BTreeMap::from([(
            "real".to_string(),
            Measured {
                builtin: true,
                ..real["real"]
            },
        )]);
        let t = measured_table(&table, &costs, &builtin, NodeColdStart::default(), 0.01).unwrap();
        assert_eq!(t.profiles()[0].cold, 350 * MS + 2 * SEC);
    }
}
