//! `faasched agent` (steer processes handed over on a Unix socket) and its
//! clients `agent status`, `agent register` and `agent unregister`.

use anyhow::Result;
use clap::{Args as ClapArgs, Subcommand};
use faasched_lab::os::agent::{self, DEFAULT_SOCKET};
use faasched_lab::os::tuning::TuningFlags;
use std::path::PathBuf;

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
            None => agent::serve(self.serve.options()),
            Some(AgentCommand::Status(a)) => agent::status(&a.socket.socket, a.json),
            Some(AgentCommand::Register(a)) => {
                agent::register(&a.socket.socket, a.pid, &a.function)
            }
            Some(AgentCommand::Unregister(a)) => agent::unregister(&a.socket.socket, a.pid),
            Some(AgentCommand::Guard(a)) => agent::guard(&a.socket.socket, a.pid),
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
    /// without blocking gets SIGXCPU, and SIGKILL a second later. Under
    /// the policies that demote an invocation soon (sfs, hybrid, sfs-alps,
    /// sfs-gittins) only a runaway meets it, or one left real-time by an
    /// agent killed with SIGKILL; fifo, rr and gittins-rt keep long
    /// invocations real-time, so under them set it above the longest CPU
    /// time an invocation may take.
    #[arg(long, value_name = "MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    rt_time_limit_ms: u64,
    /// Log every hand-over and every finished invocation, not only refusals
    /// and warnings.
    #[arg(long, short = 'v')]
    verbose: bool,
    #[command(flatten)]
    tuning: TuningFlags,
}

impl Serve {
    fn options(self) -> agent::Serve {
        agent::Serve {
            policy: self.policy,
            socket: self.socket.socket,
            rt_time_limit_ms: self.rt_time_limit_ms,
            verbose: self.verbose,
            tuning: self.tuning,
        }
    }
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

#[derive(ClapArgs, Debug)]
struct StatusArgs {
    #[command(flatten)]
    socket: SocketArg,
    /// Print the agent's answer as JSON (the protocol's `status` object).
    #[arg(long)]
    json: bool,
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

#[derive(ClapArgs, Debug)]
struct UnregisterArgs {
    #[command(flatten)]
    socket: SocketArg,
    /// The process whose invocation is over.
    #[arg(long)]
    pid: i32,
}
