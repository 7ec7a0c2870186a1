//! A process handed to the agent: who it is, whether a client may hand it
//! over, and what it ran under before, to give back.

use crate::sys::{limits, sched};
use faasched_model::{Attrs, Class, CpuSet};
use serde::{Deserialize, Serialize};
use std::io::{self, Read};

/// `PF_KTHREAD` in the flags of `/proc/PID/stat` (include/linux/sched.h).
const PF_KTHREAD: u64 = 0x0020_0000;

/// What `/proc/PID/stat` says of a process's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// When it started, in clock ticks after boot (field 22): with the pid,
    /// names the process across a pid's reuse.
    pub starttime: u64,
    /// Whether it is a kernel thread.
    pub kernel_thread: bool,
}

/// Reads the identity of process `pid`.
pub fn identity(pid: libc::pid_t) -> io::Result<Identity> {
    // One read into a buffer: no size probe, no second read. Fields 1 to 22
    // take at most about 470 bytes (21 numbers, a 16-byte name).
    let mut buf = [0u8; 1024];
    let n = std::fs::File::open(format!("/proc/{pid}/stat"))?.read(&mut buf)?;
    std::str::from_utf8(&buf[..n])
        .ok()
        .and_then(parse_stat)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "malformed stat"))
}

fn parse_stat(text: &str) -> Option<Identity> {
    // The command name (field 2) is in parentheses and may hold spaces and
    // parentheses itself: the fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // `rest` starts at field 3.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Identity {
        starttime: field(22)?,
        kernel_thread: field(9)? & PF_KTHREAD != 0,
    })
}

/// Whether a client running as `client` (its effective uid) may hand over a
/// process with real, effective, saved and filesystem uids `target`.
///
/// The kernel's own rule for changing another process's scheduling
/// (`check_same_owner` in kernel/sched/syscalls.c): root, or the caller's
/// effective uid is the target's real or effective uid. The agent lets a
/// client steer exactly the processes it could call `sched_setattr` on
/// itself; what it adds is the policy's attributes, not more processes.
pub fn may_hand_over(client: u32, target: [u32; 4]) -> bool {
    client == 0 || client == target[0] || client == target[1]
}

/// What a process ran under before the agent steered it: given back when
/// the agent lets it go, except a real-time class (see [`Before::restore`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Before {
    /// `SCHED_OTHER`, `SCHED_BATCH`, ...
    pub policy: i32,
    /// Nice value.
    pub nice: i32,
    /// SCHED_FLAG_RESET_ON_FORK.
    pub reset_on_fork: bool,
    /// The CPUs it could run on.
    pub cpus: Vec<usize>,
    /// Its RLIMIT_RTTIME (soft, hard, µs), if the agent changed it.
    pub rt_time_us: Option<[u64; 2]>,
}

impl Before {
    /// Reads what `pid` runs under now.
    pub fn capture(pid: libc::pid_t) -> io::Result<Before> {
        let now = sched::current(pid)?;
        Ok(Before {
            policy: now.policy,
            nice: now.nice,
            reset_on_fork: now.reset_on_fork,
            cpus: sched::affinity(pid)?.iter().collect(),
            rt_time_us: None,
        })
    }

    /// Sets RLIMIT_RTTIME of `pid` to `limit_us` (and the hard limit a
    /// second above: SIGXCPU, then SIGKILL; never above the hard limit it
    /// had, which only CAP_SYS_RESOURCE may raise), remembering the first
    /// limit it had.
    pub fn limit_rt_time(&mut self, pid: libc::pid_t, limit_us: u64) -> io::Result<()> {
        let hard = limits::rt_time_of(pid)?.rlim_max.min(limit_us + 1_000_000);
        let old = limits::swap_rt_time_of(pid, limit_us.min(hard), hard)?;
        self.rt_time_us.get_or_insert([old.rlim_cur, old.rlim_max]);
        Ok(())
    }

    /// Gives `pid` back what it ran under: class, nice, reset-on-fork,
    /// affinity (the base slice) and RLIMIT_RTTIME. A process that was
    /// real-time before is left SCHED_OTHER at nice 0: the agent never leaves
    /// a process in a real-time class.
    pub fn restore(&self, pid: libc::pid_t) -> io::Result<()> {
        let class = match self.policy {
            libc::SCHED_BATCH => Class::Batch,
            libc::SCHED_IDLE => Class::Idle,
            _ => Class::Normal,
        };
        let fair = matches!(
            self.policy,
            libc::SCHED_OTHER | libc::SCHED_BATCH | libc::SCHED_IDLE
        );
        let mut cpus = CpuSet::EMPTY;
        for &c in self.cpus.iter().filter(|&&c| c < faasched_model::MAX_CPUS) {
            cpus.insert(c);
        }
        if cpus.is_empty() {
            cpus = CpuSet::first(sched::online_cpus());
        }
        let attrs = Attrs {
            nice: if fair {
                self.nice.clamp(-20, 19) as i8
            } else {
                0
            },
            ..Attrs::normal(cpus).with_class(class)
        };
        sched::Prepared::new(&attrs, self.reset_on_fork)
            .map_err(io::Error::other)?
            .apply(pid)?;
        match self
            .rt_time_us
            .map(|[soft, hard]| limits::swap_rt_time_of(pid, soft, hard))
        {
            // Raising the hard limit back needs CAP_SYS_RESOURCE; without
            // it the process keeps the lower one, which only a real-time
            // process ever meets.
            Some(Err(e)) if e.raw_os_error() != Some(libc::EPERM) => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_past_a_command_name_with_parentheses() {
        // Fields 3..=22 after the name; flags (9) with PF_KTHREAD set.
        let line = "42 (a) (b) S 2 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0";
        assert_eq!(
            parse_stat(line),
            Some(Identity {
                starttime: 777,
                kernel_thread: true
            })
        );
        let user = "7 (sh) S 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 123 0 0";
        assert_eq!(parse_stat(user).map(|i| i.kernel_thread), Some(false));
        assert_eq!(parse_stat("7 (sh) S 1"), None);
        let me = identity(std::process::id() as libc::pid_t).unwrap();
        assert!(!me.kernel_thread && me.starttime > 0);
        assert!(identity(2).is_ok_and(|k| k.kernel_thread), "kthreadd");
    }

    #[test]
    fn a_client_may_hand_over_what_it_could_reschedule_itself() {
        assert!(may_hand_over(0, [5, 5, 5, 5]));
        assert!(may_hand_over(1000, [1000, 0, 0, 0]));
        assert!(may_hand_over(1000, [0, 1000, 0, 0]));
        assert!(!may_hand_over(1000, [0, 0, 1000, 1000]));
        assert!(!may_hand_over(65534, [0, 0, 0, 0]));
    }

    #[test]
    fn restores_a_fair_process_and_demotes_a_realtime_one() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let result = (|| -> io::Result<()> {
            let mut before = Before::capture(pid)?;
            assert_eq!(before.policy, libc::SCHED_OTHER);
            before.limit_rt_time(pid, 3_000_000)?;
            let limits = std::fs::read_to_string(format!("/proc/{pid}/limits"))?;
            assert!(limits.contains("3000000"), "{limits}");
            // The first limit is the one kept.
            before.limit_rt_time(pid, 2_000_000)?;
            assert_eq!(before.rt_time_us, Some([libc::RLIM_INFINITY; 2]));
            before.restore(pid)?;
            assert_eq!(sched::current(pid)?.policy, libc::SCHED_OTHER);
            // Real-time before: SCHED_OTHER, nice 0 after.
            let rt = Before {
                policy: libc::SCHED_FIFO,
                nice: -3,
                ..before
            };
            rt.restore(pid)?;
            let now = sched::current(pid)?;
            assert_eq!((now.policy, now.nice), (libc::SCHED_OTHER, 0));
            Ok(())
        })();
        let _ = child.kill();
        let _ = child.wait();
        result.unwrap();
    }
}
