//! POSIX CPU-time timers on other processes' CPU clocks (`timer_create` on
//! the clock `clock_getcpuclockid` gives), delivered as a signal to a
//! signalfd: how the steering loop learns that a process has used the CPU
//! time a policy watches for, without looking at it until then. The kernel
//! checks these timers from the scheduler tick (after bringing the running
//! task's accounting up to date), so they fire up to a tick late.
//!
//! The signal is SIGALRM, which nothing in faasched uses otherwise (nix
//! names the standard signals only, so a real-time one is out of reach),
//! sent to the thread that made the timers, which blocks it. A standard
//! signal does not queue: expiries that come while one is pending are told
//! by that one signal. So [`CpuTimers::fired`] asks every armed timer
//! whether it expired (one `timer_gettime` each) after reading the signals:
//! an expiry before the read is found by the asking, one after it sends a
//! signal of its own.

use crate::nix_io;
use faasched_model::Nanos;
use nix::sys::signal::{SigEvent, SigSet, SigevNotify, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::time::TimeSpec;
use nix::sys::timer::{Expiration, Timer, TimerSetTimeFlags};
use nix::time::ClockId;
use nix::unistd::Pid;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

/// The signal the timers send.
const SIGNAL: Signal = Signal::SIGALRM;

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

struct Armed {
    timer: Timer,
    /// Whether it was armed and has not been found expired since.
    pending: bool,
}

/// One-shot timers on processes' CPU clocks, each named by a key; their
/// expiries arrive on [`CpuTimers::fd`], signalled to the calling thread,
/// which blocks the timers' signal while the set is alive. Must be used and
/// dropped on the thread that made it.
pub struct CpuTimers {
    /// Emptied in `drop`, before the mask is restored.
    timers: HashMap<u64, Armed>,
    fd: SignalFd,
    previous: SigSet,
}

impl CpuTimers {
    /// An empty set; blocks the timers' signal in the calling thread.
    pub fn new() -> io::Result<CpuTimers> {
        let mut set = SigSet::empty();
        set.add(SIGNAL);
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
        let event = SigEvent::new(SigevNotify::SigevThreadId {
            signal: SIGNAL,
            thread_id: rustix::thread::gettid().as_raw_nonzero().get(),
            si_value: key as libc::intptr_t,
        });
        let timer = Timer::new(clock.0, event).map_err(nix_io)?;
        self.timers.insert(
            key,
            Armed {
                timer,
                pending: false,
            },
        );
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
        let at = at.max(1);
        let at = TimeSpec::new(
            (at / 1_000_000_000) as libc::time_t,
            (at % 1_000_000_000) as libc::c_long,
        );
        t.timer
            .set(
                Expiration::OneShot(at),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            )
            .map_err(nix_io)?;
        t.pending = true;
        Ok(())
    }

    /// Deletes `key`'s timer, if there is one.
    pub fn remove(&mut self, key: u64) {
        self.timers.remove(&key);
    }

    /// Whether `key` names a timer.
    pub fn contains(&self, key: u64) -> bool {
        self.timers.contains_key(&key)
    }

    /// The descriptor that becomes readable when a timer fires.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The keys, in order, of the timers that fired since they were armed
    /// and were not told yet: empty unless a signal was pending.
    pub fn fired(&mut self) -> io::Result<Vec<u64>> {
        let mut signalled = false;
        while self.fd.read_signal().map_err(nix_io)?.is_some() {
            signalled = true;
        }
        if !signalled {
            return Ok(Vec::new());
        }
        let mut keys = Vec::new();
        for (&key, t) in self.timers.iter_mut().filter(|(_, t)| t.pending) {
            if t.timer.get().map_err(nix_io)?.is_none() {
                t.pending = false;
                keys.push(key);
            }
        }
        keys.sort_unstable();
        Ok(keys)
    }
}

impl Drop for CpuTimers {
    fn drop(&mut self) {
        self.timers.clear();
        // An expiry still pending would be delivered, and kill, once the
        // mask is restored: consume it first.
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
            assert!(!timers.contains(7));
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
