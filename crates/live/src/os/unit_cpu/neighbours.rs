//! Work on the other CPUs while a calibration measures, so that it measures
//! the machine as a replay keeps it.
//!
//! A replay at 80% load keeps every CPU busy most of the time, and on this
//! project's VM a function's CPU time grows when the other vCPU computes
//! too (shared caches and memory bandwidth, or the two vCPUs being one
//! core's hyperthreads: with a spinning loop on the other vCPU, mst's,
//! pagerank's and float's units took 35–39% more than alone a minute
//! before, fib's and bfs's about the same). Measured alone, the units came out so
//! small that a replay's processes then used 1.07–1.21 of the CPU their plans
//! asked for (docs/LIVE.md, "Calibration"). So by default the measuring
//! thread is pinned to one CPU and each other CPU it may use runs a
//! neighbour: the suite's own units, every function in turn, until the
//! measurement ends.

use crate::os::suite::Kind;
use crate::sys::sched::{affinity, set_affinity};
use faasched_model::CpuSet;
use std::hint::black_box;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// Neighbours busy on the other CPUs, and the calling thread pinned to the
/// first, until dropped (which stops them and gives the thread its CPUs
/// back).
pub(super) struct Neighbours {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// The calling thread's CPUs before it was pinned.
    cpus: CpuSet,
}

impl Neighbours {
    /// Pins the calling thread to the lowest CPU it may run on and starts a
    /// neighbour on each of the others (none on a single CPU).
    pub(super) fn start() -> io::Result<Neighbours> {
        let cpus = affinity(0)?;
        let mut neighbours = Neighbours {
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            cpus,
        };
        let mut others = cpus.iter();
        let Some(mine) = others.next() else {
            return Ok(neighbours);
        };
        set_affinity(0, &CpuSet::range(mine, mine + 1))?;
        for cpu in others {
            let stop = Arc::clone(&neighbours.stop);
            let thread = std::thread::Builder::new()
                .name(format!("neighbour-{cpu}"))
                .spawn(move || {
                    // Unpinned, it would still keep a CPU busy, only not
                    // always another than the measurer's.
                    let _ = set_affinity(0, &CpuSet::range(cpu, cpu + 1));
                    busy(&stop);
                })?;
            neighbours.threads.push(thread);
        }
        Ok(neighbours)
    }

    /// How many neighbours run.
    pub(super) fn count(&self) -> usize {
        self.threads.len()
    }
}

impl Drop for Neighbours {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let _ = set_affinity(0, &self.cpus);
    }
}

/// Runs the suite's units, each function in turn, until `stop`.
fn busy(stop: &AtomicBool) {
    for kind in Kind::ALL.iter().cycle() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        // A few ms of work between looks at the flag.
        for _ in 0..64 {
            black_box(kind.unit());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_the_measurer_and_gives_its_cpus_back() {
        let before = affinity(0).unwrap();
        let n = {
            let neighbours = Neighbours::start().unwrap();
            let pinned = affinity(0).unwrap();
            assert_eq!(pinned.len(), 1);
            assert_eq!(pinned.lowest(), before.lowest());
            neighbours.count()
        };
        assert_eq!(n, before.len() - 1, "one neighbour per other CPU");
        assert_eq!(affinity(0).unwrap(), before);
    }
}
