//! `faasched agent` (steer processes handed over on a Unix socket) and its
//! clients `agent status`, `agent register` and `agent unregister`.

use crate::os::tuning::TuningArgs;
use anyhow::{Context, Result};
use clap::{Args as ClapArgs, Subcommand};
use faasched_lab::os::catalog::Policy;
use faasched_lab::os::replay::check_policies;
use faasched_lab::{out, outln};
use faasched_live::os::agent::protocol::Client;
use faasched_live::os::agent::{self, Config, DEFAULT_SOCKET, Event};
use faasched_live::os::privilege::{self, Realtime};
use faasched_model::{CpuSet, fmt_ms};
use faasched_sys::sched;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The agent's socket.
#[derive(ClapArgs, Debug, Clone)]
pub struct SocketArg {
    /// The agent's Unix socket. Beside it are its datagram socket, with the
    /// extension `.dgram` (`exec`, `agent register` and `agent unregister`
    /// send their request there), and its state file (what a restarted
    /// agent re-adopts), with the extension `.state`.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SOCKET)]
    pub socket: PathBuf,
}

/// Steer processes a platform hands over on a Unix socket (agent mode);
/// `agent status` shows what it steers.
///
/// A platform hands each process over with its function's name (`faasched
/// exec`, or the protocol of docs/AGENT.md), and the agent steers it with a
/// policy exactly as `replay` does, until it exits or is unregistered.
///
/// The agent runs until SIGINT, SIGTERM, SIGHUP or SIGQUIT, and then gives
/// every process back what it ran under before (never a real-time class).
/// Killed outright (SIGKILL), it cannot: its guard, a process it starts
/// that waits for it to end, does, and the next agent on the same socket
/// re-adopts them from its state file.
///
/// Any user may connect (the sockets are mode 0666); a client hands over
/// only processes it could reschedule itself (its uid is theirs, or it is
/// root).
///
/// Example: `sudo faasched agent --policy alps`, then
/// `faasched exec --function resize -- python3 handler.py` and
/// `faasched agent status`.
#[derive(ClapArgs, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<AgentCommand>,
    #[command(flatten)]
    serve: Serve,
}

#[derive(Subcommand, Debug)]
enum AgentCommand {
    /// What the agent steers: its functions (with the attributes each one's
    /// latest process got: a learned rank shows as nice, a learned slice as
    /// the slice) and its live processes (as the kernel reports them now).
    Status(StatusArgs),
    /// Hand an existing process over (as `faasched exec` does for itself).
    Register(RegisterArgs),
    /// End the invocation running as a process (it may live on, as a warm
    /// container does): the policy learns from it, and the process gets
    /// back what it ran under before.
    Unregister(UnregisterArgs),
    /// The agent's guard (the agent starts it): once the agent has ended,
    /// gives back what it still steered.
    #[command(hide = true)]
    Guard(GuardArgs),
}

impl Args {
    pub fn execute(self) -> Result<()> {
        match self.command {
            None => self.serve.execute(),
            Some(AgentCommand::Status(a)) => a.execute(),
            Some(AgentCommand::Register(a)) => a.execute(),
            Some(AgentCommand::Unregister(a)) => a.execute(),
            Some(AgentCommand::Guard(a)) => a.execute(),
        }
    }
}

#[derive(ClapArgs, Debug)]
struct Serve {
    /// The policy: cfs, fifo, rr, sfs, hybrid (and its variants), alps or
    /// alps-io (see `faasched simulate --help`). Sim-only policies cannot
    /// run here.
    #[arg(long, short = 'p', default_value = "alps")]
    policy: String,
    #[command(flatten)]
    socket: SocketArg,
    /// RLIMIT_RTTIME, in ms, of every process handed over while the policy
    /// may make it real-time: a real-time process that runs this long
    /// without blocking gets SIGXCPU, and SIGKILL a second later. Only a
    /// runaway meets it, or one left real-time by an agent killed with
    /// SIGKILL.
    #[arg(long, value_name = "MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    rt_time_limit_ms: u64,
    /// Log every hand-over and every finished invocation, not only refusals
    /// and warnings.
    #[arg(long, short = 'v')]
    verbose: bool,
    #[command(flatten)]
    tuning: TuningArgs,
}

impl Serve {
    fn execute(self) -> Result<()> {
        let policy = Policy::new(&self.policy, &self.tuning.tuning()?)?;
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
            socket: self.socket.socket,
            cpus: CpuSet::first(sched::online_cpus()),
            rt_time_limit_us: needs.realtime.then_some(self.rt_time_limit_ms * 1000),
        };
        let verbose = self.verbose;
        let mut guard = None;
        let summary = agent::serve(&config, steer.as_mut(), |event| {
            if verbose || !event.routine() {
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

/// The hidden `agent guard`: see [`agent::guard`].
#[derive(ClapArgs, Debug)]
struct GuardArgs {
    /// The agent's pid.
    #[arg(long)]
    pid: i32,
    #[command(flatten)]
    socket: SocketArg,
}

impl GuardArgs {
    fn execute(self) -> Result<()> {
        let given_back = agent::guard(&self.socket.socket, self.pid, |pid, why| {
            eprintln!("faasched agent guard: could not give pid {pid} back: {why}");
        })?;
        if given_back > 0 {
            eprintln!(
                "faasched agent guard: the agent (pid {}) ended without giving back what it \
                 steered; gave {} back their attributes (an agent started on {} re-adopts \
                 them)",
                self.pid,
                faasched_lab::output::counted(given_back, "process"),
                self.socket.socket.display()
            );
        }
        Ok(())
    }
}

#[derive(ClapArgs, Debug)]
struct StatusArgs {
    #[command(flatten)]
    socket: SocketArg,
    /// Print the agent's answer as JSON (the protocol's `status` object).
    #[arg(long)]
    json: bool,
}

impl StatusArgs {
    fn execute(self) -> Result<()> {
        let status = Client::status(&self.socket.socket)?;
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&status)?)?;
        } else {
            out!("{status}")?;
        }
        Ok(())
    }
}

#[derive(ClapArgs, Debug)]
struct RegisterArgs {
    #[command(flatten)]
    socket: SocketArg,
    /// The process to hand over.
    #[arg(long)]
    pid: i32,
    /// The function it runs (what the policy learns by).
    #[arg(long, short = 'f')]
    function: String,
}

impl RegisterArgs {
    fn execute(self) -> Result<()> {
        let task = Client::register(&self.socket.socket, self.pid, &self.function)?;
        outln!("task {task}: pid {} ({})", self.pid, self.function)?;
        Ok(())
    }
}

#[derive(ClapArgs, Debug)]
struct UnregisterArgs {
    #[command(flatten)]
    socket: SocketArg,
    /// The process whose invocation is over.
    #[arg(long)]
    pid: i32,
}

impl UnregisterArgs {
    fn execute(self) -> Result<()> {
        let task = Client::unregister(&self.socket.socket, self.pid)?;
        outln!("task {task}: pid {} given back", self.pid)?;
        Ok(())
    }
}
