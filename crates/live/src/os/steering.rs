//! The live side of the steering seam: feeds a [`Steer`] policy the real
//! kernel's events and applies its answers with `sched_setattr`.
//!
//! The simulator's engine does the same against the kernel model; the calls
//! and their order are the same (DESIGN.md, "one policy, two worlds"):
//! `on_arrival` before the process runs, `on_start` when it first ran,
//! `on_cpu_used` when its CPU time reaches the policy's watch, `on_period`
//! every period with the cores' measured load, `on_exit` with its outcome.
//!
//! **CPU watches told by the kernel.** The kernel's accounting of a task
//! that is running (`sum_exec_runtime`, which schedstat, /proc/PID/stat and
//! POSIX CPU clocks of another process all read) is brought up to date at
//! the scheduler tick and at context switches, so any reading may be up to a
//! tick stale ([`STALE`]); on a stock kernel no method sees a process's CPU
//! time more finely (`faasched bench watch` measures three). So each
//! watched task has a POSIX CPU timer on its process's CPU clock, armed at
//! its watch: the kernel checks it at the tick, right after bringing the
//! accounting up to date, and signals the steering thread, which reads the
//! clock once (a *look*, after a read of the kept-open schedstat that
//! fails once the process is reaped) and calls the policy. A watch costs one
//! `timer_settime`, one signal and one look however the task shares its
//! core; a task that ends before its watch is never looked at.
//!
//! A task whose timer could not be made (RLIMIT_SIGPENDING spent: each
//! timer holds a signal's room) is looked at instead: a watch at CPU time
//! `w` first `w` after the task started, since a task cannot use CPU faster
//! than the wall clock; if the reading is `r < w`, it cannot reach `w`
//! before `w − r − STALE` from now, so the next look is then, or 0.25 ms
//! ([`RECHECK`]) later if that is sooner. Looks at a task that shares its
//! core come every 0.25 ms for as long as it is within a tick of its
//! watch, which is why timers come first.
//!
//! For each watch that fires, [`SteerStats::watch_lags`] records the time
//! from noticing to the new attributes applied: from the look's wake-up for
//! a timer's watch (the signal comes at the tick that accounts the watch
//! reached); for a looked-at one, an upper bound on the time from the
//! kernel's accounting showing it reached, from the later of the last look
//! that found it not reached and the earliest instant the reading could
//! reach it. [`SteerStats::watch_overshoots`] is the CPU the task used past
//! its watch by the look, tick included.

use crate::os::observe::{CoreBusy, Schedstat, SchedstatReading};
use crate::sys::clock;
use crate::sys::cputimer::{CpuClock, CpuTimers};
use crate::sys::sched::{Prepared, Unsupported};
use faasched_model::{Attrs, CpuSet, Load, Nanos, Outcome, Steer, TaskId, TaskInfo, Time};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::os::fd::BorrowedFd;

/// How stale the kernel's account of a running task's CPU time may be: one
/// tick at HZ 250 (the common and this machine's configuration; a kernel
/// with a lower HZ makes [`SteerStats::watch_lags`] optimistic).
pub const STALE: Nanos = 4 * faasched_model::MS;

/// Longest wait between two looks at a watch that may already be reached,
/// when no timer tells it (module docs). It is most of
/// [`SteerStats::watch_lags`] then: a look that finds the watch reached
/// comes this long after one that did not.
pub const RECHECK: Nanos = 250 * faasched_model::US;

/// After a look at `now` found `used` of a watch at `watch` not reached:
/// the earliest instant the reading could reach it, and when to look next.
pub fn next_look(now: Nanos, used: Nanos, watch: Nanos) -> (Nanos, Nanos) {
    let floor = now + watch.saturating_sub(used).saturating_sub(STALE);
    (floor, floor.max(now + RECHECK))
}

/// Maps the monotonic clock to the policy's time line.
#[derive(Clone, Copy, Debug)]
pub struct Timeline {
    /// A monotonic instant...
    mono: Nanos,
    /// ...and the policy time it is.
    at: Time,
}

impl Timeline {
    /// Policy time `at` is monotonic instant `mono`.
    pub fn new(mono: Nanos, at: Time) -> Timeline {
        Timeline { mono, at }
    }

    /// The policy time of monotonic instant `mono` (never before the origin).
    pub fn time(&self, mono: Nanos) -> Time {
        self.at + mono.saturating_sub(self.mono)
    }

    /// The monotonic instant of policy time `t` (never before the origin).
    pub fn mono(&self, t: Time) -> Nanos {
        self.mono + t.saturating_sub(self.at)
    }
}

/// Why steering failed.
#[derive(Debug, thiserror::Error)]
pub enum SteerError {
    /// The policy asked for a knob the stock kernel does not have.
    #[error("policy `{policy}` asked for attributes a stock kernel cannot apply: {why}")]
    Unsupported {
        /// The policy.
        policy: String,
        /// What it asked for.
        why: Unsupported,
    },
    /// The kernel refused the attributes.
    #[error("sched_setattr on pid {pid} ({attrs:?})")]
    Apply {
        /// The process.
        pid: libc::pid_t,
        /// What was asked.
        attrs: Attrs,
        /// The kernel's answer.
        source: io::Error,
    },
    /// Reading the kernel's accounting failed.
    #[error("reading {what}")]
    Observe {
        /// What was read.
        what: String,
        /// The error.
        source: io::Error,
    },
}

/// What steering cost and how promptly it acted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SteerStats {
    /// CPU time the steering thread spent in policy calls, attribute changes
    /// and watch checks.
    pub cpu: Nanos,
    /// Attribute changes applied to running processes.
    pub changes: u64,
    /// Looks at tasks' CPU clocks made for CPU watches.
    pub watch_checks: u64,
    /// For each watch that fired: the time from noticing it reached to the
    /// new attributes applied (module docs).
    pub watch_lags: Vec<Nanos>,
    /// For each watch that fired: CPU the task used past its watch.
    pub watch_overshoots: Vec<Nanos>,
    /// Changes that found the process already gone.
    pub vanished: u64,
    /// Exit notifications (pidfd) that came before the process could be
    /// reaped.
    pub early_exit_events: u64,
}

impl SteerStats {
    /// Adds what a later run of the same policy measured (`replay
    /// --rounds`).
    pub fn absorb(&mut self, later: SteerStats) {
        self.cpu += later.cpu;
        self.changes += later.changes;
        self.watch_checks += later.watch_checks;
        self.watch_lags.extend(later.watch_lags);
        self.watch_overshoots.extend(later.watch_overshoots);
        self.vanished += later.vanished;
        self.early_exit_events += later.early_exit_events;
    }
}

/// [`Tracked::look`] of a task with no look pending.
const NO_LOOK: Nanos = Nanos::MAX;

struct Tracked {
    pid: libc::pid_t,
    schedstat: Schedstat,
    /// The reading when tracking began: what the process used before it
    /// arrived, which is not the task's.
    base: SchedstatReading,
    /// The process's CPU clock, which watches read and its timer counts...
    clock: CpuClock,
    /// ...and its reading when tracking began (0 for a process launched
    /// for the task).
    clock_base: Nanos,
    /// Whether a timer in [`Steering::timers`] tells when the watch is
    /// reached; if not, it is looked at ([`next_look`]).
    timed: bool,
    watch: Option<Nanos>,
    /// The reading cannot have reached the watch before this instant.
    floor: Nanos,
    /// The instant of its pending look in [`Steering::watches`]
    /// ([`NO_LOOK`] if none): an entry at another instant was left behind by
    /// a re-read watch.
    look: Nanos,
}

/// Drives a policy with a live system's events.
pub struct Steering<'p, P: Steer + ?Sized> {
    policy: &'p mut P,
    cpus: CpuSet,
    timeline: Timeline,
    tasks: HashMap<TaskId, Tracked>,
    /// (monotonic instant, task): when to look at a task's CPU time next.
    /// Entries of tasks gone or re-armed (not at their `look`) are skipped
    /// when they come up.
    watches: BinaryHeap<Reverse<(Nanos, TaskId)>>,
    /// A CPU timer per tracked task, named by its id.
    timers: CpuTimers,
    period: Option<Nanos>,
    next_period: Option<Nanos>,
    /// `/proc/stat`, read each period.
    stat: CoreBusy,
    /// Each core's busy time at the last period's reading.
    busy_at_period: Vec<Nanos>,
    /// The instant of that reading.
    read_at: Nanos,
    reset_on_fork: bool,
    count_cpu: bool,
    stats: SteerStats,
}

impl<'p, P: Steer + ?Sized> Steering<'p, P> {
    /// Steers tasks on `cpus` with `policy`, on `timeline`; the policy's
    /// periods count from monotonic instant `start` (the first arrival, as in
    /// the simulator). Blocks the CPU timers' real-time signal in the
    /// calling thread until dropped: a steering must be used and dropped on
    /// the thread that made it, and the caller polls
    /// [`Steering::timers_fd`].
    pub fn new(
        policy: &'p mut P,
        cpus: CpuSet,
        timeline: Timeline,
        start: Nanos,
    ) -> Result<Self, SteerError> {
        let period = policy.period().filter(|&p| p > 0);
        let cores = cpus.iter().last().map_or(0, |c| c + 1);
        let mut stat = CoreBusy::open().map_err(proc_stat_error)?;
        let busy_at_period = stat.read(cores).map_err(proc_stat_error)?;
        let timers = CpuTimers::new().map_err(|source| SteerError::Observe {
            what: "a signalfd for CPU timers".into(),
            source,
        })?;
        Ok(Steering {
            timers,
            read_at: clock::monotonic(),
            next_period: period.map(|p| start + p),
            policy,
            cpus,
            timeline,
            tasks: HashMap::new(),
            watches: BinaryHeap::new(),
            period,
            stat,
            busy_at_period,
            reset_on_fork: false,
            count_cpu: true,
            stats: SteerStats::default(),
        })
    }

    /// Whether the attributes set from now on carry
    /// SCHED_FLAG_RESET_ON_FORK, so the processes' children start under the
    /// kernel's defaults instead of inheriting a real-time class or a raised
    /// priority. By default they do not (the launcher's children are the
    /// functions themselves).
    pub fn reset_on_fork(&mut self, on: bool) -> &mut Self {
        self.reset_on_fork = on;
        self
    }

    /// Whether [`SteerStats::cpu`] is counted: two reads of the thread's
    /// CPU clock per call, each a system call. By default it is.
    pub fn count_cpu(&mut self, on: bool) -> &mut Self {
        self.count_cpu = on;
        self
    }

    fn cpu_now(&self) -> Nanos {
        if self.count_cpu {
            clock::thread_cpu()
        } else {
            0
        }
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &str {
        self.policy.name()
    }

    /// The time line policy calls are made on.
    pub fn timeline(&self) -> Timeline {
        self.timeline
    }

    /// A task arrived: the attributes it must start with, ready to apply.
    pub fn arrive(&mut self, info: &TaskInfo) -> Result<Prepared, SteerError> {
        let cpu = self.cpu_now();
        let attrs = self.policy.on_arrival(info.arrival, info, self.cpus);
        let prepared = self.prepare(&attrs);
        self.stats.cpu += self.cpu_now() - cpu;
        prepared
    }

    /// The task that [`Steering::arrive`] admitted runs as process `pid`,
    /// started for it at monotonic instant `since`: watch it.
    pub fn track(
        &mut self,
        task: TaskId,
        pid: libc::pid_t,
        since: Nanos,
    ) -> Result<(), SteerError> {
        self.track_from(task, pid, since, false)
    }

    /// Like [`Steering::track`], for a process that ran before the task
    /// arrived (one handed to the agent): the task's CPU time, watches and
    /// [`Steering::reading`] count from now.
    pub fn adopt(
        &mut self,
        task: TaskId,
        pid: libc::pid_t,
        since: Nanos,
    ) -> Result<(), SteerError> {
        self.track_from(task, pid, since, true)
    }

    fn track_from(
        &mut self,
        task: TaskId,
        pid: libc::pid_t,
        since: Nanos,
        adopted: bool,
    ) -> Result<(), SteerError> {
        let cpu = self.cpu_now();
        let observe = |source| SteerError::Observe {
            what: format!("/proc/{pid}/schedstat"),
            source,
        };
        let schedstat = Schedstat::open(pid).map_err(observe)?;
        let clock_error = |source| SteerError::Observe {
            what: format!("the CPU clock of pid {pid}"),
            source,
        };
        let clock = CpuClock::of(pid).map_err(clock_error)?;
        let (base, clock_base) = match adopted {
            true => (
                schedstat.read().map_err(observe)?,
                clock.now().map_err(clock_error)?,
            ),
            false => (SchedstatReading::default(), 0),
        };
        let timed = self.timers.add(task.0, clock).is_ok();
        let watch = self.policy.cpu_watch(task);
        // Not before it could have used `w`: it had used nothing at `since`.
        let floor = since + watch.unwrap_or(0);
        let mut look = NO_LOOK;
        if let Some(w) = watch
            && !(timed && self.timers.arm(task.0, clock_base + w).is_ok())
        {
            look = floor;
            self.watches.push(Reverse((floor, task)));
        }
        self.tasks.insert(
            task,
            Tracked {
                pid,
                schedstat,
                base,
                clock,
                clock_base,
                timed: timed && look == NO_LOOK,
                watch,
                floor,
                look,
            },
        );
        self.stats.cpu += self.cpu_now() - cpu;
        Ok(())
    }

    /// The task first ran at monotonic instant `at`.
    pub fn started(&mut self, task: TaskId, at: Nanos) -> Result<(), SteerError> {
        let cpu = self.cpu_now();
        let result = match self.policy.on_start(self.timeline.time(at), task) {
            Some(attrs) => self.apply(task, attrs),
            None => Ok(()),
        };
        self.stats.cpu += self.cpu_now() - cpu;
        result
    }

    /// The task's process is gone; `outcome` is final.
    pub fn exited(&mut self, task: TaskId, outcome: &Outcome) {
        let cpu = self.cpu_now();
        self.tasks.remove(&task);
        self.timers.remove(task.0);
        self.policy.on_exit(outcome.finish, task, outcome);
        self.rewatch(clock::monotonic());
        self.stats.cpu += self.cpu_now() - cpu;
    }

    /// Reads again the watch of every task the policy names
    /// ([`Steer::rewatch`]), and looks at each at `now`: a watch that fell
    /// below what the task used is met at once.
    fn rewatch(&mut self, now: Nanos) {
        for task in self.policy.rewatch() {
            let watch = self.policy.cpu_watch(task);
            let Some(t) = self.tasks.get_mut(&task) else {
                continue;
            };
            t.watch = watch;
            if watch.is_some() {
                // Met now at the earliest: the watch was not there before.
                (t.floor, t.look) = (now, now);
                self.watches.push(Reverse((now, task)));
            }
        }
    }

    /// The next monotonic instant [`Steering::act`] has work at.
    pub fn deadline(&self) -> Option<Nanos> {
        let watch = self.watches.peek().map(|Reverse((at, _))| *at);
        match (watch, self.next_period) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Does what is due by monotonic instant `now`: CPU watches and the
    /// periodic call. (As in the simulator, a caller stops calling once
    /// nothing is left to arrive or run.)
    pub fn act(&mut self, now: Nanos) -> Result<(), SteerError> {
        // Called at every wake-up of a loop; most have nothing due, and
        // reading the CPU clock twice is a system call each.
        if self.deadline().is_none_or(|d| d > now) {
            return Ok(());
        }
        let cpu = self.cpu_now();
        let result = self.act_inner(now);
        self.stats.cpu += self.cpu_now() - cpu;
        result
    }

    /// The descriptor that becomes readable when a CPU timer fires; then
    /// call [`Steering::timers_fired`].
    pub fn timers_fd(&self) -> BorrowedFd<'_> {
        self.timers.fd()
    }

    /// Looks at the tasks whose CPU timers fired, then does what else is
    /// due by monotonic instant `now` ([`Steering::act`]).
    pub fn timers_fired(&mut self, now: Nanos) -> Result<(), SteerError> {
        let cpu = self.cpu_now();
        let result = self.timers_fired_inner(now);
        self.stats.cpu += self.cpu_now() - cpu;
        result
    }

    fn timers_fired_inner(&mut self, now: Nanos) -> Result<(), SteerError> {
        let fired = self.timers.fired().map_err(|source| SteerError::Observe {
            what: "the CPU timers' signalfd".into(),
            source,
        })?;
        for task in fired.into_iter().map(TaskId) {
            // A task with a look pending is looked at then.
            if self.tasks.get(&task).is_some_and(|t| t.look == NO_LOOK) {
                self.look(task, now)?;
            }
        }
        self.act_inner(now)
    }

    fn act_inner(&mut self, now: Nanos) -> Result<(), SteerError> {
        while let Some(&Reverse((at, task))) = self.watches.peek() {
            if at > now {
                break;
            }
            self.watches.pop();
            if self.tasks.get(&task).is_some_and(|t| t.look == at) {
                self.look(task, now)?;
            }
        }
        if let (Some(p), Some(at)) = (self.period, self.next_period)
            && at <= now
        {
            self.next_period = Some(at + p);
            self.periodic(now)?;
        }
        Ok(())
    }

    /// Reads a task's CPU clock: calls the policy if its watch is reached,
    /// and waits for the watch that is then in force.
    fn look(&mut self, task: TaskId, now: Nanos) -> Result<(), SteerError> {
        let Some(t) = self.tasks.get_mut(&task) else {
            return Ok(());
        };
        t.look = NO_LOOK;
        let Some(watch) = t.watch else {
            return Ok(());
        };
        self.stats.watch_checks += 1;
        // The kept-open schedstat first: it fails once the process is
        // reaped, where the clock, named by pid, would read whichever
        // process took the pid next.
        let used = match t.schedstat.read().and_then(|_| t.clock.now()) {
            Ok(c) => c.saturating_sub(t.clock_base),
            // Exited and reaped under us: its exit is on its way.
            Err(_) => return Ok(()),
        };
        if used < watch {
            self.expect(task, now, used);
            return Ok(());
        }
        // A timer's watch is noticed at the wake-up its signal caused.
        let noticed = if t.timed { now } else { t.floor };
        if let Some(attrs) = self.policy.on_cpu_used(self.timeline.time(now), task, used) {
            self.apply(task, attrs)?;
        }
        let done = clock::monotonic();
        self.stats.watch_lags.push(done.saturating_sub(noticed));
        self.stats.watch_overshoots.push(used - watch);
        let next = self.policy.cpu_watch(task);
        if let Some(t) = self.tasks.get_mut(&task) {
            t.watch = next;
            self.expect(task, now, used);
        }
        Ok(())
    }

    /// A task that had used `used` at `now` waits for its watch: by its
    /// timer, or by a look when it has none (or the watch is reached
    /// already: at once).
    fn expect(&mut self, task: TaskId, now: Nanos, used: Nanos) {
        let Some(t) = self.tasks.get_mut(&task) else {
            return;
        };
        let Some(w) = t.watch else {
            return;
        };
        let (floor, next) = match w <= used {
            true => (now, now),
            false => next_look(now, used, w),
        };
        t.floor = floor;
        if w > used && t.timed {
            if self.timers.arm(task.0, t.clock_base + w).is_ok() {
                return;
            }
            // Looked at from now on (an arming fails only for a process
            // the kernel no longer has).
            t.timed = false;
        }
        t.look = next;
        self.watches.push(Reverse((next, task)));
    }

    fn periodic(&mut self, now: Nanos) -> Result<(), SteerError> {
        let cores = self.busy_at_period.len();
        let busy = self.stat.read(cores).map_err(proc_stat_error)?;
        let per_core = utilisation(
            &self.busy_at_period,
            &busy,
            now.saturating_sub(self.read_at),
            self.cpus,
        );
        (self.busy_at_period, self.read_at) = (busy, now);
        let steered = per_core.len();
        let mut per_cpu = vec![0.0; cores];
        for (c, u) in self.cpus.iter().zip(&per_core) {
            per_cpu[c] = *u;
        }
        let load = Load {
            utilisation: per_core.iter().sum::<f64>() / steered.max(1) as f64,
            cores: steered,
            per_core: per_cpu,
        };
        for (task, attrs) in self.policy.on_period(self.timeline.time(now), load) {
            self.apply(task, attrs)?;
        }
        self.rewatch(now);
        Ok(())
    }

    fn prepare(&self, attrs: &Attrs) -> Result<Prepared, SteerError> {
        Prepared::new(attrs, self.reset_on_fork).map_err(|why| SteerError::Unsupported {
            policy: self.policy.name().to_string(),
            why,
        })
    }

    /// Applies `attrs` to a tracked task's process.
    fn apply(&mut self, task: TaskId, attrs: Attrs) -> Result<(), SteerError> {
        let Some(pid) = self.tasks.get(&task).map(|t| t.pid) else {
            return Ok(());
        };
        match self.prepare(&attrs)?.apply(pid) {
            Ok(()) => {
                self.stats.changes += 1;
                Ok(())
            }
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                self.stats.vanished += 1;
                Ok(())
            }
            Err(source) => Err(SteerError::Apply { pid, attrs, source }),
        }
    }

    /// Counts an exit notification that came before the process could be
    /// reaped.
    pub fn note_early_exit_event(&mut self) {
        self.stats.early_exit_events += 1;
    }

    /// A tracked task's schedstat now, counted from when it was tracked
    /// (`None` if untracked or unreadable: the process was reaped).
    pub fn reading(&self, task: TaskId) -> Option<SchedstatReading> {
        let t = self.tasks.get(&task)?;
        let now = t.schedstat.read().ok()?;
        Some(SchedstatReading {
            cpu: now.cpu.saturating_sub(t.base.cpu),
            wait: now.wait.saturating_sub(t.base.wait),
            turns: now.turns.saturating_sub(t.base.turns),
        })
    }

    /// What steering has cost so far.
    pub fn stats(&self) -> &SteerStats {
        &self.stats
    }

    /// Tasks being steered.
    pub fn tracked(&self) -> usize {
        self.tasks.len()
    }
}

/// A failed reading of `/proc/stat`, at the start or at a period.
fn proc_stat_error(source: io::Error) -> SteerError {
    SteerError::Observe {
        what: "/proc/stat".into(),
        source,
    }
}

/// Each of `cpus`' share of the `elapsed` ns between two readings of the
/// cores' busy times that it was busy, at most 1. Over the time that did
/// elapse, not the policy's nominal period: a period handled late (the
/// steering loop was busy) covers more busy time, which the nominal period
/// read as more than the cores could do.
fn utilisation(before: &[Nanos], after: &[Nanos], elapsed: Nanos, cpus: CpuSet) -> Vec<f64> {
    cpus.iter()
        .map(|c| (after[c].saturating_sub(before[c]) as f64 / elapsed.max(1) as f64).min(1.0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::MS;

    #[test]
    fn utilisation_is_over_the_time_that_elapsed() {
        let cpus = CpuSet::first(2);
        // A 100 ms period read 20 ms late: core 0 busy throughout, core 1
        // for 60 ms.
        let u = utilisation(&[5 * MS, 0], &[125 * MS, 60 * MS], 120 * MS, cpus);
        assert_eq!(u, [1.0, 0.5]);
        // A counter that went back (a reading error) is no time busy.
        assert_eq!(utilisation(&[9, 9], &[3, 9], 100, cpus), [0.0, 0.0]);
    }

    #[test]
    fn looks_again_when_a_stale_reading_could_first_show_the_watch() {
        // 10 ms short: the reading could be a tick stale, so 6 ms from now.
        assert_eq!(next_look(100 * MS, 10 * MS, 20 * MS), (106 * MS, 106 * MS));
        // Within a tick: it may be reached already; look every quarter
        // millisecond.
        assert_eq!(
            next_look(100 * MS, 18 * MS, 20 * MS),
            (100 * MS, 100 * MS + 250_000)
        );
    }
}
