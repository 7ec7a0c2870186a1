//! The scheduling attributes a steering policy may set on a task: exactly the knobs
//! of a stock Linux kernel (`sched_setattr` and `sched_setaffinity`).

use crate::{MS, Nanos};

/// Largest number of CPUs a [`CpuSet`] can name.
pub const MAX_CPUS: usize = 256;

/// A set of CPUs, like the kernel's `cpu_set_t` but fixed at [`MAX_CPUS`].
///
/// The small queries are `#[inline]`: the kernel model calls them on every
/// event, from another crate, where a call would cost more than the query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet([u64; MAX_CPUS / 64]);

impl CpuSet {
    /// No CPU.
    pub const EMPTY: CpuSet = CpuSet([0; MAX_CPUS / 64]);

    /// CPUs `0..n`.
    ///
    /// # Panics
    /// If `n` exceeds [`MAX_CPUS`] (a programmer error: configs validate core counts).
    pub fn first(n: usize) -> CpuSet {
        Self::range(0, n)
    }

    /// CPUs `lo..hi`.
    ///
    /// # Panics
    /// If `hi` exceeds [`MAX_CPUS`] or `lo > hi`.
    pub fn range(lo: usize, hi: usize) -> CpuSet {
        assert!(
            lo <= hi && hi <= MAX_CPUS,
            "cpu range {lo}..{hi} out of bounds"
        );
        let mut s = Self::EMPTY;
        for c in lo..hi {
            s.insert(c);
        }
        s
    }

    /// Adds CPU `c`.
    ///
    /// # Panics
    /// If `c >= MAX_CPUS`.
    #[inline]
    pub fn insert(&mut self, c: usize) {
        self.0[c / 64] |= 1 << (c % 64);
    }

    /// Whether CPU `c` is in the set.
    #[inline]
    pub fn contains(&self, c: usize) -> bool {
        c < MAX_CPUS && self.0[c / 64] & (1 << (c % 64)) != 0
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The CPUs in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &word)| {
            let mut w = word;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let bit = w.trailing_zeros() as usize;
                    w &= w - 1;
                    i * 64 + bit
                })
            })
        })
    }

    /// The lowest CPU in the set.
    #[inline]
    pub fn lowest(&self) -> Option<usize> {
        self.iter().next()
    }

    /// Removes CPU `c`.
    #[inline]
    pub fn remove(&mut self, c: usize) {
        if c < MAX_CPUS {
            self.0[c / 64] &= !(1 << (c % 64));
        }
    }

    /// The intersection of two sets.
    #[inline]
    pub fn and(&self, other: &CpuSet) -> CpuSet {
        let mut s = *self;
        for (a, b) in s.0.iter_mut().zip(other.0) {
            *a &= b;
        }
        s
    }

    /// The CPUs of this set that are not in `other`.
    pub fn without(&self, other: &CpuSet) -> CpuSet {
        let mut s = *self;
        for (a, b) in s.0.iter_mut().zip(other.0) {
            *a &= !b;
        }
        s
    }
}

/// Scheduling class and, for the real-time classes, priority (1..=99).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// SCHED_FIFO: runs until it blocks, exits or a higher priority preempts it.
    Fifo(u8),
    /// SCHED_RR: like FIFO, with a round-robin quantum among equal priorities.
    Rr(u8),
    /// SCHED_NORMAL (SCHED_OTHER): the fair class.
    Normal,
    /// SCHED_BATCH: fair class, never wakeup-preempts others.
    Batch,
    /// SCHED_IDLE: fair class at the minimum weight, preempted by any other wakeup.
    Idle,
}

impl Class {
    /// Whether this is a real-time class (needs CAP_SYS_NICE on a real kernel).
    pub fn is_realtime(self) -> bool {
        matches!(self, Class::Fifo(_) | Class::Rr(_))
    }
}

/// Everything a steering policy may set on a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Attrs {
    /// Scheduling class.
    pub class: Class,
    /// Nice value, −20..=19; fair classes only.
    pub nice: i8,
    /// EEVDF custom slice (`sched_attr.sched_runtime`); the kernel clamps it to
    /// [`Attrs::SLICE_MIN`]..=[`Attrs::SLICE_MAX`]. `None` = the base slice.
    pub slice: Option<Nanos>,
    /// CPU affinity.
    pub cpus: CpuSet,
    /// **Sim only**: the function's rank in the ALPS paper's patched CFS
    /// (`alps_execve`'s function id, looked up in its task-order map), with
    /// `slice` read as the minimum uninterrupted turn. A stock kernel has no such
    /// knob: only the simulator's `alps-kernel` discipline reads it, and the live
    /// runtime refuses attributes that set it.
    pub rank: Option<u32>,
}

impl Attrs {
    /// Smallest custom slice the kernel accepts (0.1 ms since Linux 6.12).
    pub const SLICE_MIN: Nanos = MS / 10;
    /// Largest custom slice the kernel accepts (100 ms since Linux 6.12).
    pub const SLICE_MAX: Nanos = 100 * MS;

    /// The kernel's defaults for a new task: SCHED_NORMAL, nice 0, base slice, on `cpus`.
    pub fn normal(cpus: CpuSet) -> Attrs {
        Attrs {
            class: Class::Normal,
            nice: 0,
            slice: None,
            cpus,
            rank: None,
        }
    }

    /// These attributes with another class.
    pub fn with_class(self, class: Class) -> Attrs {
        Attrs { class, ..self }
    }

    /// The custom slice as the kernel would store it (clamped), if any.
    #[inline]
    pub fn clamped_slice(&self) -> Option<Nanos> {
        self.slice
            .map(|s| s.clamp(Self::SLICE_MIN, Self::SLICE_MAX))
    }
}

/// Rights beyond an ordinary process's that attributes need on a real kernel
/// (CAP_SYS_NICE, or RLIMIT_RTPRIO and RLIMIT_NICE): what a live run checks
/// before it runs a policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Privileges {
    /// SCHED_FIFO and SCHED_RR.
    pub realtime: bool,
    /// Nice values below 0.
    pub raise_priority: bool,
}

impl Privileges {
    /// What `attrs` need.
    pub fn of(attrs: &Attrs) -> Privileges {
        Privileges {
            realtime: attrs.class.is_realtime(),
            raise_priority: !attrs.class.is_realtime() && attrs.nice < 0,
        }
    }

    /// Both sets together.
    pub fn union(self, other: Privileges) -> Privileges {
        Privileges {
            realtime: self.realtime || other.realtime,
            raise_priority: self.raise_priority || other.raise_priority,
        }
    }

    /// What `needed` asks beyond `self`, in words (empty if `self` covers it).
    pub fn missing(&self, needed: Privileges) -> Vec<&'static str> {
        let mut m = Vec::new();
        if needed.realtime && !self.realtime {
            m.push("the real-time classes SCHED_FIFO/SCHED_RR");
        }
        if needed.raise_priority && !self.raise_priority {
            m.push("negative nice values");
        }
        m
    }
}

/// Linux's `sched_prio_to_weight` table: the load weight of nice −20..=19
/// (kernel/sched/core.c). Nice 0 is 1024; each step is about 1.25×.
const PRIO_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// The kernel's load weight for a nice value (clamped to −20..=19). Inline:
/// the kernel model looks it up on every spawn.
#[inline]
pub fn nice_to_weight(nice: i8) -> u32 {
    PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuset_basics() {
        let s = CpuSet::range(2, 5);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!(s.len(), 3);
        assert!(!s.contains(5));
        assert_eq!(s.and(&CpuSet::first(3)).iter().collect::<Vec<_>>(), vec![2]);
        assert_eq!(s.without(&CpuSet::first(3)), CpuSet::range(3, 5));
        assert_eq!(
            CpuSet::first(130)
                .without(&CpuSet::range(1, 129))
                .iter()
                .collect::<Vec<_>>(),
            vec![0, 129]
        );
        assert!(s.without(&CpuSet::first(8)).is_empty());
        assert!(CpuSet::EMPTY.is_empty());
        let mut t = CpuSet::range(63, 66);
        assert_eq!(t.lowest(), Some(63));
        t.remove(63);
        assert_eq!(t.iter().collect::<Vec<_>>(), vec![64, 65]);
        let big = CpuSet::first(200);
        assert!(big.contains(199) && !big.contains(200));
    }

    #[test]
    fn weights_match_kernel_table() {
        assert_eq!(nice_to_weight(0), 1024);
        assert_eq!(nice_to_weight(-20), 88761);
        assert_eq!(nice_to_weight(19), 15);
        assert_eq!(nice_to_weight(100), 15);
    }

    #[test]
    fn slice_is_clamped_like_the_kernel() {
        let mut a = Attrs::normal(CpuSet::first(1));
        a.slice = Some(1);
        assert_eq!(a.clamped_slice(), Some(Attrs::SLICE_MIN));
        a.slice = Some(200 * MS);
        assert_eq!(a.clamped_slice(), Some(Attrs::SLICE_MAX));
    }
}
