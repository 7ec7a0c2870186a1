//! Where a run's invocations come from: a built-in generator or a workload CSV
//! file, optionally rescaled to a target load, resolved once and streamed
//! again for each policy.
//!
//! A file is opened once, when it is resolved: every later stream reads that
//! same open file from its start (positioned reads, so streams never share an
//! offset), so a file replaced or removed while a run goes on does not change
//! what the run reads. Resolving reads it through once to find a malformed row
//! before any policy runs, and to know its length and offered load.

use crate::synthetic::{Generator, Params, Spec};
use crate::{Error, Result, csv, scale};
use faasched_model::Invocation;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// Default load of the built-in workloads (ALPS's heaviest setting).
pub const DEFAULT_LOAD: f64 = 0.9;
/// Default size of a built-in workload (the ALPS paper's sample).
pub const DEFAULT_INVOCATIONS: u64 = 15_000;

/// Invocations as the engine pulls them.
pub type Stream = Box<dyn Iterator<Item = Result<Invocation>>>;

/// A workload as asked for: what [`Source::resolve`] turns into a [`Source`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    /// A built-in workload's name (with parameters, `lognormal:scale=0.1`)
    /// or a workload CSV file's path.
    pub workload: String,
    /// Cores the load is relative to.
    pub cores: usize,
    /// Offered load: a built-in's (default [`DEFAULT_LOAD`]); a file is
    /// rescaled to it only when given.
    pub load: Option<f64>,
    /// Invocations to generate (default [`DEFAULT_INVOCATIONS`]), or to take
    /// from the start of a file (default all).
    pub invocations: Option<u64>,
    /// Seed of the generator.
    pub seed: u64,
}

/// A resolved workload: can be streamed again for each policy.
#[derive(Debug)]
pub struct Source {
    kind: Kind,
    cores: usize,
}

#[derive(Debug)]
enum Kind {
    Synthetic(Params),
    /// A file streamed as it is, up to `limit` invocations.
    File {
        path: PathBuf,
        file: Arc<File>,
        limit: Option<u64>,
        /// Invocations a stream yields, and their offered load on the
        /// source's cores, as the resolving pass found them.
        len: u64,
        load: f64,
    },
    /// A file read into memory and rescaled to a load.
    Rescaled {
        path: PathBuf,
        invocations: Vec<Invocation>,
        factor: f64,
        load: f64,
    },
}

impl Source {
    /// Resolves `choice`: a built-in if its name parses as one, else a
    /// workload file. Errors say why neither applies, or what is wrong with
    /// the file (its first malformed row, by line and field).
    pub fn resolve(choice: &Choice) -> Result<Source> {
        let cores = choice.cores;
        let kind = match Spec::parse(&choice.workload) {
            Ok(spec) => {
                let params = Params {
                    spec,
                    cores,
                    load: choice.load.unwrap_or(DEFAULT_LOAD),
                    invocations: choice.invocations.unwrap_or(DEFAULT_INVOCATIONS),
                    seed: choice.seed,
                };
                Generator::new(&params)?; // validate now, not per policy
                Kind::Synthetic(params)
            }
            Err(spec_err) => Source::file(choice, spec_err)?,
        };
        Ok(Source { kind, cores })
    }

    /// The file `choice` names, opened and read through once.
    fn file(choice: &Choice, spec_err: Error) -> Result<Kind> {
        let name = &choice.workload;
        let path = PathBuf::from(name);
        let unusable = |why: String| {
            // A name with a path's marks is meant as a file.
            let file_like = name.contains('/') || (name.contains('.') && !name.contains(':'));
            match file_like {
                true => Error::Unusable(format!("workload file `{name}`: {why}")),
                false => {
                    Error::Unusable(format!("{spec_err} (and no workload file `{name}`: {why})"))
                }
            }
        };
        let file = File::open(&path).map_err(|e| unusable(e.to_string()))?;
        let meta = file.metadata().map_err(|e| Error::io(&path, e))?;
        if meta.is_dir() {
            return Err(unusable("is a directory".into()));
        }
        if !meta.is_file() {
            return Err(unusable("is not a regular file".into()));
        }
        let file = Arc::new(file);
        let rows =
            || -> Result<csv::Reader> { csv::Reader::from_reader(&path, At::start(file.clone())) };
        let limit = choice.invocations;
        let taken = |reader: csv::Reader| reader.take(limit.map_or(usize::MAX, |n| n as usize));
        let empty = || {
            Error::Unusable(format!(
                "workload file `{name}` has no invocations: a header and no rows"
            ))
        };
        match choice.load {
            None => {
                let mut offered = scale::Offered::default();
                for inv in taken(rows()?) {
                    offered.add(&inv?);
                }
                if offered.count() == 0 {
                    return Err(empty());
                }
                Ok(Kind::File {
                    load: offered.load(choice.cores),
                    len: offered.count(),
                    path,
                    file,
                    limit,
                })
            }
            Some(load) => {
                let mut invocations = taken(rows()?).collect::<Result<Vec<_>>>()?;
                if invocations.is_empty() {
                    return Err(empty());
                }
                let factor = scale::rescale_to_load(&mut invocations, choice.cores, load)
                    .map_err(|e| Error::Unusable(format!("rescaling {}: {e}", path.display())))?;
                invocations.shrink_to_fit();
                Ok(Kind::Rescaled {
                    path,
                    invocations,
                    factor,
                    load,
                })
            }
        }
    }

    /// A fresh stream of the workload's invocations.
    pub fn stream(&self) -> Result<Stream> {
        Ok(match &self.kind {
            Kind::Synthetic(p) => Box::new(Generator::new(p)?),
            Kind::File {
                path, file, limit, ..
            } => {
                let reader = csv::Reader::from_reader(path, At::start(file.clone()))?;
                match limit {
                    Some(n) => Box::new(reader.take(*n as usize)),
                    None => Box::new(reader),
                }
            }
            Kind::Rescaled { invocations, .. } => Box::new(invocations.clone().into_iter().map(Ok)),
        })
    }

    /// The whole workload, in memory: for runs that read it more than once
    /// or in parts.
    pub fn invocations(&self) -> Result<Vec<Invocation>> {
        self.stream()?.collect()
    }

    /// How many invocations a stream yields.
    pub fn len(&self) -> u64 {
        match &self.kind {
            Kind::Synthetic(p) => p.invocations,
            Kind::File { len, .. } => *len,
            Kind::Rescaled { invocations, .. } => invocations.len() as u64,
        }
    }

    /// Whether a stream yields nothing (never, once resolved).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The offered load on the cores it was resolved for: the built-in's or
    /// rescaled-to load, or what a file's demand and arrivals give (see
    /// [`scale`]). Above 1, the machine is overloaded and queues only grow.
    pub fn offered_load(&self) -> f64 {
        match &self.kind {
            Kind::Synthetic(p) => p.load,
            Kind::File { load, .. } | Kind::Rescaled { load, .. } => *load,
        }
    }

    /// The cores it was resolved for.
    pub fn cores(&self) -> usize {
        self.cores
    }

    /// The workload as `summary.json` describes it.
    pub fn describe(&self) -> Value {
        match &self.kind {
            Kind::Synthetic(p) => json!({
                "name": p.spec.to_string(), "kind": "synthetic", "invocations": p.invocations,
                "load": p.load, "seed": p.seed, "mean_cpu_ms": p.spec.mean_cpu() as f64 / 1e6,
            }),
            Kind::File { path, limit, .. } => json!({
                "name": path.display().to_string(), "kind": "file", "limit": limit,
            }),
            Kind::Rescaled {
                path,
                invocations,
                factor,
                ..
            } => json!({
                "name": path.display().to_string(), "kind": "file", "invocations": invocations.len(),
                "rescaled_by": factor,
            }),
        }
    }
}

/// A stream's position in the source's one open file: reads at its own
/// offset, so that streams of the same file never move each other.
struct At {
    file: Arc<File>,
    offset: u64,
}

impl At {
    fn start(file: Arc<File>) -> At {
        At { file, offset: 0 }
    }
}

impl Read for At {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.offset)?;
        self.offset += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn choice(workload: &str) -> Choice {
        Choice {
            workload: workload.into(),
            cores: 2,
            load: None,
            invocations: None,
            seed: 1,
        }
    }

    const CSV: &str = "id,function,arrival_us,phases,memory_mb,deadline_us\n\
                       0,f,0,c1000,128,\n1,f,1000,c3000,128,\n";

    #[test]
    fn a_file_is_streamed_from_its_one_open_handle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.csv");
        std::fs::write(&path, CSV).unwrap();
        let source = Source::resolve(&choice(path.to_str().unwrap())).unwrap();
        assert_eq!(source.len(), 2);
        // 4 ms of demand over a 1 ms span on 2 cores.
        assert_eq!(source.offered_load(), 2.0);
        // Removed and replaced: the run still reads what it resolved.
        std::fs::remove_file(&path).unwrap();
        let mut other = File::create(&path).unwrap();
        writeln!(other, "garbage").unwrap();
        let (a, b) = (source.stream().unwrap(), source.stream().unwrap());
        let ids: Vec<u64> = a
            .zip(b)
            .map(|(x, y)| x.unwrap().id + y.unwrap().id)
            .collect();
        assert_eq!(ids, [0, 2]);
    }

    #[test]
    fn a_bad_row_anywhere_is_found_when_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.csv");
        std::fs::write(&path, format!("{CSV}2,f,500,c10,128,\n")).unwrap();
        let err = Source::resolve(&choice(path.to_str().unwrap())).unwrap_err();
        assert!(err.to_string().contains(":4: field `arrival_us`"), "{err}");
        // Unless the limit stops before it.
        let mut first_two = choice(path.to_str().unwrap());
        first_two.invocations = Some(2);
        assert_eq!(Source::resolve(&first_two).unwrap().len(), 2);
    }

    #[test]
    fn a_built_in_knows_its_load_and_length() {
        let mut c = choice("huawei");
        c.load = Some(2.5);
        c.invocations = Some(10);
        let s = Source::resolve(&c).unwrap();
        assert_eq!((s.len(), s.offered_load()), (10, 2.5));
        let err = Source::resolve(&choice("nope")).unwrap_err().to_string();
        assert!(err.contains("and no workload file `nope`"), "{err}");
    }
}
