//! The launcher: replays a workload on this machine, open loop. Every
//! invocation becomes a process at its arrival instant, started under the
//! attributes its policy gives it, observed through the kernel's own
//! accounting, and steered until it exits.
//!
//! One thread, one wait (`epoll_pwait2`, nanosecond timeout) for everything:
//! the next arrival, the next CPU watch or policy period, each child's start
//! pipe (first run) and pidfd (exit), and the terminating signals. A launch
//! that happens after its arrival instant is recorded as late, and the
//! invocation's response and turnaround count from the arrival instant, so
//! lateness is never silently absorbed.
//!
//! Every exit path (the end, an error, SIGINT/SIGTERM/SIGHUP/SIGQUIT, a
//! panic) kills and reaps the children still running; each child also dies
//! with the launcher (PR_SET_PDEATHSIG), and a real-time child that runs away
//! is killed by its RLIMIT_RTTIME.
//!
//! A function process that a signal ends (killed from outside, by its
//! RLIMIT_RTTIME, by the OOM killer) is a failed invocation, not an error:
//! it has no outcome, is counted in [`ReplayStats::failed`], its policy
//! hears of its exit as of any other (so that no watch or period names it
//! again), and the run goes on. One that exits with an error code stops the
//! run ([`ReplayError::Function`]).
//!
//! A run is bounded in time too: each launch extends a due instant by
//! [`OVERRUN_FACTOR`] times the invocation's demand (CPU and I/O), from the
//! launch or the due instant, whichever is later, as if every invocation ran
//! alone and that much slower; a run still in flight [`Config::overrun`] past
//! it stops with [`ReplayError::Overran`] (a stopped or hung function, a
//! calibration that makes functions far longer than planned).

use crate::os::observe;
use crate::os::steering::{SteerError, Steering, Timeline};
use crate::sys::clock;
use crate::sys::poll::Poll;
use crate::sys::process::{self, Child, Program, Report, Setup, Step};
use crate::sys::signals::Signals;
use faasched_model::{
    CpuSet, Function, Group, Invocation, Nanos, Outcome, SEC, Steer, TaskId, TaskInfo, Time,
};
pub(crate) use stats::nearest_rank;
pub use stats::{FAILED_IDS_KEPT, ReplayStats};
use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::AsFd;
use std::path::PathBuf;

mod stats;

/// How to replay.
#[derive(Clone, Debug)]
pub struct Config {
    /// The program each invocation runs (the `faasched` binary, for the
    /// function suite).
    pub program: PathBuf,
    /// The cores the policy steers (the workload's cores).
    pub cpus: CpuSet,
    /// Time from the start of the run to the first arrival, for setting up.
    pub lead: Nanos,
    /// How far past its due instant (see the module docs) a run may go;
    /// [`DEFAULT_OVERRUN`] by default.
    pub overrun: Nanos,
    /// Most invocations in flight at once; [`DEFAULT_MAX_IN_FLIGHT`] by
    /// default. A launch beyond it stops the run with
    /// [`ReplayError::Crowded`].
    pub max_in_flight: usize,
}

/// The default [`Config::max_in_flight`]: each function process takes a few
/// MiB, so a workload that piles up thousands (an overload far past the
/// machine) would exhaust its memory before it showed anything; a replay
/// stops first.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// How much slower than planned, serially, a run's work may take.
pub const OVERRUN_FACTOR: u64 = 4;

/// The default [`Config::overrun`]: 30 s.
pub const DEFAULT_OVERRUN: Nanos = 30 * SEC;

/// Why a replay stopped early.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The workload stream failed.
    #[error(transparent)]
    Input(Box<dyn std::error::Error + Send + Sync>),
    /// A system call the launcher needs failed.
    #[error("{what}")]
    System {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// Steering failed.
    #[error(transparent)]
    Steer(#[from] SteerError),
    /// A child could not become its program.
    #[error("invocation {id}: cannot start {program}: {step} failed")]
    Start {
        /// The invocation.
        id: u64,
        /// The program.
        program: PathBuf,
        /// What failed.
        step: &'static str,
        /// The kernel's answer.
        source: io::Error,
    },
    /// A function process exited with an error code (the program or its
    /// arguments are at fault, and would be for every invocation) or
    /// without a status. One that a signal ended is no error: it is counted
    /// in [`ReplayStats::failed`] and the replay goes on.
    #[error("invocation {id} ({function}) {how}")]
    Function {
        /// The invocation.
        id: u64,
        /// Its function.
        function: String,
        /// "exited with code N" or "ended without a status".
        how: String,
    },
    /// A terminating signal arrived; every child was killed and reaped.
    #[error("interrupted by signal {0}; the invocations in flight were killed")]
    Interrupted(i32),
    /// A launch would have put more than [`Config::max_in_flight`]
    /// invocations in flight; every child was killed and reaped.
    #[error(
        "invocation {id} would make {} in flight at once, past the replay's limit of \
         {limit}: the workload overloads this machine (lower --load, or add --cores)",
        limit + 1
    )]
    Crowded {
        /// The invocation.
        id: u64,
        /// [`Config::max_in_flight`].
        limit: usize,
    },
    /// The run went on past its time bound (see the module docs); every
    /// child was killed and reaped.
    #[error(
        "the replay ran {}s past the time its work should take even {OVERRUN_FACTOR}x slower, \
         one invocation at a time; {in_flight} invocations in flight were killed (a function \
         stopped or hung, or a calibration that does not fit this machine?)",
        overrun / SEC
    )]
    Overran {
        /// The bound it passed, [`Config::overrun`].
        overrun: Nanos,
        /// Invocations still running.
        in_flight: usize,
    },
}

fn system(what: impl Into<String>) -> impl FnOnce(io::Error) -> ReplayError {
    let what = what.into();
    move |source| ReplayError::System { what, source }
}

/// A child in flight and what is known of it so far.
struct Running {
    child: Child,
    function: Function,
    group: Group,
    arrival: Time,
    memory_mb: u32,
    /// The CPU time the workload planned for it.
    planned_cpu: Nanos,
    first_run: Option<Nanos>,
}

/// The children in flight. Dropping it kills and reaps every one, whatever
/// the path out of [`run`].
#[derive(Default)]
struct Flight(HashMap<TaskId, Running>);

impl Drop for Flight {
    /// Kills and reaps them, the killing all first, the waiting bounded
    /// ([`process::kill_all`]).
    fn drop(&mut self) {
        process::kill_all(self.0.values().map(|r| &r.child));
        self.0.clear();
    }
}

const SIGNALS: u64 = u64::MAX;
const TIMERS: u64 = u64::MAX - 1;

/// How long a launch keeps the launcher from anything else: starting a
/// child costs the launcher about 0.15 ms of CPU on the 2-vCPU VM this was
/// measured on (`live.launch_cpu_per_invocation_us`; 0.35–0.6 ms when it
/// forked), twice that as a margin. A CPU watch or period due sooner than
/// that is met first, and the launch waits for it, once: a demotion late by
/// a launch would cost the other functions a launch's worth of a real-time
/// task's CPU, a launch late by a look costs its invocation as much, and is
/// counted in its lateness.
pub const LAUNCH_SHADOW: Nanos = 300 * faasched_model::US;

/// Whether the launch of invocation `id`, due now, waits for steering's
/// next `deadline`: it does if that comes within [`LAUNCH_SHADOW`] of `now`,
/// unless `id` is the one `held` already (each launch waits once at most).
fn holds(id: u64, held: Option<u64>, deadline: Option<Nanos>, now: Nanos) -> bool {
    held != Some(id) && deadline.is_some_and(|d| d < now + LAUNCH_SHADOW)
}

fn token(task: TaskId, exit: bool) -> u64 {
    task.0 << 1 | u64::from(exit)
}

/// RLIMIT_RTTIME of a child, µs: far above what its invocation needs, so
/// only a runaway hits it.
fn rt_time_limit_us(inv: &Invocation) -> u64 {
    (5 * SEC + 4 * inv.cpu_demand()) / 1000
}

/// Replays `invocations` (sorted by arrival) under `policy`: each runs
/// `config.program` with `args(invocation)`. Hands each outcome to `sink` as
/// its process exits.
pub fn run<P, I, E>(
    config: &Config,
    policy: &mut P,
    invocations: I,
    mut args: impl FnMut(&Invocation) -> Vec<OsString>,
    mut sink: impl FnMut(Outcome),
) -> Result<ReplayStats, ReplayError>
where
    P: Steer + ?Sized,
    I: IntoIterator<Item = Result<Invocation, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    let input = |e: E| ReplayError::Input(Box::new(e));
    let mut stream = invocations.into_iter();
    let mut next = stream.next().transpose().map_err(input)?;
    let Some(first) = next.as_ref().map(|i| i.arrival) else {
        return Ok(ReplayStats::default());
    };
    let program =
        Program::new(config.program.as_os_str()).map_err(system("preparing the program"))?;
    let mut signals = Signals::block().map_err(system("blocking termination signals"))?;
    let mut poll = Poll::new().map_err(system("epoll"))?;
    poll.add(signals.fd(), SIGNALS).map_err(system("epoll"))?;

    let cores = config.cpus.iter().last().map_or(0, |c| c + 1);
    let busy_before = observe::core_busy(cores).map_err(system("reading /proc/stat"))?;
    let launcher_cpu = clock::thread_cpu();
    let origin = clock::monotonic() + config.lead;
    let timeline = Timeline::new(origin, first);
    let mut steering = Steering::new(policy, config.cpus, timeline, origin)?;
    poll.add(steering.timers_fd(), TIMERS)
        .map_err(system("epoll"))?;
    let mut flight = Flight::default();
    let mut stats = ReplayStats {
        start: first,
        ..ReplayStats::default()
    };

    // The invocation whose launch waited for a look (once at most).
    let mut held = None;
    // When the launched work should be over (module docs).
    let mut due = origin;
    loop {
        let now = clock::monotonic();
        // Watches first: a look is a `pread` and maybe a `sched_setattr`,
        // while a launch keeps the launcher busy for [`LAUNCH_SHADOW`] and
        // would delay a demotion that is due by as much.
        steering.act(now)?;
        while let Some(inv) = next.take_if(|i| timeline.mono(i.arrival) <= now) {
            if holds(inv.id, held, steering.deadline(), clock::monotonic()) {
                held = Some(inv.id);
                stats.launches_held += 1;
                next = Some(inv);
                break;
            }
            launch(
                &program,
                config,
                &mut steering,
                &mut flight,
                &poll,
                &inv,
                &mut args,
                &mut stats,
            )?;
            let demand = inv.cpu_demand().saturating_add(inv.io_demand());
            due = due
                .max(clock::monotonic())
                .saturating_add(OVERRUN_FACTOR.saturating_mul(demand));
            next = stream.next().transpose().map_err(input)?;
        }
        if next.is_none() && flight.0.is_empty() {
            break;
        }
        let bound = due.saturating_add(config.overrun);
        if !flight.0.is_empty() && clock::monotonic() >= bound {
            return Err(ReplayError::Overran {
                overrun: config.overrun,
                in_flight: flight.0.len(),
            });
        }
        // A held launch waits for the look, not for its (past) arrival.
        let arrival = next
            .as_ref()
            .filter(|i| held != Some(i.id))
            .map(|i| timeline.mono(i.arrival));
        let wake = [
            arrival,
            steering.deadline(),
            (!flight.0.is_empty()).then_some(bound),
        ]
        .into_iter()
        .flatten()
        .min();
        let timeout = wake.map(|w| w.saturating_sub(clock::monotonic()));
        let ready = poll.wait(timeout).map_err(system("epoll_pwait2"))?;
        let woke = clock::monotonic();
        for t in ready {
            if t == SIGNALS {
                if let Some(sig) = signals.take().map_err(system("reading the signalfd"))? {
                    return Err(ReplayError::Interrupted(sig));
                }
                continue;
            }
            if t == TIMERS {
                steering.timers_fired(clock::monotonic())?;
                continue;
            }
            let task = TaskId(t >> 1);
            if t & 1 == 0 {
                started(config, &mut steering, &mut flight, &poll, task)?;
            } else {
                match exited(config, &mut steering, &mut flight, &poll, task, woke)? {
                    Some(Ended::Finished(outcome)) => {
                        stats.invocations += 1;
                        stats.used_cpu += outcome.cpu;
                        stats.end = stats.end.max(outcome.finish);
                        sink(outcome);
                    }
                    Some(Ended::Killed { planned_cpu }) => stats.fail(task.0, planned_cpu),
                    None => {}
                }
            }
        }
    }
    let busy_after = observe::core_busy(cores).map_err(system("reading /proc/stat"))?;
    let span = timeline
        .mono(stats.end)
        .saturating_sub(timeline.mono(stats.start));
    stats.busy = config
        .cpus
        .iter()
        .map(|c| busy_after[c].saturating_sub(busy_before[c]))
        .sum();
    stats.capacity = span * config.cpus.len() as Nanos;
    stats.steering = steering.stats().clone();
    stats.launcher_cpu = clock::thread_cpu() - launcher_cpu;
    stats.wall = clock::monotonic().saturating_sub(origin - config.lead);
    stats.busy_window = stats.wall * config.cpus.len() as Nanos;
    drop(signals);
    Ok(stats)
}

/// Starts one invocation's process.
#[allow(clippy::too_many_arguments)]
fn launch<P: Steer + ?Sized>(
    program: &Program,
    config: &Config,
    steering: &mut Steering<'_, P>,
    flight: &mut Flight,
    poll: &Poll,
    inv: &Invocation,
    args: &mut impl FnMut(&Invocation) -> Vec<OsString>,
    stats: &mut ReplayStats,
) -> Result<(), ReplayError> {
    if flight.0.len() >= config.max_in_flight {
        return Err(ReplayError::Crowded {
            id: inv.id,
            limit: config.max_in_flight,
        });
    }
    let task = TaskId(inv.id);
    let info = TaskInfo {
        task,
        function: inv.function.id,
        arrival: inv.arrival,
        memory_mb: inv.memory_mb,
        deadline: inv.deadline,
    };
    let attrs = steering.arrive(&info)?;
    let argv = args(inv);
    let cpu = clock::thread_cpu();
    let setup = Setup {
        attrs: &attrs,
        rt_time_limit_us: rt_time_limit_us(inv),
    };
    let child = process::spawn(program, &argv, &setup).map_err(|source| ReplayError::Start {
        id: inv.id,
        program: config.program.clone(),
        step: "starting it",
        source,
    })?;
    stats.launch_cpu += clock::thread_cpu() - cpu;
    stats.planned_cpu += inv.cpu_demand();
    stats.lateness.push(
        child
            .forked
            .saturating_sub(steering.timeline().mono(inv.arrival)),
    );
    let (start, exit) = (token(task, false), token(task, true));
    let registered = poll
        .add(child.start.as_fd(), start)
        .and_then(|()| poll.add(child.pidfd.as_fd(), exit));
    let pid = child.pid;
    let forked = child.forked;
    flight.0.insert(
        task,
        Running {
            child,
            function: inv.function.clone(),
            group: inv.group(),
            arrival: inv.arrival,
            memory_mb: inv.memory_mb,
            planned_cpu: inv.cpu_demand(),
            first_run: None,
        },
    );
    registered.map_err(system("epoll"))?;
    steering.track(task, pid, forked)?;
    Ok(())
}

fn step_name(step: Step) -> &'static str {
    match step {
        Step::Attrs => "setting its scheduling attributes",
        Step::Limit => "setting RLIMIT_RTTIME",
        Step::Exec => "exec",
    }
}

/// Reads a child's start pipe; returns what it reported.
fn read_start(config: &Config, r: &mut Running, id: u64) -> Result<Report, ReplayError> {
    let report = r.child.report().map_err(system("reading a start pipe"))?;
    if let Report::Failed(_, step, errno) = report {
        return Err(ReplayError::Start {
            id,
            program: config.program.clone(),
            step: step_name(step),
            source: io::Error::from_raw_os_error(errno),
        });
    }
    Ok(report)
}

/// A child's start pipe has news: its first run, its `exec`, or both.
fn started<P: Steer + ?Sized>(
    config: &Config,
    steering: &mut Steering<'_, P>,
    flight: &mut Flight,
    poll: &Poll,
    task: TaskId,
) -> Result<(), ReplayError> {
    let Some(r) = flight.0.get_mut(&task) else {
        return Ok(());
    };
    let report = read_start(config, r, task.0)?;
    let stamp = match report {
        Report::Started(s) | Report::Execed(s) => s,
        Report::Pending | Report::Failed(..) => return Ok(()),
    };
    if matches!(report, Report::Execed(_)) {
        // The pipe is closed: stop watching it (epoll would report the
        // hang-up forever).
        poll.remove(r.child.start.as_fd())
            .map_err(system("epoll"))?;
    }
    if r.first_run.is_none() {
        r.first_run = Some(stamp);
        steering.started(task, stamp)?;
    }
    Ok(())
}

/// How a reaped child ended.
enum Ended {
    /// It exited with code 0: its invocation's outcome.
    Finished(Outcome),
    /// A signal ended it (killed from outside, by its RLIMIT_RTTIME, by the
    /// OOM killer): a failed invocation, whose workload had planned
    /// `planned_cpu`.
    Killed {
        /// The CPU time the workload planned for it.
        planned_cpu: Nanos,
    },
}

/// A child exited at about monotonic instant `now`: reap it and say how it
/// ended. Steering forgets it either way, and its policy hears of its exit
/// (`on_exit`): to the kernel's scheduler a killed process exits as any
/// other, and a policy that kept a killed task would go on naming it in its
/// watches and periods.
fn exited<P: Steer + ?Sized>(
    config: &Config,
    steering: &mut Steering<'_, P>,
    flight: &mut Flight,
    poll: &Poll,
    task: TaskId,
    now: Nanos,
) -> Result<Option<Ended>, ReplayError> {
    let Some(r) = flight.0.get(&task) else {
        return Ok(None);
    };
    // Read before reaping: the zombie's schedstat goes with it.
    let wait = steering.reading(task).map_or(0, |s| s.wait);
    // Never block: seen once under heavy load, a pidfd reported an exit
    // that wait4 could not yet reap, and a blocking wait stalled every
    // launch behind it. Such an event is counted and the next one waited for.
    let Some(reaped) = process::try_reap(r.child.pid).map_err(system("wait4"))? else {
        steering.note_early_exit_event();
        return Ok(None);
    };
    let Some(mut r) = flight.0.remove(&task) else {
        return Ok(None);
    };
    // Unregister before closing: a child forked since, that has not reached
    // exec yet, holds copies of these descriptors, and epoll would keep
    // reporting the closed ones until it does. (The start pipe is gone from
    // the set already if it closed.)
    let _ = poll.remove(r.child.pidfd.as_fd());
    let _ = poll.remove(r.child.start.as_fd());
    // The last of the start pipe: a first run whose event had not come yet
    // is still the child's own stamp (too late for `on_start`: it is gone).
    let stamp = match read_start(config, &mut r, task.0)? {
        Report::Started(s) | Report::Execed(s) => Some(s),
        Report::Pending | Report::Failed(..) => None,
    };
    let how = match (reaped.code, reaped.signal) {
        (Some(0), _) | (None, Some(_)) => None,
        (Some(code), _) => Some(format!("exited with code {code}")),
        (None, None) => Some("ended without a status".to_string()),
    };
    if let Some(how) = how {
        return Err(ReplayError::Function {
            id: task.0,
            function: r.function.name.to_string(),
            how,
        });
    }
    let killed = reaped.signal.is_some();
    let planned_cpu = r.planned_cpu;
    let timeline = steering.timeline();
    let first_run = r.first_run.or(stamp).unwrap_or(r.child.forked);
    // Off a core and not runnable: the blocking waits, and what is neither
    // CPU time nor a run-queue wait (time stolen by the host, the delay
    // until the launcher saw the exit: docs/LIVE.md).
    let blocked = now
        .saturating_sub(r.child.forked)
        .saturating_sub(reaped.cpu)
        .saturating_sub(wait);
    let outcome = Outcome {
        id: task.0,
        function: r.function,
        group: r.group,
        arrival: r.arrival,
        first_run: timeline.time(first_run),
        finish: timeline.time(now),
        cpu: reaped.cpu,
        io: blocked,
        voluntary_switches: reaped.voluntary,
        involuntary_switches: reaped.involuntary,
        memory_mb: r.memory_mb,
    };
    steering.exited(task, &outcome);
    Ok(Some(match killed {
        true => Ended::Killed { planned_cpu },
        false => Ended::Finished(outcome),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::MS;

    #[test]
    fn a_launch_waits_once_for_a_look_due_within_it() {
        let now = 100 * MS;
        let soon = Some(now + LAUNCH_SHADOW - 1);
        assert!(holds(7, None, soon, now));
        assert!(holds(7, Some(6), soon, now), "another launch was held");
        assert!(!holds(7, Some(7), soon, now), "held once already");
        assert!(
            !holds(7, None, Some(now + LAUNCH_SHADOW), now),
            "after the launch"
        );
        assert!(!holds(7, None, None, now), "nothing due");
        // Overdue (the loop acts first, but a look may come due meanwhile).
        assert!(holds(7, None, Some(now - MS), now));
    }
}
