//! Calibration: how much CPU the suite's work takes on this machine, so that a
//! workload's CPU phases become real work of the right length.
//!
//! A workload says "this invocation needs 12 ms of CPU"; the launcher runs
//! `faasched fn fib --plan u300` and needs 300 to be the number of fib units
//! that take 12 ms here. [`Calibration::measure`] finds each function's CPU
//! time per unit (and, for the record, per parameter `n`) and the CPU time of a
//! `faasched fn` process that does no work at all (exec, start, exit), which
//! every invocation pays on top of its units; [`Calibration::plan`] turns
//! phases into a plan with both in mind. The result is a JSON file, and its
//! `id` goes into every live result so that numbers say which calibration they
//! stand on.

mod machine;
mod measure;
mod neighbours;

pub use machine::Machine;
pub use measure::Effort;

use crate::os::suite::{Kind, Plan, Step, round_to_us};
use faasched_model::{Nanos, Phase, US};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{SystemTime, UNIX_EPOCH};
use std::{fs, io};
use thiserror::Error;

/// The suite's CPU costs on one machine, from one build of faasched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calibration {
    /// A hash of everything below (16 hex digits): two calibrations with the
    /// same id are the same numbers.
    pub id: String,
    /// When it was measured, in seconds since the Unix epoch.
    pub created: u64,
    /// The faasched version and build profile measured: a debug build's work
    /// is several times slower than a release build's.
    pub build: String,
    /// Where it was measured.
    pub machine: Machine,
    /// Threads that kept the other CPUs busy while it was measured (see
    /// `neighbours.rs`); 0 (and absent from the file) when measured alone.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub neighbours: usize,
    /// CPU time of a `faasched fn` process that does no work (exec, start,
    /// exit), ns: the median over several runs.
    pub startup_ns: Nanos,
    /// Every function of the suite, in [`Kind::ALL`] order.
    pub functions: Vec<FunctionCalibration>,
}

/// One function's CPU costs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCalibration {
    /// The function.
    pub kind: Kind,
    /// CPU time of one unit of its work, ns (median of batches).
    pub unit_ns: Nanos,
    /// CPU time of one run at each of some parameters, smallest first.
    pub points: Vec<Point>,
}

/// CPU time of a run at one parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    /// The parameter.
    pub n: u64,
    /// CPU time of a run at `n`, ns (median of runs).
    pub cpu_ns: Nanos,
}

/// What can go wrong measuring, reading or writing a calibration.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CalibrationError {
    /// A file could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file (or directory).
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file is not a calibration.
    #[error("{}: not a faasched calibration: {source}", .path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A calibration file lacks a function or has a unit of no time.
    #[error(
        "{}: {why}; measure again with `faasched fn calibrate`",
        .path.display()
    )]
    Incomplete {
        /// The file.
        path: PathBuf,
        /// What is missing.
        why: String,
    },
    /// The faasched binary could not be started.
    #[error("cannot run {}: {source}", .program.display())]
    Spawn {
        /// The binary.
        program: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The startup measurement's process failed.
    #[error("{} {} failed ({status})", .program.display(), measure::STARTUP_ARGS.join(" "))]
    Startup {
        /// The binary.
        program: PathBuf,
        /// How it ended.
        status: ExitStatus,
    },
    /// The neighbours could not be started or the measurer pinned.
    #[error("keeping the other CPUs busy: {0}")]
    Neighbours(io::Error),
    /// There is nowhere to keep the calibration by default.
    #[error("no cache directory: neither XDG_CACHE_HOME nor HOME is set (give a file)")]
    NoCacheDir,
}

impl Calibration {
    /// Measures this machine. `program` is the faasched binary, run a few
    /// times to measure a process's startup; with `busy`, every other CPU
    /// computes meanwhile, as in a replay under load (`neighbours.rs`);
    /// `progress` hears of each step before it starts.
    pub fn measure(
        program: &Path,
        effort: Effort,
        busy: bool,
        mut progress: impl FnMut(&str),
    ) -> Result<Calibration, CalibrationError> {
        let budget = effort.budget();
        let neighbours = busy
            .then(neighbours::Neighbours::start)
            .transpose()
            .map_err(CalibrationError::Neighbours)?;
        progress("startup: a process that does no work");
        let startup_ns = measure::startup(program, &budget)?;
        let functions = Kind::ALL
            .into_iter()
            .map(|kind| {
                progress(kind.name());
                FunctionCalibration {
                    kind,
                    unit_ns: measure::unit(kind, &budget),
                    points: measure::points(kind, &budget),
                }
            })
            .collect();
        let mut calibration = Calibration {
            id: String::new(),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            build: format!(
                "{} {}",
                env!("CARGO_PKG_VERSION"),
                if cfg!(debug_assertions) {
                    "debug"
                } else {
                    "release"
                }
            ),
            machine: Machine::this(),
            neighbours: neighbours.as_ref().map_or(0, |n| n.count()),
            startup_ns,
            functions,
        };
        calibration.id = calibration.content_hash();
        Ok(calibration)
    }

    /// FNV-1a of the JSON of everything but the id: stable across builds and
    /// platforms, unlike std's hasher.
    fn content_hash(&self) -> String {
        let content = Calibration {
            id: String::new(),
            ..self.clone()
        };
        let json = serde_json::to_string(&content).expect("a calibration serialises");
        let hash = json.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        format!("{hash:016x}")
    }

    /// Reads a calibration file, checking it covers every function.
    pub fn load(path: &Path) -> Result<Calibration, CalibrationError> {
        let text = fs::read_to_string(path).map_err(|source| CalibrationError::Io {
            path: path.to_owned(),
            source,
        })?;
        let calibration: Calibration =
            serde_json::from_str(&text).map_err(|source| CalibrationError::Format {
                path: path.to_owned(),
                source,
            })?;
        let incomplete = |why: String| CalibrationError::Incomplete {
            path: path.to_owned(),
            why,
        };
        for kind in Kind::ALL {
            match calibration.functions.iter().find(|f| f.kind == kind) {
                None => return Err(incomplete(format!("no calibration of {kind}"))),
                Some(f) if f.unit_ns == 0 => {
                    return Err(incomplete(format!("{kind}'s unit takes no time")));
                }
                Some(_) => {}
            }
        }
        Ok(calibration)
    }

    /// Writes the calibration as JSON, making the directory if need be.
    pub fn save(&self, path: &Path) -> Result<(), CalibrationError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| CalibrationError::Io { path, source }
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let json = serde_json::to_string_pretty(self).expect("a calibration serialises");
        fs::write(path, json + "\n").map_err(io(path))
    }

    /// Where calibrations live unless told otherwise:
    /// `$XDG_CACHE_HOME/faasched/calibration.json`, else
    /// `~/.cache/faasched/calibration.json`. A cache, not configuration: it is
    /// measured, and can be measured again.
    pub fn default_path() -> Result<PathBuf, CalibrationError> {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        let cache = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|home| Path::new(&home).join(".cache")))
            .ok_or(CalibrationError::NoCacheDir)?;
        Ok(cache.join("faasched").join("calibration.json"))
    }

    /// `kind`'s calibration.
    ///
    /// # Panics
    ///
    /// If the calibration has none: [`Calibration::load`] and
    /// [`Calibration::measure`] only give calibrations that cover every
    /// function.
    pub fn function(&self, kind: Kind) -> &FunctionCalibration {
        self.functions
            .iter()
            .find(|f| f.kind == kind)
            .unwrap_or_else(|| panic!("calibration {} has no {kind}", self.id))
    }

    /// The plan that makes a `faasched fn KIND` process do `phases`.
    ///
    /// Each CPU phase becomes the nearest whole number of units (so it is off
    /// by at most half a unit, tens of µs), each I/O phase a wait of the same
    /// length (to the µs, the resolution of a plan's text). The process's
    /// startup is work too, so it comes off the first CPU phase, and the
    /// process's total CPU time matches the workload's demand when that
    /// phase is at least the startup. A shorter first phase becomes no work
    /// (a process cannot cost less than its startup), and what is left of the
    /// startup is not taken off the later phases: such a process uses more
    /// than its demand (`mixed-io`'s `io-1`, 1 ms then 1 ms, about a quarter
    /// more on this project's calibration; docs/LIVE.md).
    ///
    /// # Panics
    ///
    /// If the calibration has no `kind` (see [`Calibration::function`]).
    pub fn plan(&self, kind: Kind, phases: &[Phase]) -> Plan {
        let unit = self.function(kind).unit_ns.max(1);
        let mut startup = self.startup_ns;
        let steps = phases.iter().map(|phase| match *phase {
            Phase::Cpu(ns) => {
                let ns = ns.saturating_sub(std::mem::take(&mut startup));
                let rest = ns % unit;
                Step::Work(ns / unit + u64::from(rest >= unit - rest))
            }
            Phase::Io(ns) => Step::Wait(round_to_us(ns).saturating_mul(US)),
        });
        Plan(steps.collect())
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests;
