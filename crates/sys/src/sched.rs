//! `sched_setattr`, `sched_getattr` and `sched_setaffinity`: the stock
//! kernel's knobs, set from a model [`Attrs`].
//!
//! An [`Attrs`] is turned into a [`Prepared`] (the kernel's structs) before any
//! fork, so a child can apply it between `fork` and `exec` with nothing but
//! two system calls, which is all that is safe to do there.

use crate::sched_attr::{self, SchedAttr};
use faasched_model::{Attrs, Class, MAX_CPUS, Nanos};
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
use std::io;

/// `SCHED_FLAG_RESET_ON_FORK`: children start under SCHED_NORMAL, nice 0.
const RESET_ON_FORK: u64 = 0x01;

/// Attributes in the kernel's form, ready to apply (even in a forked child).
#[derive(Clone, Copy)]
pub struct Prepared {
    attr: SchedAttr,
    cpus: CpuSet,
}

/// An attribute set the stock kernel has no knob for.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Unsupported {
    /// The ALPS paper's task rank exists only in its patched kernel.
    #[error("the task rank of the ALPS paper's patched kernel has no knob on a stock kernel")]
    Rank,
    /// Affinity to no CPU.
    #[error("affinity to no CPU")]
    NoCpus,
}

impl Prepared {
    /// The kernel structs for `attrs`; `reset_on_fork` keeps children of the
    /// task from inheriting a real-time class (the launcher sets it on itself).
    pub fn new(attrs: &Attrs, reset_on_fork: bool) -> Result<Prepared, Unsupported> {
        if attrs.rank.is_some() {
            return Err(Unsupported::Rank);
        }
        if attrs.cpus.is_empty() {
            return Err(Unsupported::NoCpus);
        }
        let (policy, priority) = match attrs.class {
            Class::Fifo(p) => (libc::SCHED_FIFO, p),
            Class::Rr(p) => (libc::SCHED_RR, p),
            Class::Normal => (libc::SCHED_OTHER, 0),
            Class::Batch => (libc::SCHED_BATCH, 0),
            Class::Idle => (libc::SCHED_IDLE, 0),
        };
        let fair = !attrs.class.is_realtime();
        let attr = SchedAttr {
            policy: policy as u32,
            flags: if reset_on_fork { RESET_ON_FORK } else { 0 },
            nice: if fair { attrs.nice.into() } else { 0 },
            priority: priority.into(),
            // The EEVDF custom slice; 0 asks for the base slice. The kernel
            // ignores it outside the fair classes.
            runtime: if fair { attrs.slice.unwrap_or(0) } else { 0 },
            ..SchedAttr::new()
        };
        Ok(Prepared {
            attr,
            cpus: cpu_set(&attrs.cpus),
        })
    }

    /// Applies the attributes to `pid` (0 = the calling thread): class,
    /// priority, nice and slice, then affinity.
    ///
    /// Async-signal-safe (two system calls on data prepared before), so a
    /// forked child may call it before `exec`.
    pub fn apply(&self, pid: libc::pid_t) -> io::Result<()> {
        // Neither call touches `errno`, which a child before its `exec`
        // shares with the launcher: `sched_attr` makes its call raw, and
        // rustix makes every call so on Linux (its linux_raw backend; the
        // workspace never asks for its libc one).
        sched_attr::set(pid, &self.attr)?;
        sched_setaffinity(crate::pid(pid)?, &self.cpus).map_err(crate::io)
    }
}

/// What the kernel says a task runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Current {
    /// `SCHED_OTHER`, `SCHED_FIFO`, ...
    pub policy: i32,
    /// Real-time priority (0 for the fair classes).
    pub priority: u32,
    /// Nice value.
    pub nice: i32,
    /// The fair slice the kernel uses (base or custom).
    pub slice: Nanos,
    /// Whether SCHED_FLAG_RESET_ON_FORK is set.
    pub reset_on_fork: bool,
}

impl Current {
    /// Whether the task runs in a real-time class.
    pub fn is_realtime(&self) -> bool {
        matches!(self.policy, libc::SCHED_FIFO | libc::SCHED_RR)
    }
}

/// The scheduling attributes of `pid` (0 = the calling thread).
pub fn current(pid: libc::pid_t) -> io::Result<Current> {
    let attr = sched_attr::get(pid)?;
    Ok(Current {
        policy: attr.policy as i32,
        priority: attr.priority,
        nice: attr.nice,
        slice: attr.runtime,
        reset_on_fork: attr.flags & RESET_ON_FORK != 0,
    })
}

/// Puts `pid` back under `before` (as [`current`] read it): class, priority,
/// nice and reset-on-fork. The slice goes back to the base slice: faasched
/// never sets a custom slice on itself.
pub fn restore(pid: libc::pid_t, before: &Current) -> io::Result<()> {
    let attr = SchedAttr {
        policy: before.policy as u32,
        flags: if before.reset_on_fork {
            RESET_ON_FORK
        } else {
            0
        },
        nice: before.nice,
        priority: before.priority,
        ..SchedAttr::new()
    };
    sched_attr::set(pid, &attr)
}

/// The slice the kernel gives a fair task that asks for none: EEVDF's base
/// slice, which it scales by the CPUs online. Read on a scratch thread put
/// under SCHED_OTHER at its nice with the base slice (the thread then ends,
/// so nothing needs restoring); `None` where the kernel reports no slice (its
/// fair class is not EEVDF) or the thread may not become SCHED_OTHER.
pub fn base_slice() -> Option<Nanos> {
    std::thread::spawn(|| {
        let now = current(0).ok()?;
        let fair = Current {
            policy: libc::SCHED_OTHER,
            priority: 0,
            ..now
        };
        restore(0, &fair).ok()?;
        current(0).ok().map(|c| c.slice).filter(|&s| s > 0)
    })
    .join()
    .ok()
    .flatten()
}

/// `cpus` as the kernel's CPU set.
fn cpu_set(cpus: &faasched_model::CpuSet) -> CpuSet {
    let mut set = CpuSet::new();
    // Every CPU of a model set (< MAX_CPUS, 256) fits in the kernel's
    // (CPU_SETSIZE, 1024).
    for c in cpus.iter() {
        set.set(c);
    }
    set
}

/// Lets `pid` (0 = the calling thread) run on `cpus` only; its class,
/// priority and nice stay as they are.
pub fn set_affinity(pid: libc::pid_t, cpus: &faasched_model::CpuSet) -> io::Result<()> {
    sched_setaffinity(crate::pid(pid)?, &cpu_set(cpus)).map_err(crate::io)
}

/// The CPUs `pid` may run on (0 = the calling thread), as far as a
/// [`CpuSet`] reaches.
///
/// [`CpuSet`]: faasched_model::CpuSet
pub fn affinity(pid: libc::pid_t) -> io::Result<faasched_model::CpuSet> {
    let set = sched_getaffinity(crate::pid(pid)?).map_err(crate::io)?;
    let mut cpus = faasched_model::CpuSet::EMPTY;
    for c in (0..MAX_CPUS).filter(|&c| set.is_set(c)) {
        cpus.insert(c);
    }
    Ok(cpus)
}

/// CPUs the kernel has online (at least 1, at most what a [`CpuSet`] holds).
///
/// [`CpuSet`]: faasched_model::CpuSet
pub fn online_cpus() -> usize {
    use nix::unistd::{SysconfVar, sysconf};
    let n = sysconf(SysconfVar::_NPROCESSORS_ONLN)
        .ok()
        .flatten()
        .unwrap_or(1);
    (n.max(1) as usize).min(MAX_CPUS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::{CpuSet, MS};

    /// EEVDF (Linux 6.6 and later) reports a base slice, within the range
    /// it allows a custom one.
    #[test]
    fn reads_the_kernels_base_slice() {
        let slice = base_slice().expect("an EEVDF kernel reports its base slice");
        assert!(
            (100 * faasched_model::US..=100 * MS).contains(&slice),
            "{slice}"
        );
    }

    #[test]
    fn prepares_each_class_in_the_kernels_terms() {
        let cpus = CpuSet::first(1);
        let fifo = Prepared::new(&Attrs::normal(cpus).with_class(Class::Fifo(50)), true).unwrap();
        assert_eq!(
            (fifo.attr.policy, fifo.attr.priority, fifo.attr.flags),
            (libc::SCHED_FIFO as u32, 50, RESET_ON_FORK)
        );
        let mut fair = Attrs::normal(cpus);
        fair.nice = -5;
        fair.slice = Some(3 * MS);
        let p = Prepared::new(&fair, false).unwrap();
        assert_eq!(
            (p.attr.policy, p.attr.nice, p.attr.runtime),
            (0, -5, 3 * MS)
        );
        assert_eq!(p.attr.size, 56);
        let mut ranked = fair;
        ranked.rank = Some(1);
        assert_eq!(Prepared::new(&ranked, false).err(), Some(Unsupported::Rank));
    }

    #[test]
    fn sets_and_reads_back_a_fair_slice_on_a_thread() {
        // Any user may set a custom slice and raise nice on its own thread,
        // so this runs unprivileged too. A thread of its own, so the test
        // harness's thread keeps its attributes.
        std::thread::spawn(|| {
            let mut a = Attrs::normal(CpuSet::first(online_cpus()));
            a.nice = 3;
            a.slice = Some(5 * MS);
            Prepared::new(&a, false).unwrap().apply(0).unwrap();
            let now = current(0).unwrap();
            assert_eq!(
                (now.policy, now.nice, now.slice),
                (libc::SCHED_OTHER, 3, 5 * MS)
            );
            assert_eq!(affinity(0).unwrap(), a.cpus);
        })
        .join()
        .unwrap();
    }
}
