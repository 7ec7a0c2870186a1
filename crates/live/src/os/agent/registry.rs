//! The processes the agent steers, each held by its pidfd.

use super::state::{Entry, StateFile};
use crate::os::observe::SchedstatReading;
use crate::sys::pidfd;
use crate::sys::process;
use faasched_model::{Function, Nanos, TaskId};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

/// A process the agent steers.
pub(super) struct Steered {
    /// What the state file keeps of it.
    pub(super) entry: Entry,
    pub(super) function: Function,
    pub(super) pidfd: OwnedFd,
    /// When it was handed over (monotonic).
    pub(super) since: Nanos,
    /// Its latest schedstat reading (since it was handed over): what its
    /// outcome holds if it is reaped before the agent reads it at its exit.
    pub(super) last: SchedstatReading,
}

impl Steered {
    pub(super) fn task(&self) -> TaskId {
        TaskId(self.entry.task)
    }

    /// Gives the process back what it ran under, unless it has exited (its
    /// pid may name another process by now).
    pub(super) fn release(&self) -> io::Result<()> {
        if process::exited(&self.pidfd)? {
            return Ok(());
        }
        match self.entry.before.restore(self.entry.pid) {
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
            r => r,
        }
    }
}

/// The steered processes. Dropping it gives each back what it ran under and
/// removes the state file, whatever the path out of [`serve`].
pub(super) struct Registry {
    pub(super) steered: HashMap<TaskId, Steered>,
    pub(super) by_pid: HashMap<libc::pid_t, TaskId>,
    pub(super) state: StateFile,
}

impl Registry {
    pub(super) fn insert(&mut self, s: Steered) {
        self.by_pid.insert(s.entry.pid, s.task());
        self.steered.insert(s.task(), s);
    }

    pub(super) fn remove(&mut self, task: TaskId) -> Option<Steered> {
        let s = self.steered.remove(&task)?;
        self.by_pid.remove(&s.entry.pid);
        Some(s)
    }

    /// Releases every process; returns those that could not be.
    pub(super) fn release_all(&mut self) -> Vec<(libc::pid_t, io::Error)> {
        let failed = self
            .steered
            .drain()
            .filter_map(|(_, s)| s.release().err().map(|e| (s.entry.pid, e)))
            .collect();
        self.by_pid.clear();
        let _ = self.state.delete();
        failed
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.release_all();
    }
}

/// A pidfd for the process of a state file's `entry` if its pid still names
/// it (the pidfs inode tells a reused pid), else why not.
pub(super) fn still_there(entry: &Entry) -> Result<OwnedFd, String> {
    let gone = |_| "it has exited".to_string();
    let pidfd = process::pidfd_open(entry.pid).map_err(gone)?;
    if pidfd::inode(pidfd.as_fd()).map_err(gone)? != entry.inode {
        return Err("its pid names another process now".to_string());
    }
    if process::exited(&pidfd).unwrap_or(true) {
        return Err("it has exited".to_string());
    }
    Ok(pidfd)
}
