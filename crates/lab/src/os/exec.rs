//! `faasched exec`: hand this process over to the agent, then become the
//! function, so that the attributes the agent set stay on its pid.

use anyhow::{Result, anyhow, bail};
use faasched_live::os::agent::protocol::Client;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Registers this process as an invocation of `function` with the agent on
/// `socket`, then execs `command` (its program first); returns only on
/// failure, having run nothing if the program is not found or no agent
/// answers.
pub fn run(socket: &Path, function: &str, command: &[OsString]) -> Result<()> {
    let name = &command[0];
    let program = resolve(name)?;
    Client::register(socket, std::process::id() as i32, function)?;
    let err = Command::new(&program).arg0(name).args(&command[1..]).exec();
    Err(anyhow!("exec {}: {err}", program.display()))
}

/// Where `name` is: itself if it holds a `/`, else the first executable
/// file of that name on PATH.
fn resolve(name: &OsStr) -> Result<PathBuf> {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let shown = name.to_string_lossy();
    if shown.contains('/') {
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
