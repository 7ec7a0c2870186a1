//! epoll with a nanosecond timeout (`epoll_pwait2`): the launcher's one wait,
//! for children's pipes and pidfds, signals, and its next timer at once.

use faasched_model::Nanos;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// An epoll instance whose events carry a caller's `u64` token.
pub struct Poll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Poll {
    /// A new, empty epoll instance.
    pub fn new() -> io::Result<Poll> {
        // SAFETY: epoll_create1 takes a flag.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Poll {
            // SAFETY: a fresh descriptor that we now own.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; 64],
        })
    }

    /// Watches `fd` for input (or hang-up), reported with `token`.
    pub fn add(&self, fd: BorrowedFd<'_>, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: both descriptors are open and `ev` is valid.
        let rc = unsafe {
            libc::epoll_ctl(
                self.fd.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                fd.as_raw_fd(),
                &mut ev,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Stops watching `fd`.
    pub fn remove(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        // SAFETY: both descriptors are open; the event argument may be null.
        let rc = unsafe {
            libc::epoll_ctl(
                self.fd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd.as_raw_fd(),
                std::ptr::null_mut(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits until a watched descriptor is ready or `timeout` has passed
    /// (`None`: no limit), and returns the ready tokens (empty on timeout or
    /// when interrupted).
    pub fn wait(&mut self, timeout: Option<Nanos>) -> io::Result<Vec<u64>> {
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: (t / 1_000_000_000) as libc::time_t,
            tv_nsec: (t % 1_000_000_000) as libc::c_long,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `events` has room for its length; the timeout is a valid
        // timespec or null; the signal mask is null (unchanged).
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                ts_ptr,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(Vec::new())
            } else {
                Err(e)
            };
        }
        Ok(self.events[..n as usize].iter().map(|e| e.u64).collect())
    }
}
