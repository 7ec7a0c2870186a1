//! `faasched agent` (steer processes handed over on a Unix socket), its
//! clients `agent status`, `agent register` and `agent unregister`,
//! `faasched exec` (hand over yourself, then become the function), and
//! `faasched bench agent` (the agent's CPU cost per invocation).

use crate::stdout::{out, outln};
use crate::tuning::TuningArgs;
use anyhow::{Context, Result, anyhow, bail};
use clap::{Args as ClapArgs, Subcommand};
use faasched_live::agent::protocol::{Client, Sched, Status};
use faasched_live::agent::{self, Config, DEFAULT_SOCKET, Event};
use faasched_live::observe::Schedstat;
use faasched_live::privilege::{self, Realtime};
use faasched_model::{CpuSet, Nanos, fmt_ms};
use faasched_sys::{clock, process, sched};
use serde::Serialize;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The agent's socket.
#[derive(ClapArgs, Debug, Clone)]
pub struct SocketArg {
    /// The agent's Unix socket. Beside it are its datagram socket, with the
    /// extension `.dgram` (`exec`, `agent register` and `agent unregister`
    /// send their request there), and its state file (what a restarted
    /// agent re-adopts), with the extension `.state`.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
}

/// Steer processes a platform hands over on a Unix socket (agent mode);
/// `agent status` shows what it steers.
///
/// A platform hands each process over with its function's name (`faasched
/// exec`, or the protocol of docs/LIVE.md), and the agent steers it with a
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
        let tuning = self.tuning.tuning()?;
        let mut setup = faasched_policy::setup(&self.policy, &tuning)?;
        if setup.sim_only() {
            bail!(
                "policy `{}` exists only in the simulator (it needs a patched kernel); \
                 the agent runs cfs, fifo, rr, sfs, hybrid, alps or alps-io",
                setup.name
            );
        }
        let needs = setup.privileges();
        let held = privilege::probe();
        let missing = held.missing(needs);
        if !missing.is_empty() {
            bail!(
                "policy `{}` needs {}, which this process may not set: \
                 run the agent as root (or with CAP_SYS_NICE)",
                setup.name,
                missing.join(" and ")
            );
        }
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
        let summary = agent::serve(&config, &mut *setup.steer, |event| {
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
                crate::output::counted(given_back, "process"),
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
            out!("{}", render_status(&status))?;
        }
        Ok(())
    }
}

fn us(x: u64) -> Nanos {
    x * 1000
}

fn render_sched(s: &Option<Sched>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.class == "SCHED_FIFO" || s.class == "SCHED_RR" => {
            format!("{} prio {}", s.class, s.priority)
        }
        Some(s) => format!(
            "{} nice {} slice {:.2} ms",
            s.class,
            s.nice,
            fmt_ms(us(s.slice_us))
        ),
    }
}

fn render_status(s: &Status) -> String {
    let mut out = format!(
        "agent pid {} on {}, policy {}, up {:.1} s, {:.1} ms of CPU\n\
         {} processes handed over, {} invocations finished ({} from an earlier reading), \
         {} requests refused\n",
        s.pid,
        s.socket,
        s.policy,
        fmt_ms(us(s.uptime_us)) / 1000.0,
        fmt_ms(us(s.cpu_us)),
        s.registered,
        s.finished,
        s.estimated,
        s.refused
    );
    if !s.functions.is_empty() {
        out.push_str(&format!(
            "\n{:<24} {:>5} {:>9} {:>10}  latest attributes\n",
            "function", "live", "finished", "mean CPU"
        ));
        for f in &s.functions {
            out.push_str(&format!(
                "{:<24} {:>5} {:>9} {:>7.1} ms  {}\n",
                f.name,
                f.live,
                f.finished,
                fmt_ms(us(f.mean_cpu_us)),
                render_sched(&f.latest)
            ));
        }
    }
    if !s.processes.is_empty() {
        out.push_str(&format!(
            "\n{:>8} {:>6} {:<24} {:>6} {:>9} {:>10}  attributes now\n",
            "pid", "task", "function", "uid", "age", "CPU"
        ));
        for p in &s.processes {
            out.push_str(&format!(
                "{:>8} {:>6} {:<24} {:>6} {:>7.1} s {:>7.1} ms  {}\n",
                p.pid,
                p.task,
                p.function,
                p.uid,
                fmt_ms(us(p.age_us)) / 1000.0,
                fmt_ms(us(p.cpu_us)),
                render_sched(&p.sched)
            ));
        }
    }
    out
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

/// Run a command as a function's invocation, steered by the agent.
///
/// Hands this process over, then becomes the command (same pid, so the
/// attributes the agent set stay). Fails, and runs nothing, if the command
/// is not found or no agent answers.
///
/// Example: `faasched exec --function resize -- python3 handler.py`.
#[derive(ClapArgs, Debug)]
pub struct ExecArgs {
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

impl ExecArgs {
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

/// The agent's CPU cost: it starts an agent on a socket of its own and,
/// each run, hands it `--rate` short processes a second for `--seconds`
/// through `faasched exec` (each runs `true`), then reads the agent's CPU
/// time from /proc/PID/schedstat. Reports CPU per invocation and as a share
/// of one core, per run and the median. Needs a release build, and the
/// policy's privileges (root for alps).
#[derive(ClapArgs, Debug)]
pub struct Bench {
    /// The agent's policy.
    #[arg(long, short = 'p', default_value = "alps")]
    policy: String,
    /// Invocations handed over per second.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=2000))]
    rate: u32,
    /// Length of one run, s.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=600))]
    seconds: u32,
    /// Runs; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Distinct functions the invocations cycle through.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    functions: u32,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

/// One run of [`Bench`].
#[derive(Serialize, Debug, Clone, Copy)]
struct BenchRun {
    /// Invocations the agent finished in the run.
    invocations: u64,
    /// Of those, outcomes from an earlier reading (reaped first).
    estimated: u64,
    /// The agent's CPU time over the run, µs.
    agent_cpu_us: f64,
    /// The agent's CPU per invocation, µs.
    cpu_per_invocation_us: f64,
    /// The agent's CPU over the run's length, % of one core.
    core_percent: f64,
    /// Times the agent was switched in, per invocation: its wake-ups.
    wakeups_per_invocation: f64,
    /// Handed over per wall-second (the schedule asked for `rate`).
    achieved_rate: f64,
}

/// How long to wait for the agent or a child before giving up.
const PATIENCE: Duration = Duration::from_secs(20);

/// A child process that is ended (SIGTERM, then SIGKILL) however the bench
/// ends.
struct Reaped(Child);

impl Reaped {
    fn stop(&mut self) -> Result<std::process::ExitStatus> {
        let pidfd = process::pidfd_open(self.0.id() as i32);
        if let Ok(fd) = &pidfd {
            let _ = process::signal(fd, libc::SIGTERM);
        }
        let end = Instant::now() + PATIENCE;
        while Instant::now() < end {
            if let Some(status) = self.0.try_wait()? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.0.kill();
        Ok(self.0.wait()?)
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.stop();
        }
    }
}

impl Bench {
    pub fn execute(self) -> Result<()> {
        crate::bench::release_only("agent")?;
        let exe = std::env::current_exe().context("finding the faasched binary")?;
        let dir = tempfile::Builder::new()
            .prefix("faasched-bench-agent")
            .tempdir()?;
        let socket = dir.path().join("agent.sock");
        let mut agent = Reaped({
            let mut agent = Command::new(&exe);
            agent
                .args(["agent", "--policy", &self.policy, "--socket"])
                .arg(&socket)
                .stdin(Stdio::null());
            // SIGTERM: the agent gives back every process it steers
            // and removes its socket, even if this bench is killed.
            process::dies_with_parent(&mut agent, libc::SIGTERM);
            agent.spawn().context("starting the agent")?
        });
        wait_until_up(&socket, &mut agent)?;
        let cpu = Schedstat::open(agent.0.id() as i32).context("the agent's schedstat")?;
        let mut runs = Vec::new();
        for run in 0..self.runs {
            let r = self.run(&exe, &socket, &cpu)?;
            if !self.json {
                eprintln!(
                    "run {}: {} invocations, agent {:.1} µs CPU each, {:.3}% of one core, {:.2} wake-ups each ({:.0}/s achieved, {} reaped before the last reading)",
                    run + 1,
                    r.invocations,
                    r.cpu_per_invocation_us,
                    r.core_percent,
                    r.wakeups_per_invocation,
                    r.achieved_rate,
                    r.estimated
                );
            }
            runs.push(r);
        }
        let status = agent.stop()?;
        if !status.success() {
            bail!("the agent ended with {status}");
        }
        let median = |f: fn(&BenchRun) -> f64| {
            let mut v: Vec<f64> = runs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let per = median(|r| r.cpu_per_invocation_us);
        let core = median(|r| r.core_percent);
        let wakeups = median(|r| r.wakeups_per_invocation);
        let wake_us = bare_wakeup_us()?;
        if self.json {
            let out = serde_json::json!({
                "policy": self.policy,
                "rate": self.rate,
                "seconds": self.seconds,
                "runs": runs,
                "median_cpu_per_invocation_us": per,
                "median_core_percent": core,
                "median_wakeups_per_invocation": wakeups,
                "bare_wakeup_us": wake_us,
            });
            outln!("{}", serde_json::to_string_pretty(&out)?)?;
        } else {
            outln!(
                "agent ({}) at {}/s for {} s, median of {} runs: {:.1} µs of CPU per invocation, \
                 {:.3}% of one core, {:.2} wake-ups per invocation\n\
                 a bare wake-up (a thread blocked in read, woken by a byte) costs {:.1} µs of CPU here",
                self.policy,
                self.rate,
                self.seconds,
                self.runs,
                per,
                core,
                wakeups,
                wake_us
            )?;
        }
        Ok(())
    }

    /// One run: `rate × seconds` processes handed over on schedule.
    fn run(&self, exe: &Path, socket: &Path, cpu: &Schedstat) -> Result<BenchRun> {
        let n = u64::from(self.rate) * u64::from(self.seconds);
        let before = Client::status(socket)?;
        let at_start = cpu.read()?;
        let start = Instant::now();
        let mut children: Vec<Child> = Vec::new();
        for i in 0..n {
            let at = start + Duration::from_nanos(i * 1_000_000_000 / u64::from(self.rate));
            if let Some(wait) = at.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let function = format!("f{}", i % u64::from(self.functions));
            let mut client = Command::new(exe);
            client
                .args(["exec", "--function", &function, "--socket"])
                .arg(socket)
                .args(["--", "true"])
                .stdin(Stdio::null());
            process::dies_with_parent(&mut client, libc::SIGKILL);
            let child = client.spawn().context("starting `faasched exec`")?;
            children.push(child);
            children.retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_))));
        }
        let handed = start.elapsed();
        let end = Instant::now() + PATIENCE;
        for mut c in children {
            while c.try_wait()?.is_none() {
                if Instant::now() > end {
                    let _ = c.kill();
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        // Time for the agent to see the last exits.
        std::thread::sleep(Duration::from_millis(200));
        let at_end = cpu.read()?;
        let agent_cpu = at_end.cpu - at_start.cpu;
        let after = Client::status(socket)?;
        let invocations = after.finished - before.finished;
        if invocations != n || !after.processes.is_empty() {
            bail!(
                "the agent finished {invocations} of {n} invocations ({} still steered; {} refused)",
                after.processes.len(),
                after.refused - before.refused
            );
        }
        let agent_cpu_us = agent_cpu as f64 / 1e3;
        let per = agent_cpu_us / n as f64;
        Ok(BenchRun {
            invocations,
            estimated: after.estimated - before.estimated,
            agent_cpu_us,
            cpu_per_invocation_us: per,
            // µs per invocation × invocations per second = µs per second.
            core_percent: per * f64::from(self.rate) / 1e4,
            wakeups_per_invocation: (at_end.turns - at_start.turns) as f64 / n as f64,
            achieved_rate: n as f64 / handed.as_secs_f64(),
        })
    }
}

/// CPU time one wake-up costs the woken thread on this machine, µs: a
/// thread blocked in `read` on a socket, woken by a byte every 2 ms, 500
/// times; the median of its CPU per wake-up over five such rounds. The floor
/// under the agent's cost per wake-up (in a virtual machine, timer and
/// interrupt exits make it large).
fn bare_wakeup_us() -> Result<f64> {
    use std::io::{Read, Write};
    const WAKES: u32 = 500;
    let mut rounds = Vec::new();
    for _ in 0..5 {
        let (mut tx, mut rx) = std::os::unix::net::UnixStream::pair()?;
        let reader = std::thread::spawn(move || -> std::io::Result<u64> {
            let start = clock::thread_cpu();
            let mut byte = [0u8; 1];
            for _ in 0..WAKES {
                rx.read_exact(&mut byte)?;
            }
            Ok(clock::thread_cpu() - start)
        });
        for _ in 0..WAKES {
            std::thread::sleep(Duration::from_millis(2));
            tx.write_all(b"x")?;
        }
        let cpu = reader
            .join()
            .map_err(|_| anyhow!("the wake-up thread panicked"))??;
        rounds.push(cpu as f64 / 1e3 / f64::from(WAKES));
    }
    rounds.sort_by(f64::total_cmp);
    Ok(rounds[rounds.len() / 2])
}

/// Waits until the agent on `socket` listens.
fn wait_until_up(socket: &Path, agent: &mut Reaped) -> Result<()> {
    let end = Instant::now() + PATIENCE;
    loop {
        match Client::connect(socket) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() > end => return Err(e.into()),
            Err(_) => {}
        }
        if let Some(status) = agent.0.try_wait()? {
            bail!("the agent ended with {status} before it listened");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
