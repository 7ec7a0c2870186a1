//! What this process may ask of the kernel, found by trying (capabilities,
//! RLIMIT_RTPRIO, RLIMIT_NICE and container policies all decide it), and the
//! launcher's own real-time priority, always given back.

use crate::sys::sched::{self, Current, Prepared};
use faasched_model::{Attrs, Class, CpuSet, Privileges};
use std::io;

/// What this process holds, found by trying each on a scratch thread (which
/// then exits, so nothing needs restoring).
pub fn probe() -> Privileges {
    let cpus = CpuSet::first(sched::online_cpus());
    let try_on_thread = move |attrs: Attrs| {
        std::thread::spawn(move || Prepared::new(&attrs, false).is_ok_and(|p| p.apply(0).is_ok()))
            .join()
            .unwrap_or(false)
    };
    let mut raised = Attrs::normal(cpus);
    raised.nice = -1;
    Privileges {
        realtime: try_on_thread(Attrs::normal(cpus).with_class(Class::Fifo(1))),
        raise_priority: try_on_thread(raised),
    }
}

/// Real-time priority of the launcher: above every function (the policies
/// use 50), so launches, exits and demotions are handled on time even when
/// real-time functions hold every core.
pub const LAUNCHER_PRIO: u8 = 90;

/// RLIMIT_RTTIME (soft) of the launcher while real-time, µs: it blocks
/// between events, so one that runs a full second without blocking is broken
/// and gets SIGXCPU, which ends it (its children die with it). The hard
/// limit stays as it was, so children can set their own.
const LAUNCHER_RT_LIMIT_US: u64 = 1_000_000;

/// The calling thread runs SCHED_FIFO at [`LAUNCHER_PRIO`] with
/// reset-on-fork (children start as SCHED_OTHER), on the CPUs it has, until
/// this is dropped, which restores its class, priority, nice and slice and
/// its RLIMIT_RTTIME.
pub struct Realtime {
    before: Current,
    limit_before: libc::rlimit,
}

impl Realtime {
    /// Raises the calling thread.
    pub fn enter() -> io::Result<Realtime> {
        let before = sched::current(0)?;
        let attrs = Attrs::normal(sched::affinity(0)?).with_class(Class::Fifo(LAUNCHER_PRIO));
        let raise = Prepared::new(&attrs, true).map_err(io::Error::other)?;
        let limit_before = crate::sys::limits::rt_time()?;
        crate::sys::limits::set_rt_time(
            LAUNCHER_RT_LIMIT_US.min(limit_before.rlim_max),
            limit_before.rlim_max,
        )?;
        let raised = Realtime {
            before,
            limit_before,
        };
        // On failure `raised` drops, giving back whatever was changed.
        raise.apply(0)?;
        Ok(raised)
    }
}

impl Drop for Realtime {
    fn drop(&mut self) {
        // Best effort on every path: the kernel accepts going back to what
        // it accepted before.
        let _ = sched::restore(0, &self.before);
        let _ =
            crate::sys::limits::set_rt_time(self.limit_before.rlim_cur, self.limit_before.rlim_max);
    }
}

/// The calling thread runs on given CPUs until this is dropped, which gives
/// it back the CPUs it had. (Any thread may narrow its own CPUs: no
/// privilege is needed.)
pub struct Pinned {
    before: CpuSet,
}

impl Pinned {
    /// Keeps the calling thread on `cpus`.
    pub fn to(cpus: &CpuSet) -> io::Result<Pinned> {
        let before = sched::affinity(0)?;
        sched::set_affinity(0, cpus)?;
        Ok(Pinned { before })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let _ = sched::set_affinity(0, &self.before);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raised with reset-on-fork on the CPUs it was pinned to; class,
    /// priority, nice, slice, RLIMIT_RTTIME and CPUs given back when each
    /// guard drops.
    #[test]
    fn the_launcher_is_raised_and_pinned_and_given_everything_back() {
        // On a thread of its own: the class and CPUs are the thread's.
        std::thread::spawn(|| {
            let online = sched::online_cpus();
            let before = sched::current(0).unwrap();
            let (cpus_before, limit_before) = (
                sched::affinity(0).unwrap(),
                crate::sys::limits::rt_time().unwrap(),
            );
            let last = CpuSet::range(online - 1, online);
            {
                let _pinned = Pinned::to(&last).unwrap();
                assert_eq!(sched::affinity(0).unwrap(), last);
                if probe().realtime {
                    let _raised = Realtime::enter().unwrap();
                    let now = sched::current(0).unwrap();
                    assert_eq!(
                        (now.policy, now.priority, now.reset_on_fork),
                        (libc::SCHED_FIFO, u32::from(LAUNCHER_PRIO), true)
                    );
                    assert_eq!(sched::affinity(0).unwrap(), last, "raising keeps the CPUs");
                    let limit = crate::sys::limits::rt_time().unwrap();
                    assert_eq!(limit.rlim_cur, LAUNCHER_RT_LIMIT_US.min(limit.rlim_max));
                } else {
                    eprintln!("not raised: needs the privilege for SCHED_FIFO (CI runs as root)");
                }
                assert_eq!(sched::current(0).unwrap(), before);
            }
            assert_eq!(sched::affinity(0).unwrap(), cpus_before);
            let limit = crate::sys::limits::rt_time().unwrap();
            assert_eq!(
                (limit.rlim_cur, limit.rlim_max),
                (limit_before.rlim_cur, limit_before.rlim_max)
            );
        })
        .join()
        .unwrap();
    }
}
