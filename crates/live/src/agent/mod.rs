//! Agent mode: steer processes faasched did not start.
//!
//! A platform hands a process over (its pid and its function's name) on one
//! of the agent's two Unix sockets ([`protocol`]): in one datagram on the
//! datagram socket, answered with one datagram (`faasched exec` does this),
//! or as a line on a connection to the stream socket, which also answers
//! `status`. The agent steers the process with the policy exactly as replay
//! steers the processes it starts, through [`Steering`]: `on_arrival` when
//! it is handed over, `on_start` at once (it runs already), CPU watches and
//! periods, `on_exit` with its outcome when it exits or is unregistered.
//! `faasched exec` hands over itself, then `exec`s the function, which keeps
//! the pid and so the attributes.
//!
//! One thread, one wait (`epoll_pwait2`), as in replay: the two sockets,
//! each connected client, each steered process's pidfd, the terminating
//! signals, and the steering's next CPU watch or period.
//!
//! The invariants:
//!
//! 1. A client hands over only a process whose scheduling it could change
//!    itself (`target::may_hand_over`, against the credentials the kernel
//!    recorded for it: `SO_PEERCRED` at `connect` on the stream socket,
//!    `SCM_CREDENTIALS` attached to each datagram at send); never init, the
//!    agent, a kernel thread or a thread that is not its process's leader.
//! 2. A pid names a steered process only with the pidfd opened before any
//!    check: the credentials and parent checked are the pidfd's process's
//!    (`PIDFD_GET_INFO`), and the checks count only if that process still
//!    runs after them. The pidfd, its pidfs inode (in the state file) and
//!    the schedstat steering keeps open name that process for good; an exit
//!    is the pidfd turning readable.
//! 3. Every path out of [`serve`] gives each steered process back what it ran
//!    under before (never a real-time class): a terminating signal or an
//!    error by `Registry`'s drop, a panic by unwinding through it. Only
//!    SIGKILL (or an abort) skips it: then RLIMIT_RTTIME, set on every
//!    process while the policy may make it real-time, stops a runaway, and
//!    the next agent re-adopts the processes from the state file.

pub mod protocol;
mod state;
mod target;

pub use state::StateError;

use crate::observe::SchedstatReading;
use crate::steering::{SteerError, SteerStats, Steering, Timeline};
use crate::sys::clock;
use crate::sys::dgram;
use crate::sys::limits;
use crate::sys::peercred::{self, PeerCred, peer_cred};
use crate::sys::pidfd;
use crate::sys::poll::Poll;
use crate::sys::process;
use crate::sys::sched;
use crate::sys::signals::Signals;
use crate::sys::sockopt;
use faasched_model::{
    CpuSet, Function, Functions, Group, Nanos, Outcome, SEC, Steer, TaskId, TaskInfo, fmt_ms,
};
use protocol::{
    FunctionStatus, MAX_FUNCTION_NAME, MAX_REQUEST, ProcessStatus, Request, Response, Sched, Status,
};
use state::{Entry, StateFile};
use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Where the agent listens unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/faasched/agent.sock";

/// Most processes steered at once (each holds two descriptors: its pidfd and
/// schedstat); fewer if the descriptor limit is lower.
const MAX_PROCESSES: usize = 8192;
/// Most clients connected at once. A client arriving when they are all
/// connected takes the place of the one idle the longest, if that one has
/// been idle [`IDLE_EVICTABLE`] or more, and is closed on arrival otherwise:
/// connections held open and silent (any local user can open them) cannot
/// lock everyone else out.
const MAX_CLIENTS: usize = 256;
/// How long a connection must have been idle to make room for a new one.
const IDLE_EVICTABLE: Nanos = SEC;
/// Most datagrams answered in one wake-up: if more wait, the socket stays
/// ready and the next wait returns at once, with whatever else is ready
/// then, so no sender holds up the rest of the loop.
const DATAGRAMS_PER_WAKEUP: usize = 64;
/// Most distinct function names: each stays in the policy's tables.
const MAX_FUNCTIONS: usize = 4096;
/// Descriptors kept for everything else (epoll, signalfd, socket, files).
const SPARE_FDS: usize = 64;

/// How to run the agent.
#[derive(Clone, Debug)]
pub struct Config {
    /// The stream socket to listen on; the datagram socket
    /// ([`protocol::datagram_path`]) and the state file go beside it.
    pub socket: PathBuf,
    /// The cores the policy steers.
    pub cpus: CpuSet,
    /// RLIMIT_RTTIME (µs) set on every steered process when the policy may
    /// make processes real-time (`None`: it never does): the backstop that
    /// stops a real-time process that runs away while no agent watches.
    pub rt_time_limit_us: Option<u64>,
}

/// Why the agent stopped other than by a signal.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Another agent answers on the socket.
    #[error("another faasched agent is listening on {0}")]
    Running(PathBuf),
    /// Something that is not a socket is in the way.
    #[error("{0} exists and is not a socket: remove it or choose another --socket")]
    NotASocket(PathBuf),
    /// A system call the agent needs failed.
    #[error("{what}: {error}")]
    System {
        /// What was being done.
        what: String,
        /// The error (not a `source`: the message holds it).
        error: io::Error,
    },
    /// Steering could not start.
    #[error(transparent)]
    Steer(#[from] SteerError),
    /// The state file could not be trusted or read.
    #[error(transparent)]
    State(#[from] StateError),
}

fn system(what: impl Into<String>) -> impl FnOnce(io::Error) -> AgentError {
    let what = what.into();
    move |error| AgentError::System { what, error }
}

/// What the agent did, for its log.
#[derive(Debug)]
pub enum Event<'a> {
    /// It listens, with `adopted` processes re-adopted from its state file.
    Listening {
        /// The socket.
        socket: &'a Path,
        /// The state file.
        state: &'a Path,
        /// Processes re-adopted.
        adopted: usize,
    },
    /// A client handed a process over.
    Registered {
        /// The process.
        pid: libc::pid_t,
        /// Its task.
        task: u64,
        /// Its function.
        function: &'a str,
        /// The client's uid.
        uid: u32,
    },
    /// A process of the state file was not re-adopted.
    Dropped {
        /// The process.
        pid: libc::pid_t,
        /// Why.
        why: &'a str,
    },
    /// A request was refused.
    Refused {
        /// The client's pid and uid.
        client: PeerCred,
        /// Why.
        why: &'a str,
    },
    /// An invocation finished (its process exited or was unregistered).
    Finished {
        /// Its outcome, as the policy got it.
        outcome: &'a Outcome,
        /// `false` if the process was reaped before its final reading.
        exact: bool,
    },
    /// Requests refused in the last second beyond the
    /// [`REFUSALS_LOGGED_PER_SECOND`] that were logged.
    Unlogged {
        /// How many.
        refusals: u64,
    },
    /// Something went wrong that does not stop the agent.
    Warning(String),
}

/// Refusals logged in any one second: a client flooding the agent with bad
/// requests (any local user may send them) must not flood its log too; the
/// rest are counted ([`Event::Unlogged`], [`Summary::refused`]).
pub const REFUSALS_LOGGED_PER_SECOND: u64 = 20;

impl Event<'_> {
    /// Whether this happens once per invocation (worth logging only when
    /// asked: the log would cost more than the steering).
    pub fn routine(&self) -> bool {
        matches!(self, Event::Registered { .. } | Event::Finished { .. })
    }
}

impl fmt::Display for Event<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Listening {
                socket,
                state,
                adopted,
            } => write!(
                f,
                "listening on {} (state in {}; {adopted} processes re-adopted)",
                socket.display(),
                state.display()
            ),
            Event::Registered {
                pid,
                task,
                function,
                uid,
            } => write!(f, "task {task}: pid {pid} ({function}) from uid {uid}"),
            Event::Dropped { pid, why } => write!(f, "not re-adopting pid {pid}: {why}"),
            Event::Refused { client, why } => write!(
                f,
                "refused a request from pid {} (uid {}): {why}",
                client.pid, client.uid
            ),
            Event::Finished { outcome: o, exact } => {
                write!(
                    f,
                    "task {} ({}) finished: {:.1} ms, {:.1} ms CPU",
                    o.id,
                    o.function,
                    fmt_ms(o.turnaround()),
                    fmt_ms(o.cpu)
                )?;
                if !exact {
                    f.write_str(" (reaped before its last reading: CPU time from an earlier one)")?;
                }
                Ok(())
            }
            Event::Unlogged { refusals } => write!(
                f,
                "{refusals} more requests refused in the last second (not logged one by one)"
            ),
            Event::Warning(w) => f.write_str(w),
        }
    }
}

/// What the agent did over its life.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// The signal that stopped it.
    pub signal: i32,
    /// Processes handed over (re-adopted ones included).
    pub registered: u64,
    /// Invocations finished.
    pub finished: u64,
    /// Of those, outcomes from an earlier reading (see [`Status::estimated`]).
    pub estimated: u64,
    /// Requests refused.
    pub refused: u64,
    /// CPU time of the agent's thread.
    pub cpu: Nanos,
    /// What steering did (its own CPU share is not counted in the agent:
    /// see [`Steering::count_cpu`]).
    pub steering: SteerStats,
}

const SIGNALS: u64 = u64::MAX;
const LISTENER: u64 = u64::MAX - 1;
const DATAGRAMS: u64 = u64::MAX - 2;
/// Tokens with this bit are clients; the others below it are tasks.
const CLIENT: u64 = 1 << 62;

/// Listens on `config.socket` and steers the processes handed over there
/// with `policy` until a terminating signal (SIGINT, SIGTERM, SIGHUP,
/// SIGQUIT) arrives; `log` hears what it does. Re-adopts the processes a
/// previous agent on the same socket left in its state file.
pub fn serve<P: Steer + ?Sized>(
    config: &Config,
    policy: &mut P,
    log: impl FnMut(Event<'_>),
) -> Result<Summary, AgentError> {
    let cpu = clock::thread_cpu();
    let mut signals = Signals::block().map_err(system("blocking termination signals"))?;
    let fds = limits::raise_open_files(1 << 20).map_err(system("RLIMIT_NOFILE"))? as usize;
    let max_processes = (fds.saturating_sub(SPARE_FDS + MAX_CLIENTS) / 2).min(MAX_PROCESSES);
    let pid = std::process::id() as libc::pid_t;
    check_kernel(pid)?;
    let kthreadd = target::kthreadd().map_err(system("reading /proc/2/stat"))?;
    // The datagram socket first: a client may hand over as soon as the
    // stream socket takes connections.
    let datagrams = Socket::<UnixDatagram>::bind(&protocol::datagram_path(&config.socket))?;
    let socket = Socket::<UnixListener>::bind(&config.socket)?;
    let state = StateFile::beside(&config.socket);
    let saved = state.load()?;
    let poll = Poll::new().map_err(system("epoll"))?;
    poll.add(signals.fd(), SIGNALS).map_err(system("epoll"))?;
    poll.add(socket.socket.as_fd(), LISTENER)
        .map_err(system("epoll"))?;
    poll.add(datagrams.socket.as_fd(), DATAGRAMS)
        .map_err(system("epoll"))?;
    let origin = clock::monotonic();
    let mut steering = Steering::new(policy, config.cpus, Timeline::new(origin, 0), origin)?;
    // Children of a steered process are not steered: they start under the
    // kernel's defaults, never in a real-time class.
    steering.reset_on_fork(true);
    // The agent's own CPU time is what counts (Summary::cpu); per call it
    // would cost more system calls than the call.
    steering.count_cpu(false);
    let mut agent = Agent {
        config,
        steering,
        poll,
        registry: Registry {
            steered: HashMap::new(),
            by_pid: HashMap::new(),
            state,
        },
        clients: HashMap::new(),
        next_client: 0,
        functions: Functions::new(),
        per_function: Vec::new(),
        next_task: 0,
        summary: Summary::default(),
        max_processes,
        origin,
        pid,
        kthreadd,
        log,
        refusals: (origin, 0, 0),
    };
    let adopted = saved
        .into_iter()
        .filter(|e| agent.readopt(e.clone()))
        .count();
    let registry = &mut agent.registry;
    let written = registry
        .state
        .rewrite(registry.steered.values().map(|s| &s.entry));
    agent.persisted(written);
    let state = agent.registry.state.path().to_path_buf();
    (agent.log)(Event::Listening {
        socket: &config.socket,
        state: &state,
        adopted,
    });
    let signal = agent.run(&mut signals, &socket.socket, &datagrams.socket)?;
    for (pid, e) in agent.registry.release_all() {
        agent.warn(format!("giving pid {pid} back its attributes: {e}"));
    }
    agent.summary.signal = signal;
    agent.summary.steering = agent.steering.stats().clone();
    agent.summary.cpu = clock::thread_cpu() - cpu;
    Ok(agent.summary.clone())
}

/// Fails unless the kernel answers `PIDFD_GET_INFO` (Linux 6.13): the
/// checks read a process's credentials from its pidfd, and the state file
/// names it by its pidfs inode (Linux 6.9, implied). Any other error is the
/// agent's own process's (its parent outside its pid namespace), not the
/// kernel's.
fn check_kernel(pid: libc::pid_t) -> Result<(), AgentError> {
    let me = process::pidfd_open(pid).map_err(system("pidfd_open"))?;
    match pidfd::info(me.as_fd()) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTTY | libc::EINVAL)) => Err(system(
            "PIDFD_GET_INFO on a pidfd (the agent needs Linux 6.13 or later)",
        )(e)),
        _ => Ok(()),
    }
}

/// A socket the agent binds: the stream socket it listens on, or the
/// datagram socket beside it. Removed when dropped, if it is still ours.
struct Socket<S> {
    socket: S,
    path: PathBuf,
    inode: (u64, u64),
}

/// The kinds of socket the agent binds.
trait Bind: Sized {
    /// A socket of this kind bound to `path`, non-blocking.
    fn bind(path: &Path) -> io::Result<Self>;
    /// Connects to `path` as a client of this kind would: an error
    /// (`ConnectionRefused`) if no socket is bound there any more.
    fn probe(path: &Path) -> io::Result<()>;
}

impl Bind for UnixListener {
    fn bind(path: &Path) -> io::Result<Self> {
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        Ok(listener)
    }

    fn probe(path: &Path) -> io::Result<()> {
        UnixStream::connect(path).map(drop)
    }
}

impl Bind for UnixDatagram {
    /// With `SO_PASSCRED`: each request carries its sender's credentials.
    fn bind(path: &Path) -> io::Result<Self> {
        dgram::bind(path)
    }

    fn probe(path: &Path) -> io::Result<()> {
        UnixDatagram::unbound()?.connect(path)
    }
}

impl<S: Bind> Socket<S> {
    /// Binds `path` (mode 0666: any user may connect, and the credentials
    /// decide what it may do), creating its directory (0755) if missing and
    /// replacing a stale socket that no agent answers on.
    fn bind(path: &Path) -> Result<Socket<S>, AgentError> {
        let shown = path.display();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.exists()
        {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(dir)
                .map_err(system(format!("creating {}", dir.display())))?;
        }
        match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() => match S::probe(path) {
                Ok(()) => return Err(AgentError::Running(path.to_path_buf())),
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    fs::remove_file(path).map_err(system(format!("removing stale {shown}")))?
                }
                Err(e) => return Err(system(format!("checking {shown}"))(e)),
            },
            Ok(_) => return Err(AgentError::NotASocket(path.to_path_buf())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(system(format!("checking {shown}"))(e)),
        }
        let socket = S::bind(path).map_err(system(format!("binding {shown}")))?;
        let meta = fs::metadata(path).map_err(system(format!("checking {shown}")))?;
        let socket = Socket {
            socket,
            path: path.to_path_buf(),
            inode: (meta.dev(), meta.ino()),
        };
        fs::set_permissions(path, fs::Permissions::from_mode(0o666))
            .map_err(system(format!("chmod {shown}")))?;
        Ok(socket)
    }
}

impl<S> Drop for Socket<S> {
    fn drop(&mut self) {
        if fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.inode) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A process the agent steers.
struct Steered {
    /// What the state file keeps of it.
    entry: Entry,
    function: Function,
    pidfd: OwnedFd,
    /// When it was handed over (monotonic).
    since: Nanos,
    /// Its latest schedstat reading (since it was handed over): what its
    /// outcome holds if it is reaped before the agent reads it at its exit.
    last: SchedstatReading,
}

impl Steered {
    fn task(&self) -> TaskId {
        TaskId(self.entry.task)
    }

    /// Gives the process back what it ran under, unless it has exited (its
    /// pid may name another process by now).
    fn release(&self) -> io::Result<()> {
        if process::exited(&self.pidfd)? {
            return Ok(());
        }
        match self.entry.before.restore(self.entry.pid) {
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
            r => r,
        }
    }
}

/// The steered processes. Dropping it gives each back what it ran under and
/// removes the state file, whatever the path out of [`serve`].
struct Registry {
    steered: HashMap<TaskId, Steered>,
    by_pid: HashMap<libc::pid_t, TaskId>,
    state: StateFile,
}

impl Registry {
    fn insert(&mut self, s: Steered) {
        self.by_pid.insert(s.entry.pid, s.task());
        self.steered.insert(s.task(), s);
    }

    fn remove(&mut self, task: TaskId) -> Option<Steered> {
        let s = self.steered.remove(&task)?;
        self.by_pid.remove(&s.entry.pid);
        Some(s)
    }

    /// Releases every process; returns those that could not be.
    fn release_all(&mut self) -> Vec<(libc::pid_t, io::Error)> {
        let failed = self
            .steered
            .drain()
            .filter_map(|(_, s)| s.release().err().map(|e| (s.entry.pid, e)))
            .collect();
        self.by_pid.clear();
        let _ = self.state.delete();
        failed
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.release_all();
    }
}

/// Which socket a request came on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// A line on a connection to the stream socket.
    Stream,
    /// A datagram on the datagram socket.
    Datagram,
}

/// A connected client.
struct Conn {
    stream: UnixStream,
    cred: PeerCred,
    /// Bytes read and not yet a whole line.
    buf: Vec<u8>,
    /// When it last sent something (or connected).
    active: Nanos,
}

#[derive(Clone, Debug, Default)]
struct FunctionStats {
    live: u64,
    finished: u64,
    cpu: Nanos,
    latest: Option<Sched>,
}

struct Agent<'c, 'p, P: Steer + ?Sized, L> {
    config: &'c Config,
    steering: Steering<'p, P>,
    poll: Poll,
    registry: Registry,
    clients: HashMap<u64, Conn>,
    next_client: u64,
    functions: Functions,
    /// By function id.
    per_function: Vec<FunctionStats>,
    next_task: u64,
    summary: Summary,
    max_processes: usize,
    origin: Nanos,
    /// The agent's own pid.
    pid: libc::pid_t,
    /// The parent of every kernel thread ([`target::kthreadd`]).
    kthreadd: Option<libc::pid_t>,
    log: L,
    /// The second refusals are being counted in: its start, the refusals
    /// logged in it and those not.
    refusals: (Nanos, u64, u64),
}

impl<P: Steer + ?Sized, L: FnMut(Event<'_>)> Agent<'_, '_, P, L> {
    /// Serves until a terminating signal, which it returns.
    fn run(
        &mut self,
        signals: &mut Signals,
        listener: &UnixListener,
        datagrams: &UnixDatagram,
    ) -> Result<i32, AgentError> {
        loop {
            let mut now = clock::monotonic();
            // Only when due: each call reads the thread's CPU clock twice,
            // a system call each, and most wake-ups are a client's or an
            // exit.
            if self.steering.deadline().is_some_and(|d| d <= now) {
                if let Err(e) = self.steering.act(now) {
                    self.warn(e.to_string());
                }
                now = clock::monotonic();
            }
            let timeout = self.steering.deadline().map(|d| d.saturating_sub(now));
            for token in self.poll.wait(timeout).map_err(system("epoll_pwait2"))? {
                match token {
                    SIGNALS => {
                        if let Some(sig) = signals.take().map_err(system("reading the signalfd"))? {
                            return Ok(sig);
                        }
                    }
                    LISTENER => self.accept(listener),
                    DATAGRAMS => self.datagrams(datagrams),
                    t if t & CLIENT != 0 => self.converse(t & !CLIENT),
                    t => self.exited(TaskId(t)),
                }
            }
        }
    }

    fn warn(&mut self, what: String) {
        (self.log)(Event::Warning(what));
    }

    /// Warns if the state file could not be written.
    fn persisted(&mut self, written: io::Result<()>) {
        if let Err(e) = written {
            let path = self.registry.state.path().display().to_string();
            self.warn(format!(
                "writing {path}: {e} (a restarted agent would not re-adopt)"
            ));
        }
    }

    /// Accepts one client: if more wait, the listener stays ready and the
    /// next wait returns at once, without the failed `accept` that would
    /// otherwise end each wake-up.
    fn accept(&mut self, listener: &UnixListener) {
        let stream = match peercred::accept(listener) {
            Ok(stream) => stream,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return,
            Err(e) => return self.warn(format!("accepting a client: {e}")),
        };
        if self.clients.len() >= MAX_CLIENTS && !self.evict_idlest() {
            return; // closed: the client sees its connection end
        }
        let Ok(cred) = peer_cred(&stream) else {
            return;
        };
        let id = self.next_client;
        self.next_client += 1;
        if self.poll.add(stream.as_fd(), CLIENT | id).is_ok() {
            let (buf, active) = (Vec::new(), clock::monotonic());
            self.clients.insert(
                id,
                Conn {
                    stream,
                    cred,
                    buf,
                    active,
                },
            );
            // A client writes as soon as it connects, and a one-shot one
            // (`faasched exec`) shuts its side right after: read now, and
            // the request and its end are often served in this one wake-up.
            self.converse(id);
        }
    }

    /// Closes the connection idle the longest if it has been idle
    /// [`IDLE_EVICTABLE`] or more; whether it did.
    fn evict_idlest(&mut self) -> bool {
        let now = clock::monotonic();
        let idlest = self
            .clients
            .iter()
            .min_by_key(|(_, c)| c.active)
            .filter(|(_, c)| now.saturating_sub(c.active) >= IDLE_EVICTABLE)
            .map(|(&id, _)| id);
        // Closed with its descriptor, which leaves the epoll set with it.
        idlest.is_some_and(|id| self.clients.remove(&id).is_some())
    }

    /// Reads what client `id` sent, answers each whole line, and closes the
    /// connection at its end, on an error, or on a request too long.
    fn converse(&mut self, id: u64) {
        let Some(mut conn) = self.clients.remove(&id) else {
            return;
        };
        // A connection closed is out of the epoll set with its descriptor.
        if self.converse_with(&mut conn) {
            self.clients.insert(id, conn);
        }
    }

    /// Whether the connection stays open.
    fn converse_with(&mut self, conn: &mut Conn) -> bool {
        let mut open = true;
        let mut chunk = [0u8; 1024];
        while conn.buf.len() <= MAX_REQUEST {
            match conn.stream.read(&mut chunk) {
                Ok(0) => {
                    open = false;
                    break;
                }
                Ok(n) => {
                    conn.buf.extend_from_slice(&chunk[..n]);
                    conn.active = clock::monotonic();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => return false,
            }
        }
        while let Some(end) = conn.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = conn.buf.drain(..=end).collect();
            let response = self.answer(conn.cred, &line[..end], Via::Stream);
            if !reply(&mut conn.stream, &response) {
                return false;
            }
        }
        if conn.buf.len() > MAX_REQUEST {
            let response = self.too_long(conn.cred);
            reply(&mut conn.stream, &response);
            return false;
        }
        open
    }

    /// Answers the requests waiting on the datagram socket, each with one
    /// datagram to its sender: none if the sender has no address, or if its
    /// queue or the agent's send buffer is full (the agent never waits on a
    /// client). At most [`DATAGRAMS_PER_WAKEUP`].
    fn datagrams(&mut self, socket: &UnixDatagram) {
        let mut buf = [0u8; MAX_REQUEST];
        for _ in 0..DATAGRAMS_PER_WAKEUP {
            let datagram = match dgram::recv_with_cred(socket, &mut buf) {
                Ok(Some(d)) => d,
                // No credentials: dropped (it does not happen: SO_PASSCRED
                // is set before the socket is bound).
                Ok(None) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.warn(format!("reading a request datagram: {e}")),
            };
            let response = match datagram.too_long {
                true => self.too_long(datagram.cred),
                false => self.answer(datagram.cred, &buf[..datagram.len], Via::Datagram),
            };
            if let Some(to) = &datagram.from
                && let Ok(line) = protocol::line(&response)
            {
                let _ = dgram::send_to(socket, &line, to);
            }
        }
    }

    /// Counts a refusal and logs it, unless
    /// [`REFUSALS_LOGGED_PER_SECOND`] were logged this second already.
    fn refuse(&mut self, client: PeerCred, why: &str) {
        self.summary.refused += 1;
        let now = clock::monotonic();
        let (since, logged, unlogged) = &mut self.refusals;
        if now >= *since + SEC {
            if *unlogged > 0 {
                (self.log)(Event::Unlogged {
                    refusals: *unlogged,
                });
            }
            (*since, *logged, *unlogged) = (now, 0, 0);
        }
        if *logged < REFUSALS_LOGGED_PER_SECOND {
            *logged += 1;
            (self.log)(Event::Refused { client, why });
        } else {
            *unlogged += 1;
        }
    }

    /// Refuses a request longer than [`MAX_REQUEST`].
    fn too_long(&mut self, cred: PeerCred) -> Response {
        let why = format!("request longer than {MAX_REQUEST} bytes");
        self.refuse(cred, &why);
        Response::error(why)
    }

    /// Carries out one request (a line on the stream, or a datagram) from a
    /// client with credentials `cred`, and says how it went.
    fn answer(&mut self, cred: PeerCred, request: &[u8], via: Via) -> Response {
        let answer = match serde_json::from_slice::<Request>(request) {
            Err(e) => Err(format!("malformed request: {e}")),
            Ok(Request::Register { pid, function }) => self
                .register(cred, pid, &function)
                .map(|t| Response::task(t.0)),
            Ok(Request::Unregister { pid }) => {
                self.unregister(cred, pid).map(|t| Response::task(t.0))
            }
            Ok(Request::Status) if via == Via::Datagram => Err(format!(
                "status is answered on the stream socket only ({}): its answer may not fit in a datagram",
                self.config.socket.display()
            )),
            Ok(Request::Status) => Ok(Response {
                ok: true,
                status: Some(self.status()),
                ..Response::default()
            }),
        };
        answer.unwrap_or_else(|why| {
            self.refuse(cred, &why);
            Response::error(why)
        })
    }

    /// The task already steering `pid`, unless its process has exited
    /// (then its exit is handled now: the pid may have been reused since).
    fn steering_pid(&mut self, pid: libc::pid_t) -> Option<TaskId> {
        let task = *self.registry.by_pid.get(&pid)?;
        let s = &self.registry.steered[&task];
        if process::exited(&s.pidfd).unwrap_or(true) {
            self.exited(task);
            return None;
        }
        Some(task)
    }

    fn register(
        &mut self,
        cred: PeerCred,
        pid: libc::pid_t,
        function: &str,
    ) -> Result<TaskId, String> {
        if function.is_empty()
            || function.len() > MAX_FUNCTION_NAME
            || function.chars().any(char::is_control)
        {
            return Err(format!(
                "a function name is 1 to {MAX_FUNCTION_NAME} bytes, no control characters"
            ));
        }
        if pid <= 1 {
            return Err(format!("pid {pid} cannot be handed over"));
        }
        if pid == self.pid {
            return Err(format!("pid {pid} is the agent itself"));
        }
        let kernel_thread = || format!("pid {pid} is a kernel thread");
        if Some(pid) == self.kthreadd {
            return Err(kernel_thread());
        }
        if let Some(task) = self.steering_pid(pid) {
            let s = &self.registry.steered[&task];
            return Err(format!(
                "pid {pid} is steered already, as task {} ({})",
                task.0, s.function
            ));
        }
        if self.registry.steered.len() >= self.max_processes {
            return Err(format!(
                "the agent steers {} processes, its most",
                self.max_processes
            ));
        }
        // The pidfd first: the checks below count only if its process still
        // runs after them (invariant 2).
        let pidfd = process::pidfd_open(pid).map_err(|e| match e.raw_os_error() {
            Some(libc::ESRCH) => format!("no process {pid}"),
            Some(libc::EINVAL) => {
                format!("{pid} is a thread, not a process: hand over its process id")
            }
            _ => format!("pidfd_open({pid}): {e}"),
        })?;
        let gone = || format!("no process {pid} (it exited)");
        // ESRCH also when its parent is outside the agent's pid namespace.
        let info = pidfd::info(pidfd.as_fd()).map_err(|e| match process::exited(&pidfd) {
            Ok(false) => format!("reading the credentials of pid {pid}: {e}"),
            _ => gone(),
        })?;
        if Some(info.ppid) == self.kthreadd {
            return Err(kernel_thread());
        }
        if !target::may_hand_over(cred.uid, info.uids) {
            return Err(format!(
                "permission denied: pid {pid} runs as uid {} (effective {}), and a client running as uid {} may hand over only its own processes",
                info.uids[0], info.uids[1], cred.uid
            ));
        }
        let inode = pidfd::inode(pidfd.as_fd()).map_err(|e| format!("fstat of a pidfd: {e}"))?;
        if process::exited(&pidfd).unwrap_or(true) {
            return Err(gone());
        }
        let before = target::Before::capture(pid)
            .map_err(|e| format!("reading the scheduling attributes of pid {pid}: {e}"))?;
        let function = self.intern(function)?;
        let task = TaskId(self.next_task);
        self.next_task += 1;
        let entry = Entry {
            pid,
            inode,
            function: function.name.to_string(),
            task: task.0,
            uid: cred.uid,
            before,
        };
        self.admit(entry, function, pidfd)?;
        (self.log)(Event::Registered {
            pid,
            task: task.0,
            function: &self.registry.steered[&task].function.name,
            uid: cred.uid,
        });
        Ok(task)
    }

    /// Takes on a process of the state file if its pid still names it.
    fn readopt(&mut self, entry: Entry) -> bool {
        let pid = entry.pid;
        let result = (|| {
            if self.registry.by_pid.contains_key(&pid)
                || self.registry.steered.contains_key(&TaskId(entry.task))
            {
                return Err("listed twice".to_string());
            }
            let pidfd = still_there(&entry)?;
            let function = self.intern(&entry.function)?;
            self.next_task = self.next_task.max(entry.task + 1);
            self.admit(entry, function, pidfd)
        })();
        if let Err(why) = &result {
            (self.log)(Event::Dropped { pid, why });
        }
        result.is_ok()
    }

    fn intern(&mut self, name: &str) -> Result<Function, String> {
        if let Some(f) = self.functions.find(name) {
            return Ok(f.clone());
        }
        if self.functions.len() >= MAX_FUNCTIONS {
            return Err(format!(
                "the agent knows {MAX_FUNCTIONS} functions, its most"
            ));
        }
        let f = self.functions.intern(name);
        self.per_function.push(FunctionStats::default());
        Ok(f)
    }

    /// Steers a process that passed the checks: the policy's attributes (and
    /// RLIMIT_RTTIME if it may make it real-time), then its watches. On
    /// failure the process gets back what it had and the policy sees the
    /// task end.
    fn admit(
        &mut self,
        mut entry: Entry,
        function: Function,
        pidfd: OwnedFd,
    ) -> Result<(), String> {
        let (pid, task) = (entry.pid, TaskId(entry.task));
        let since = clock::monotonic();
        if let Some(limit) = self.config.rt_time_limit_us {
            entry
                .before
                .limit_rt_time(pid, limit)
                .map_err(|e| format!("setting RLIMIT_RTTIME of pid {pid}: {e}"))?;
        }
        let info = TaskInfo {
            task,
            function: function.id,
            arrival: self.steering.timeline().time(since),
            memory_mb: 0,
            deadline: None,
        };
        let steered = self
            .steering
            .arrive(&info)
            .map_err(|e| e.to_string())
            .and_then(|prepared| {
                prepared
                    .apply(pid)
                    .map_err(|e| format!("setting the scheduling attributes of pid {pid}: {e}"))
            })
            .and_then(|()| {
                self.steering
                    .adopt(task, pid, since)
                    .map_err(|e| e.to_string())
            })
            .and_then(|()| {
                self.steering
                    .started(task, since)
                    .map_err(|e| e.to_string())
            })
            .and_then(|()| {
                self.poll
                    .add(pidfd.as_fd(), task.0)
                    .map_err(|e| format!("epoll: {e}"))
            });
        if let Err(why) = steered {
            let _ = entry.before.restore(pid);
            let outcome = self.outcome(task, &function, since, since, SchedstatReading::default());
            self.steering.exited(task, &outcome);
            return Err(why);
        }
        let stats = &mut self.per_function[function.id.0 as usize];
        stats.live += 1;
        stats.latest = sched::current(pid).ok().map(Sched::from);
        let written = self.registry.state.add(&entry);
        self.registry.insert(Steered {
            entry,
            function,
            pidfd,
            since,
            last: SchedstatReading::default(),
        });
        self.summary.registered += 1;
        self.persisted(written);
        Ok(())
    }

    fn unregister(&mut self, cred: PeerCred, pid: libc::pid_t) -> Result<TaskId, String> {
        let Some(&task) = self.registry.by_pid.get(&pid) else {
            return Err(format!("pid {pid} is not steered"));
        };
        let s = &self.registry.steered[&task];
        let owner = pidfd::info(s.pidfd.as_fd()).map_or([0; 4], |i| i.uids);
        if cred.uid != 0 && cred.uid != s.entry.uid && !target::may_hand_over(cred.uid, owner) {
            return Err(format!(
                "permission denied: pid {pid} was handed over by uid {}, and a client running as uid {} may end only its own",
                s.entry.uid, cred.uid
            ));
        }
        if process::exited(&s.pidfd).unwrap_or(true) {
            self.exited(task);
            return Ok(task);
        }
        if let Some(s) = self.registry.remove(task) {
            let released = s.release();
            self.finish(s);
            if let Err(e) = released {
                self.warn(format!("giving pid {pid} back its attributes: {e}"));
            }
        }
        Ok(task)
    }

    /// A steered process exited. (Its pidfd leaves the epoll set when it is
    /// closed, with the rest of `Steered`.)
    fn exited(&mut self, task: TaskId) {
        if let Some(s) = self.registry.remove(task) {
            self.finish(s);
        }
    }

    /// An invocation is over: its outcome to the policy and the log.
    fn finish(&mut self, s: Steered) {
        let task = s.task();
        let now = clock::monotonic();
        // Readable until the process is reaped by its parent, which races
        // with this; otherwise the last reading stands in.
        let reading = self.steering.reading(task);
        let exact = reading.is_some();
        let outcome = self.outcome(task, &s.function, s.since, now, reading.unwrap_or(s.last));
        self.steering.exited(task, &outcome);
        let stats = &mut self.per_function[s.function.id.0 as usize];
        stats.live -= 1;
        stats.finished += 1;
        stats.cpu += outcome.cpu;
        self.summary.finished += 1;
        self.summary.estimated += u64::from(!exact);
        (self.log)(Event::Finished {
            outcome: &outcome,
            exact,
        });
        let registry = &mut self.registry;
        let live = registry.steered.values().map(|s| &s.entry);
        let written = registry.state.remove(task.0, live);
        self.persisted(written);
    }

    /// The outcome of an invocation handed over at `since` and over at
    /// `now`: it ran from the handover (it was running), and the time it
    /// neither ran nor waited for a core was spent blocked.
    ///
    /// Its switches are schedstat's turns on a core, all counted as
    /// voluntary: each turn ended in a switch away, blocked, exited or
    /// preempted, and only `/proc/PID/status`, formatted whole at each read,
    /// tells which (docs/LIVE.md, "Overhead"). Exact for a process never
    /// preempted; otherwise an upper bound on its blocks, which `alps-io`
    /// then reads as more, shorter bursts.
    fn outcome(
        &self,
        task: TaskId,
        function: &Function,
        since: Nanos,
        now: Nanos,
        r: SchedstatReading,
    ) -> Outcome {
        let timeline = self.steering.timeline();
        let arrival = timeline.time(since);
        Outcome {
            id: task.0,
            function: function.clone(),
            group: Group::of(r.cpu),
            arrival,
            first_run: arrival,
            finish: timeline.time(now),
            cpu: r.cpu,
            io: (now - since).saturating_sub(r.cpu).saturating_sub(r.wait),
            voluntary_switches: r.turns,
            involuntary_switches: 0,
            memory_mb: 0,
        }
    }

    fn status(&mut self) -> Status {
        let now = clock::monotonic();
        let us = |ns: Nanos| ns / 1000;
        let mut tasks: Vec<TaskId> = self.registry.steered.keys().copied().collect();
        tasks.sort();
        let mut processes = Vec::with_capacity(tasks.len());
        for task in tasks {
            let s = self.registry.steered.get_mut(&task).expect("listed above");
            if let Some(r) = self.steering.reading(task) {
                s.last = r;
            }
            let alive = !process::exited(&s.pidfd).unwrap_or(true);
            processes.push(ProcessStatus {
                pid: s.entry.pid,
                task: task.0,
                function: s.function.name.to_string(),
                uid: s.entry.uid,
                age_us: us(now - s.since),
                cpu_us: us(s.last.cpu),
                sched: alive
                    .then(|| sched::current(s.entry.pid).ok().map(Sched::from))
                    .flatten(),
            });
        }
        let functions = self
            .functions
            .iter()
            .zip(&self.per_function)
            .map(|(f, st)| FunctionStatus {
                name: f.name.to_string(),
                live: st.live,
                finished: st.finished,
                mean_cpu_us: us(st.cpu / st.finished.max(1)),
                latest: st.latest.clone(),
            })
            .collect();
        let s = &self.summary;
        Status {
            pid: self.pid as u32,
            policy: self.steering.policy_name().to_string(),
            socket: self.config.socket.display().to_string(),
            uptime_us: us(now - self.origin),
            cpu_us: us(clock::thread_cpu()),
            registered: s.registered,
            finished: s.finished,
            estimated: s.estimated,
            refused: s.refused,
            functions,
            processes,
        }
    }
}

/// A pidfd for the process of a state file's `entry` if its pid still names
/// it (the pidfs inode tells a reused pid), else why not.
fn still_there(entry: &Entry) -> Result<OwnedFd, String> {
    let gone = |_| "it has exited".to_string();
    let pidfd = process::pidfd_open(entry.pid).map_err(gone)?;
    if pidfd::inode(pidfd.as_fd()).map_err(gone)? != entry.inode {
        return Err("its pid names another process now".to_string());
    }
    if process::exited(&pidfd).unwrap_or(true) {
        return Err("it has exited".to_string());
    }
    Ok(pidfd)
}

/// Watches the agent `agent` serving on `socket` from another process, and
/// once it has ended, however it ended, gives every process its state file
/// still lists back what it ran under before (never a real-time class).
/// An agent that stops cleanly has done so and removed the file, so this
/// does nothing; one killed outright (SIGKILL, or SIGXCPU from its own
/// RLIMIT_RTTIME) leaves the file, and its processes, real-time perhaps,
/// would otherwise stay as it steered them until another agent started. The
/// file stays: an agent started later re-adopts them and steers them again.
/// Returns the processes given back; `log` hears of each one that could not
/// be.
pub fn guard(
    socket: &Path,
    agent: libc::pid_t,
    mut log: impl FnMut(libc::pid_t, &str),
) -> Result<usize, AgentError> {
    let pidfd = process::pidfd_open(agent).map_err(system("watching the agent"))?;
    // A pidfd is readable once its process has ended.
    let mut poll = Poll::new().map_err(system("epoll"))?;
    poll.add(pidfd.as_fd(), 0).map_err(system("epoll"))?;
    while !process::exited(&pidfd).map_err(system("watching the agent"))? {
        match poll.wait(None) {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                return Err(system("waiting for the agent to end")(e));
            }
            _ => {}
        }
    }
    let mut restored = 0;
    for entry in StateFile::beside(socket).load()? {
        let given_back = still_there(&entry).and_then(|_pidfd| {
            entry
                .before
                .restore(entry.pid)
                .map_err(|e| format!("restoring its attributes: {e}"))
        });
        match given_back {
            Ok(()) => restored += 1,
            Err(why) => log(entry.pid, &why),
        }
    }
    Ok(restored)
}

/// Writes one response line; `false` if the client is gone or does not read
/// (the socket is non-blocking: the agent never waits on a client). A long
/// line (a status of thousands of processes) first gets room in the
/// socket's send buffer, which it would not fit by default.
fn reply(stream: &mut UnixStream, response: &Response) -> bool {
    let Ok(line) = protocol::line(response) else {
        return false;
    };
    if line.len() > ROOMY_REPLY {
        let _ = sockopt::make_room(&*stream, line.len());
    }
    stream.write_all(&line).is_ok()
}

/// Replies up to this long fit any socket's default send buffer.
const ROOMY_REPLY: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_reply_longer_than_the_send_buffer_is_queued_whole() {
        let (mut agent_end, mut client) = UnixStream::pair().unwrap();
        agent_end.set_nonblocking(true).unwrap();
        // A status of thousands of processes: far past the default buffer.
        let long = Response::error("x".repeat(600_000));
        assert!(reply(&mut agent_end, &long));
        drop(agent_end);
        let mut got = Vec::new();
        client.read_to_end(&mut got).unwrap();
        assert_eq!(got, protocol::line(&long).unwrap());
    }
}
