//! `bench agent`: the agent's CPU cost. It starts an agent on a socket of
//! its own and, each run, hands it `rate` short processes a second for
//! `seconds` through `faasched exec` (each runs `true`), then reads the
//! agent's CPU time from /proc/PID/schedstat.

use super::{median, release_only};
use crate::outln;
use anyhow::{Context, Result, anyhow, bail};
use faasched_live::os::agent::protocol::Client;
use faasched_live::os::observe::Schedstat;
use faasched_sys::{clock, process};
use serde::Serialize;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What a bench of the agent does.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// The agent's policy.
    pub policy: String,
    /// Invocations handed over per second.
    pub rate: u32,
    /// Length of one run, s.
    pub seconds: u32,
    /// Runs; the median is reported.
    #[serde(skip)]
    pub runs: u32,
    /// Distinct functions the invocations cycle through.
    #[serde(skip)]
    pub functions: u32,
}

/// What it measured: the runs and their medians, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct Measured {
    /// What it did.
    #[serde(flatten)]
    pub settings: Settings,
    /// Each run.
    pub runs: Vec<BenchRun>,
    /// Median of the runs' CPU per invocation, µs.
    pub median_cpu_per_invocation_us: f64,
    /// Median of the runs' share of one core, %.
    pub median_core_percent: f64,
    /// Median of the runs' wake-ups per invocation.
    pub median_wakeups_per_invocation: f64,
    /// [`bare_wakeup_us`].
    pub bare_wakeup_us: f64,
}

/// One run.
#[derive(Serialize, Debug, Clone, Copy)]
pub struct BenchRun {
    /// Invocations the agent finished in the run.
    pub invocations: u64,
    /// Of those, outcomes from an earlier reading (reaped first).
    pub estimated: u64,
    /// The agent's CPU time over the run, µs.
    pub agent_cpu_us: f64,
    /// The agent's CPU per invocation, µs.
    pub cpu_per_invocation_us: f64,
    /// The agent's CPU over the run's length, % of one core.
    pub core_percent: f64,
    /// Times the agent was switched in, per invocation: its wake-ups.
    pub wakeups_per_invocation: f64,
    /// Handed over per wall-second (the schedule asked for `rate`).
    pub achieved_rate: f64,
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

/// Runs the bench with the `faasched` binary `exe`, handing each run to
/// `each` as it ends. Needs the policy's privileges (root for alps).
pub fn measure(
    exe: &Path,
    settings: Settings,
    mut each: impl FnMut(usize, &BenchRun),
) -> Result<Measured> {
    let dir = tempfile::Builder::new()
        .prefix("faasched-bench-agent")
        .tempdir()?;
    let socket = dir.path().join("agent.sock");
    let mut agent = Reaped({
        let mut agent = Command::new(exe);
        agent
            .args(["agent", "--policy", &settings.policy, "--socket"])
            .arg(&socket)
            .stdin(Stdio::null());
        // SIGTERM: the agent gives back every process it steers and
        // removes its socket, even if this bench is killed.
        process::dies_with_parent(&mut agent, libc::SIGTERM);
        agent.spawn().context("starting the agent")?
    });
    wait_until_up(&socket, &mut agent)?;
    let cpu = Schedstat::open(agent.0.id() as i32).context("the agent's schedstat")?;
    let mut runs = Vec::new();
    for run in 0..settings.runs {
        let r = settings.run(exe, &socket, &cpu)?;
        each(run as usize, &r);
        runs.push(r);
    }
    let status = agent.stop()?;
    if !status.success() {
        bail!("the agent ended with {status}");
    }
    let of = |f: fn(&BenchRun) -> f64| median(runs.iter().map(f).collect());
    Ok(Measured {
        median_cpu_per_invocation_us: of(|r| r.cpu_per_invocation_us),
        median_core_percent: of(|r| r.core_percent),
        median_wakeups_per_invocation: of(|r| r.wakeups_per_invocation),
        bare_wakeup_us: bare_wakeup_us()?,
        settings,
        runs,
    })
}

impl Settings {
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

/// Runs the bench ([`measure`]) with this binary in a release build and
/// prints it: each run on stderr and the medians, or with `json` all of it.
pub fn run(settings: Settings, json: bool) -> Result<()> {
    release_only("agent")?;
    let exe = std::env::current_exe().context("finding the faasched binary")?;
    let m = measure(&exe, settings, |run, r| {
        if !json {
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
    })?;
    if json {
        return outln!("{}", serde_json::to_string_pretty(&m)?);
    }
    let s = &m.settings;
    outln!(
        "agent ({}) at {}/s for {} s, median of {} runs: {:.1} µs of CPU per invocation, \
         {:.3}% of one core, {:.2} wake-ups per invocation\n\
         a bare wake-up (a thread blocked in read, woken by a byte) costs {:.1} µs of CPU here",
        s.policy,
        s.rate,
        s.seconds,
        s.runs,
        m.median_cpu_per_invocation_us,
        m.median_core_percent,
        m.median_wakeups_per_invocation,
        m.bare_wakeup_us
    )
}
