//! The agent's guard: gives back what a killed agent steered.

use super::registry::still_there;
use super::state::StateFile;
use super::{AgentError, system};
use crate::sys::poll::Poll;
use crate::sys::process;
use crate::sys::signals::Signals;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

/// Watches the agent `agent` serving on `socket` from another process, and
/// once it has ended, however it ended, gives every process its state file
/// still lists back what it ran under before (never a real-time class).
/// An agent that stops cleanly has done so and removed the file, so this
/// does nothing; one killed outright (SIGKILL, or SIGXCPU from its own
/// RLIMIT_RTTIME) leaves the file, and its processes, real-time perhaps,
/// would otherwise stay as it steered them until another agent started. The
/// file stays: an agent started later re-adopts them and steers them again.
/// Returns the processes given back; `log` hears of each one that could not
/// be.
///
/// It ends when the agent has ended, and not before: the terminating
/// signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) are read and dropped while it
/// waits. A signal sent to the agent and its guard alike (`killall
/// faasched`, a service manager stopping both) would otherwise end the
/// guard at once, and an agent that did not stop cleanly on it and was
/// then killed outright would leave its processes as it steered them. Only
/// SIGKILL ends the guard sooner. (A guard the agent starts inherits the
/// agent's mask, with these signals blocked; this holds however it is
/// started.)
pub fn guard(
    socket: &Path,
    agent: libc::pid_t,
    mut log: impl FnMut(libc::pid_t, &str),
) -> Result<usize, AgentError> {
    let pidfd = process::pidfd_open(agent).map_err(system("watching the agent"))?;
    let mut signals = Signals::block().map_err(system("blocking termination signals"))?;
    // A pidfd is readable once its process has ended.
    let mut poll = Poll::new().map_err(system("epoll"))?;
    poll.add(pidfd.as_fd(), 0).map_err(system("epoll"))?;
    poll.add(signals.fd(), 1).map_err(system("epoll"))?;
    while !process::exited(&pidfd).map_err(system("watching the agent"))? {
        match poll.wait(None) {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                return Err(system("waiting for the agent to end")(e));
            }
            _ => while let Ok(Some(_)) = signals.take() {},
        }
    }
    let mut restored = 0;
    for entry in StateFile::beside(socket).load()? {
        let given_back = still_there(&entry).and_then(|_pidfd| {
            entry
                .before
                .restore(entry.pid)
                .map_err(|e| format!("restoring its attributes: {e}"))
        });
        match given_back {
            Ok(()) => restored += 1,
            Err(why) => log(entry.pid, &why),
        }
    }
    Ok(restored)
}
