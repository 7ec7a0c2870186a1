//! Starting, watching and ending child processes: a child that sets its
//! scheduling attributes and then `exec`s, pidfds, and `wait4`.
//!
//! std's `Command::spawn` waits until the child has called `exec`; a launcher
//! that must keep to an open-loop arrival schedule cannot wait for a child to
//! get a core, so this starts the child and learns the rest from a pipe: the
//! child writes the instant it first ran in its own class and on its own
//! cores, then the pipe closes at `exec` (it is close-on-exec), or carries
//! the step and errno that failed. The launcher also applies the child's
//! attributes itself as soon as `clone` returns, so the child waits for its
//! first run in its own class.
//!
//! The child shares the launcher's memory until its `exec` (`clone` with
//! `CLONE_VM`: the `launch` module says why, and holds its unsafe part).
//! What the child reads before its `exec` is kept by its [`Child`] until
//! the start pipe closes: at `exec`, when the child no longer has this
//! memory, or at its exit.

use crate::clock;
use crate::launch::{self, Launch};
use crate::sched::Prepared;
use crate::{io as errno, wait4};
use faasched_model::Nanos;
use rustix::event::{PollFd, PollFlags};
use rustix::pipe::PipeFlags;
use rustix::process::{PidfdFlags, Signal};
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A program and this process's environment, as C strings built once.
pub struct Program {
    path: CString,
    /// Shared with each child's launch, which must outlive the child's
    /// `exec` whatever becomes of the program.
    env: Arc<[CString]>,
}

fn c_string(s: &[u8]) -> io::Result<CString> {
    CString::new(s).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "NUL byte in an argument or the environment",
        )
    })
}

impl Program {
    /// `path`, to be run in this process's environment.
    pub fn new(path: &OsStr) -> io::Result<Program> {
        let env = std::env::vars_os()
            .map(|(k, v)| {
                let mut kv = k.into_encoded_bytes();
                kv.push(b'=');
                kv.extend(v.into_encoded_bytes());
                c_string(&kv)
            })
            .collect::<io::Result<_>>()?;
        Ok(Program {
            path: c_string(path.as_bytes())?,
            env,
        })
    }
}

/// What the child does between `fork` and `exec`.
pub struct Setup<'a> {
    /// Scheduling attributes to take before `exec`.
    pub attrs: &'a Prepared,
    /// RLIMIT_RTTIME for the child (µs of CPU a real-time task may use
    /// without blocking before the kernel kills it): a backstop that keeps a
    /// runaway real-time child from holding a core.
    pub rt_time_limit_us: u64,
}

/// A child that was forked (and may or may not have reached `exec` yet).
pub struct Child {
    /// Its pid.
    pub pid: libc::pid_t,
    /// A pidfd: readable once the child has exited; keeps the pid from being
    /// reused until the child is reaped.
    pub pidfd: OwnedFd,
    /// Read end of the start pipe (non-blocking).
    pub start: File,
    /// When the child was started (`clone` returned in the launcher).
    pub forked: Nanos,
    /// What has come through the start pipe so far, and whether it closed.
    report: [u8; 16],
    got: usize,
    closed: bool,
    /// What the child reads until its `exec`: kept until the pipe closes.
    launch: Option<Box<Launch>>,
}

/// The step of the child's setup that failed, as reported through the pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Setting its scheduling attributes.
    Attrs,
    /// Setting its resource limit.
    Limit,
    /// `exec`.
    Exec,
}

/// What a child reported through its start pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// Nothing yet.
    Pending,
    /// It first ran at this instant (CLOCK_MONOTONIC); more may follow.
    Started(Nanos),
    /// It started, then a step failed with this errno before `exec`.
    Failed(Nanos, Step, i32),
    /// It started and reached `exec` (the pipe closed).
    Execed(Nanos),
}

/// The kernel's answer `e` to `call`, named (several calls can fail to
/// start a child, with the same errno: EMFILE from a pipe or a pidfd).
fn failed(call: &'static str) -> impl FnOnce(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{call}: {e}"))
}

/// Starts a child that applies `setup` and execs `program` with `args`
/// (after argv\[0\], the program); returns once it is started, without
/// waiting for it to run. An error names the call that failed.
pub fn spawn<S: AsRef<OsStr>>(program: &Program, args: &[S], setup: &Setup) -> io::Result<Child> {
    let args = std::iter::once(Ok(program.path.clone()))
        .chain(args.iter().map(|a| c_string(a.as_ref().as_bytes())))
        .collect::<io::Result<Vec<CString>>>()?;
    let (read, write) = pipe().map_err(failed("pipe2"))?;
    // Never above the hard limit this process has: raising it needs
    // CAP_SYS_RESOURCE.
    let hard = crate::limits::rt_time()
        .map_err(failed("getrlimit"))?
        .rlim_max;
    let limit = libc::rlimit {
        rlim_cur: setup.rt_time_limit_us.min(hard),
        rlim_max: setup.rt_time_limit_us.min(hard),
    };
    let launch = Launch::new(
        args,
        program.env.clone(),
        write.as_raw_fd(),
        *setup.attrs,
        limit,
    )
    .map_err(failed("mmap"))?;
    // The returned `Child` keeps `launch` until the start pipe shows the
    // child done with it.
    let pid = launch::clone(&launch).map_err(failed("clone"))?;
    let forked = clock::monotonic();
    // Into its class now, at its arrival, as the model places it. The child
    // starts under the fair class (the launcher runs with reset-on-fork), and
    // while real-time functions hold every core a fair task does not run: it
    // would wait behind all of them, and every real-time task arriving
    // meanwhile, before it could take a real-time class itself, and then
    // join the back of the queue. The child's own call stays: it holds
    // if the child ran first, and its failure is the one reported (this one
    // fails alike, or because the child is gone already).
    let _ = setup.attrs.apply(pid);
    drop(write);
    let pidfd = match pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) => {
            // Not returned without a pidfd: end the child before its launch
            // is freed. Our own child, not yet reaped, so `pid` is still it.
            if let Ok(Some(p)) = crate::pid(pid) {
                let _ = rustix::process::kill_process(p, Signal::KILL);
            }
            let _ = reap(pid);
            return Err(failed("pidfd_open")(e));
        }
    };
    Ok(Child {
        pid,
        pidfd,
        start: File::from(read),
        forked,
        report: [0; 16],
        got: 0,
        closed: false,
        launch: Some(launch),
    })
}

impl Child {
    /// Reads what the child has written to its start pipe so far.
    pub fn report(&mut self) -> io::Result<Report> {
        while !self.closed {
            // Past a whole report only the end is left to read.
            let mut rest = [0u8; 1];
            let buf = match self.got < self.report.len() {
                true => &mut self.report[self.got..],
                false => &mut rest[..],
            };
            match self.start.read(buf) {
                Ok(0) => {
                    self.closed = true;
                    // The child has exec'd or exited: it is done with it.
                    self.launch = None;
                }
                Ok(n) => self.got = (self.got + n).min(self.report.len()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let buf = &self.report;
        Ok(match (self.got, self.closed) {
            (0..8, _) => Report::Pending,
            (8..16, false) => Report::Started(stamp(buf)),
            (8..16, true) => Report::Execed(stamp(buf)),
            _ => {
                let word = |at: usize| [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]];
                let step = match u32::from_ne_bytes(word(8)) {
                    launch::STEP_ATTRS => Step::Attrs,
                    launch::STEP_LIMIT => Step::Limit,
                    _ => Step::Exec,
                };
                Report::Failed(stamp(buf), step, i32::from_ne_bytes(word(12)))
            }
        })
    }
}

impl Drop for Child {
    /// Frees the launch only if the child is done with it: it has exec'd or
    /// exited (its pipe closed), or it is dead. A live child that may still
    /// read it keeps it (leaked: dropping a running child's handle is a
    /// caller's slip, and freeing memory it reads would be worse).
    fn drop(&mut self) {
        let _ = self.report();
        if let Some(launch) = self.launch.take()
            && !exited(&self.pidfd).unwrap_or(false)
        {
            std::mem::forget(launch);
        }
    }
}

fn stamp(buf: &[u8; 16]) -> Nanos {
    u64::from_ne_bytes(buf[..8].try_into().unwrap_or_default())
}

/// A pipe, both ends close-on-exec, the read end non-blocking.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC).map_err(errno)?;
    rustix::io::ioctl_fionbio(&r, true).map_err(errno)?;
    Ok((r, w))
}

/// Makes the process `command` starts receive `signal` when this thread
/// ends, however it ends (SIGKILL included), and not run at all if this
/// process died before it could ask: a helper the CLI starts (an agent under
/// a bench) is then never left behind. `std::process::Command` has no such
/// option; [`spawn`] does the same for replayed functions.
pub fn dies_with_parent(command: &mut std::process::Command, signal: libc::c_int) {
    launch::dies_with_parent(command, signal);
}

/// A pidfd for `pid` (close-on-exec).
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    let Some(p) = crate::pid(pid)? else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    rustix::process::pidfd_open(p, PidfdFlags::empty()).map_err(errno)
}

/// Sends `signal` to the process behind `pidfd` (never to a reused pid).
/// An error (EINVAL) for a number that names no signal.
pub fn signal(pidfd: &OwnedFd, signal: libc::c_int) -> io::Result<()> {
    let Some(sig) = Signal::from_named_raw(signal) else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    rustix::process::pidfd_send_signal(pidfd, sig).map_err(errno)
}

/// How long [`kill_all`] waits for its killed children to be reaped.
pub const REAP_WAIT: Duration = Duration::from_secs(5);

/// Kills `children` (SIGKILL through their pidfds, every one before any is
/// waited for) and reaps them, waiting [`REAP_WAIT`] at most in all: a
/// killed process in uninterruptible sleep (I/O on a hung file system) dies
/// only once its I/O ends, and a blocking `wait4` would wait as long.
/// Returns how many were left: they die when their I/O ends, and are then
/// init's to reap once this process has exited.
pub fn kill_all<'a>(children: impl IntoIterator<Item = &'a Child>) -> usize {
    let mut left: Vec<libc::pid_t> = children
        .into_iter()
        .map(|c| {
            let _ = signal(&c.pidfd, libc::SIGKILL);
            c.pid
        })
        .collect();
    let until = Instant::now() + REAP_WAIT;
    loop {
        // An error (ECHILD: reaped already) leaves nothing to wait for.
        left.retain(|&pid| matches!(try_reap(pid), Ok(None)));
        if left.is_empty() || Instant::now() >= until {
            return left.len();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What `wait4` tells of an exited child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reaped {
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// User + system CPU time.
    pub cpu: Nanos,
    /// Voluntary context switches.
    pub voluntary: u64,
    /// Involuntary context switches.
    pub involuntary: u64,
}

/// Reaps child `pid`, waiting for it to exit if it has not.
pub fn reap(pid: libc::pid_t) -> io::Result<Reaped> {
    reap_with(pid, 0).map(|r| r.expect("a blocking wait4 returns only once the child has exited"))
}

/// Reaps child `pid` if it has exited; `None` if it is still running.
pub fn try_reap(pid: libc::pid_t) -> io::Result<Option<Reaped>> {
    reap_with(pid, libc::WNOHANG)
}

fn reap_with(pid: libc::pid_t, flags: libc::c_int) -> io::Result<Option<Reaped>> {
    let Some((status, usage)) = wait4::wait4(pid, flags)? else {
        return Ok(None);
    };
    Ok(Some(Reaped {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        cpu: clock::timeval(usage.ru_utime) + clock::timeval(usage.ru_stime),
        voluntary: usage.ru_nvcsw as u64,
        involuntary: usage.ru_nivcsw as u64,
    }))
}

/// Whether the process behind `pidfd` has exited (a zombie counts as
/// exited), without waiting.
pub fn exited(pidfd: &OwnedFd) -> io::Result<bool> {
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    let now = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    Ok(rustix::event::poll(&mut fds, Some(&now)).map_err(errno)? > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched;
    use faasched_model::{Attrs, Class, CpuSet};

    /// Whether this process may put a thread under SCHED_FIFO (tried on a
    /// scratch thread, which then exits).
    fn may_be_realtime() -> bool {
        std::thread::spawn(|| {
            let cpus = CpuSet::first(sched::online_cpus());
            let fifo = Attrs::normal(cpus).with_class(Class::Fifo(1));
            Prepared::new(&fifo, false).is_ok_and(|p| p.apply(0).is_ok())
        })
        .join()
        .unwrap_or(false)
    }

    /// The calling thread as a launcher: on `cpus`, and with `fifo`, under
    /// SCHED_FIFO at that priority with reset-on-fork, until dropped, which
    /// gives it back its class and CPUs.
    struct Launcher {
        cpus: CpuSet,
        before: sched::Current,
    }

    impl Launcher {
        fn on(cpus: CpuSet, fifo: Option<u8>) -> Launcher {
            let launcher = Launcher {
                cpus: sched::affinity(0).unwrap(),
                before: sched::current(0).unwrap(),
            };
            sched::set_affinity(0, &cpus).unwrap();
            if let Some(prio) = fifo {
                let attrs = Attrs::normal(cpus).with_class(Class::Fifo(prio));
                Prepared::new(&attrs, true).unwrap().apply(0).unwrap();
            }
            launcher
        }
    }

    impl Drop for Launcher {
        fn drop(&mut self) {
            let _ = sched::restore(0, &self.before);
            let _ = sched::set_affinity(0, &self.cpus);
        }
    }

    /// Starts `path` with `args` under `attrs`, with RLIMIT_RTTIME
    /// `rt_time_limit_us`.
    fn start_with(path: &str, args: &[&str], attrs: &Attrs, rt_time_limit_us: u64) -> Child {
        let program = Program::new(OsStr::new(path)).unwrap();
        let attrs = Prepared::new(attrs, true).unwrap();
        let setup = Setup {
            attrs: &attrs,
            rt_time_limit_us,
        };
        spawn(&program, args, &setup).unwrap()
    }

    /// Starts `path` with `args`, under the fair class on every CPU.
    fn start_child(path: &str, args: &[&str]) -> Child {
        let cpus = CpuSet::first(std::thread::available_parallelism().map_or(1, |n| n.get()));
        start_with(path, args, &Attrs::normal(cpus), 10_000_000)
    }

    /// Reads the start pipe until it closes (at most 10 s).
    fn until_closed(child: &mut Child) -> Report {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let report = child.report().unwrap();
            if child.closed {
                return report;
            }
            assert!(Instant::now() < end, "the start pipe never closed");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Children started in a row, while earlier ones still run in this
    /// process's memory: each reports its start, execs, exits with its own
    /// code, and its launch is freed once its pipe closes.
    #[test]
    fn children_start_exec_and_exit_with_their_own_code() {
        let before = clock::monotonic();
        let mut children: Vec<Child> = (0..20)
            .map(|i| start_child("/bin/sh", &["-c", &format!("exit {i}")]))
            .collect();
        for (i, child) in children.iter_mut().enumerate() {
            let report = until_closed(child);
            // It may first run before `clone` returns in this process.
            assert!(
                matches!(report, Report::Execed(t) if t >= before),
                "{report:?}"
            );
            assert!(child.launch.is_none());
            assert_eq!(reap(child.pid).unwrap().code, Some(i as i32));
        }
    }

    /// A SCHED_FIFO 80 spinner on `cpus`, once it holds them: 0.3 s of
    /// real-time CPU at most (RLIMIT_RTTIME), and it dies with this thread
    /// (PR_SET_PDEATHSIG) if an assertion fails.
    fn hog(cpus: CpuSet) -> Child {
        let fifo = Attrs::normal(cpus).with_class(Class::Fifo(80));
        let hog = start_with("/bin/sh", &["-c", "while :; do :; done"], &fifo, 300_000);
        std::thread::sleep(Duration::from_millis(20));
        hog
    }

    /// A real-time child is real-time from its start, before it first
    /// runs: on a CPU a real-time task holds, it waits in the real-time
    /// queue, where a fair task (what a child of a reset-on-fork launcher
    /// starts as) would wait for all real-time work to end.
    #[test]
    fn a_child_is_in_its_class_before_it_first_runs() {
        if !may_be_realtime() {
            eprintln!("skipped: no privilege for SCHED_FIFO");
            return;
        }
        let last = CpuSet::range(sched::online_cpus() - 1, sched::online_cpus());
        let fifo = |prio| Attrs::normal(last).with_class(Class::Fifo(prio));
        // This thread as the launcher is, above both children, on their CPU.
        let launcher = Launcher::on(last, Some(90));
        let hog = hog(last);
        let mut child = start_with("/bin/true", &[], &fifo(50), 300_000);
        let class = sched::current(child.pid).unwrap();
        let report = child.report().unwrap();
        kill_all([&hog]);
        drop(launcher);
        assert_eq!(report, Report::Pending, "it ran beside a real-time hog");
        assert_eq!((class.policy, class.priority), (libc::SCHED_FIFO, 50));
        assert!(matches!(until_closed(&mut child), Report::Execed(_)));
        assert_eq!(reap(child.pid).unwrap().code, Some(0));
    }

    /// Its first run is on its own cores: with the launcher on another
    /// CPU, a child whose CPU a real-time hog holds reports no first run,
    /// even if it ran on the launcher's CPU (whose mask it inherits) before
    /// its attributes took hold.
    #[test]
    fn a_child_reports_its_first_run_on_its_own_cores() {
        let cpus = sched::online_cpus();
        if !may_be_realtime() || cpus < 2 {
            eprintln!("skipped: needs SCHED_FIFO and two CPUs");
            return;
        }
        let last = CpuSet::range(cpus - 1, cpus);
        let fifo = |prio| Attrs::normal(last).with_class(Class::Fifo(prio));
        // This thread, the launcher, on the first CPU, in the fair class.
        let launcher = Launcher::on(CpuSet::first(1), None);
        let hog = hog(last);
        let mut child = start_with("/bin/true", &[], &fifo(50), 300_000);
        std::thread::sleep(Duration::from_millis(20)); // this CPU is free
        let report = child.report().unwrap();
        kill_all([&hog]);
        drop(launcher);
        assert_eq!(
            report,
            Report::Pending,
            "a first run beside a real-time hog"
        );
        assert!(matches!(until_closed(&mut child), Report::Execed(_)));
        assert_eq!(reap(child.pid).unwrap().code, Some(0));
    }

    #[test]
    fn kill_all_kills_and_reaps_every_child() {
        let children: Vec<Child> = (0..3)
            .map(|_| start_child("/bin/sh", &["-c", "sleep 30"]))
            .collect();
        let start = Instant::now();
        assert_eq!(kill_all(&children), 0);
        assert!(start.elapsed() < REAP_WAIT, "{:?}", start.elapsed());
        for child in &children {
            let gone = try_reap(child.pid).unwrap_err();
            assert_eq!(gone.raw_os_error(), Some(libc::ECHILD), "{}", child.pid);
        }
    }

    #[test]
    fn a_failed_exec_is_reported_with_its_errno() {
        let mut child = start_child("/nonexistent/faasched-test", &["x"]);
        let report = until_closed(&mut child);
        assert!(
            matches!(report, Report::Failed(_, Step::Exec, e) if e == libc::ENOENT),
            "{report:?}"
        );
        assert_eq!(reap(child.pid).unwrap().code, Some(127));
    }
}
