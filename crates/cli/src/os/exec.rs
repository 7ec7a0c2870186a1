//! `faasched exec`: hand this process over to the agent, then become the
//! function.

use crate::os::agent::SocketArg;
use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::os::exec;
use std::ffi::OsString;

/// Run a command as a function's invocation, steered by the agent.
///
/// Hands this process over, then becomes the command (same pid, so the
/// attributes the agent set stay). Fails, and runs nothing, if the command
/// is not found or no agent answers.
///
/// Example: `faasched exec --function resize -- python3 handler.py`.
#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(flatten)]
    socket: SocketArg,
    /// The function the command runs (what the policy learns by).
    #[arg(long, short = 'f')]
    function: String,
    /// The command and its arguments, after `--`; looked up on PATH unless
    /// it holds a `/`.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

impl Args {
    pub fn execute(self) -> Result<()> {
        exec::run(&self.socket.socket, &self.function, &self.command)
    }
}
