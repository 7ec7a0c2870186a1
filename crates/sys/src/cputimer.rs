//! POSIX CPU-time timers on another process's CPU clock (`timer_create` on
//! the clock `clock_getcpuclockid` gives), delivered as a signal to a
//! signalfd: the alternative to faasched's CPU watches that `faasched bench
//! watch` measures. The kernel checks these timers from the scheduler tick,
//! so they fire up to a tick late.
//!
//! The signal is SIGALRM, which nothing in faasched uses otherwise (nix
//! names the standard signals only, so a real-time one is out of reach),
//! sent to the thread that made the timer, which blocks it.

use crate::nix_io;
use faasched_model::Nanos;
use nix::sys::signal::{SigEvent, SigSet, SigevNotify, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::time::TimeSpec;
use nix::sys::timer::{Expiration, Timer, TimerSetTimeFlags};
use nix::time::ClockId;
use nix::unistd::Pid;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

/// The signal the timers send.
const SIGNAL: Signal = Signal::SIGALRM;

/// A one-shot timer on process `pid`'s CPU clock; its expiries arrive on
/// [`CpuTimer::fd`], signalled to the calling thread, which blocks the
/// timer's signal while the timer is alive. Must be dropped on the thread
/// that made it.
pub struct CpuTimer {
    /// `None` once deleted (in `drop`, before the mask is restored).
    timer: Option<Timer>,
    fd: SignalFd,
    previous: SigSet,
}

impl CpuTimer {
    /// A timer on `pid`'s process CPU clock.
    pub fn new(pid: libc::pid_t) -> io::Result<CpuTimer> {
        let mut set = SigSet::empty();
        set.add(SIGNAL);
        let previous = set
            .thread_swap_mask(SigmaskHow::SIG_BLOCK)
            .map_err(nix_io)?;
        let restore = |e: nix::Error| {
            let _ = previous.thread_set_mask();
            nix_io(e)
        };
        let fd = SignalFd::with_flags(&set, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
            .map_err(restore)?;
        let clock = ClockId::pid_cpu_clock_id(Pid::from_raw(pid)).map_err(restore)?;
        // To this thread, which blocks the signal: a process-directed
        // signal could land on another thread and kill the process.
        let event = SigEvent::new(SigevNotify::SigevThreadId {
            signal: SIGNAL,
            thread_id: rustix::thread::gettid().as_raw_nonzero().get(),
            si_value: 0,
        });
        let timer = Timer::new(clock, event).map_err(restore)?;
        Ok(CpuTimer {
            timer: Some(timer),
            fd,
            previous,
        })
    }

    /// Fires once when the process's CPU time reaches `at` (absolute).
    pub fn arm(&mut self, at: Nanos) -> io::Result<()> {
        let Some(timer) = self.timer.as_mut() else {
            return Ok(());
        };
        let at = TimeSpec::new(
            (at / 1_000_000_000) as libc::time_t,
            (at % 1_000_000_000) as libc::c_long,
        );
        timer
            .set(
                Expiration::OneShot(at),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            )
            .map_err(nix_io)
    }

    /// The descriptor that becomes readable when the timer fires.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Consumes one expiry, if pending.
    pub fn take(&mut self) -> io::Result<bool> {
        self.fd.read_signal().map(|s| s.is_some()).map_err(nix_io)
    }
}

impl Drop for CpuTimer {
    fn drop(&mut self) {
        self.timer = None;
        // An expiry still pending would be delivered, and kill, once the
        // mask is restored: consume it first.
        while self.take().unwrap_or(false) {}
        let _ = self.previous.thread_set_mask();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::poll::Poll;
    use faasched_model::MS;

    /// A timer on a spinning child fires once the child has used its CPU
    /// time, on the descriptor, and is consumed by `take`.
    #[test]
    fn fires_when_a_spinning_child_reaches_its_cpu_time() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let result = (|| -> io::Result<()> {
            let mut timer = CpuTimer::new(child.id() as libc::pid_t)?;
            assert!(!timer.take()?, "nothing before it is armed");
            timer.arm(20 * MS)?;
            let mut poll = Poll::new()?;
            poll.add(timer.fd(), 1)?;
            // The child spins until killed: the wait ends with the expiry.
            while poll.wait(None)?.is_empty() {}
            assert!(timer.take()?);
            assert!(!timer.take()?, "one expiry");
            Ok(())
        })();
        let _ = child.kill();
        let _ = child.wait();
        result.unwrap();
    }
}
