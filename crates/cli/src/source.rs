//! Where a run's invocations come from: a built-in generator or a workload CSV
//! file, optionally rescaled to a target load.

use anyhow::{Context, Result, bail};
use clap::Args as ClapArgs;
use faasched_model::Invocation;
use faasched_workload::synthetic::{Generator, Params, Spec};
use faasched_workload::{csv, scale};
use serde_json::{Value, json};
use std::path::PathBuf;

/// Invocations as the engine pulls them.
pub type Stream = Box<dyn Iterator<Item = faasched_workload::Result<Invocation>>>;

/// Which workload to run, on how many cores.
#[derive(ClapArgs, Debug, Clone)]
pub struct WorkloadArgs {
    /// A built-in workload or a workload CSV file. Built-ins: huawei, azure,
    /// lognormal[:scale=F], exponential[:mean-ms=F], fixed[:cpu-ms=F],
    /// bimodal[:p=F,short-us=N,long-us=N], bimodal-high, bimodal-extreme,
    /// mixed-io.
    #[arg(long, short = 'w', default_value = "huawei", value_name = "NAME|FILE")]
    pub workload: String,
    /// Cores, 1 to 256: of the simulated machine (default 56), or for
    /// `replay` and `compare` the first N CPUs of this one (default: all
    /// online CPUs; `compare` simulates as many).
    #[arg(long, short = 'c', value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub cores: Option<u16>,
    /// Offered load (CPU demand / core-time). Built-ins default to 0.9; a file
    /// is used as it is unless this asks to rescale its arrivals.
    #[arg(long, short = 'l', value_name = "FRACTION")]
    pub load: Option<f64>,
    /// Invocations to generate (built-ins) or to take from the start of a
    /// file. Default: 15000 of a built-in and all of a file for `simulate`;
    /// 1000 of either for `replay` and `compare`.
    #[arg(long, short = 'n', value_parser = crate::source::count)]
    pub invocations: Option<u64>,
    /// Seed of every random choice: a simulation with the same seed and
    /// inputs writes the same bytes (a live run draws the same workload).
    #[arg(long, short = 's', default_value_t = 1)]
    pub seed: u64,
}

impl WorkloadArgs {
    /// The cores asked for, or the simulator's default.
    pub fn cores(&self) -> usize {
        self.cores.map_or(DEFAULT_CORES, usize::from)
    }
}

/// A number of invocations for a flag: a whole number, at least 1.
pub fn count(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Default number of simulated cores (the ALPS paper's machine).
pub const DEFAULT_CORES: usize = 56;
/// Default load of the built-in workloads (ALPS's heaviest setting).
pub const DEFAULT_LOAD: f64 = 0.9;
/// Default size of a built-in workload (the ALPS paper's sample).
pub const DEFAULT_INVOCATIONS: u64 = 15_000;

/// A resolved workload: can be streamed again for each policy.
pub enum Source {
    Synthetic(Params),
    File {
        path: PathBuf,
        limit: Option<u64>,
    },
    Rescaled {
        path: PathBuf,
        invocations: Vec<Invocation>,
        factor: f64,
    },
}

impl Source {
    pub fn resolve(a: &WorkloadArgs) -> Result<Source> {
        let cores = a.cores();
        match Spec::parse(&a.workload) {
            Ok(spec) => {
                let params = Params {
                    spec,
                    cores,
                    load: a.load.unwrap_or(DEFAULT_LOAD),
                    invocations: a.invocations.unwrap_or(DEFAULT_INVOCATIONS),
                    seed: a.seed,
                };
                Generator::new(&params)?; // validate now, not per policy
                Ok(Source::Synthetic(params))
            }
            Err(spec_err) => {
                let path = PathBuf::from(&a.workload);
                if !path.is_file() {
                    let why = match std::fs::metadata(&path) {
                        Ok(m) if m.is_dir() => "is a directory".to_string(),
                        Ok(_) => "is not a regular file".to_string(),
                        Err(e) => e.to_string(),
                    };
                    // A name with a path's marks is meant as a file.
                    let file_like = a.workload.contains('/')
                        || (a.workload.contains('.') && !a.workload.contains(':'));
                    if file_like {
                        bail!("workload file `{}`: {why}", a.workload);
                    }
                    bail!("{spec_err} (and no workload file `{}`: {why})", a.workload);
                }
                // An empty workload is a mistake to say now, not a table of
                // dashes after the run (and a bad first row is found at once).
                if csv::Reader::open(&path)?.next().transpose()?.is_none() {
                    bail!(
                        "workload file `{}` has no invocations: a header and no rows",
                        a.workload
                    );
                }
                match a.load {
                    None => Ok(Source::File {
                        path,
                        limit: a.invocations,
                    }),
                    Some(load) => {
                        let (mut invs, _) = csv::read_all(&path)?;
                        if let Some(n) = a.invocations {
                            invs.truncate(n as usize);
                        }
                        let factor = scale::rescale_to_load(&mut invs, cores, load)
                            .with_context(|| format!("rescaling {}", path.display()))?;
                        Ok(Source::Rescaled {
                            path,
                            invocations: invs,
                            factor,
                        })
                    }
                }
            }
        }
    }

    /// A fresh stream of the workload's invocations.
    pub fn stream(&self) -> Result<Stream> {
        Ok(match self {
            Source::Synthetic(p) => Box::new(Generator::new(p)?),
            Source::File { path, limit } => {
                let reader = csv::Reader::open(path)?;
                match limit {
                    Some(n) => Box::new(reader.take(*n as usize)),
                    None => Box::new(reader),
                }
            }
            Source::Rescaled { invocations, .. } => {
                Box::new(invocations.clone().into_iter().map(Ok))
            }
        })
    }

    /// The whole workload, in memory: for runs that read it more than once
    /// or in parts.
    pub fn invocations(&self) -> Result<Vec<Invocation>> {
        self.stream()?
            .collect::<faasched_workload::Result<Vec<_>>>()
            .context("reading the workload")
    }

    /// How many invocations a stream yields, when known in advance.
    pub fn len(&self) -> Option<u64> {
        match self {
            Source::Synthetic(p) => Some(p.invocations),
            Source::File { limit, .. } => *limit,
            Source::Rescaled { invocations, .. } => Some(invocations.len() as u64),
        }
    }

    /// The workload as `summary.json` describes it.
    pub fn describe(&self) -> Value {
        match self {
            Source::Synthetic(p) => json!({
                "name": p.spec.to_string(), "kind": "synthetic", "invocations": p.invocations,
                "load": p.load, "seed": p.seed, "mean_cpu_ms": p.spec.mean_cpu() as f64 / 1e6,
            }),
            Source::File { path, limit } => json!({
                "name": path.display().to_string(), "kind": "file", "limit": limit,
            }),
            Source::Rescaled {
                path,
                invocations,
                factor,
            } => json!({
                "name": path.display().to_string(), "kind": "file", "invocations": invocations.len(),
                "rescaled_by": factor,
            }),
        }
    }
}
