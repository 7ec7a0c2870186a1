//! Standard output that a closed pipe does not turn into a panic.
//!
//! `println!` panics when a write fails, which it does once the reader of a
//! pipe has gone (`faasched fn list | head -1`): Rust ignores SIGPIPE, so the
//! write returns EPIPE instead of ending the process as it would a C tool.
//! Output goes through [`outln!`] and [`out!`] instead, which return that
//! as [`Closed`]; `main` ends the command quietly and successfully on it, as
//! Unix tools do when their reader has read what it wanted. A command stopped
//! this way leaves through its error path like any other, so nothing it
//! staged is left half-written (and the output files of a run are put in
//! place before its table is printed).

use anyhow::Context;
use std::fmt;
use std::io::{self, Write};

/// Standard output's reader went away.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed")]
pub struct Closed;

/// Writes `args` to standard output: an error if it fails, [`Closed`] if
/// because its reader went away.
pub fn write(args: fmt::Arguments) -> anyhow::Result<()> {
    match io::stdout().lock().write_fmt(args) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(Closed.into()),
        r => r.context("writing to standard output"),
    }
}

/// `print!` that returns [`write`]'s result.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::write(format_args!($($arg)*))
    };
}

/// `println!` that returns [`write`]'s result.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::stdout::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}
