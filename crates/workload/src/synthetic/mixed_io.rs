//! The mixed CPU/I/O workload of the ALPS I/O study ("ALPS misreads I/O",
//! §6.3 and §8.2): four classes of functions arriving together, two I/O-bound and
//! two CPU-bound, the workload on which ALPS mistakes I/O-bound functions for
//! short jobs.
//!
//! What the paper says:
//! - I/O-bound functions "execute a short CPU burst (simulating request parsing),
//!   sleep for a configurable duration (simulating I/O wait), and then execute
//!   another short CPU burst (processing the response)" (§6.3);
//! - classes 1–2 are I/O-bound, "increasing in 'size' (work duration), but
//!   dominated by I/O waits"; classes 3–4 are CPU-bound, "fibonacci with larger
//!   arguments" (§8.2);
//! - its Table 1 gives only completion times on 16 cores, not demands: CFS
//!   averages 1,952 / 2,104 ms for classes 1 / 2 and 224,770 / 796,348 ms for
//!   classes 3 / 4; no arrival shares are given.
//!
//! What we chose, keeping the shape at simulator-friendly sizes:
//! - **I/O classes**: 1 ms CPU, 100 ms wait, 1 ms CPU (`io-1`) and 2 ms, 106 ms,
//!   2 ms (`io-2`). The CPU a learner sees is tiny (G1) while the life is 51×
//!   (`io-1`) and 27.5× (`io-2`) longer — the "false short job" the study is
//!   about. `io-2`'s life is 1.08× of
//!   `io-1`'s, the ratio of their CFS completion times (2,104 / 1,952).
//! - **CPU classes**: a single burst of 300 ms (`cpu-3`, ALPS G3) and 1,050 ms
//!   (`cpu-4`, G4). Under CFS, close to processor sharing, long jobs' completion
//!   times scale with their demand, so we keep the paper's class-4 : class-3
//!   ratio, 796,348 / 224,770 ≈ 3.5. Absolute sizes are ALPS's G3/G4 scale rather
//!   than the study's minutes of contention, so that a 5 s learning window sees
//!   many completions.
//! - **Shares**: equal, 25% each (the paper gives none).
//! - Durations are fixed per class: the classes differ by kind, not by noise.
//! - Memory: 128 MB for every class (the paper gives none; Lambda's smallest
//!   common size).

use faasched_model::{MS, Nanos, Phase};

/// One class of the mixed workload: a function and the phases of each of its
/// invocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Class {
    /// Function name.
    pub name: &'static str,
    /// CPU bursts and I/O waits of every invocation, in order.
    pub phases: &'static [Phase],
    /// Memory an invocation is billed for, in MB.
    pub memory_mb: u32,
}

impl Class {
    /// Total CPU demand of one invocation, ns.
    pub fn cpu(&self) -> Nanos {
        Phase::cpu_total(self.phases)
    }
}

/// The four classes, in the paper's order; each gets a quarter of the arrivals.
pub static CLASSES: [Class; 4] = [
    Class {
        name: "io-1",
        phases: &[Phase::Cpu(MS), Phase::Io(100 * MS), Phase::Cpu(MS)],
        memory_mb: 128,
    },
    Class {
        name: "io-2",
        phases: &[Phase::Cpu(2 * MS), Phase::Io(106 * MS), Phase::Cpu(2 * MS)],
        memory_mb: 128,
    },
    Class {
        name: "cpu-3",
        phases: &[Phase::Cpu(300 * MS)],
        memory_mb: 128,
    },
    Class {
        name: "cpu-4",
        phases: &[Phase::Cpu(1050 * MS)],
        memory_mb: 128,
    },
];

/// Expected CPU demand per invocation, ns (I/O waits do not count: load is
/// offered CPU demand per core-time).
pub fn mean_cpu() -> f64 {
    CLASSES.iter().map(|c| c.cpu() as f64).sum::<f64>() / CLASSES.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_keep_the_papers_shape() {
        let [io1, io2, cpu3, cpu4] = &CLASSES;
        for io in [io1, io2] {
            assert!(matches!(
                io.phases,
                [Phase::Cpu(_), Phase::Io(_), Phase::Cpu(_)]
            ));
            let life: Nanos = io
                .phases
                .iter()
                .map(|p| match p {
                    Phase::Cpu(d) | Phase::Io(d) => *d,
                })
                .sum();
            assert!(
                life >= 20 * io.cpu(),
                "{} is dominated by its wait",
                io.name
            );
        }
        assert!(io2.cpu() > io1.cpu());
        for c in [cpu3, cpu4] {
            assert!(matches!(c.phases, [Phase::Cpu(_)]));
        }
        let ratio = cpu4.cpu() as f64 / cpu3.cpu() as f64;
        assert!((ratio - 796_348.0 / 224_770.0).abs() < 0.05, "{ratio}");
        assert_eq!(mean_cpu(), 339.0 * MS as f64);
    }
}
