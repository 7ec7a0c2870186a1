//! A process handed to the agent: who it is, whether a client may hand it
//! over, and what it ran under before, to give back.

use crate::sys::{limits, sched};
use faasched_model::{Attrs, Class, CpuSet};
use serde::{Deserialize, Serialize};
use std::io::{self, Read};

/// `PF_KTHREAD` in the flags of `/proc/PID/stat` (include/linux/sched.h).
const PF_KTHREAD: u64 = 0x0020_0000;

/// kthreadd's pid in the initial pid namespace.
const KTHREADD: libc::pid_t = 2;

/// The parent of every kernel thread, as the agent sees pids: kthreadd
/// (pid 2) when the agent runs in the initial pid namespace, `None` in
/// another, where no kernel thread has a pid. Read once, from
/// `/proc/2/stat`, so that a hand-over tells a kernel thread by the parent
/// its pidfd reports, without reading `/proc` each time.
///
/// kthreadd forks every other kernel thread and never exits, so they stay
/// its children; so are the kernel's user-mode helpers (modprobe, core-dump
/// pipes), which the agent refuses as well.
pub fn kthreadd() -> io::Result<Option<libc::pid_t>> {
    match kernel_thread(KTHREADD) {
        Ok(kernel) => Ok(kernel.then_some(KTHREADD)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether process `pid` is a kernel thread.
fn kernel_thread(pid: libc::pid_t) -> io::Result<bool> {
    // One read into a buffer: no size probe, no second read. Fields 1 to 9
    // take at most about 200 bytes (a 16-byte name).
    let mut buf = [0u8; 1024];
    let n = std::fs::File::open(format!("/proc/{pid}/stat"))?.read(&mut buf)?;
    std::str::from_utf8(&buf[..n])
        .ok()
        .and_then(stat_flags)
        .map(|flags| flags & PF_KTHREAD != 0)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "malformed stat"))
}

/// The flags (field 9) of a `/proc/PID/stat` line.
fn stat_flags(text: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold spaces and
    // parentheses itself: the fields start after the last ')', at field 3.
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(9 - 3)?.parse().ok()
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
#[serde(deny_unknown_fields)]
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

/// `SCHED_DEADLINE` (include/uapi/linux/sched.h; not in every libc).
const SCHED_DEADLINE: i32 = 6;

impl Before {
    /// Whether every field holds a value the kernel could have reported (as
    /// read back from a state file); if not, the field (as the state file
    /// names it) and why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let classes = [
            libc::SCHED_OTHER,
            libc::SCHED_FIFO,
            libc::SCHED_RR,
            libc::SCHED_BATCH,
            libc::SCHED_IDLE,
            SCHED_DEADLINE,
        ];
        if !classes.contains(&self.policy) {
            return Err((
                "before.policy",
                format!(
                    "{} is no scheduling class (0 SCHED_OTHER, 1 SCHED_FIFO, 2 SCHED_RR, 3 SCHED_BATCH, 5 SCHED_IDLE, 6 SCHED_DEADLINE)",
                    self.policy
                ),
            ));
        }
        if !(-20..=19).contains(&self.nice) {
            return Err((
                "before.nice",
                format!("{} is out of range (-20 to 19)", self.nice),
            ));
        }
        if self.cpus.is_empty() {
            return Err((
                "before.cpus",
                "no CPU: a process runs on one at least".into(),
            ));
        }
        if let Some(&c) = self.cpus.iter().find(|&&c| c >= faasched_model::MAX_CPUS) {
            return Err((
                "before.cpus",
                format!(
                    "CPU {c} is past the last ({})",
                    faasched_model::MAX_CPUS - 1
                ),
            ));
        }
        if self.cpus.windows(2).any(|w| w[0] >= w[1]) {
            return Err((
                "before.cpus",
                "not in increasing order without repeats, as the agent writes them".into(),
            ));
        }
        if let Some([soft, hard]) = self.rt_time_us
            && soft > hard
        {
            return Err((
                "before.rt_time_us",
                format!("the soft limit {soft} is above the hard limit {hard}"),
            ));
        }
        Ok(())
    }

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
        // Fields 3..=9 after the name; flags (9) with PF_KTHREAD set.
        let line = "42 (a) (b) S 2 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0";
        assert_eq!(stat_flags(line), Some(2129984));
        assert_eq!(stat_flags("7 (sh) S 1"), None);
        assert!(!kernel_thread(std::process::id() as libc::pid_t).unwrap());
        assert!(kernel_thread(KTHREADD).unwrap(), "kthreadd");
        assert_eq!(kthreadd().unwrap(), Some(KTHREADD));
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
            // The child's class is this thread's (SCHED_OTHER, or
            // SCHED_IDLE under `chrt -i 0`).
            let inherited = sched::current(0)?.policy;
            let mut before = Before::capture(pid)?;
            assert_eq!(before.policy, inherited);
            before.limit_rt_time(pid, 3_000_000)?;
            let limits = std::fs::read_to_string(format!("/proc/{pid}/limits"))?;
            assert!(limits.contains("3000000"), "{limits}");
            // The first limit is the one kept.
            before.limit_rt_time(pid, 2_000_000)?;
            assert_eq!(before.rt_time_us, Some([libc::RLIM_INFINITY; 2]));
            before.restore(pid)?;
            assert_eq!(sched::current(pid)?.policy, inherited);
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
