//! `faasched bench watch`: three ways to notice that a process has used a
//! given amount of CPU time, and two ways to change its class, measured on
//! this machine against one spinning process (SCHED_FIFO on the last CPU
//! when privileged, as SFS runs its jobs, so CPU time advances with the wall
//! clock):
//!
//! - **POSIX CPU timer** (what [`crate::os::steering`] does): `timer_create`
//!   on the process's CPU clock, its signal read from a signalfd; the kernel
//!   checks such timers at the tick;
//! - **sleep-then-check** (the steering's fallback when no timer can be
//!   made): sleep until the earliest instant the reading can show the target
//!   reached, read schedstat, repeat ([`next_look`]);
//! - **1 ms polling** (SFS): every millisecond read `/proc/PID/stat` (as
//!   gopsutil does) and the CPU time.
//!
//! For each: how much CPU the process had used past the target when it was
//! noticed (overshoot), and the watcher's CPU time per watch. Then the cost
//! of one class change: a `sched_setattr` call against a fork and exec of
//! `chrt` (SFS runs `schedtool` for each change).

use crate::os::observe::Schedstat;
use crate::os::replay::nearest_rank;
use crate::os::steering::next_look;
use crate::sys::clock;
use crate::sys::cputimer::{CpuClock, CpuTimers};
use crate::sys::poll::Poll;
use crate::sys::process::{self, Child, Program, Setup};
use crate::sys::sched::{Prepared, online_cpus};
use faasched_model::{Attrs, Class, CpuSet, MS, Nanos, SEC, US};
use serde::Serialize;
use std::io;
use std::time::Duration;

/// How far apart, in the process's CPU time, successive targets are (at
/// least).
const STEP: Nanos = 10 * MS;

/// One way of watching, measured.
#[derive(Clone, Debug, Serialize)]
pub struct Watching {
    /// The method.
    pub method: &'static str,
    /// Targets noticed.
    pub watches: usize,
    /// CPU used past the target when noticed, µs: median, p99, max.
    pub overshoot_us: [f64; 3],
    /// The watcher's own CPU time per watch, µs.
    pub watcher_cpu_us: f64,
}

/// One way of changing a process's class, measured.
#[derive(Clone, Debug, Serialize)]
pub struct Changing {
    /// The method.
    pub method: &'static str,
    /// Changes made.
    pub changes: usize,
    /// Wall time per change, µs: median.
    pub median_us: f64,
}

/// Everything `bench watch` measured.
#[derive(Clone, Debug, Serialize)]
pub struct Measured {
    /// Whether the spinning process ran SCHED_FIFO.
    pub realtime: bool,
    /// The watching methods.
    pub watching: Vec<Watching>,
    /// The class-changing methods (`chrt` is left out if it is not installed).
    pub changing: Vec<Changing>,
}

/// A spinning process, killed and reaped on drop.
struct Spinner {
    child: Child,
    schedstat: Schedstat,
}

impl Spinner {
    fn start(attrs: &Prepared) -> io::Result<Spinner> {
        let program = Program::new("/bin/sh".as_ref())?;
        let setup = Setup {
            attrs,
            // The whole bench takes a few seconds of its CPU.
            rt_time_limit_us: 60 * SEC / 1000,
        };
        let child = process::spawn(&program, &["-c", "while :; do :; done"], &setup)?;
        let schedstat = Schedstat::open(child.pid)?;
        Ok(Spinner { child, schedstat })
    }

    fn cpu(&self) -> io::Result<Nanos> {
        Ok(self.schedstat.read()?.cpu)
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        process::kill_all([&self.child]);
    }
}

/// Runs every measurement `trials` times.
pub fn run(trials: usize, realtime: bool) -> io::Result<Measured> {
    let last = online_cpus() - 1;
    let cpus = CpuSet::range(last, last + 1);
    let class = |prio| {
        if realtime {
            Class::Fifo(prio)
        } else {
            Class::Normal
        }
    };
    let prepare = |prio| {
        Prepared::new(&Attrs::normal(cpus).with_class(class(prio)), false).map_err(io::Error::other)
    };
    let spinner = Spinner::start(&prepare(50)?)?;
    // Let it get going.
    std::thread::sleep(Duration::from_millis(20));
    let watching = vec![
        watch(&spinner, trials, "POSIX CPU timer (faasched)", posix_timer)?,
        watch(&spinner, trials, "sleep-then-check", sleep_then_check)?,
        watch(&spinner, trials, "1 ms polling (SFS)", poll_every_ms)?,
    ];
    let mut changing = Vec::new();
    let (a, b) = (prepare(50)?, prepare(49)?);
    let mut times = Vec::new();
    for i in 0..trials * 10 {
        let t = clock::monotonic();
        if i % 2 == 0 { &b } else { &a }.apply(spinner.child.pid)?;
        times.push(clock::monotonic() - t);
    }
    changing.push(Changing {
        method: "sched_setattr (faasched)",
        changes: times.len(),
        median_us: median(&mut times) as f64 / 1e3,
    });
    if realtime && let Some(t) = chrt_changes(&spinner, trials)? {
        changing.push(t);
    }
    Ok(Measured {
        realtime,
        watching,
        changing,
    })
}

type Method = fn(&Spinner, Nanos) -> io::Result<Nanos>;

/// Watches `trials` successive targets with `method`, which returns the CPU
/// time at which it noticed the target.
fn watch(
    spinner: &Spinner,
    trials: usize,
    name: &'static str,
    method: Method,
) -> io::Result<Watching> {
    let mut overshoots = Vec::new();
    let cpu = clock::thread_cpu();
    for i in 0..trials as u64 {
        // Readings move a tick at a time: spread the targets over a tick so
        // the overshoots show the whole range, not one phase of it.
        let target = spinner.cpu()? + STEP + (i * 1_300 * US) % (4 * MS);
        overshoots.push(method(spinner, target)?.saturating_sub(target));
    }
    let per = (clock::thread_cpu() - cpu) as f64 / trials.max(1) as f64 / 1e3;
    overshoots.sort_unstable();
    let rank = |q: f64| nearest_rank(&overshoots, q);
    Ok(Watching {
        method: name,
        watches: overshoots.len(),
        overshoot_us: [rank(0.5), rank(0.99), rank(1.0)].map(|v| v as f64 / 1e3),
        watcher_cpu_us: per,
    })
}

/// Sorts `v` and returns its median (0 if empty).
fn median(v: &mut [Nanos]) -> Nanos {
    v.sort_unstable();
    nearest_rank(v, 0.5)
}

fn sleep_then_check(spinner: &Spinner, target: Nanos) -> io::Result<Nanos> {
    loop {
        let now = clock::monotonic();
        let used = spinner.cpu()?;
        if used >= target {
            return Ok(used);
        }
        let (_, next) = next_look(now, used, target);
        std::thread::sleep(Duration::from_nanos(
            next.saturating_sub(clock::monotonic()),
        ));
    }
}

fn posix_timer(spinner: &Spinner, target: Nanos) -> io::Result<Nanos> {
    let mut timers = CpuTimers::new()?;
    timers.add(0, CpuClock::of(spinner.child.pid)?)?;
    let mut poll = Poll::new()?;
    poll.add(timers.fd(), 0)?;
    timers.arm(0, target)?;
    while timers.fired()?.is_empty() {
        poll.wait(Some(SEC))?;
    }
    spinner.cpu()
}

fn poll_every_ms(spinner: &Spinner, target: Nanos) -> io::Result<Nanos> {
    let stat = format!("/proc/{}/stat", spinner.child.pid);
    loop {
        std::thread::sleep(Duration::from_millis(1));
        std::fs::read_to_string(&stat)?;
        let used = spinner.cpu()?;
        if used >= target {
            return Ok(used);
        }
    }
}

/// Class changes by a fork and exec of `chrt`, as SFS forks `schedtool`;
/// `None` if `chrt` is not installed.
fn chrt_changes(spinner: &Spinner, trials: usize) -> io::Result<Option<Changing>> {
    let pid = spinner.child.pid.to_string();
    let mut times = Vec::new();
    for i in 0..trials {
        let prio = if i % 2 == 0 { "49" } else { "50" };
        let t = clock::monotonic();
        let status = match std::process::Command::new("chrt")
            .args(["-f", "-p", prio, &pid])
            .status()
        {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        times.push(clock::monotonic() - t);
        if !status.success() {
            return Err(io::Error::other(format!("chrt exited with {status}")));
        }
    }
    Ok(Some(Changing {
        method: "fork+exec chrt (SFS's schedtool)",
        changes: times.len(),
        median_us: median(&mut times) as f64 / 1e3,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_every_method_against_a_spinning_process() {
        let m = run(3, crate::os::privilege::probe().realtime).unwrap();
        let methods: Vec<&str> = m.watching.iter().map(|w| w.method).collect();
        assert_eq!(methods.len(), 3, "{methods:?}");
        for w in &m.watching {
            assert_eq!(w.watches, 3);
            // Noticed at or after the target, never before.
            assert!(w.overshoot_us.iter().all(|&v| v >= 0.0), "{w:?}");
        }
        assert_eq!(m.changing[0].changes, 30);
    }
}
