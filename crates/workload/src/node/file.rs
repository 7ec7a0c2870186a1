//! Node requests from a workload CSV (v1): each row is one request whose
//! `phases` is a single CPU phase `c<µs>` (its work). The rows are parsed
//! and checked by [`crate::csv::Reader`]; this adds what a node request
//! needs, and the file's profile.
//!
//! A request's relative deadline, first match wins:
//! 1. an override naming its function ([`Deadlines`]);
//! 2. the row's `deadline_us`;
//! 3. `*` of the [`Deadlines`];
//! 4. [`DEFAULT_DEADLINE_FACTOR`] × its work.
//!
//! Requests are numbered 0, 1, 2, ... in row order (rows are sorted by
//! arrival, so this is arrival order); the row's `id` only names it in
//! errors. `memory_mb` is not used at the node level.

use super::builtin::DEFAULT_DEADLINE_FACTOR;
use super::deadline::{Deadline, Deadlines};
use super::estimate::{Estimate, estimate_rng};
use super::profile::{FunctionProfile, Profile};
use crate::csv::Reader;
use crate::{Error, Result};
use faasched_model::node::{Request, RequestId};
use faasched_model::{Functions, Invocation, Phase};
use rand_pcg::Pcg64Mcg;
use std::path::{Path, PathBuf};

/// A workload CSV of node requests, read through once: every row checked,
/// its profile known. Streams it again with [`RequestFile::requests`].
#[derive(Clone, Debug)]
pub struct RequestFile {
    path: PathBuf,
    len: u64,
    functions: Functions,
    profile: Profile,
}

impl RequestFile {
    /// Reads `path` through, checking every row: errors name the file, the
    /// line and the field (a row with an I/O phase or several phases is
    /// refused in field `phases`).
    pub fn open(path: &Path) -> Result<RequestFile> {
        let mut reader = Reader::open(path)?;
        // Per function id: requests and their total work (ns).
        let mut tally: Vec<(u64, u128)> = Vec::new();
        let mut len = 0u64;
        while let Some(inv) = reader.next().transpose()? {
            let work = work_of(&inv, path, reader.line())?;
            let i = inv.function.id.0 as usize;
            if tally.len() <= i {
                tally.resize(i + 1, (0, 0));
            }
            tally[i].0 += 1;
            tally[i].1 += u128::from(work);
            len += 1;
        }
        let functions = reader.into_functions();
        let total_work: u128 = tally.iter().map(|t| t.1).sum();
        let profile = Profile::new(
            functions
                .iter()
                .zip(&tally)
                .map(|(f, &(n, work))| FunctionProfile {
                    name: f.name.to_string(),
                    mean_work: work as f64 / n as f64,
                    request_share: n as f64 / len as f64,
                    work_share: work as f64 / total_work as f64,
                })
                .collect(),
        );
        Ok(RequestFile {
            path: path.to_path_buf(),
            len,
            functions,
            profile,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Requests in the file.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it holds no request.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its functions, in id order (order of first sight).
    pub fn functions(&self) -> &Functions {
        &self.functions
    }

    /// Per function, as the file has them: mean work, share of requests,
    /// share of work.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Streams the file's requests again, from its start: deadlines as the
    /// module docs order them, estimates as `estimate` says (noisy ones
    /// drawn from `seed`). Errors: an override naming no function of the
    /// file, now; a row that no longer reads (the file changed since
    /// [`RequestFile::open`]), when the stream reaches it.
    pub fn requests(
        &self,
        deadlines: &Deadlines,
        estimate: Estimate,
        seed: u64,
    ) -> Result<FileRequests> {
        let names: Vec<&str> = self.functions.iter().map(|f| &*f.name).collect();
        deadlines.check_names(&names)?;
        Ok(FileRequests {
            reader: Reader::open(&self.path)?,
            path: self.path.clone(),
            deadlines: deadlines.clone(),
            estimate,
            rng: estimate_rng(seed),
            next_id: 0,
            done: false,
        })
    }
}

/// A [`RequestFile`]'s requests in row order; after an error, nothing more.
pub struct FileRequests {
    reader: Reader,
    path: PathBuf,
    deadlines: Deadlines,
    estimate: Estimate,
    rng: Pcg64Mcg,
    next_id: u64,
    done: bool,
}

impl FileRequests {
    fn read_next(&mut self) -> Result<Option<Request>> {
        let Some(inv) = self.reader.next().transpose()? else {
            return Ok(None);
        };
        let work = work_of(&inv, &self.path, self.reader.line())?;
        let name = &*inv.function.name;
        let deadline = match (self.deadlines.override_for(name), inv.deadline) {
            (Some(d), _) => d.of(work),
            (None, Some(row)) => row,
            (None, None) => self
                .deadlines
                .default_deadline()
                .unwrap_or(Deadline::Factor(DEFAULT_DEADLINE_FACTOR))
                .of(work),
        };
        let id = RequestId(self.next_id);
        self.next_id += 1;
        Ok(Some(Request {
            id,
            estimate: self.estimate.of(work, &mut self.rng),
            function: inv.function,
            arrival: inv.arrival,
            work,
            deadline,
        }))
    }
}

impl Iterator for FileRequests {
    type Item = Result<Request>;

    fn next(&mut self) -> Option<Result<Request>> {
        if self.done {
            return None;
        }
        let next = self.read_next().transpose();
        self.done = !matches!(next, Some(Ok(_)));
        next
    }
}

/// The work of a row that is a node request: its one CPU phase.
fn work_of(inv: &Invocation, path: &Path, line: u64) -> Result<faasched_model::Nanos> {
    match inv.phases[..] {
        [Phase::Cpu(work)] => Ok(work),
        _ => Err(Error::parse(
            path,
            line,
            "phases",
            format!(
                "a node request is one CPU phase `c<µs>`; row {} has {}",
                inv.id,
                describe(&inv.phases)
            ),
        )),
    }
}

/// What a row's phases are, for an error.
fn describe(phases: &[Phase]) -> String {
    let io = phases.iter().filter(|p| matches!(p, Phase::Io(_))).count();
    match (phases.len(), io) {
        (1, 1) => "an I/O phase".to_string(),
        (n, 0) => format!("{n} CPU phases"),
        (n, io) => format!("{n} phases, {io} of them I/O"),
    }
}
