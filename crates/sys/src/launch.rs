//! The launcher's fast spawn, by hand: a child that shares the launcher's
//! memory until its `exec` (`clone` with `CLONE_VM`, on a stack of its
//! own), as `posix_spawn` does, but without `CLONE_VFORK`, so the launcher
//! goes on at once instead of waiting for the child to get a core; and a
//! child's request to die with its parent. No crate offers either: rustix
//! and nix have no `clone` with a caller's stack, std's `Command` waits for
//! the `exec`, and `pre_exec`, which a request before `exec` needs, is
//! unsafe wherever it is offered.
//!
//! Why not `fork`: it copied the launcher's page tables (its `dup_mmap`, 20%
//! of the launcher's CPU in a replay) and left every page it then wrote to
//! be copied on the fault (another 10–15%); a look at a CPU watch that fell
//! due meanwhile waited for both (a profile of a replay, in docs/LIVE.md).
//!
//! What the child reads before its `exec` (the arguments, the environment,
//! the attributes and its stack) is a [`Launch`] that the caller keeps,
//! unchanged, until the child has exec'd or exited.
#![allow(unsafe_code)]

use crate::clock;
use crate::raw;
use crate::sched::Prepared;
use std::ffi::CString;
use std::io;
use std::sync::Arc;

/// What a child reads, in the launcher's memory, between its start and its
/// `exec`: the launcher must neither free nor change it meanwhile.
pub(crate) struct Launch {
    stack: Stack,
    parent: libc::pid_t,
    pipe: libc::c_int,
    attrs: Prepared,
    limit: libc::rlimit,
    /// The strings `argv` points into; the first is the program's path.
    _args: Vec<CString>,
    /// The strings `envp` points into.
    _env: Arc<[CString]>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

impl Launch {
    /// What a child needs to set `attrs` and `limit` (RLIMIT_RTTIME) on
    /// itself, report on `pipe` (its write end, which the child's copy of
    /// the descriptor table keeps open) and exec `args[0]` with `args` in
    /// `env`.
    pub(crate) fn new(
        args: Vec<CString>,
        env: Arc<[CString]>,
        pipe: libc::c_int,
        attrs: Prepared,
        limit: libc::rlimit,
    ) -> io::Result<Box<Launch>> {
        let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = env.iter().map(|a| a.as_ptr()).collect();
        envp.push(std::ptr::null());
        Ok(Box::new(Launch {
            stack: Stack::new()?,
            parent: rustix::process::getpid().as_raw_nonzero().get(),
            pipe,
            attrs,
            limit,
            _args: args,
            _env: env,
            argv,
            envp,
        }))
    }
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

/// Starts a child that runs `launch` (see [`Launch::new`]); returns its pid.
/// The caller must keep `launch` alive and unchanged until the child has
/// exec'd or exited (its start pipe closes at either).
pub(crate) fn clone(launch: &Launch) -> io::Result<libc::pid_t> {
    let arg: *const Launch = launch;
    // SAFETY: the child runs `start` on its own stack, in this process's
    // memory, until it execs or exits; it reads only `launch`, which the
    // caller keeps alive and unchanged until then (the contract above), and
    // runs only async-signal-safe system calls that leave `errno` alone.
    // Its descriptor table is its own copy (no CLONE_FILES), so the caller
    // may close its write end of the pipe at once.
    let pid = unsafe {
        libc::clone(
            start,
            launch.stack.top(),
            libc::CLONE_VM | libc::SIGCHLD,
            arg.cast_mut().cast(),
        )
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid)
}

/// The child's entry point: `arg` is its [`Launch`].
extern "C" fn start(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `clone` passes a `Launch` its caller keeps alive until this
    // child has exec'd or exited.
    let l = unsafe { &*arg.cast::<Launch>() };
    child(l)
}

/// The step of a child's setup that failed, as its number on the pipe.
pub(crate) const STEP_ATTRS: u32 = 0;
/// See [`STEP_ATTRS`].
pub(crate) const STEP_LIMIT: u32 = 1;
/// See [`STEP_ATTRS`].
pub(crate) const STEP_EXEC: u32 = 2;

/// The child's side of [`clone`]: never returns. It shares the launcher's
/// memory, so it allocates nothing and touches nothing but `l` and its own
/// stack. Its `errno` is the launcher's thread's too, so the calls whose
/// error it reports are raw (`crate::raw`, or rustix's, which never use
/// `errno`): the error number stays its own.
fn child(l: &Launch) -> ! {
    let pipe = l.pipe;
    let fail = |step: u32, e: io::Error| -> ! {
        let mut msg = [0u8; 8];
        msg[..4].copy_from_slice(&step.to_ne_bytes());
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
        fail(STEP_ATTRS, e);
    }
    let limit = &l.limit as *const libc::rlimit as usize;
    let rt_time = libc::RLIMIT_RTTIME as usize;
    // SAFETY: `l.limit` is a valid rlimit.
    if let Err(e) = unsafe { raw::syscall3(libc::SYS_setrlimit, rt_time, limit, 0) } {
        fail(STEP_LIMIT, e);
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
        STEP_EXEC,
        returned
            .err()
            .unwrap_or_else(|| io::Error::from_raw_os_error(0)),
    )
}

/// Makes the process `command` starts receive `signal` when this thread
/// ends (see [`crate::process::dies_with_parent`]).
pub(crate) fn dies_with_parent(command: &mut std::process::Command, signal: libc::c_int) {
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
