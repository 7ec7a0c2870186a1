//! The OS engine's state between events: the kernel model, what it
//! remembers of the invocations in flight, and the policy's periodic
//! clock. Its caller picks the next event ([`run`](super::run) merges a
//! stream of arrivals; a cluster's OS server is driven by the cluster
//! engine) and the engine carries it out: the kernel's events up to a
//! bound, an arrival, or the policy's periodic call; then
//! [`Engine::settle`] delivers what the step noticed. The policy is passed
//! to each call, as the node engine takes its dispatchers'.

use super::{POLL_EVENTS, RunStats, Sink};
use faasched_kernel::{Config, ConfigError, Kernel, Notice, TaskStats};
use faasched_model::{
    CpuSet, Function, Group, Invocation, Load, Nanos, Outcome, Steer, TaskId, TaskInfo, Time,
};

/// What the engine remembers of an invocation in flight, by its kernel
/// [`Slot`](faasched_kernel::Slot).
struct InFlight {
    function: Function,
    arrival: Time,
    group: Group,
    memory_mb: u32,
}

/// One machine's kernel under one steering policy.
pub(crate) struct Engine {
    kernel: Kernel,
    cores: usize,
    cpus: CpuSet,
    flight: Vec<Option<InFlight>>,
    notices: Vec<Notice>,
    /// The policy's period, if it asked for periodic calls.
    period: Option<Nanos>,
    next_period: Option<Time>,
    /// Each core's busy time at the last periodic call.
    busy_at_period: Vec<Nanos>,
    pub(crate) stats: RunStats,
}

impl Engine {
    /// An idle machine of `config` from `start`, for `policy` (whose first
    /// periodic call is one period after `start`).
    pub(crate) fn new<P: Steer + ?Sized>(
        config: &Config,
        policy: &P,
        start: Time,
    ) -> Result<Engine, ConfigError> {
        // First runs are noticed only for a policy that reacts to them.
        let kernel = Kernel::new(&Config {
            report_starts: config.report_starts || policy.wants_start(),
            ..config.clone()
        })?;
        let period = policy.period().filter(|&p| p > 0);
        Ok(Engine {
            kernel,
            cores: config.cores,
            cpus: CpuSet::first(config.cores),
            flight: Vec::new(),
            notices: Vec::new(),
            period,
            next_period: period.map(|p| start + p),
            busy_at_period: vec![0; config.cores],
            stats: RunStats {
                start,
                ..RunStats::default()
            },
        })
    }

    /// When the kernel's next internal event happens, if any.
    #[inline]
    pub(crate) fn next_kernel(&mut self) -> Option<Time> {
        self.kernel.next_event()
    }

    /// When the policy's next periodic call is due, if it asked for them.
    #[inline]
    pub(crate) fn next_period(&self) -> Option<Time> {
        self.next_period
    }

    /// Invocations spawned and not yet finished.
    pub(crate) fn in_flight(&self) -> usize {
        self.kernel.in_flight()
    }

    /// Core-time busy up to `now`.
    pub(crate) fn busy(&self, now: Time) -> Nanos {
        self.kernel.busy(now)
    }

    /// Processes the kernel's events due by `bound` (one is due at `now`),
    /// until one notifies or [`POLL_EVENTS`] were processed (a batch cut
    /// short changes nothing of what its events do); returns the time of
    /// the last.
    #[inline(always)]
    pub(crate) fn run_kernel(&mut self, now: Time, bound: Time) -> Time {
        let (events, last) = self.kernel.run_until(bound, POLL_EVENTS, &mut self.notices);
        self.stats.events += events;
        last.unwrap_or(now)
    }

    /// `inv` arrives at `now`: the policy gives it its attributes, and the
    /// kernel a task.
    #[inline(always)]
    pub(crate) fn spawn<P: Steer + ?Sized>(&mut self, now: Time, inv: Invocation, policy: &mut P) {
        let task = TaskId(inv.id);
        let info = TaskInfo {
            task,
            function: inv.function.id,
            arrival: now,
            memory_mb: inv.memory_mb,
            deadline: inv.deadline,
        };
        let attrs = policy.on_arrival(now, &info, self.cpus);
        let watch = policy.cpu_watch(task);
        let f = InFlight {
            group: inv.group(),
            function: inv.function,
            arrival: now,
            memory_mb: inv.memory_mb,
        };
        let slot =
            self.kernel
                .spawn(now, task, inv.phases, attrs, watch, &mut self.notices) as usize;
        if slot == self.flight.len() {
            self.flight.push(Some(f));
        } else {
            self.flight[slot] = Some(f);
        }
    }

    /// The policy's periodic call, due at `now`: it hears the load since
    /// the last one, and its answers are applied.
    pub(crate) fn call_period<P: Steer + ?Sized>(&mut self, now: Time, policy: &mut P) {
        let (Some(p), Some(at)) = (self.period, self.next_period) else {
            return;
        };
        let busy = self.kernel.busy_by_core(now);
        let per_core: Vec<f64> = busy
            .iter()
            .zip(&self.busy_at_period)
            .map(|(b, before)| (b - before) as f64 / p as f64)
            .collect();
        let load = Load {
            utilisation: per_core.iter().sum::<f64>() / self.cores as f64,
            cores: self.cores,
            per_core,
        };
        self.busy_at_period = busy;
        self.next_period = Some(at + p);
        for (task, attrs) in policy.on_period(now, load) {
            self.kernel.set_attrs(now, task, attrs, &mut self.notices);
        }
        rewatch(now, &mut self.kernel, policy);
    }

    /// The run's stats, its busy time and utilisation up to its last
    /// finish.
    pub(crate) fn finish(&self) -> RunStats {
        let mut stats = self.stats;
        stats.busy = self.kernel.busy(stats.end);
        let span = stats.end.saturating_sub(stats.start);
        if span > 0 {
            stats.utilisation = stats.busy as f64 / (span as f64 * self.cores as f64);
        }
        stats
    }

    /// Delivers what the last step noticed (most kernel events, a tick or
    /// a preemption, notify nothing), then checks the kernel's invariants in
    /// debug builds: the caller's after every step, so that the loop of
    /// `os simulate` has one call site of the delivery.
    #[inline(always)]
    pub(crate) fn settle<P, S>(&mut self, now: Time, policy: &mut P, sink: &mut S)
    where
        P: Steer + ?Sized,
        S: Sink,
    {
        if !self.notices.is_empty() {
            deliver(
                now,
                &mut self.kernel,
                policy,
                &mut self.notices,
                &mut self.flight,
                &mut Counted {
                    sink,
                    stats: &mut self.stats,
                },
            );
        }
        if cfg!(debug_assertions) {
            self.kernel.check_invariants();
        }
    }
}

/// A sink that also counts the outcomes into the run's stats.
struct Counted<'a, S> {
    sink: &'a mut S,
    stats: &'a mut RunStats,
}

impl<S: Sink> Sink for Counted<'_, S> {
    fn outcome(&mut self, o: Outcome) {
        self.stats.invocations += 1;
        self.stats.end = self.stats.end.max(o.finish);
        self.sink.outcome(o);
    }
    fn turn(&mut self, task: TaskId, cpu: Nanos) {
        self.sink.turn(task, cpu);
    }
    fn interrupted(&mut self) -> bool {
        self.sink.interrupted()
    }
}

/// Hands the kernel's notices to the policy, applies its answers, and turns
/// exits into outcomes. Answers may produce notices of their own; those are
/// delivered too, in order.
fn deliver<P: Steer + ?Sized>(
    now: Time,
    kernel: &mut Kernel,
    policy: &mut P,
    notices: &mut Vec<Notice>,
    flight: &mut [Option<InFlight>],
    sink: &mut impl Sink,
) {
    let mut i = 0;
    while i < notices.len() {
        let n = notices[i].clone();
        i += 1;
        match n {
            Notice::Started(task) => {
                if let Some(a) = policy.on_start(now, task) {
                    kernel.set_attrs(now, task, a, notices);
                }
            }
            Notice::Blocked(task) => policy.on_block(now, task),
            Notice::Woke(task) => {
                if let Some(a) = policy.on_wake(now, task) {
                    kernel.set_attrs(now, task, a, notices);
                }
            }
            Notice::Watch(task, used) => {
                if let Some(a) = policy.on_cpu_used(now, task, used) {
                    kernel.set_attrs(now, task, a, notices);
                }
                kernel.set_watch(now, task, policy.cpu_watch(task));
            }
            Notice::Exited(task, slot, st) => {
                if let Some(f) = flight[slot as usize].take() {
                    let outcome = outcome(task, f, now, st);
                    policy.on_exit(now, task, &outcome);
                    rewatch(now, kernel, policy);
                    sink.outcome(outcome);
                }
            }
            Notice::Turn(task, cpu) => sink.turn(task, cpu),
        }
    }
    notices.clear();
}

/// Re-reads the watch of every task the policy names ([`Steer::rewatch`]).
fn rewatch<P: Steer + ?Sized>(now: Time, kernel: &mut Kernel, policy: &mut P) {
    for task in policy.rewatch() {
        kernel.set_watch(now, task, policy.cpu_watch(task));
    }
}

fn outcome(task: TaskId, f: InFlight, finish: Time, st: TaskStats) -> Outcome {
    Outcome {
        id: task.0,
        function: f.function,
        group: f.group,
        arrival: f.arrival,
        first_run: st.first_run,
        finish,
        cpu: st.cpu,
        io: st.io,
        voluntary_switches: st.voluntary,
        involuntary_switches: st.involuntary,
        memory_mb: f.memory_mb,
    }
}
