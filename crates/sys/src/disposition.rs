//! A signal's disposition set to the default and put back, by hand:
//! `sigaction` is unsafe in nix (and rustix has none outside its runtime
//! layer) because a handler it installs runs at any instant; here it only
//! ever installs the default action, and puts back exactly what the kernel
//! had, so the safety argument is this module's alone.
#![allow(unsafe_code)]

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

/// A signal whose disposition was set to the default one, and what it was.
pub(crate) struct Saved {
    signal: Signal,
    old: SigAction,
}

impl Saved {
    /// Sets `signal`'s disposition to the default one; the old one is put
    /// back by [`Saved::restore`].
    pub(crate) fn default_for(signal: Signal) -> nix::Result<Saved> {
        let dfl = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
        // SAFETY: the default action runs no code of this process.
        let old = unsafe { sigaction(signal, &dfl) }?;
        Ok(Saved { signal, old })
    }

    /// Puts back the disposition [`Saved::default_for`] replaced.
    pub(crate) fn restore(self) {
        // SAFETY: the action the kernel held before `default_for`, as it
        // returned it: whatever handler it names was installed by its owner,
        // who vouched for it then.
        let _ = unsafe { sigaction(self.signal, &self.old) };
    }
}
