//! Ctrl-C and SIGTERM as a request to stop, not a death.
//!
//! A run that writes files must not die between writing them and putting
//! them in place, nor leave an earlier run's files replaced by half of its
//! own. Once [`catch`] was called, SIGINT and SIGTERM only raise a flag:
//! the simulator asks [`requested`] between events (every few milliseconds
//! of work, `faasched_sim::os::POLL_EVENTS`), a run then fails with
//! [`Interrupted`], and its staged files are removed on the way out. A
//! second Ctrl-C while the first is being handled ends the process at once.

use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// What the handlers set: whether a signal came (for the second one's
/// shutdown), and which came last (0 before any).
struct Flags {
    raised: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

static FLAGS: OnceLock<Flags> = OnceLock::new();

/// Set by [`leave_to_host`]: [`catch`] catches nothing.
static HOSTED: AtomicBool = AtomicBool::new(false);

/// Leaves the signals to the process this library runs in (Python, whose
/// own Ctrl-C raises `KeyboardInterrupt`): [`catch`] installs no handler
/// from now on, and a run goes to its end.
pub fn leave_to_host() {
    HOSTED.store(true, Ordering::Relaxed);
}

/// Catches SIGINT and SIGTERM from now on (idempotent), unless
/// [`leave_to_host`] was called.
pub fn catch() -> Result<()> {
    if FLAGS.get().is_some() || HOSTED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let flags = Flags {
        raised: Arc::new(AtomicBool::new(false)),
        signal: Arc::new(AtomicUsize::new(0)),
    };
    for signal in [SIGINT, SIGTERM] {
        // Registered first, so it sees the flag as the earlier signal left it:
        // a second signal while it is raised ends the process (exit 1).
        flag::register_conditional_shutdown(signal, 1, flags.raised.clone())
            .context("catching termination signals")?;
        flag::register(signal, flags.raised.clone()).context("catching termination signals")?;
        flag::register_usize(signal, flags.signal.clone(), signal as usize)
            .context("catching termination signals")?;
    }
    let _ = FLAGS.set(flags);
    Ok(())
}

/// The caught signal that asked the process to stop, if one did.
pub fn requested_by() -> Option<i32> {
    let n = FLAGS.get()?.signal.load(Ordering::Relaxed);
    (n != 0).then_some(n as i32)
}

/// Whether a caught signal asked the process to stop.
pub fn requested() -> bool {
    requested_by().is_some()
}

/// Fails with [`Interrupted`] if a caught signal asked the process to stop:
/// for the points between runs and before files are put in place.
pub fn check() -> Result<()> {
    match requested_by() {
        Some(signal) => Err(Interrupted(signal).into()),
        None => Ok(()),
    }
}

/// A run stopped by a caught signal (its number).
#[derive(Debug, thiserror::Error)]
#[error("interrupted by signal {0}; no file was written")]
pub struct Interrupted(pub i32);
