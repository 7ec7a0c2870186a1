//! The function suite: real programs the `faasched` binary runs as
//! `faasched fn NAME`, one process per invocation in the live runtime.
//!
//! The functions are the ALPS paper's suite (fib, bfs, mst, pagerank, feature
//! extraction, float operations) and the ALPS I/O study's io function (a CPU
//! burst, a real blocking wait, a CPU burst). Each runs at a natural parameter
//! `n`, and each has a **unit**: one run at a small fixed size, tens of µs of
//! CPU, so that any CPU phase of a workload becomes a whole number of units
//! with little rounding error ([`Plan`], [`execute`]).
//!
//! Every function returns a checksum of what it computed, so the optimiser
//! cannot drop the work, and inputs pass through [`std::hint::black_box`] so it
//! cannot fold repeated units into one.

mod bfs;
mod features;
mod fib;
mod float;
mod graph;
mod io;
mod mst;
mod pagerank;
mod plan;
pub mod timed;

pub(crate) use plan::round_to_us;
pub use plan::{Plan, PlanError, Step};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;
use thiserror::Error;

/// A function of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Recursive Fibonacci.
    Fib,
    /// Breadth-first search of a random graph.
    Bfs,
    /// Minimum spanning tree of a random graph.
    Mst,
    /// PageRank of a random graph.
    Pagerank,
    /// Feature extraction from an image.
    Features,
    /// Floating-point operations.
    Float,
    /// CPU burst, blocking wait, CPU burst.
    Io,
}

/// What one unit of a function's work is.
enum Unit {
    /// The function itself at this parameter.
    At(u64),
    /// Work of its own (io, whose parameter is a wait, not work).
    Own {
        about: &'static str,
        work: fn() -> u64,
    },
}

/// Everything about one function: what `fn list` says, and how to run it.
/// Each family's module defines its own, so the facts sit beside the code.
struct Spec {
    name: &'static str,
    description: &'static str,
    param: &'static str,
    default_n: u64,
    /// Largest `n` accepted: beyond it a run would take minutes or exhaust
    /// memory.
    max_n: u64,
    unit: Unit,
    /// Parameters calibration measures CPU time at, smallest first.
    sweep: [u64; 3],
    run: fn(u64) -> u64,
}

impl Kind {
    /// Every function, in `fn list` order.
    pub const ALL: [Kind; 7] = [
        Kind::Fib,
        Kind::Bfs,
        Kind::Mst,
        Kind::Pagerank,
        Kind::Features,
        Kind::Float,
        Kind::Io,
    ];

    fn spec(self) -> &'static Spec {
        match self {
            Kind::Fib => &fib::SPEC,
            Kind::Bfs => &bfs::SPEC,
            Kind::Mst => &mst::SPEC,
            Kind::Pagerank => &pagerank::SPEC,
            Kind::Features => &features::SPEC,
            Kind::Float => &float::SPEC,
            Kind::Io => &io::SPEC,
        }
    }

    /// The name `faasched fn NAME` takes.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// What the function computes, in one line.
    pub fn description(self) -> &'static str {
        self.spec().description
    }

    /// What the parameter `n` means.
    pub fn param(self) -> &'static str {
        self.spec().param
    }

    /// `n` when none is given.
    pub fn default_n(self) -> u64 {
        self.spec().default_n
    }

    /// The largest `n` accepted (larger runs take minutes or too much memory).
    pub fn max_n(self) -> u64 {
        self.spec().max_n
    }

    /// The parameters calibration measures CPU time at, smallest first.
    pub fn sweep(self) -> [u64; 3] {
        self.spec().sweep
    }

    /// What one unit of work is, in words.
    pub fn unit_about(self) -> String {
        match self.spec().unit {
            Unit::At(n) => format!("n = {n}"),
            Unit::Own { about, .. } => about.to_owned(),
        }
    }

    /// Runs the function once at `n` and returns its checksum.
    pub fn run(self, n: u64) -> u64 {
        (self.spec().run)(n)
    }

    /// Runs one unit of the function's work and returns its checksum.
    pub fn unit(self) -> u64 {
        match self.spec().unit {
            Unit::At(n) => self.run(n),
            Unit::Own { work, .. } => work(),
        }
    }

    /// The suite function that plays a workload's function `name`.
    ///
    /// The synthetic workloads name functions `APP-K`, and the part before the
    /// first `-` picks the function: `fib`, `bfs`, `mst`, `pr` (pagerank), `fe`
    /// (features), `fo` (float) and `io`, as in the ALPS workloads and the
    /// mixed-io workload's I/O classes; `cpu` (mixed-io's CPU-bound classes,
    /// "fibonacci with larger arguments" in the study) is fib. The suite's own
    /// names work too. Anything else (the imported production traces' hashed
    /// names, `lognormal`, `fixed`, …) is float: plain CPU work with no memory
    /// footprint to speak of, the most neutral stand-in for an unknown
    /// function.
    pub fn for_function(name: &str) -> Kind {
        let app = name.split_once('-').map_or(name, |(app, _)| app);
        match app {
            "fib" | "cpu" => Kind::Fib,
            "bfs" => Kind::Bfs,
            "mst" => Kind::Mst,
            "pr" | "pagerank" => Kind::Pagerank,
            "fe" | "features" => Kind::Features,
            "fo" | "float" => Kind::Float,
            "io" => Kind::Io,
            _ => Kind::Float,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no function of the suite.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("no function {name:?} in the suite; the functions are {}", names())]
pub struct ParseKindError {
    /// The name given.
    pub name: String,
}

fn names() -> String {
    Kind::ALL.map(Kind::name).join(", ")
}

impl FromStr for Kind {
    type Err = ParseKindError;

    fn from_str(name: &str) -> Result<Kind, ParseKindError> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| ParseKindError {
                name: name.to_owned(),
            })
    }
}

/// Runs a plan as `kind`: its work steps as units of `kind`'s work, its waits
/// as real blocking waits. Returns the checksum of the work.
///
/// A wait is [`std::thread::sleep`], on Linux `nanosleep(2)` against
/// CLOCK_MONOTONIC, resumed with the time left if a signal interrupts it: the
/// thread blocks in the kernel and leaves the run queue, exactly what a
/// scheduler sees of a function waiting on the network or a disk, and it costs
/// no CPU (a spin would be CPU demand the workload never asked for). It wakes
/// no earlier than asked and typically within the timer slack (50 µs by
/// default) after.
pub fn execute(kind: Kind, plan: &Plan) -> u64 {
    let mut checksum = 0u64;
    for step in &plan.0 {
        match *step {
            Step::Work(units) => {
                for _ in 0..units {
                    checksum = checksum.wrapping_add(kind.unit());
                }
            }
            Step::Wait(ns) => std::thread::sleep(Duration::from_nanos(ns)),
        }
    }
    checksum
}

#[cfg(test)]
mod tests;
