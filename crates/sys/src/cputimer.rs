//! POSIX CPU-time timers on other processes' CPU clocks (`timer_create` on
//! the clock `clock_getcpuclockid` gives), delivered as a signal to a
//! signalfd: how the steering loop learns that a process has used the CPU
//! time a policy watches for, without looking at it until then. The kernel
//! checks these timers from the scheduler tick (after bringing the running
//! task's accounting up to date), so they fire up to a tick late.
//!
//! The signal is the first real-time one (`rt_timer`), which nothing in
//! faasched uses otherwise, sent to the thread that made the timers, which
//! blocks it. Real-time signals queue, each with its timer's key, so a
//! wake-up costs a read per expiry, however many timers are armed (a
//! timer's expiry is queued once at most: it holds one signal's room).

use crate::nix_io;
use crate::rt_timer::{self, RtTimer};
use faasched_model::Nanos;
use nix::sys::signal::{SigSet, SigmaskHow};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::time::ClockId;
use nix::unistd::Pid;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

/// Process `pid`'s CPU clock: the CPU time of all its threads, living and
/// gone, which the timers count.
#[derive(Clone, Copy, Debug)]
pub struct CpuClock(ClockId);

impl CpuClock {
    /// The CPU clock of process `pid`.
    pub fn of(pid: libc::pid_t) -> io::Result<CpuClock> {
        ClockId::pid_cpu_clock_id(Pid::from_raw(pid))
            .map(CpuClock)
            .map_err(nix_io)
    }

    /// The process's CPU time now (as stale as the kernel's accounting of
    /// a running thread: up to a tick).
    pub fn now(self) -> io::Result<Nanos> {
        let t = self.0.now().map_err(nix_io)?;
        Ok(t.tv_sec() as Nanos * 1_000_000_000 + t.tv_nsec() as Nanos)
    }
}

/// One-shot timers on processes' CPU clocks, each named by a key; their
/// expiries arrive on [`CpuTimers::fd`], signalled to the calling thread,
/// which blocks the timers' signal while the set is alive. Must be used and
/// dropped on the thread that made it.
pub struct CpuTimers {
    /// Emptied in `drop`, before the mask is restored.
    timers: HashMap<u64, RtTimer>,
    fd: SignalFd,
    previous: SigSet,
}

impl CpuTimers {
    /// An empty set; blocks the timers' signal in the calling thread.
    pub fn new() -> io::Result<CpuTimers> {
        let set = rt_timer::signal_set();
        let previous = set
            .thread_swap_mask(SigmaskHow::SIG_BLOCK)
            .map_err(nix_io)?;
        let fd = SignalFd::with_flags(&set, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
            .map_err(|e| {
                let _ = previous.thread_set_mask();
                nix_io(e)
            })?;
        Ok(CpuTimers {
            timers: HashMap::new(),
            fd,
            previous,
        })
    }

    /// A disarmed timer named `key` on `clock`, replacing any other of
    /// that name. Fails with `EAGAIN` once the caller's RLIMIT_SIGPENDING
    /// is spent (each timer holds a signal's room).
    pub fn add(&mut self, key: u64, clock: CpuClock) -> io::Result<()> {
        // To this thread, which blocks the signal: a process-directed
        // signal could land on another thread and kill the process.
        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        let timer = RtTimer::new(clock.0.as_raw(), tid, key)?;
        self.timers.insert(key, timer);
        Ok(())
    }

    /// Arms `key`'s timer to fire once when its process's CPU time reaches
    /// `at` (absolute; at once if it has), replacing an earlier arming.
    pub fn arm(&mut self, key: u64, at: Nanos) -> io::Result<()> {
        let Some(t) = self.timers.get_mut(&key) else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no CPU timer {key}"),
            ));
        };
        // A zero expiry would disarm it instead.
        t.arm(at.max(1))
    }

    /// Deletes `key`'s timer, if there is one (and a signal of its still
    /// pending).
    pub fn remove(&mut self, key: u64) {
        self.timers.remove(&key);
    }

    /// The descriptor that becomes readable when a timer fires.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The keys, in order and once each, of the timers whose expiries
    /// came since the last call. A timer re-armed after it fired may be
    /// told of the earlier expiry: the caller checks what it waited for.
    pub fn fired(&mut self) -> io::Result<Vec<u64>> {
        let mut keys = Vec::new();
        while let Some(info) = self.fd.read_signal().map_err(nix_io)? {
            if self.timers.contains_key(&info.ssi_ptr) {
                keys.push(info.ssi_ptr);
            }
        }
        keys.sort_unstable();
        keys.dedup();
        Ok(keys)
    }
}

impl Drop for CpuTimers {
    fn drop(&mut self) {
        // Deleting a timer takes back its pending signal; any other left
        // would be delivered, and kill, once the mask is restored.
        self.timers.clear();
        while matches!(self.fd.read_signal(), Ok(Some(_))) {}
        let _ = self.previous.thread_set_mask();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::poll::Poll;
    use faasched_model::MS;

    fn spinner() -> std::process::Child {
        std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap()
    }

    /// Timers on two spinning children fire once each child has used its
    /// CPU time, on the one descriptor, each told once; a timer re-armed
    /// below what its process used fires at once.
    #[test]
    fn timers_fire_when_spinning_children_reach_their_cpu_times() {
        let mut children = [spinner(), spinner()];
        let result = (|| -> io::Result<()> {
            let mut timers = CpuTimers::new()?;
            let mut poll = Poll::new()?;
            poll.add(timers.fd(), 1)?;
            for (key, child) in (7..).zip(&children) {
                timers.add(key, CpuClock::of(child.id() as libc::pid_t)?)?;
            }
            assert_eq!(timers.fired()?, [], "nothing before they are armed");
            timers.arm(7, 20 * MS)?;
            timers.arm(8, 30 * MS)?;
            let mut told = Vec::new();
            for _ in 0..100 {
                if told.len() == 2 {
                    break;
                }
                poll.wait(Some(faasched_model::SEC))?;
                told.extend(timers.fired()?);
            }
            told.sort_unstable();
            assert_eq!(told, [7, 8], "each once");
            let clock = CpuClock::of(children[0].id() as libc::pid_t)?;
            assert!(clock.now()? >= 20 * MS, "it used what its timer waited for");
            // Already past: fires at the next tick on its CPU.
            timers.arm(7, 1)?;
            let mut again = Vec::new();
            for _ in 0..100 {
                if !again.is_empty() {
                    break;
                }
                poll.wait(Some(faasched_model::SEC))?;
                again = timers.fired()?;
            }
            assert_eq!(again, [7]);
            timers.remove(7);
            assert!(timers.arm(7, 1).is_err(), "removed");
            Ok(())
        })();
        for c in &mut children {
            let _ = c.kill();
            let _ = c.wait();
        }
        result.unwrap();
    }
}
