//! Requests carried out: hand-overs and their checks, re-adoption, ends,
//! and the outcome each invocation gives the policy.

use super::core::{Agent, FunctionStats, Via};
use super::event::Event;
use super::pin::{self, Claim};
use super::protocol::{self, Request, Response, Sched};
use super::registry::{Steered, still_there};
use super::state::Entry;
use super::target;
use crate::os::observe::SchedstatReading;
use crate::sys::clock;
use crate::sys::peercred::PeerCred;
use crate::sys::pidfd;
use crate::sys::process;
use crate::sys::sched;
use faasched_model::{Function, Group, Nanos, Outcome, Steer, TaskId, TaskInfo};
use std::os::fd::{AsFd, OwnedFd};

/// Most distinct function names: each stays in the policy's tables.
const MAX_FUNCTIONS: usize = 4096;

impl<P: Steer + ?Sized, L: FnMut(Event<'_>)> Agent<'_, '_, P, L> {
    /// Carries out one request (a line on the stream, or a datagram) from a
    /// client with credentials `cred`, and says how it went.
    pub(super) fn answer(&mut self, cred: PeerCred, request: &[u8], via: Via<'_>) -> Response {
        let answer = match serde_json::from_slice::<Request>(request) {
            Err(e) => Err(format!("malformed request: {e}")),
            Ok(Request::Register {
                pid,
                inode,
                function,
            }) => {
                let claim = match (inode, via) {
                    (Some(inode), _) => Claim::Inode(inode),
                    (None, Via::Stream(stream)) => Claim::Peer(stream, cred),
                    (None, Via::Datagram) => Claim::Bare,
                };
                self.register(cred, pid, &function, claim)
                    .map(|t| Response::task(t.0))
            }
            Ok(Request::Unregister { pid }) => {
                self.unregister(cred, pid).map(|t| Response::task(t.0))
            }
            Ok(Request::Status {}) if matches!(via, Via::Datagram) => Err(format!(
                "status is answered on the stream socket only ({}): its answer may not fit in a datagram",
                self.config.socket.display()
            )),
            Ok(Request::Status {}) => Ok(Response {
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
        claim: Claim<'_>,
    ) -> Result<TaskId, String> {
        protocol::check_function_name(function)?;
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
        // Which process the client chose: a pid alone is not trusted.
        let pinned = pin::pinned(pid, claim)?;
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
        // The pidfd first, of the process the client chose (invariant 2):
        // the checks below count only if its process still runs after them.
        let pidfd = process::pidfd_open(pid).map_err(|e| match e.raw_os_error() {
            Some(libc::ESRCH) => format!("no process {pid}"),
            Some(libc::EINVAL) => {
                format!("{pid} is a thread, not a process: hand over its process id")
            }
            _ => format!("pidfd_open({pid}): {e}"),
        })?;
        let inode = pin::check(pid, &pidfd, pinned)?;
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
    pub(super) fn readopt(&mut self, entry: Entry) -> bool {
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
    ///
    /// These calls (and the reading of `entry.before`) reach the process by
    /// its pid, so they count only if the process was not reaped meanwhile
    /// ([`pin::maybe_reused`]). If it was, the hand-over fails; and if, under
    /// a policy with real-time classes, its pid now names a process in one
    /// (which the policy's attributes may have reached), that process gets
    /// `entry.before`, never real-time.
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
        let reused = pin::maybe_reused(pid, &pidfd, entry.inode);
        let steered = steered.and_then(|()| match reused {
            true => Err(format!(
                "pid {pid} exited and was reaped while being handed over"
            )),
            false => Ok(()),
        });
        if let Err(why) = steered {
            // The policy may make processes real-time: the one that took
            // the pid may have been made so.
            let may_have_made_realtime = self.config.rt_time_limit_us.is_some()
                && sched::current(pid).is_ok_and(|c| c.is_realtime());
            if !reused {
                let _ = entry.before.restore(pid);
            } else if may_have_made_realtime {
                let _ = entry.before.restore(pid);
                self.warn(format!(
                    "pid {pid} was reaped while being handed over and its pid now names a real-time process, which the policy's attributes may have reached: gave it SCHED_OTHER"
                ));
            }
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
    pub(super) fn exited(&mut self, task: TaskId) {
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
}
