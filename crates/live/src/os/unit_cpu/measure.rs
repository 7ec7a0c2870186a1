//! Measuring: CPU time of units and of runs at each parameter, in this thread
//! (CLOCK_THREAD_CPUTIME_ID), and of a whole `faasched fn` process (the
//! children's rusage).
//!
//! CPU time rather than wall time, because a shared machine's other tenants
//! take the CPU away (wall time grows) far more than they slow the work while
//! it runs (CPU time barely moves). What noise remains (caches, frequency,
//! interrupts) is handled by repeating and keeping the median: the typical
//! cost, which is what a function will take when the launcher runs it on the
//! same noisy machine, and not thrown by a few outliers either way.

use super::{CalibrationError, Point};
use crate::os::suite::{Kind, Plan, Step, execute};
use crate::sys::clock::{children_cpu, thread_cpu};
use faasched_model::{MS, Nanos};
use std::hint::black_box;
use std::path::Path;
use std::process::{Command, Stdio};

/// How hard to try: more repeats and longer batches give steadier numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effort {
    /// About 5 s on this project's 2-core machine.
    Full,
    /// About a second: for tests and a first look.
    Quick,
}

/// What an [`Effort`] means.
pub(super) struct Budget {
    /// Measurements of each quantity; the median is kept.
    pub repeats: usize,
    /// CPU time of one measurement of a unit (a batch of units: the clock's
    /// reads and the loop then cost nothing in comparison).
    pub batch: Nanos,
    /// A function's parameter sweep stops after the first point costing more
    /// than this, so slow builds and slow machines still finish in time.
    pub point_cap: Nanos,
}

impl Effort {
    pub(super) fn budget(self) -> Budget {
        match self {
            Effort::Full => Budget {
                repeats: 11,
                batch: 40 * MS,
                point_cap: 25 * MS,
            },
            Effort::Quick => Budget {
                repeats: 5,
                batch: 10 * MS,
                point_cap: 5 * MS,
            },
        }
    }
}

/// The median of some samples (the upper one of an even count).
fn median(mut samples: Vec<Nanos>) -> Nanos {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// CPU time of the calling thread while `f` runs, ns.
fn cpu_of(f: impl FnOnce() -> u64) -> Nanos {
    let start = thread_cpu();
    black_box(f());
    thread_cpu() - start
}

/// The arguments of the process whose CPU time is the startup cost: a plan of
/// no work, so exec, the runtime's start, argument parsing and exit are all
/// it does.
pub(super) const STARTUP_ARGS: [&str; 4] = ["fn", "fib", "--plan", "u0"];

/// Median CPU time (user + system) of `program fn fib --plan u0`.
pub(super) fn startup(program: &Path, budget: &Budget) -> Result<Nanos, CalibrationError> {
    let mut samples = Vec::with_capacity(budget.repeats);
    for _ in 0..budget.repeats {
        let before = children_cpu();
        let status = Command::new(program)
            .args(STARTUP_ARGS)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|source| CalibrationError::Spawn {
                program: program.to_owned(),
                source,
            })?;
        if !status.success() {
            return Err(CalibrationError::Startup {
                program: program.to_owned(),
                status,
            });
        }
        samples.push(children_cpu() - before);
    }
    Ok(median(samples))
}

/// Median CPU ns per unit of `kind`, never 0.
pub(super) fn unit(kind: Kind, budget: &Budget) -> Nanos {
    // Warm up (page in the code and data, let the clock frequency settle) and
    // estimate a unit's cost to size the batches.
    let (mut spent, mut units) = (0, 0);
    while spent < budget.batch / 4 {
        spent += cpu_of(|| kind.unit());
        units += 1;
    }
    let batch = (budget.batch * units / spent.max(1)).max(1);
    let plan = Plan(vec![Step::Work(batch)]);
    let samples = (0..budget.repeats)
        .map(|_| cpu_of(|| execute(kind, &plan)) / batch)
        .collect();
    median(samples).max(1)
}

/// Median CPU time of a run of `kind` at each parameter of its sweep, up to
/// the first one over the budget's cap.
pub(super) fn points(kind: Kind, budget: &Budget) -> Vec<Point> {
    let mut points = Vec::new();
    for n in kind.sweep() {
        let cpu_ns = median(
            (0..budget.repeats)
                .map(|_| cpu_of(|| kind.run(n)))
                .collect(),
        );
        points.push(Point { n, cpu_ns });
        if cpu_ns > budget.point_cap {
            break;
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![5, 1, 9]), 5);
        assert_eq!(median(vec![4, 1, 9, 7]), 7);
    }

    #[test]
    fn a_process_costs_cpu() {
        // Any program that exits 0 whatever its arguments stands in for
        // faasched here.
        let ns = startup(Path::new("true"), &Effort::Quick.budget()).unwrap();
        assert!(ns > 0 && ns < 1_000 * MS, "{ns}");
        let e = startup(Path::new("false"), &Effort::Quick.budget()).unwrap_err();
        assert!(e.to_string().contains("false fn fib --plan u0"), "{e}");
    }

    #[test]
    fn sweep_stops_at_the_cap() {
        let budget = Budget {
            repeats: 1,
            batch: MS,
            point_cap: 0,
        };
        assert_eq!(points(Kind::Float, &budget).len(), 1);
        assert!(unit(Kind::Float, &budget) > 0);
    }
}
