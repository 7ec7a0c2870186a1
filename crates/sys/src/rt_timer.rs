//! A POSIX timer that signals one thread with a real-time signal carrying a
//! value, and the signal set to block and read it with: nix's timers and
//! signal sets name the standard signals only, and a standard signal does
//! not queue (expiries that come while one is pending would be told as
//! one, with one timer's value).
#![allow(unsafe_code)]

use nix::sys::signal::SigSet;
use std::io;
use std::mem::MaybeUninit;

/// The real-time signal the timers send: the first one the C library leaves
/// to programs (it keeps those below for its threads).
pub(crate) fn signal() -> libc::c_int {
    libc::SIGRTMIN()
}

/// The set holding only [`signal`].
pub(crate) fn signal_set() -> SigSet {
    let mut set = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the set it is given; sigaddset then
    // adds a signal number the kernel has (SIGRTMIN is one), so neither
    // fails.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), signal());
        SigSet::from_sigset_t_unchecked(set.assume_init())
    }
}

/// A timer on `clock` whose expiries send [`signal`] with `value` to thread
/// `tid`; deleted on drop.
pub(crate) struct RtTimer(libc::timer_t);

impl RtTimer {
    pub(crate) fn new(clock: libc::clockid_t, tid: libc::pid_t, value: u64) -> io::Result<RtTimer> {
        // SAFETY: sigevent is plain data, valid all zeros.
        let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = signal();
        event.sigev_value = libc::sigval {
            sival_ptr: value as usize as *mut libc::c_void,
        };
        event.sigev_notify_thread_id = tid;
        let mut id = MaybeUninit::<libc::timer_t>::uninit();
        // SAFETY: `event` and `id` are valid for the call; the kernel only
        // reads the first and writes the second.
        if unsafe { libc::timer_create(clock, &mut event, id.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: written by the successful call.
        Ok(RtTimer(unsafe { id.assume_init() }))
    }

    /// Fires once when the clock reaches `at` ns (absolute), replacing any
    /// earlier arming; `at` 0 disarms it.
    pub(crate) fn arm(&mut self, at: u64) -> io::Result<()> {
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
        // SAFETY: the timer is alive (deleted only on drop); `spec` is
        // valid for the call and the old value is not asked for.
        let r = unsafe {
            libc::timer_settime(self.0, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for RtTimer {
    fn drop(&mut self) {
        // SAFETY: made by timer_create and deleted only here. The kernel
        // takes back a pending expiry's signal with it.
        unsafe {
            libc::timer_delete(self.0);
        }
    }
}
