//! WASI preview 1 commands: what a request gives a command (its standard
//! input and environment), the context it runs with, and the linker that
//! gives it WASI.
//!
//! A command reaches nothing outside its request: no preopened directory,
//! no socket, no inherited stream. Its standard input is the request's
//! bytes, its standard output and error are memory pipes the sandbox reads
//! when it ends, its arguments are its name alone.

use bytes::Bytes;
use wasmtime::{Caller, Linker};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p1::{self, WasiP1Ctx};
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};

use crate::guest::Guest;
use crate::http::Request;

/// The standard error a command's log keeps: its first 64 KiB. Past them
/// its writes to standard error fail (the guest sees an error, the
/// request goes on).
pub const STDERR_KEPT: usize = 64 << 10;

/// The module WASI preview 1's functions are imported from.
pub(crate) const WASI_MODULE: &str = "wasi_snapshot_preview1";

/// WASI preview 1's errno for an operation not supported.
const ENOTSUP: i32 = 58;

/// What a request gives the function it starts: `run`'s argument for a
/// module of the `run` ABI, standard input and environment for a WASI
/// command, the HTTP request for a component. An integer converts into
/// [`Input::Arg`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The value `run: (i64) -> i64` receives.
    Arg(i64),
    /// A command's standard input and environment variables, in order.
    Command {
        /// What the command reads from standard input.
        stdin: Bytes,
        /// `NAME=value` pairs, as `environ_get` lists them.
        env: Vec<(String, String)>,
    },
    /// A `wasi:http/proxy` component's request.
    Request(Request),
}

impl From<i64> for Input {
    fn from(arg: i64) -> Self {
        Input::Arg(arg)
    }
}

/// A running function's standard output and error, as the sandbox reads
/// them when it ends (clones of the pipes its context writes to): a
/// component's answer is its response, and what it prints, standard output
/// and error both, is its log.
pub(crate) struct Pipes {
    pub stdout: Option<MemoryOutputPipe>,
    pub stderr: MemoryOutputPipe,
}

/// A function's log: what a command writes to standard error, or a
/// component to either stream, its first [`STDERR_KEPT`] bytes kept.
pub(crate) fn log() -> MemoryOutputPipe {
    MemoryOutputPipe::new(STDERR_KEPT)
}

/// The WASI context a command named `name` runs with: `stdin`, `env`, and
/// output pipes that take `max_output` bytes of standard output and one
/// more (a command that writes the one more has written too much).
pub(crate) fn context(
    name: &str,
    stdin: Bytes,
    env: &[(String, String)],
    deployed: &[(String, String)],
    max_output: usize,
) -> (WasiP1Ctx, Pipes) {
    let stdout = MemoryOutputPipe::new(max_output.saturating_add(1));
    let pipes = Pipes {
        stdout: Some(stdout.clone()),
        stderr: log(),
    };
    let ctx = WasiCtxBuilder::new()
        .stdin(MemoryInputPipe::new(stdin))
        .stdout(stdout)
        .stderr(pipes.stderr.clone())
        .args(&[name])
        .envs(env)
        .envs(deployed)
        .build_p1();
    (ctx, pipes)
}

/// Adds WASI preview 1 to `linker`, for commands, with one function
/// refused: `poll_oneoff` answers "not supported". wasmtime-wasi sleeps
/// there, either blocking the thread (which would stop every other
/// request on the worker) or on a timer that needs an async executor the
/// workers do not run; a function that must wait belongs outside the node.
pub(crate) fn link(linker: &mut Linker<Guest>) -> wasmtime::Result<()> {
    p1::add_to_linker_async(linker, Guest::wasi)?;
    linker.allow_shadowing(true);
    linker.func_wrap(
        WASI_MODULE,
        "poll_oneoff",
        |_: Caller<'_, Guest>, _subscriptions: i32, _events: i32, _count: i32, _written: i32| {
            ENOTSUP
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}
