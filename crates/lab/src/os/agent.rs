//! `faasched agent`, which steers processes a platform hands over on a
//! Unix socket, its guard, and its clients `agent status`, `agent
//! register` and `agent unregister`.

use crate::os::catalog::Policy;
use crate::os::replay::check_policies;
use crate::os::tuning::TuningFlags;
use crate::output::counted;
use crate::{out, outln};
use anyhow::{Context, Result};
use faasched_live::os::agent::protocol::Client;
use faasched_live::os::agent::{self, Config, Event};
use faasched_live::os::privilege::{self, Realtime};
use faasched_model::{CpuSet, fmt_ms};
use faasched_sys::sched;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The agent's socket when none is named.
pub use faasched_live::os::agent::DEFAULT_SOCKET;

/// How `faasched agent` serves.
#[derive(Debug, Clone)]
pub struct Serve {
    /// The policy's name.
    pub policy: String,
    /// The agent's stream socket (its datagram socket and state file go
    /// beside it).
    pub socket: PathBuf,
    /// RLIMIT_RTTIME, in ms, of every process handed over while the policy
    /// may make it real-time.
    pub rt_time_limit_ms: u64,
    /// Log every hand-over and finished invocation, not only refusals and
    /// warnings.
    pub verbose: bool,
    /// The learning policies' parameters.
    pub tuning: TuningFlags,
}

/// Steers what is handed over on the socket until a termination signal,
/// then gives every process back what it ran under before.
pub fn serve(o: Serve) -> Result<()> {
    let policy = Policy::new(&o.policy, &o.tuning.tuning()?)?;
    check_policies(&[policy], privilege::probe())?;
    let needs = policy.spec.privileges();
    let mut steer = policy.steer();
    // Under a policy with real-time classes, above every function, so
    // exits and demotions are seen on time even when real-time functions
    // hold every core. (Not otherwise: a real-time agent preempts at
    // once on every event, waking up more often, and its wake-ups cost
    // more.)
    let _realtime = match needs.realtime {
        true => Some(Realtime::enter().context("raising the agent to SCHED_FIFO")?),
        false => None,
    };
    let config = Config {
        socket: o.socket,
        cpus: CpuSet::first(sched::online_cpus()),
        rt_time_limit_us: needs.realtime.then_some(o.rt_time_limit_ms * 1000),
    };
    let mut guard = None;
    let summary = agent::serve(&config, steer.as_mut(), |event| {
        if o.verbose || !event.routine() {
            eprintln!("faasched agent: {event}");
        }
        // Once the socket is this agent's, and before any hand-over.
        if let Event::Listening { socket, .. } = event
            && guard.is_none()
        {
            guard = Some(start_guard(socket));
        }
    })?;
    eprintln!(
        "faasched agent: stopped by signal {}: {} processes handed over, {} invocations \
         finished, {} requests refused; {:.1} ms of CPU; every process steered was given \
         back its attributes",
        summary.signal,
        summary.registered,
        summary.finished,
        summary.refused,
        fmt_ms(summary.cpu)
    );
    Ok(())
}

/// Starts `faasched agent guard` for this agent on `socket`, in a process
/// group of its own (a terminal's Ctrl-C reaches the agent, which then
/// gives everything back itself). It outlives the agent by design; it ends
/// when the agent does.
fn start_guard(socket: &Path) -> Result<Child, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the faasched binary: {e}"))?;
    let guard = Command::new(exe)
        .args([
            "agent",
            "guard",
            "--pid",
            &std::process::id().to_string(),
            "--socket",
        ])
        .arg(socket)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .process_group(0)
        .spawn();
    guard.map_err(|e| {
        let e = format!("starting its guard: {e}");
        eprintln!(
            "faasched agent: warning: {e}; killed with SIGKILL, it would leave what it steers"
        );
        e
    })
}

/// The agent's guard: once the agent `pid` on `socket` has ended, gives
/// back what it still steered ([`agent::guard`]).
pub fn guard(socket: &Path, pid: i32) -> Result<()> {
    let given_back = agent::guard(socket, pid, |pid, why| {
        eprintln!("faasched agent guard: could not give pid {pid} back: {why}");
    })?;
    if given_back > 0 {
        eprintln!(
            "faasched agent guard: the agent (pid {pid}) ended without giving back what it \
             steered; gave {} back their attributes (an agent started on {} re-adopts \
             them)",
            counted(given_back, "process"),
            socket.display()
        );
    }
    Ok(())
}

/// Prints what the agent on `socket` steers: as the protocol's `status`
/// object with `json`, else as a table.
pub fn status(socket: &Path, json: bool) -> Result<()> {
    let status = Client::status(socket)?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&status)?)?;
    } else {
        out!("{status}")?;
    }
    Ok(())
}

/// Hands process `pid`, running `function`, over to the agent on `socket`.
pub fn register(socket: &Path, pid: i32, function: &str) -> Result<()> {
    let task = Client::register(socket, pid, function)?;
    outln!("task {task}: pid {pid} ({function})")
}

/// Ends the invocation process `pid` runs under the agent on `socket`.
pub fn unregister(socket: &Path, pid: i32) -> Result<()> {
    let task = Client::unregister(socket, pid)?;
    outln!("task {task}: pid {pid} given back")
}
