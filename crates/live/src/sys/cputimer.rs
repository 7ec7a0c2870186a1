//! POSIX CPU-time timers on another process's CPU clock (`timer_create` on
//! the clock `clock_getcpuclockid` gives), delivered as a real-time signal to
//! a signalfd: the alternative to faasched's CPU watches that `faasched bench
//! watch` measures. The kernel checks these timers from the scheduler tick,
//! so they fire up to a tick late.

use faasched_model::Nanos;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};

/// A one-shot timer on process `pid`'s CPU clock; its expiries arrive on
/// [`CpuTimer::fd`], signalled to the calling thread, which blocks the
/// timer's signal while the timer is alive. Must be dropped on the thread
/// that made it.
pub struct CpuTimer {
    timer: libc::timer_t,
    fd: File,
    previous: libc::sigset_t,
}

impl CpuTimer {
    /// A timer on `pid`'s process CPU clock.
    pub fn new(pid: libc::pid_t) -> io::Result<CpuTimer> {
        let signal = libc::SIGRTMIN();
        // SAFETY: sigset_t is a plain C struct filled in by the calls.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        let mut previous: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid sigset pointers.
        unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut previous);
        }
        let restore = |previous: &libc::sigset_t| {
            // SAFETY: restores a mask saved above.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, previous, std::ptr::null_mut()) };
        };
        // SAFETY: a valid sigset; -1 asks for a new descriptor.
        let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            restore(&previous);
            return Err(e);
        }
        // SAFETY: a fresh descriptor we now own.
        let fd = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        let mut clock: libc::clockid_t = 0;
        // SAFETY: `clock` is writable.
        let rc = unsafe { libc::clock_getcpuclockid(pid, &mut clock) };
        if rc != 0 {
            restore(&previous);
            return Err(io::Error::from_raw_os_error(rc));
        }
        // SAFETY: sigevent is a plain C struct; zero is a valid start.
        let mut ev: libc::sigevent = unsafe { std::mem::zeroed() };
        // To this thread, which blocks the signal: a process-directed
        // signal could land on another thread and kill the process.
        ev.sigev_notify = libc::SIGEV_THREAD_ID;
        ev.sigev_signo = signal;
        // SAFETY: gettid has no arguments.
        ev.sigev_notify_thread_id = unsafe { libc::gettid() };
        let mut timer: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `ev` and `timer` are valid for the call.
        if unsafe { libc::timer_create(clock, &mut ev, &mut timer) } != 0 {
            let e = io::Error::last_os_error();
            restore(&previous);
            return Err(e);
        }
        Ok(CpuTimer {
            timer,
            fd,
            previous,
        })
    }

    /// Fires once when the process's CPU time reaches `at` (absolute).
    pub fn arm(&self, at: Nanos) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at / 1_000_000_000) as libc::time_t,
                tv_nsec: (at % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: a live timer and a valid itimerspec.
        let rc = unsafe {
            libc::timer_settime(self.timer, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The descriptor that becomes readable when the timer fires.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Consumes one expiry, if pending.
    pub fn take(&mut self) -> io::Result<bool> {
        let mut buf = [0u8; size_of::<libc::signalfd_siginfo>()];
        match self.fd.read(&mut buf) {
            Ok(n) => Ok(n == buf.len()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl Drop for CpuTimer {
    fn drop(&mut self) {
        // SAFETY: deletes the timer created in `new`.
        unsafe { libc::timer_delete(self.timer) };
        // An expiry still pending would be delivered, and kill, once the
        // mask is restored: consume it first.
        while self.take().unwrap_or(false) {}
        // SAFETY: restores the mask saved in `new`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.previous, std::ptr::null_mut()) };
    }
}
