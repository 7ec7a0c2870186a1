//! ALPS as a steering policy: feed the learner every finished invocation,
//! retrain every window, and put each function's rank and slice on its tasks,
//! new and running.

use super::io;
use super::learner::{Learned, Record, learn};
use super::params::Params;
use faasched_model::{
    Attrs, CpuSet, FunctionId, IdMap, Load, MS, Nanos, Outcome, Phase, Phases, Steer, TaskId,
    TaskInfo, Time,
};
use std::collections::BTreeMap;

/// How a learned rank and slice reach the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enforcement {
    /// `alps-kernel` (sim only): the paper's patched CFS reads them as they are
    /// ([`Attrs::rank`], and [`Attrs::slice`] as the hold).
    Kernel,
    /// `alps`: a stock kernel's knobs. The rank becomes a nice value and the
    /// slice an EEVDF custom slice; see [`Alps::stock_attrs`].
    Stock,
}

/// The rank `alps-kernel` gives a function no window has seen: after every
/// learned rank. The paper's kernel reads a missing rank as 0, the first
/// (alps-atc24 §5.3); but the learner knows a function only once invocations
/// of it finish, so a new function whose invocations last seconds would run
/// before everything, and a burst of them holds every core until the next
/// lesson. Unknown, it waits behind what is known to be short, as CFS's
/// START_DEBIT has a new task wait one slice behind.
pub const UNRANKED: u32 = u32::MAX;

/// The longest hold `alps-kernel` puts on a task: 200 ms, the cap ALPS's
/// public frontend puts on every fine-tuned slice (`min(upperBound * alpha,
/// 200)`, in ms). The learner's own cap is an hour ([`super::learn`] keeps
/// what SRPT did); a function whose SRPT turns last seconds then learns a
/// hold of seconds (α = 2), and a burst of its invocations keeps every core
/// that long whatever waits. (`alps` needs no cap: the kernel clamps a custom
/// slice to 100 ms.)
pub const MAX_HOLD: Nanos = 200 * MS;

/// Nice of the first-ranked function under [`Enforcement::Stock`].
pub const NICE_FIRST: i8 = -5;
/// Nice of the last-ranked function under [`Enforcement::Stock`].
pub const NICE_LAST: i8 = 5;

/// What the policy holds for one function: its last lesson, kept until a later
/// window teaches another (the paper's maps keep stale entries, so functions
/// from different windows may share a rank).
#[derive(Clone, Copy, Debug)]
struct Entry {
    learned: Learned,
    /// Functions ranked in the same lesson.
    of: u32,
    /// In `alps-io`'s I/O lane: unranked, default weight, short slice.
    io_lane: bool,
}

/// A task in flight and the attributes it has.
#[derive(Clone, Copy, Debug)]
struct Live {
    function: FunctionId,
    attrs: Attrs,
}

/// The ALPS steering policy.
#[derive(Debug)]
pub struct Alps {
    name: &'static str,
    params: Params,
    enforcement: Enforcement,
    /// `alps-io`: replay invocations in their shape and keep I/O-bound
    /// functions in a lane of their own (see [`super::io`]).
    io_aware: bool,
    /// Invocations finished since the last lesson.
    window: Vec<Record>,
    table: IdMap<FunctionId, Entry>,
    /// By task id, so re-applied attributes come out in a fixed order.
    live: BTreeMap<TaskId, Live>,
    lessons: u64,
}

impl Alps {
    /// ALPS named `name`, enforcing as `enforcement`, with these parameters
    /// (validated by the caller).
    pub fn new(name: &'static str, enforcement: Enforcement, params: Params) -> Alps {
        Alps {
            name,
            params,
            enforcement,
            io_aware: false,
            window: Vec::new(),
            table: IdMap::default(),
            live: BTreeMap::new(),
            lessons: 0,
        }
    }

    /// `alps-io` named `name`: ALPS on a stock kernel that is not fooled by
    /// I/O (see [`super::io`]).
    pub fn io_aware(name: &'static str, params: Params) -> Alps {
        Alps {
            io_aware: true,
            ..Alps::new(name, Enforcement::Stock, params)
        }
    }

    /// Lessons learned so far.
    pub fn lessons(&self) -> u64 {
        self.lessons
    }

    /// The learned rank and slice of `function`, if any window has seen it.
    pub fn learned(&self, function: FunctionId) -> Option<Learned> {
        self.table.get(&function).map(|e| e.learned)
    }

    /// The attributes for a task of `function` on `cpus`, from the lessons in
    /// `table` (a free function, so callers may hold other fields mutably).
    fn attrs(
        table: &IdMap<FunctionId, Entry>,
        enforcement: Enforcement,
        function: FunctionId,
        cpus: CpuSet,
    ) -> Attrs {
        let base = Attrs::normal(cpus);
        let Some(e) = table.get(&function) else {
            // Unlearned: the kernel's defaults, ranked last on the ALPS kernel.
            return match enforcement {
                Enforcement::Kernel => Attrs {
                    rank: Some(UNRANKED),
                    ..base
                },
                Enforcement::Stock => base,
            };
        };
        if e.io_lane {
            return Attrs {
                slice: (e.learned.slice > 0).then_some(e.learned.slice),
                ..base
            };
        }
        match enforcement {
            Enforcement::Kernel => Attrs {
                rank: Some(e.learned.rank),
                slice: (e.learned.slice > 0).then_some(e.learned.slice.min(MAX_HOLD)),
                ..base
            },
            Enforcement::Stock => Self::stock_attrs(e.learned, e.of, base),
        }
    }

    /// The stock-kernel mapping. ALPS wants high-ranked functions picked first
    /// and left running for their learned slice; EEVDF offers two knobs.
    ///
    /// - **Rank → nice**, linearly from [`NICE_FIRST`] (rank 1) to
    ///   [`NICE_LAST`] (the last rank of its lesson). A heavier task's
    ///   vruntime grows more slowly, so it stays eligible longer and its
    ///   virtual deadlines come sooner: it is picked first and preempted
    ///   later, the ordering hook's intent. Long functions keep a share of
    ///   the CPU (weights 3121 : 335 at the ends, 9.3 : 1), so nothing
    ///   starves, which is what the paper's fine-tuning buys with its CFS
    ///   fallback.
    /// - **Slice → custom slice** (`sched_runtime`, which the kernel clamps to
    ///   0.1–100 ms): the length of the request whose deadline EEVDF honours,
    ///   and, with RUN_TO_PARITY, the protected run. A slice of 0 (Eq. 2's
    ///   floor: the function's slices vary too much) leaves the base slice.
    pub fn stock_attrs(learned: Learned, of: u32, base: Attrs) -> Attrs {
        let q = if of > 1 {
            (learned.rank.saturating_sub(1)) as f64 / (of - 1) as f64
        } else {
            0.0
        };
        let span = (NICE_LAST - NICE_FIRST) as f64;
        Attrs {
            nice: (NICE_FIRST as f64 + q.min(1.0) * span).round() as i8,
            slice: (learned.slice > 0).then_some(learned.slice),
            ..base
        }
    }

    /// Retrains from the window, as of `utilisation`.
    fn relearn(&mut self, cores: usize, utilisation: f64) {
        let lesson = learn(&self.window, cores, utilisation, &self.params);
        let io_bound = match self.io_aware {
            true => io::io_bound(&self.window),
            false => Default::default(), // ALPS learns from CPU time alone
        };
        self.window.clear();
        let of = lesson.len() as u32;
        for (f, learned) in lesson {
            let io_lane = io_bound.contains(&f);
            self.table.insert(
                f,
                Entry {
                    learned,
                    of,
                    io_lane,
                },
            );
        }
        self.lessons += 1;
    }
}

impl Steer for Alps {
    fn name(&self) -> &str {
        self.name
    }

    fn on_arrival(&mut self, _now: Time, task: &TaskInfo, cpus: CpuSet) -> Attrs {
        let attrs = Self::attrs(&self.table, self.enforcement, task.function, cpus);
        self.live.insert(
            task.task,
            Live {
                function: task.function,
                attrs,
            },
        );
        attrs
    }

    fn on_exit(&mut self, _now: Time, task: TaskId, outcome: &Outcome) {
        self.live.remove(&task);
        if outcome.cpu > 0 {
            self.window.push(Record {
                function: outcome.function.id,
                arrival: outcome.arrival,
                phases: if self.io_aware {
                    io::shaped(outcome)
                } else {
                    Phases::from_buf([Phase::Cpu(outcome.cpu)])
                },
            });
        }
    }

    fn period(&self) -> Option<Nanos> {
        Some(self.params.window)
    }

    fn on_period(&mut self, _now: Time, load: Load) -> Vec<(TaskId, Attrs)> {
        if self.window.len() < self.params.min_invocations {
            return Vec::new();
        }
        self.relearn(load.cores, load.utilisation);
        let mut changed = Vec::new();
        for (&task, l) in &mut self.live {
            let attrs = Self::attrs(&self.table, self.enforcement, l.function, l.attrs.cpus);
            if attrs != l.attrs {
                l.attrs = attrs;
                changed.push((task, attrs));
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::testkit::{info, outcome};
    use faasched_model::SEC;

    #[test]
    fn stock_mapping_spreads_ranks_over_nice_and_keeps_slices() {
        let l = |rank, slice| Learned {
            rank,
            slice,
            mean_wait: 0,
            trained: slice,
            invocations: 1,
        };
        let base = Attrs::normal(CpuSet::first(2));
        let first = Alps::stock_attrs(l(1, 20 * MS), 5, base);
        assert_eq!((first.nice, first.slice), (NICE_FIRST, Some(20 * MS)));
        let mid = Alps::stock_attrs(l(3, 0), 5, base);
        assert_eq!((mid.nice, mid.slice), (0, None));
        let last = Alps::stock_attrs(l(5, MS), 5, base);
        assert_eq!(last.nice, NICE_LAST);
        assert_eq!(Alps::stock_attrs(l(1, MS), 1, base).nice, NICE_FIRST);
        assert_eq!(first.rank, None, "a stock kernel has no rank");
    }

    /// The paper's rule: a lesson every W, however few invocations finished.
    fn every_window() -> Params {
        Params {
            min_invocations: 0,
            ..Params::default()
        }
    }

    #[test]
    fn learns_each_window_and_reapplies_to_live_tasks() {
        let cpus = CpuSet::first(1);
        let mut alps = Alps::new("alps-kernel", Enforcement::Kernel, every_window());
        assert_eq!(alps.period(), Some(5 * SEC));
        // Before any lesson: the kernel's defaults, ranked after any lesson.
        let unranked = Attrs {
            rank: Some(UNRANKED),
            ..Attrs::normal(cpus)
        };
        assert_eq!(alps.on_arrival(0, &info(0, 0, 0), cpus), unranked);
        alps.on_exit(10 * MS, TaskId(0), &outcome(0, 0, 10 * MS));
        alps.on_exit(200 * MS, TaskId(1), &outcome(1, 0, 200 * MS));
        let live = alps.on_arrival(300 * MS, &info(2, 1, 300 * MS), cpus);
        assert_eq!(live, unranked);
        let load = Load {
            utilisation: 0.4,
            cores: 1,
            per_core: vec![0.4],
        };
        let changed = alps.on_period(5 * SEC, load.clone());
        // Function 1 (200 ms, arriving with function 0's 10 ms) waits 10 ms
        // under SRPT, so it ranks second; its only task in flight gets the
        // lesson.
        assert_eq!(changed.len(), 1);
        let (task, attrs) = changed[0];
        assert_eq!(task, TaskId(2));
        assert_eq!(attrs.rank, Some(2));
        // One turn of 200 ms (10–210), so no spread; below θ no penalty:
        // α × 200 ms learned, held for MAX_HOLD at most.
        assert_eq!(alps.learned(FunctionId(1)).unwrap().slice, 400 * MS);
        assert_eq!(attrs.slice, Some(MAX_HOLD));
        assert_eq!(alps.learned(FunctionId(0)).unwrap().rank, 1);
        // Nothing changes when the next window teaches nothing new.
        assert!(alps.on_period(10 * SEC, load).is_empty());
        assert_eq!(alps.lessons(), 2);
        // A function no window has seen since keeps its lesson.
        assert_eq!(alps.learned(FunctionId(1)).unwrap().rank, 2);
    }

    /// An unlearned function: last on the ALPS kernel, the kernel's defaults
    /// on a stock one (nice 0 is the middle of the ranks' nice values).
    #[test]
    fn an_unlearned_function_ranks_last_on_the_alps_kernel_only() {
        let cpus = CpuSet::first(2);
        let mut kernel = Alps::new("alps-kernel", Enforcement::Kernel, every_window());
        assert_eq!(
            kernel.on_arrival(0, &info(0, 7, 0), cpus).rank,
            Some(UNRANKED)
        );
        let mut stock = Alps::new("alps", Enforcement::Stock, every_window());
        assert_eq!(
            stock.on_arrival(0, &info(0, 7, 0), cpus),
            Attrs::normal(cpus)
        );
    }

    /// With a minimum, a period short of it teaches nothing and the window
    /// keeps filling: the next period learns from both periods' invocations.
    #[test]
    fn a_lesson_waits_for_the_minimum_of_invocations() {
        let cpus = CpuSet::first(1);
        let params = Params {
            min_invocations: 2,
            ..Params::default()
        };
        let mut alps = Alps::new("alps-kernel", Enforcement::Kernel, params);
        let load = Load {
            utilisation: 0.4,
            cores: 1,
            per_core: vec![0.4],
        };
        alps.on_arrival(4 * SEC, &info(2, 1, 4 * SEC), cpus);
        alps.on_exit(10 * MS, TaskId(0), &outcome(0, 0, 10 * MS));
        assert!(alps.on_period(5 * SEC, load.clone()).is_empty());
        assert_eq!(alps.lessons(), 0);
        assert_eq!(alps.learned(FunctionId(0)), None);
        alps.on_exit(5200 * MS, TaskId(1), &outcome(1, 5 * SEC, 200 * MS));
        let changed = alps.on_period(10 * SEC, load);
        assert_eq!(alps.lessons(), 1);
        assert_eq!(alps.learned(FunctionId(0)).unwrap().rank, 1);
        assert_eq!(alps.learned(FunctionId(1)).unwrap().rank, 2);
        assert_eq!(changed.len(), 1, "the live task of function 1 learns");
        assert_eq!(changed[0].1.rank, Some(2));
    }

    /// alps-io: a function that waits more than it computes keeps the kernel's
    /// weight and gets its burst as slice; the CPU-bound one is ranked as ALPS
    /// ranks it. Plain ALPS puts the I/O-bound one first, at NICE_FIRST.
    #[test]
    fn io_aware_alps_keeps_io_bound_functions_out_of_the_ranks() {
        let cpus = CpuSet::first(1);
        let load = Load {
            utilisation: 0.4,
            cores: 1,
            per_core: vec![0.4],
        };
        let mut io = outcome(0, 0, 2 * MS);
        (io.io, io.voluntary_switches, io.finish) = (100 * MS, 2, 102 * MS);
        let cpu = outcome(1, 0, 200 * MS);
        let taught = |mut alps: Alps| {
            alps.on_exit(102 * MS, TaskId(0), &io);
            alps.on_exit(200 * MS, TaskId(1), &cpu);
            alps.on_period(5 * SEC, load.clone());
            let io_attrs = alps.on_arrival(5 * SEC, &info(2, 0, 5 * SEC), cpus);
            let cpu_attrs = alps.on_arrival(5 * SEC, &info(3, 1, 5 * SEC), cpus);
            (io_attrs, cpu_attrs)
        };
        let plain = Params {
            unpredictability: false,
            overload: false,
            ..every_window()
        };
        let (io_attrs, cpu_attrs) = taught(Alps::new("alps", Enforcement::Stock, plain));
        assert_eq!((io_attrs.nice, cpu_attrs.nice), (NICE_FIRST, NICE_LAST));
        let (io_attrs, cpu_attrs) = taught(Alps::io_aware("alps-io", plain));
        // Replayed as 1 ms, 100 ms of I/O, 1 ms: two 1 ms turns (no
        // fine-tuning here, so the slice is their mean).
        assert_eq!(
            io_attrs,
            Attrs {
                slice: Some(MS),
                ..Attrs::normal(cpus)
            }
        );
        // Ranked second of two, as ALPS ranks it. The replay has the other's
        // second burst (at 101 ms) preempt it, so its 200 ms come in two
        // 100 ms turns.
        assert_eq!(
            (cpu_attrs.nice, cpu_attrs.slice),
            (NICE_LAST, Some(100 * MS))
        );
    }
}
