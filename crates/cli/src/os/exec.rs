//! `faasched exec`: hand this process over to the agent, then become the
//! function.

use crate::os::agent::SocketArg;
use anyhow::{Result, anyhow, bail};
use clap::Args as ClapArgs;
use faasched_live::os::agent::protocol::Client;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

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
        let name = &self.command[0];
        let program = resolve(name)?;
        Client::register(
            &self.socket.socket,
            std::process::id() as i32,
            &self.function,
        )?;
        let err = Command::new(&program)
            .arg0(name)
            .args(&self.command[1..])
            .exec();
        Err(anyhow!("exec {}: {err}", program.display()))
    }
}

/// Where `name` is: itself if it holds a `/`, else the first executable
/// file of that name on PATH.
fn resolve(name: &std::ffi::OsStr) -> Result<PathBuf> {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let shown = name.to_string_lossy();
    if name.to_string_lossy().contains('/') {
        let path = PathBuf::from(name);
        if executable(&path) {
            return Ok(path);
        }
        bail!("cannot run `{shown}`: no executable file there");
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
        .ok_or_else(|| anyhow!("cannot run `{shown}`: not found on PATH"))
}
