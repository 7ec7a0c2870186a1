//! Invocations (what arrives) and outcomes (what happened to them).

use crate::{Function, MS, Nanos, Time};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::fmt;

/// One step of an invocation's life, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Needs this much time on a core.
    Cpu(Nanos),
    /// Blocks, off every core, for this long (a real wait: disk, network, sleep).
    Io(Nanos),
}

impl Phase {
    /// Total CPU time of a phase list.
    pub fn cpu_total(phases: &[Phase]) -> Nanos {
        phases
            .iter()
            .map(|p| match p {
                Phase::Cpu(d) => *d,
                Phase::Io(_) => 0,
            })
            .sum()
    }

    /// Total I/O wait of a phase list.
    pub fn io_total(phases: &[Phase]) -> Nanos {
        phases
            .iter()
            .map(|p| match p {
                Phase::Io(d) => *d,
                Phase::Cpu(_) => 0,
            })
            .sum()
    }
}

/// An invocation's phases, in order, with room for one inline.
///
/// Nearly every invocation is one CPU burst: every built-in workload but
/// `mixed-io` and every trace reader emits exactly one phase, and so does
/// ALPS's learner for a CPU-bound invocation. Held inline, that phase costs
/// no allocation when the workload makes it nor a free when the kernel drops
/// the task (malloc and free were about 150 instructions an invocation,
/// 2% of `bench sim`'s scenario (b)). One, not three for `mixed-io`'s I/O
/// classes: with smallvec's `union` layout one inline phase keeps the type
/// at a `Vec`'s three words, where three would make it 56 bytes in every
/// invocation and kernel task (+0.7% instructions in (b)) to spare the
/// allocation for half of one workload. A longer list spills to the heap,
/// as a `Vec` would.
pub type Phases = SmallVec<[Phase; 1]>;

/// One request of one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// Unique within the workload; the workload CSV's `id`.
    pub id: u64,
    /// The function invoked.
    pub function: Function,
    /// Arrival instant.
    pub arrival: Time,
    /// CPU bursts and I/O waits, in order. A CPU-bound invocation is one `Cpu`.
    pub phases: Phases,
    /// Memory the provider bills for, in MB.
    pub memory_mb: u32,
    /// Deadline relative to arrival, if the workload gives one.
    pub deadline: Option<Nanos>,
}

impl Invocation {
    /// Total CPU demand: the sum of the `Cpu` phases.
    pub fn cpu_demand(&self) -> Nanos {
        Phase::cpu_total(&self.phases)
    }

    /// Total I/O wait: the sum of the `Io` phases.
    pub fn io_demand(&self) -> Nanos {
        Phase::io_total(&self.phases)
    }

    /// Whether it ends by [`TIME_LIMIT`](crate::TIME_LIMIT) if it never
    /// waits for a core (arrival plus every phase), as every invocation a
    /// reader accepts does.
    pub fn within_time_limit(&self) -> bool {
        [self.cpu_demand(), self.io_demand()]
            .into_iter()
            .try_fold(self.arrival, Time::checked_add)
            .is_some_and(|end| end <= crate::TIME_LIMIT)
    }

    /// The duration group of this invocation, by its CPU demand.
    pub fn group(&self) -> Group {
        Group::of(self.cpu_demand())
    }
}

/// Duration class of an invocation by its CPU demand (ALPS Table 1):
/// G1 (0,50] ms, G2 (50,200], G3 (200,400], G4 > 400.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Group {
    /// (0, 50] ms.
    G1,
    /// (50, 200] ms.
    G2,
    /// (200, 400] ms.
    G3,
    /// More than 400 ms.
    G4,
}

impl Group {
    /// All groups, shortest first.
    pub const ALL: [Group; 4] = [Group::G1, Group::G2, Group::G3, Group::G4];

    /// The group of an invocation that needs `cpu` of CPU time.
    pub fn of(cpu: Nanos) -> Group {
        match cpu {
            c if c <= 50 * MS => Group::G1,
            c if c <= 200 * MS => Group::G2,
            c if c <= 400 * MS => Group::G3,
            _ => Group::G4,
        }
    }

    /// Index 0..4, for arrays indexed by group.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The group's CPU-demand range in ns, `(low, high]`; `high` is `None` for G4.
    pub fn range(self) -> (Nanos, Option<Nanos>) {
        match self {
            Group::G1 => (0, Some(50 * MS)),
            Group::G2 => (50 * MS, Some(200 * MS)),
            Group::G3 => (200 * MS, Some(400 * MS)),
            Group::G4 => (400 * MS, None),
        }
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "G{}", self.index() + 1)
    }
}

/// What happened to one invocation.
///
/// Derived metrics (docs/OUTPUTS.md): turnaround = finish − arrival; response =
/// first_run − arrival; execution = finish − first_run (what a provider bills);
/// waiting = turnaround − cpu − io; slowdown = turnaround / (cpu + io).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The invocation's id.
    pub id: u64,
    /// The function invoked.
    pub function: Function,
    /// Group by CPU demand.
    pub group: Group,
    /// Arrival instant.
    pub arrival: Time,
    /// First instant it ran on a core.
    pub first_run: Time,
    /// Instant it finished.
    pub finish: Time,
    /// Time spent running on a core.
    pub cpu: Nanos,
    /// Time spent blocked in I/O.
    pub io: Nanos,
    /// Switches away from it because it blocked or exited.
    pub voluntary_switches: u64,
    /// Switches away from it because something else took its core.
    pub involuntary_switches: u64,
    /// Memory billed, in MB.
    pub memory_mb: u32,
}

impl Outcome {
    /// finish − arrival.
    pub fn turnaround(&self) -> Nanos {
        self.finish - self.arrival
    }
    /// first_run − arrival (saturating: a live run's clocks are read
    /// apart, so an outcome need not be ordered to the ns).
    pub fn response(&self) -> Nanos {
        self.first_run.saturating_sub(self.arrival)
    }
    /// finish − first_run: the billed duration (saturating, likewise).
    pub fn execution(&self) -> Nanos {
        self.finish.saturating_sub(self.first_run)
    }
    /// turnaround − cpu − io: time runnable but not running (saturating).
    pub fn waiting(&self) -> Nanos {
        self.turnaround().saturating_sub(self.cpu + self.io)
    }
    /// turnaround / isolated demand (cpu + io); 1.0 for an invocation with no demand.
    pub fn slowdown(&self) -> f64 {
        let demand = self.cpu + self.io;
        if demand == 0 {
            1.0
        } else {
            self.turnaround() as f64 / demand as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_follow_alps_table_1_boundaries() {
        assert_eq!(Group::of(1), Group::G1);
        assert_eq!(Group::of(50 * MS), Group::G1);
        assert_eq!(Group::of(50 * MS + 1), Group::G2);
        assert_eq!(Group::of(200 * MS), Group::G2);
        assert_eq!(Group::of(400 * MS), Group::G3);
        assert_eq!(Group::of(400 * MS + 1), Group::G4);
        assert_eq!(Group::G3.to_string(), "G3");
    }

    #[test]
    fn phases_are_no_larger_than_a_vec_and_hold_one_inline() {
        assert_eq!(size_of::<Phases>(), size_of::<Vec<Phase>>());
        assert!(!Phases::from_buf([Phase::Cpu(MS)]).spilled());
    }
}
