//! Starting, watching and ending child processes: a child that sets its
//! scheduling attributes and then `exec`s, pidfds, and `wait4`.
//!
//! std's `Command::spawn` waits until the child has called `exec`; a launcher
//! that must keep to an open-loop arrival schedule cannot wait for a child to
//! get a core, so this starts the child and learns the rest from a pipe: the
//! child writes the instant it first ran in its own class and on its own
//! cores, then the pipe closes at `exec` (it
//! is close-on-exec), or carries the step and errno that failed. The
//! launcher also applies the child's attributes itself as soon as `clone`
//! returns, so the child waits for its first run in its own class.
//!
//! The child shares the launcher's memory until its `exec` (`clone` with
//! `CLONE_VM`, on a stack of its own), as `posix_spawn` does, but without
//! `CLONE_VFORK`: the launcher goes on at once instead of waiting for the
//! child to get a core. A `fork` copied the launcher's page tables (its
//! `dup_mmap`, 20% of the launcher's CPU in a replay) and left every page it
//! then wrote to be copied on the fault (another 10–15%); a look at a CPU
//! watch that fell due meanwhile waited for both (docs/LIVE.md, "Results
//! (session 7)"). What the child reads before its `exec` (the arguments,
//! the environment, the attributes and its stack) is a [`Launch`] that the
//! [`Child`] keeps until the start pipe closes: at `exec`, when the child no
//! longer has this memory, or at its exit.

use super::clock;
use super::raw;
use super::sched::Prepared;
use faasched_model::Nanos;
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

/// A program and this process's environment, as C strings built once.
pub struct Program {
    path: CString,
    env: Vec<CString>,
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

/// What a child reads, in the launcher's memory, between its start and its
/// `exec`: the launcher must neither free nor change it meanwhile.
struct Launch {
    stack: Stack,
    parent: libc::pid_t,
    pipe: libc::c_int,
    attrs: Prepared,
    limit: libc::rlimit,
    /// The strings `argv` points into; the first is the program's path.
    _args: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

/// A child's stack: mapped for it, with a guard page below, and unmapped
/// when dropped.
struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

impl Stack {
    /// Far more than the child's few frames and system calls take.
    const SIZE: usize = 64 * 1024;
    const GUARD: usize = 4096;

    fn new() -> io::Result<Stack> {
        let len = Self::SIZE + Self::GUARD;
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack { base, len };
        // SAFETY: the lowest page of the mapping just made: an overflow
        // faults instead of writing below it.
        if unsafe { libc::mprotect(base, Self::GUARD, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// Its top, where the child's stack starts (it grows down).
    fn top(&self) -> *mut libc::c_void {
        self.base.wrapping_byte_add(self.len)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, which no one uses any more
        // (the child has exec'd or exited).
        unsafe { libc::munmap(self.base, self.len) };
    }
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
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = program.env.iter().map(|a| a.as_ptr()).collect();
    envp.push(std::ptr::null());
    let (read, write) = pipe().map_err(failed("pipe2"))?;
    // Never above the hard limit this process has: raising it needs
    // CAP_SYS_RESOURCE.
    let hard = super::limits::rt_time()
        .map_err(failed("getrlimit"))?
        .rlim_max;
    let launch = Box::new(Launch {
        stack: Stack::new().map_err(failed("mmap"))?,
        // SAFETY: getpid has no arguments.
        parent: unsafe { libc::getpid() },
        pipe: write.as_raw_fd(),
        attrs: *setup.attrs,
        limit: libc::rlimit {
            rlim_cur: setup.rt_time_limit_us.min(hard),
            rlim_max: setup.rt_time_limit_us.min(hard),
        },
        _args: args,
        argv,
        envp,
    });
    let arg: *const Launch = &*launch;
    // SAFETY: the child runs `start` on its own stack, in this process's
    // memory, until it execs or exits; it reads only `launch`, which the
    // returned `Child` keeps alive and unchanged until the start pipe shows
    // that (it closes at `exec` or exit), and runs only async-signal-safe
    // system calls. Its descriptor table is its own copy (no CLONE_FILES),
    // so dropping the write end here leaves the child's open.
    let pid = unsafe {
        libc::clone(
            start,
            launch.stack.top(),
            libc::CLONE_VM | libc::SIGCHLD,
            arg.cast_mut().cast(),
        )
    };
    if pid < 0 {
        return Err(failed("clone")(io::Error::last_os_error()));
    }
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
            // is freed.
            // SAFETY: our own child, not yet reaped, so `pid` is still it.
            unsafe { libc::kill(pid, libc::SIGKILL) };
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

/// The child's entry point: `arg` is its [`Launch`].
extern "C" fn start(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `spawn` passes a `Launch` it keeps alive until this child has
    // exec'd or exited.
    let l = unsafe { &*arg.cast::<Launch>() };
    child(l)
}

/// The child's side of [`spawn`]: never returns. It shares the launcher's
/// memory, so it allocates nothing and touches nothing but `l` and its own
/// stack. Its `errno` is the launcher's thread's too, so the calls whose
/// error it reports are raw (raw.rs): the error number stays its own.
fn child(l: &Launch) -> ! {
    let pipe = l.pipe;
    let fail = |step: Step, e: io::Error| -> ! {
        let mut msg = [0u8; 8];
        msg[..4].copy_from_slice(&(step as u32).to_ne_bytes());
        msg[4..].copy_from_slice(&e.raw_os_error().unwrap_or(0).to_ne_bytes());
        // SAFETY: writes 8 bytes from a live buffer, then exits without
        // running any of the parent's destructors or atexit handlers.
        unsafe {
            libc::write(pipe, msg.as_ptr().cast(), msg.len());
            libc::_exit(127)
        }
    };
    // Die with the launcher, whatever kills it.
    let _ = follow_parent(l.parent, libc::SIGKILL);
    // SAFETY: plain system calls on valid buffers and constants.
    unsafe {
        // A group of its own, so a terminal's Ctrl-C reaches the launcher
        // only, which then ends its children in order.
        libc::setpgid(0, 0);
        // The launcher blocks its termination signals to read them from a
        // signalfd; the function must not inherit that.
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
    // Its first run is stamped once it runs in its own class on its own
    // cores: it may first have run on the launcher's (whose mask it
    // inherits) before either side applied its attributes, and a stamp
    // taken there would show a response of bare launch lateness however
    // busy the steered cores are.
    let applied = l.attrs.apply(0);
    let started = clock::monotonic().to_ne_bytes();
    // SAFETY: writes 8 bytes from a live buffer.
    unsafe {
        libc::write(pipe, started.as_ptr().cast(), started.len());
    }
    if let Err(e) = applied {
        fail(Step::Attrs, e);
    }
    let limit = &l.limit as *const libc::rlimit as usize;
    let rt_time = libc::RLIMIT_RTTIME as usize;
    // SAFETY: `l.limit` is a valid rlimit.
    if let Err(e) = unsafe { raw::syscall3(libc::SYS_setrlimit, rt_time, limit, 0) } {
        fail(Step::Limit, e);
    }
    let (path, argv, envp) = (
        l.argv[0] as usize,
        l.argv.as_ptr() as usize,
        l.envp.as_ptr() as usize,
    );
    // SAFETY: `argv` (its first string the program's path) and `envp` are
    // NUL-terminated arrays of C strings that the launcher keeps alive until
    // this call has replaced the child's memory. It returns only with an
    // error (no panic for the other case: the memory is the launcher's).
    let returned = unsafe { raw::syscall3(libc::SYS_execve, path, argv, envp) };
    fail(
        Step::Exec,
        returned
            .err()
            .unwrap_or_else(|| io::Error::from_raw_os_error(0)),
    )
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
                    0 => Step::Attrs,
                    1 => Step::Limit,
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
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two fresh descriptors that we now own.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on a descriptor we own.
    if unsafe { libc::fcntl(r.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((r, w))
}

/// Makes the process `command` starts receive `signal` when this thread
/// ends, however it ends (SIGKILL included), and not run at all if this
/// process died before it could ask: a helper the CLI starts (an agent under
/// a bench) is then never left behind. `std::process::Command` has no such
/// option; [`spawn`] does the same for replayed functions.
pub fn dies_with_parent(command: &mut std::process::Command, signal: libc::c_int) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec the closure only makes async-signal-safe
    // system calls on plain integers.
    unsafe {
        command.pre_exec(move || follow_parent(parent, signal));
    }
}

/// In a new child, before exec: asks for `signal` when the thread that
/// made it ends, and exits at once if `parent` is gone already (it died
/// between the fork or clone and the request, which then never comes).
/// Async-signal-safe.
fn follow_parent(parent: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: prctl and getppid on plain integers; _exit ends the child
    // without running the parent's destructors or atexit handlers.
    unsafe {
        let asked = libc::prctl(libc::PR_SET_PDEATHSIG, signal);
        if libc::getppid() != parent {
            libc::_exit(127);
        }
        // (getppid always succeeds and leaves errno alone.)
        if asked != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A pidfd for `pid` (close-on-exec).
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes two integers.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a fresh descriptor that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Sends `signal` to the process behind `pidfd` (never to a reused pid).
pub fn signal(pidfd: &OwnedFd, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: a valid descriptor, a signal number and a null siginfo.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
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
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are valid and writable.
        let rc = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
        if rc == pid {
            break;
        }
        if rc == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
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
    let mut fd = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no timeout.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::sched;
    use faasched_model::{Attrs, Class, CpuSet};

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
        if !crate::privilege::probe().realtime {
            eprintln!("skipped: no privilege for SCHED_FIFO");
            return;
        }
        let last = CpuSet::range(sched::online_cpus() - 1, sched::online_cpus());
        let fifo = |prio| Attrs::normal(last).with_class(Class::Fifo(prio));
        // This thread as the launcher is, above both children, on their CPU.
        let pinned = crate::privilege::Pinned::to(&last).unwrap();
        let realtime = crate::privilege::Realtime::enter().unwrap();
        let hog = hog(last);
        let mut child = start_with("/bin/true", &[], &fifo(50), 300_000);
        let class = sched::current(child.pid).unwrap();
        let report = child.report().unwrap();
        // SAFETY: our own child, not yet reaped.
        unsafe { libc::kill(hog.pid, libc::SIGKILL) };
        let _ = reap(hog.pid);
        drop(realtime);
        drop(pinned);
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
        if !crate::privilege::probe().realtime || cpus < 2 {
            eprintln!("skipped: needs SCHED_FIFO and two CPUs");
            return;
        }
        let last = CpuSet::range(cpus - 1, cpus);
        let fifo = |prio| Attrs::normal(last).with_class(Class::Fifo(prio));
        // This thread, the launcher, on the first CPU, in the fair class.
        let pinned = crate::privilege::Pinned::to(&CpuSet::first(1)).unwrap();
        let hog = hog(last);
        let mut child = start_with("/bin/true", &[], &fifo(50), 300_000);
        std::thread::sleep(Duration::from_millis(20)); // this CPU is free
        let report = child.report().unwrap();
        kill_all([&hog]);
        drop(pinned);
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
