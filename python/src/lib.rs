//! `faasched._native`: faasched's simulators for Python. Each function
//! runs what the command of its name runs and writes that command's files
//! into a path the caller gives; the `faasched` package reads them into
//! pandas DataFrames, so a DataFrame has summary.csv's columns by
//! construction. No function holds the GIL while it runs. An error is a
//! `ValueError` whose message is the one the command prints.

use anyhow::{Context, Result, anyhow, bail};
use faasched_lab::cluster::run::ClusterOptions;
use faasched_lab::cluster::simulate::{self as cluster_simulate, DEFAULT_ROUTERS};
use faasched_lab::experiment::Name;
use faasched_lab::experiment::command::staged_dir;
use faasched_lab::experiment::sweep;
use faasched_lab::level::Settings;
use faasched_lab::node::capacity::{
    self, CapacityOptions, DEFAULT_CAPACITY_POLICIES, DEFAULT_MAX_DROPPED, DEFAULT_MIN_REQUESTS,
    DEFAULT_PRECISION, DEFAULT_SEEDS, percent,
};
use faasched_lab::node::run::NodeOptions;
use faasched_lab::node::sweep::{self as node_sweep, DEFAULT_NODE_POLICIES, Sweep};
use faasched_lab::os::run::{Kernel, MAX_CORES, WorkloadOptions};
use faasched_lab::os::simulate::{self as os_simulate, DEFAULT_POLICIES};
use faasched_lab::os::tuning::TuningFlags;
use faasched_lab::output::Outputs;
use faasched_lab::workload::{self as lab_workload, Arrivals, Generate, Import, TraceFiles};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use std::borrow::Cow;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::str::FromStr;

/// An error as a Python exception, in the command's words.
fn error(e: anyhow::Error) -> PyErr {
    PyValueError::new_err(faasched_lab::message::chain(&e))
}

/// What the flags' own parsers refuse, refused here in their words.
fn check(cores: Option<usize>, load: Option<f64>, invocations: Option<u64>) -> Result<()> {
    if let Some(c) = cores.filter(|&c| !(1..=usize::from(MAX_CORES)).contains(&c)) {
        bail!("cores {c}: give 1 to {MAX_CORES}");
    }
    if let Some(l) = load
        && let Err(why) = lab_workload::valid_load(l)
    {
        bail!("load {l}: {why}");
    }
    if invocations == Some(0) {
        bail!("invocations 0: must be at least 1");
    }
    Ok(())
}

/// `faasched simulate` into the directory `out`: summary.csv, summary.json,
/// invocations.csv and report.html.
#[pyfunction]
#[pyo3(signature = (out, workload, policies, cores=None, load=None, invocations=None, seed=1))]
#[allow(clippy::too_many_arguments)]
fn simulate(
    py: Python<'_>,
    out: PathBuf,
    workload: String,
    policies: Vec<String>,
    cores: Option<usize>,
    load: Option<f64>,
    invocations: Option<u64>,
    seed: u64,
) -> PyResult<()> {
    let options = os_simulate::Options {
        workload: WorkloadOptions {
            workload,
            cores,
            load,
            invocations,
            seed,
        },
        policies,
        kernel: Kernel::default(),
        tuning: TuningFlags::default(),
        outputs: Outputs {
            dir: Some(out),
            json: false,
            silent: true,
        },
    };
    py.detach(|| check(cores, load, invocations).and_then(|()| os_simulate::run(options)))
        .map_err(error)
}

/// The node of `node simulate` and `node capacity` from the options
/// Python passes; the rest are the commands' defaults.
fn node(
    workload: String,
    workers: u32,
    dispatchers: u32,
    requests: Option<u64>,
    seconds: f64,
    seed: u64,
) -> NodeOptions {
    NodeOptions {
        workload,
        workers,
        dispatchers,
        requests,
        seconds,
        seed,
        ..NodeOptions::default()
    }
}

/// `faasched node simulate` into the directory `out`: summary.csv,
/// summary.json and report.html, a row per policy and offered rate.
#[pyfunction]
#[pyo3(signature = (out, workload, policies, workers, dispatchers, rates, loads, seconds, requests, seed))]
#[allow(clippy::too_many_arguments)]
fn simulate_node(
    py: Python<'_>,
    out: PathBuf,
    workload: String,
    policies: Vec<String>,
    workers: u32,
    dispatchers: u32,
    rates: Vec<f64>,
    loads: Vec<f64>,
    seconds: f64,
    requests: Option<u64>,
    seed: u64,
) -> PyResult<()> {
    let options = node(workload, workers, dispatchers, requests, seconds, seed);
    let sweep = Sweep {
        rates,
        loads,
        policies,
    };
    let outputs = Outputs {
        dir: Some(out),
        json: false,
        silent: true,
    };
    py.detach(|| {
        check(None, None, requests).and_then(|()| node_sweep::simulate(&options, &sweep, &outputs))
    })
    .map_err(error)
}

/// `faasched cluster simulate` into the directory `out`: summary.csv,
/// summary.json, report.html and timing.json.
#[pyfunction]
#[pyo3(signature = (out, workload, policies, servers, cores, memory_gb, load, seconds, invocations, seed, keep_alive))]
#[allow(clippy::too_many_arguments)]
fn simulate_cluster(
    py: Python<'_>,
    out: PathBuf,
    workload: String,
    policies: Vec<String>,
    servers: u32,
    cores: u32,
    memory_gb: f64,
    load: f64,
    seconds: f64,
    invocations: Option<u64>,
    seed: u64,
    keep_alive: String,
) -> PyResult<()> {
    let options = cluster_simulate::Options {
        cluster: ClusterOptions {
            workload,
            servers,
            cores,
            memory_gb,
            load,
            seconds,
            invocations,
            seed,
            keep_alive,
            ..ClusterOptions::default()
        },
        policies,
        outputs: Outputs {
            dir: Some(out),
            json: false,
            silent: true,
        },
    };
    py.detach(|| check(None, Some(load), invocations).and_then(|()| cluster_simulate::run(options)))
        .map_err(error)
}

/// `faasched workload generate` into the workload CSV `out`.
#[pyfunction]
#[pyo3(signature = (out, workload, cores, load, invocations, seed=1))]
fn generate(
    py: Python<'_>,
    out: PathBuf,
    workload: String,
    cores: usize,
    load: f64,
    invocations: u64,
    seed: u64,
) -> PyResult<()> {
    let options = Generate {
        workload,
        cores,
        load,
        invocations,
        seed,
        output: out,
    };
    py.detach(|| {
        check(Some(cores), Some(load), Some(invocations))
            .and_then(|()| lab_workload::write_generated(&options).map(drop))
    })
    .map_err(error)
}

/// Reads the workload CSV `path` as `simulate` does, every row checked
/// (an error names the file, the line and the field); the number of
/// invocations.
#[pyfunction]
fn check_workload(py: Python<'_>, path: PathBuf) -> PyResult<usize> {
    py.detach(|| Ok(faasched_workload::csv::read_all(&path)?.0.len()))
        .map_err(error)
}

/// A range option's text (`540..690`, `1..3`, `7`) as the flag's parser
/// reads it; an error names the option.
fn range<T>(option: &str, text: Option<&str>) -> Result<Option<RangeInclusive<T>>>
where
    T: FromStr + Copy + PartialOrd,
    T::Err: std::fmt::Display,
{
    text.map(|t| lab_workload::parse_range(t).map_err(|why| anyhow!("{option}: {why}")))
        .transpose()
}

/// `faasched workload import KIND PATH` into the workload CSV `out`;
/// `day`, `days`, `minutes`, `seconds` and `arrivals` are read where
/// `kind` has them, as its flags.
#[pyfunction]
#[pyo3(signature = (out, kind, path, day, days, minutes, seconds, arrivals, functions, seed, load, cores))]
#[allow(clippy::too_many_arguments)]
fn import_trace(
    py: Python<'_>,
    out: PathBuf,
    kind: String,
    path: PathBuf,
    day: u32,
    days: String,
    minutes: Option<String>,
    seconds: Option<String>,
    arrivals: String,
    functions: Option<u64>,
    seed: u64,
    load: Option<f64>,
    cores: Option<usize>,
) -> PyResult<()> {
    py.detach(|| {
        check(cores, load, None)?;
        let arrivals: Arrivals = arrivals.parse().map_err(|why| anyhow!("arrivals: {why}"))?;
        let trace = match kind.as_str() {
            "azure-2019" => TraceFiles::Azure2019 {
                dir: path,
                day,
                minutes: range("minutes", minutes.as_deref())?,
                arrivals,
            },
            "azure-2021" => TraceFiles::Azure2021 {
                file: path,
                seconds: seconds
                    .as_deref()
                    .map(|t| lab_workload::parse_window(t).map_err(|why| anyhow!("seconds: {why}")))
                    .transpose()?,
            },
            "huawei-2023" => TraceFiles::Huawei2023 {
                dir: path,
                days: range("days", Some(&days))?.expect("a range was given"),
                minutes: range("minutes", minutes.as_deref())?,
                arrivals,
            },
            other => {
                bail!("no trace kind `{other}`: expected azure-2019, azure-2021 or huawei-2023")
            }
        };
        lab_workload::import(Import {
            trace,
            functions,
            seed,
            load,
            cores,
            output: out,
        })
    })
    .map_err(error)
}

/// `faasched node capacity` into the directory `out`: summary.csv,
/// summary.json and report.html, a row per policy; a search setting left
/// out is the command's default.
#[pyfunction]
#[pyo3(signature = (out, target, workload, policies, workers, dispatchers, seconds, requests, seed, max_dropped=None, seeds=None, precision=None, min_requests=None))]
#[allow(clippy::too_many_arguments)]
fn node_capacity(
    py: Python<'_>,
    out: PathBuf,
    target: String,
    workload: String,
    policies: Vec<String>,
    workers: u32,
    dispatchers: u32,
    seconds: f64,
    requests: Option<u64>,
    seed: u64,
    max_dropped: Option<String>,
    seeds: Option<u64>,
    precision: Option<f64>,
    min_requests: Option<u64>,
) -> PyResult<()> {
    py.detach(|| {
        check(None, None, requests)?;
        let options = node(workload, workers, dispatchers, requests, seconds, seed);
        let search = CapacityOptions {
            target: target.parse().context("target")?,
            max_dropped: match max_dropped {
                Some(text) => percent(&text).context("max_dropped")?,
                None => DEFAULT_MAX_DROPPED,
            },
            seeds: seeds.unwrap_or(DEFAULT_SEEDS),
            precision: precision.unwrap_or(DEFAULT_PRECISION),
            min_requests: min_requests.unwrap_or(DEFAULT_MIN_REQUESTS),
            policies,
        };
        let outputs = Outputs {
            dir: Some(out),
            json: false,
            silent: true,
        };
        capacity::capacity(&options, &search, &outputs)
    })
    .map_err(error)
}

/// An experiment's cases, each as a line of JSON: its own for the
/// settings, or those of `cases` (a cases file's text); with `out`, that
/// directory is made now, so that one that cannot be made is found
/// before anything runs.
#[pyfunction]
#[pyo3(signature = (name, invocations=None, seed=1, trace=None, cases=None, out=None))]
fn experiment_cases(
    py: Python<'_>,
    name: String,
    invocations: Option<u64>,
    seed: u64,
    trace: Option<PathBuf>,
    cases: Option<String>,
    out: Option<PathBuf>,
) -> PyResult<Vec<String>> {
    py.detach(|| {
        check(None, None, invocations)?;
        let settings = Settings {
            invocations,
            seed,
            trace,
            cache: None,
        };
        let lines = sweep::cases(Name::parse(&name)?, &settings, cases.as_deref())?;
        staged_dir(out.as_deref())?;
        Ok(lines)
    })
    .map_err(error)
}

/// Runs an experiment's cases (lines of [`experiment_cases`]) here, into
/// `out` if given; what `faasched experiment` prints.
#[pyfunction]
#[pyo3(signature = (name, cases, out=None))]
fn experiment_run(
    py: Python<'_>,
    name: String,
    cases: Vec<String>,
    out: Option<PathBuf>,
) -> PyResult<String> {
    py.detach(|| sweep::run(Name::parse(&name)?, &cases, out.as_deref()))
        .map_err(error)
}

/// Measures one case of an experiment: the bytes `experiment_finish`
/// gathers.
#[pyfunction]
fn experiment_measure(py: Python<'_>, name: String, case: String) -> PyResult<Cow<'static, [u8]>> {
    py.detach(|| sweep::measure(Name::parse(&name)?, &case))
        .map(Cow::Owned)
        .map_err(error)
}

/// Gathers each case's measurements into the experiment's table and
/// files (into `out` if given); what `faasched experiment` prints.
#[pyfunction]
#[pyo3(signature = (name, cases, measured, out=None))]
fn experiment_finish(
    py: Python<'_>,
    name: String,
    cases: Vec<String>,
    measured: Vec<PyBackedBytes>,
    out: Option<PathBuf>,
) -> PyResult<String> {
    py.detach(|| sweep::finish(Name::parse(&name)?, &cases, &measured, out.as_deref()))
        .map_err(error)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Python's Ctrl-C stays Python's, and a notebook's stderr gets no
    // progress bars.
    faasched_lab::interrupt::leave_to_host();
    faasched_lab::progress::quiet();
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_node, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_cluster, m)?)?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_function(wrap_pyfunction!(check_workload, m)?)?;
    m.add_function(wrap_pyfunction!(import_trace, m)?)?;
    m.add_function(wrap_pyfunction!(node_capacity, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_cases, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_run, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_measure, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_finish, m)?)?;
    m.add("EXPERIMENTS", Name::ALL.map(Name::spelled).to_vec())?;
    m.add(
        "DEFAULT_CAPACITY_POLICIES",
        DEFAULT_CAPACITY_POLICIES.split(',').collect::<Vec<_>>(),
    )?;
    m.add(
        "DEFAULT_POLICIES",
        DEFAULT_POLICIES.split(',').collect::<Vec<_>>(),
    )?;
    m.add(
        "DEFAULT_NODE_POLICIES",
        DEFAULT_NODE_POLICIES.split(',').collect::<Vec<_>>(),
    )?;
    m.add(
        "DEFAULT_ROUTERS",
        DEFAULT_ROUTERS.split(',').collect::<Vec<_>>(),
    )?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
