//! The serve loop: one thread, one wait (`epoll_pwait2`), as in replay.

use super::core::{Agent, MAX_CLIENTS};
use super::event::{Event, Summary};
use super::protocol::{self, FunctionStatus, ProcessStatus, Sched, Status};
use super::registry::Registry;
use super::socket::Socket;
use super::state::StateFile;
use super::throttle::Throttle;
use super::tokens::{CLIENT, DATAGRAMS, LISTENER, SIGNALS, TIMERS};
use super::{AgentError, Config, system, target};
use crate::os::steering::{Steering, Timeline};
use crate::sys::clock;
use crate::sys::limits;
use crate::sys::pidfd;
use crate::sys::poll::Poll;
use crate::sys::process;
use crate::sys::sched;
use crate::sys::signals::Signals;
use faasched_model::{Functions, Nanos, Steer, TaskId};
use std::collections::HashMap;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::net::{UnixDatagram, UnixListener};

/// Most processes steered at once (each holds two descriptors: its pidfd and
/// schedstat); fewer if the descriptor limit is lower.
const MAX_PROCESSES: usize = 8192;
/// Descriptors kept for everything else (epoll, signalfd, socket, files).
const SPARE_FDS: usize = 64;

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
    poll.add(steering.timers_fd(), TIMERS)
        .map_err(system("epoll"))?;
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
        throttle: Throttle::default(),
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
                    TIMERS => {
                        if let Err(e) = self.steering.timers_fired(clock::monotonic()) {
                            self.warn(e.to_string());
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

    pub(super) fn warn(&mut self, what: String) {
        (self.log)(Event::Warning(what));
    }

    /// Warns if the state file could not be written.
    pub(super) fn persisted(&mut self, written: io::Result<()>) {
        if let Err(e) = written {
            let path = self.registry.state.path().display().to_string();
            self.warn(format!(
                "writing {path}: {e} (a restarted agent would not re-adopt)"
            ));
        }
    }

    pub(super) fn status(&mut self) -> Status {
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
