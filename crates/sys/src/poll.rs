//! epoll with a nanosecond timeout (`epoll_pwait2`): the launcher's one wait,
//! for children's pipes and pidfds, signals, and its next timer at once.

use crate::io as errno;
use faasched_model::Nanos;
use rustix::buffer::spare_capacity;
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::io::Errno;
use rustix::time::Timespec;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

/// Most events one wait returns; the rest wait for the next.
const EVENTS: usize = 64;

/// An epoll instance whose events carry a caller's `u64` token.
pub struct Poll {
    fd: OwnedFd,
    events: Vec<Event>,
}

impl Poll {
    /// A new, empty epoll instance.
    pub fn new() -> io::Result<Poll> {
        Ok(Poll {
            fd: epoll::create(CreateFlags::CLOEXEC).map_err(errno)?,
            events: Vec::with_capacity(EVENTS),
        })
    }

    /// Watches `fd` for input (or hang-up), reported with `token`.
    pub fn add(&self, fd: BorrowedFd<'_>, token: u64) -> io::Result<()> {
        epoll::add(&self.fd, fd, EventData::new_u64(token), EventFlags::IN).map_err(errno)
    }

    /// Stops watching `fd`.
    pub fn remove(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        epoll::delete(&self.fd, fd).map_err(errno)
    }

    /// Waits until a watched descriptor is ready or `timeout` has passed
    /// (`None`: no limit), and returns the ready tokens (empty on timeout or
    /// when interrupted).
    pub fn wait(&mut self, timeout: Option<Nanos>) -> io::Result<Vec<u64>> {
        let ts = timeout.map(|t| Timespec {
            tv_sec: (t / 1_000_000_000) as i64,
            tv_nsec: (t % 1_000_000_000) as i64,
        });
        self.events.clear();
        match epoll::wait(&self.fd, spare_capacity(&mut self.events), ts.as_ref()) {
            Ok(_) => Ok(self.events.iter().map(|e| e.data.u64()).collect()),
            Err(Errno::INTR) => Ok(Vec::new()),
            Err(e) => Err(errno(e)),
        }
    }
}
