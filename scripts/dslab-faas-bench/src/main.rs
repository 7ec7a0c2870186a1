//! Runs the job `faasched bench cluster --export DIR` wrote through
//! dslab-faas and prints its simulated invocations per wall-second, the
//! median of `--runs` runs, so that the two simulators can be timed side by
//! side on the same invocations and the same cluster.
//!
//! The job, as dslab-faas is told it:
//! 1. Each function of `functions.csv` is an application of its own with
//!    one function, one invocation per container at a time (as in
//!    faasched), a container of its `memory_mb` of the host resource `mem`,
//!    a CPU share of one core, and a deployment time of its cold − warm (a
//!    delay that takes no core, where faasched charges it as CPU work).
//! 2. Each row of `invocations.csv` is a request of its function at its
//!    arrival, lasting its CPU phases (its warm time).
//! 3. `cluster.json`'s servers are hosts of its cores and memory, each with
//!    dslab-faas's FIFO invoker (an invocation whose container does not fit
//!    waits on its host, with no time limit) and its contended CPU model
//!    (processor sharing, each container capped at its share).
//! 4. Keep-alive is dslab-faas's fixed-time policy with the window reset at
//!    each use (a TTL, OpenWhisk's 10 minutes by default): dslab-faas has no
//!    GreedyDual and never evicts an idle container for memory.
//! 5. The scheduler is dslab-faas's least-loaded (the host whose running
//!    containers take the least CPU, exact at the moment of the decision),
//!    or with `--scheduler basic` its default (the first host with a warm
//!    container, else the first with room for a new one).
//!
//! What is timed: building the simulation, loading the requests into it
//! and running it to the end, as faasched's bench times generating the
//! stream and running its engine; reading the CSVs is not.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use dslab_faas::coldstart::FixedTimeColdStartPolicy;
use dslab_faas::config::Config;
use dslab_faas::resource::ResourceProvider;
use dslab_faas::scheduler::{BasicScheduler, LeastLoadedScheduler, Scheduler};
use dslab_faas::simulation::ServerlessSimulation;
use dslab_faas::trace::{ApplicationData, RequestData, Trace};
use serde::Deserialize;
use simcore::simulation::Simulation;

type Result<T, E = String> = std::result::Result<T, E>;

/// The header `faasched bench cluster --export` writes to `functions.csv`.
const TABLE_HEADER: [&str; 4] = ["name", "memory_mb", "warm_ms", "cold_ms"];
/// The header of a workload CSV (v1), `invocations.csv`.
const STREAM_HEADER: [&str; 6] = [
    "id",
    "function",
    "arrival_us",
    "phases",
    "memory_mb",
    "deadline_us",
];
/// The host resource the containers' memory is counted in.
const MEMORY: &str = "mem";

/// The part of `cluster.json` this bench uses.
#[derive(Deserialize)]
struct Cluster {
    servers: u32,
    cores: u32,
    memory_mb: u64,
    seed: u64,
    invocations: u64,
}

/// Which dslab-faas scheduler places the invocations.
#[derive(Clone, Copy)]
enum Placement {
    LeastLoaded,
    Basic,
}

impl Placement {
    fn name(self) -> &'static str {
        match self {
            Placement::LeastLoaded => "least-loaded",
            Placement::Basic => "basic",
        }
    }

    fn build(self) -> Box<dyn Scheduler> {
        match self {
            // Neither preferring warm hosts among the least loaded nor
            // strictly avoiding queueing: the lowest CPU load, first wins.
            Placement::LeastLoaded => Box::new(LeastLoadedScheduler::new(false, false, false)),
            Placement::Basic => Box::new(BasicScheduler {}),
        }
    }
}

struct Args {
    dir: PathBuf,
    runs: usize,
    keepalive_s: f64,
    placement: Placement,
}

const USAGE: &str = "usage: dslab-faas-bench DIR [--runs N (5)] [--keepalive-s S (600)] [--scheduler least-loaded|basic]";

fn parse_args() -> Result<Args> {
    let mut args = std::env::args().skip(1);
    let mut dir = None;
    let mut runs = 5;
    let mut keepalive_s = 600.0;
    let mut placement = Placement::LeastLoaded;
    while let Some(a) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match a.as_str() {
            "--runs" => {
                let v = value("--runs")?;
                runs = match v.parse::<usize>() {
                    Ok(n) if (1..=100).contains(&n) => n,
                    _ => return Err(format!("--runs: `{v}` is not a count from 1 to 100")),
                };
            }
            "--keepalive-s" => {
                let v = value("--keepalive-s")?;
                keepalive_s = match v.parse::<f64>() {
                    Ok(s) if s.is_finite() && s >= 0.0 => s,
                    _ => {
                        return Err(format!(
                            "--keepalive-s: `{v}` is not a number of seconds ≥ 0"
                        ))
                    }
                };
            }
            "--scheduler" => {
                let v = value("--scheduler")?;
                placement = match v.as_str() {
                    "least-loaded" => Placement::LeastLoaded,
                    "basic" => Placement::Basic,
                    _ => {
                        return Err(format!(
                            "--scheduler: `{v}` is neither least-loaded nor basic"
                        ))
                    }
                };
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            _ if a.starts_with('-') => return Err(format!("unknown option `{a}`\n{USAGE}")),
            _ if dir.is_none() => dir = Some(PathBuf::from(a)),
            _ => return Err(format!("one directory only, not also `{a}`\n{USAGE}")),
        }
    }
    Ok(Args {
        dir: dir.ok_or_else(|| format!("no job directory\n{USAGE}"))?,
        runs,
        keepalive_s,
        placement,
    })
}

/// The functions and requests, in the form [`ServerlessSimulation::load_trace`] takes.
struct Job {
    apps: Vec<ApplicationData>,
    requests: Vec<RequestData>,
}

impl Trace for Job {
    fn app_iter(&self) -> Box<dyn Iterator<Item = ApplicationData> + '_> {
        Box::new(self.apps.iter().cloned())
    }

    fn request_iter(&self) -> Box<dyn Iterator<Item = RequestData> + '_> {
        Box::new(self.requests.iter().copied())
    }

    /// Function i is application i's only function.
    fn function_iter(&self) -> Box<dyn Iterator<Item = usize> + '_> {
        Box::new(0..self.apps.len())
    }

    fn is_ordered_by_time(&self) -> bool {
        true
    }

    fn simulation_end(&self) -> Option<f64> {
        None
    }
}

fn csv_reader(path: &Path, header: &[&str]) -> Result<csv::Reader<fs::File>> {
    let mut r = csv::Reader::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let found = r
        .headers()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if found.iter().ne(header.iter().copied()) {
        return Err(format!(
            "{}: line 1: the header is `{}`, not `{}`",
            path.display(),
            found.iter().collect::<Vec<_>>().join(","),
            header.join(",")
        ));
    }
    Ok(r)
}

fn field<'a>(path: &Path, row: &'a csv::StringRecord, i: usize, name: &str) -> Result<&'a str> {
    let line = row.position().map_or(0, |p| p.line());
    row.get(i)
        .ok_or_else(|| format!("{}: line {line}: no `{name}`", path.display()))
}

fn number<T: std::str::FromStr>(
    path: &Path,
    row: &csv::StringRecord,
    i: usize,
    name: &str,
) -> Result<T> {
    let text = field(path, row, i, name)?;
    text.parse().map_err(|_| {
        let line = row.position().map_or(0, |p| p.line());
        format!(
            "{}: line {line}: `{name}` is `{text}`, not a number",
            path.display()
        )
    })
}

/// Reads `functions.csv` into one application each, and their ids by name.
fn read_functions(path: &Path) -> Result<(Vec<ApplicationData>, HashMap<String, usize>)> {
    let mut apps = Vec::new();
    let mut ids = HashMap::new();
    for row in csv_reader(path, &TABLE_HEADER)?.records() {
        let row = row.map_err(|e| format!("{}: {e}", path.display()))?;
        let name = field(path, &row, 0, "name")?.to_string();
        let memory_mb: u64 = number(path, &row, 1, "memory_mb")?;
        let warm_ms: f64 = number(path, &row, 2, "warm_ms")?;
        let cold_ms: f64 = number(path, &row, 3, "cold_ms")?;
        let line = row.position().map_or(0, |p| p.line());
        if !(warm_ms > 0.0 && cold_ms >= warm_ms) {
            return Err(format!(
                "{}: line {line}: `{name}` has warm {warm_ms} ms and cold {cold_ms} ms: need 0 < warm ≤ cold",
                path.display()
            ));
        }
        if ids.insert(name.clone(), apps.len()).is_some() {
            return Err(format!("{}: line {line}: `{name}` again", path.display()));
        }
        let deployment_s = (cold_ms - warm_ms) / 1e3;
        apps.push(ApplicationData::new(
            1,
            deployment_s,
            1.0,
            vec![(MEMORY.to_string(), memory_mb)],
        ));
    }
    Ok((apps, ids))
}

/// Reads `invocations.csv` into requests: function, arrival (s), duration
/// (the sum of its CPU phases, s).
fn read_invocations(path: &Path, ids: &HashMap<String, usize>) -> Result<Vec<RequestData>> {
    let mut requests = Vec::new();
    let mut last = 0;
    for row in csv_reader(path, &STREAM_HEADER)?.records() {
        let row = row.map_err(|e| format!("{}: {e}", path.display()))?;
        let line = row.position().map_or(0, |p| p.line());
        let name = field(path, &row, 1, "function")?;
        let id = *ids.get(name).ok_or_else(|| {
            format!(
                "{}: line {line}: no function `{name}` in the table",
                path.display()
            )
        })?;
        let arrival_us: u64 = number(path, &row, 2, "arrival_us")?;
        if arrival_us < last {
            return Err(format!(
                "{}: line {line}: arrival {arrival_us} µs before {last} µs",
                path.display()
            ));
        }
        last = arrival_us;
        let mut cpu_us: u64 = 0;
        for phase in field(path, &row, 3, "phases")?.split(';') {
            let us = match phase.split_at_checked(1) {
                Some(("c", v)) | Some(("i", v)) => v.parse::<u64>().ok(),
                _ => None,
            }
            .ok_or_else(|| {
                format!(
                    "{}: line {line}: phase `{phase}` is not c<µs> or i<µs>",
                    path.display()
                )
            })?;
            if phase.starts_with('c') {
                cpu_us = cpu_us.saturating_add(us);
            }
        }
        if cpu_us == 0 {
            return Err(format!("{}: line {line}: no CPU phase", path.display()));
        }
        requests.push(RequestData {
            id,
            duration: cpu_us as f64 / 1e6,
            time: arrival_us as f64 / 1e6,
        });
    }
    Ok(requests)
}

/// What one run measured.
struct Run {
    wall_s: f64,
    invocations: u64,
    cold_starts: u64,
    events: u64,
}

fn run_once(job: &Job, cluster: &Cluster, args: &Args) -> Run {
    let started = Instant::now();
    let config = Config {
        coldstart_policy: Box::new(FixedTimeColdStartPolicy::new(args.keepalive_s, 0.0, true)),
        scheduler: args.placement.build(),
        ..Default::default()
    };
    let mut sim = ServerlessSimulation::new(Simulation::new(cluster.seed), config);
    for _ in 0..cluster.servers {
        let mem = sim.create_resource(MEMORY, cluster.memory_mb);
        sim.add_host(None, ResourceProvider::new(vec![mem]), cluster.cores);
    }
    sim.load_trace(job);
    sim.step_until_no_events();
    let wall_s = started.elapsed().as_secs_f64();
    let stats = sim.invocation_stats();
    Run {
        wall_s,
        invocations: stats.invocations,
        cold_starts: stats.cold_starts,
        events: sim.event_count(),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dslab-faas-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args = parse_args()?;
    let cluster_path = args.dir.join("cluster.json");
    let text = fs::read_to_string(&cluster_path)
        .map_err(|e| format!("{}: {e}", cluster_path.display()))?;
    let cluster: Cluster =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", cluster_path.display()))?;
    if cluster.servers == 0 || cluster.cores == 0 {
        return Err(format!(
            "{}: no servers or no cores",
            cluster_path.display()
        ));
    }
    let (apps, ids) = read_functions(&args.dir.join("functions.csv"))?;
    let requests = read_invocations(&args.dir.join("invocations.csv"), &ids)?;
    if requests.len() as u64 != cluster.invocations {
        return Err(format!(
            "{}: {} invocations, where cluster.json says {}",
            args.dir.join("invocations.csv").display(),
            requests.len(),
            cluster.invocations
        ));
    }
    let job = Job { apps, requests };
    println!(
        "dslab-faas: {} functions, {} invocations on {} hosts × {} cores ({} MB each), {} scheduler, TTL {} s keep-alive, {} runs",
        job.apps.len(),
        job.requests.len(),
        cluster.servers,
        cluster.cores,
        cluster.memory_mb,
        args.placement.name(),
        args.keepalive_s,
        args.runs
    );
    let mut runs = Vec::with_capacity(args.runs);
    for _ in 0..args.runs {
        let r = run_once(&job, &cluster, &args);
        println!("  run: {:.4} s", r.wall_s);
        runs.push(r);
    }
    runs.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
    let median = &runs[runs.len() / 2];
    let n = job.requests.len() as f64;
    println!(
        "dslab-faas {:<12} {:>9} invocations  median {:>8.4} s  {:>10.0} invocations/s  {:>5.2} events/invocation  {:>5.3} cold/invocation  ({} counted by dslab-faas)",
        args.placement.name(),
        job.requests.len(),
        median.wall_s,
        n / median.wall_s,
        median.events as f64 / n,
        median.cold_starts as f64 / n,
        median.invocations
    );
    Ok(())
}
