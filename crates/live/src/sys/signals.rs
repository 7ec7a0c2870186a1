//! Termination signals as events: SIGINT, SIGTERM, SIGHUP and SIGQUIT are
//! blocked and read from a signalfd, so an interrupted run reaches the same
//! clean-up path as a finished one instead of dying mid-way.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};

/// The signals that end a run.
const TERMINATING: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// While alive, the terminating signals are blocked in the calling thread and
/// arrive on [`Signals::fd`]; dropping it restores the previous mask.
pub struct Signals {
    file: File,
    previous: libc::sigset_t,
    /// The dispositions replaced by the default one: an ignored signal is
    /// discarded, never pending, so a signalfd would not see it (a shell
    /// starts background jobs with SIGINT and SIGQUIT ignored).
    actions: Vec<(libc::c_int, libc::sigaction)>,
}

impl Signals {
    /// Blocks the terminating signals and opens a signalfd for them.
    pub fn block() -> io::Result<Signals> {
        // SAFETY: sigset_t is a plain C struct; the calls fill it in.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        let mut previous: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid sigset pointers and signal numbers.
        unsafe {
            libc::sigemptyset(&mut set);
            for s in TERMINATING {
                libc::sigaddset(&mut set, s);
            }
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut previous) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        // SAFETY: a valid sigset; -1 asks for a new descriptor.
        let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: restores the mask saved above.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut()) };
            return Err(e);
        }
        let mut actions = Vec::new();
        for s in TERMINATING {
            // SAFETY: sigaction structs are plain C data; the calls fill and
            // read them.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                if libc::sigaction(s, &dfl, &mut old) == 0 {
                    actions.push((s, old));
                }
            }
        }
        Ok(Signals {
            // SAFETY: a fresh descriptor that we now own.
            file: File::from(unsafe { OwnedFd::from_raw_fd(fd) }),
            previous,
            actions,
        })
    }

    /// The descriptor to poll.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// The next pending terminating signal, if any.
    pub fn take(&mut self) -> io::Result<Option<libc::c_int>> {
        let mut buf = [0u8; size_of::<libc::signalfd_siginfo>()];
        match self.file.read(&mut buf) {
            Ok(n) if n == buf.len() => Ok(Some(
                u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as libc::c_int,
            )),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for (s, old) in &self.actions {
            // SAFETY: puts back a disposition read in `block`.
            unsafe { libc::sigaction(*s, old, std::ptr::null_mut()) };
        }
        // SAFETY: restores the mask saved in `block`. A signal that arrived
        // meanwhile stays pending and is delivered now, as the user asked.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.previous, std::ptr::null_mut()) };
    }
}
