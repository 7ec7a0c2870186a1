//! Termination signals as events: SIGINT, SIGTERM, SIGHUP and SIGQUIT are
//! blocked and read from a signalfd, so an interrupted run reaches the same
//! clean-up path as a finished one instead of dying mid-way.

use crate::disposition::Saved;
use crate::nix_io;
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

/// The signals that end a run.
const TERMINATING: [Signal; 4] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// While alive, the terminating signals are blocked in the calling thread and
/// arrive on [`Signals::fd`]; dropping it restores the previous mask.
pub struct Signals {
    fd: SignalFd,
    previous: SigSet,
    /// The dispositions replaced by the default one: an ignored signal is
    /// discarded, never pending, so a signalfd would not see it (a shell
    /// starts background jobs with SIGINT and SIGQUIT ignored).
    actions: Vec<Saved>,
}

impl Signals {
    /// Blocks the terminating signals and opens a signalfd for them.
    pub fn block() -> io::Result<Signals> {
        let mut set = SigSet::empty();
        for s in TERMINATING {
            set.add(s);
        }
        let previous = set
            .thread_swap_mask(SigmaskHow::SIG_BLOCK)
            .map_err(nix_io)?;
        let fd = match SignalFd::with_flags(&set, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = previous.thread_set_mask();
                return Err(nix_io(e));
            }
        };
        let actions = TERMINATING
            .into_iter()
            .filter_map(|s| Saved::default_for(s).ok())
            .collect();
        Ok(Signals {
            fd,
            previous,
            actions,
        })
    }

    /// The descriptor to poll.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The next pending terminating signal, if any.
    pub fn take(&mut self) -> io::Result<Option<libc::c_int>> {
        let info = self.fd.read_signal().map_err(nix_io)?;
        Ok(info.map(|i| i.ssi_signo as libc::c_int))
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for saved in self.actions.drain(..) {
            saved.restore();
        }
        // Restores the mask saved in `block`. A signal that arrived
        // meanwhile stays pending and is delivered now, as the user asked.
        let _ = self.previous.thread_set_mask();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A terminating signal sent to the thread that blocks it arrives on the
    /// descriptor instead of ending the process, once.
    #[test]
    fn a_terminating_signal_is_read_not_delivered() {
        // A thread of its own: the mask is the thread's.
        std::thread::spawn(|| {
            let mut signals = Signals::block().unwrap();
            assert_eq!(signals.take().unwrap(), None);
            use nix::sys::pthread::{pthread_kill, pthread_self};
            pthread_kill(pthread_self(), Signal::SIGTERM).unwrap();
            assert_eq!(signals.take().unwrap(), Some(libc::SIGTERM));
            assert_eq!(signals.take().unwrap(), None);
        })
        .join()
        .unwrap();
    }
}
