//! A Gittins-index rank per function on a stock kernel: each invocation's
//! nice value follows the Gittins index of its function's recent CPU times
//! at the service it has attained, so the cores go first to the
//! invocations likeliest to finish soonest for the CPU they still take.
//!
//! Why: when sizes are unknown but their distribution is known, serving
//! the job of highest Gittins index minimises the mean response time in
//! M/G/1 (Gittins; Aalto, Ayesta and Righter). With `a` of service
//! attained, the index is the best, over service budgets `Δ`, of
//! P(done within `Δ` more | not done at `a`) / E[service spent within `Δ`],
//! a completion rate; its inverse is an effective remaining size. It needs
//! no prediction of one invocation: a function's past invocations give the
//! distribution, and attained service, which a stock kernel reports,
//! moves each invocation along it. It orders what `alps`'s one rank per
//! function cannot (one function's invocations, which span decades on
//! production traces) and what `las`'s fixed steps cannot (a function
//! whose invocations are all long starts demoted; one near the end of a
//! known size is raised again).
//!
//! Two ladders realise the index on a stock kernel ([`Ladder`]). On the
//! nice ladder (`gittins`), with no privilege (the catalogue adds `alps`'s
//! wait guard, whose promotion to nice −20 needs it), an effective size of
//! up to [`Params::size_ms`] runs at nice 0, and each doubling beyond it
//! adds [`Params::steps_per_doubling`]; an invocation that has outrun every
//! CPU time its function's history holds goes to nice 19, as `las`'s tail
//! does. Nice values are weights, never a ban, so nothing starves. On the
//! real-time ladder (`gittins-rt`) the same sizes map to SCHED_FIFO
//! priorities, [`LADDER_TOP`] down to 1, each step a strict priority: the
//! Gittins policy itself, which serves the highest index first, where
//! weights only lean towards it. What is beyond the ladder's last step, and
//! the tail, shares the fair class at nice 19: under FIFO at one priority
//! the longest invocations would run in arrival order, each holding a core
//! to its end, which heavy tails punish (processor sharing does not).
//! Strict steps hold a lower one back for as long as higher ones have work:
//! the catalogue's wait guard bounds first runs (raising a waiting task
//! above the ladder), and the kernel's fair server keeps 50 ms a second of
//! each core for the fair class. The index is read again each time attained service crosses a
//! CPU watch set [`RECHECK`] times further on, at least [`MIN_STEP`] (and
//! at the history's longest time), so an invocation is re-read about ten
//! times over 10 ms to 10 s. Live, each watch is a poll of the process's
//! CPU time: a watch every millisecond or so took the steering thread half
//! a core on two cores, and the cores it took made the queue grow.

use crate::os::baseline::BASELINE_RT_PRIO;
use crate::param::BadParam;
use faasched_model::{
    Attrs, Class, CpuSet, FunctionId, IdMap, MS, Nanos, Outcome, Steer, TaskId, TaskInfo, Time,
};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Below this many CPU times, a function is judged by the pooled history of
/// every function (a new function's first invocations).
pub const MIN_HISTORY: usize = 8;
/// The most CPU times [`Params::history`] may keep per function.
pub const MAX_HISTORY: usize = 65_536;
/// CPU times kept over all functions, for those with too little history.
pub const POOLED_HISTORY: usize = 1024;
/// The index is read again once attained service has grown this much (or
/// by [`MIN_STEP`], whichever is more).
pub const RECHECK: f64 = 2.0;
/// The least growth of attained service between two readings.
pub const MIN_STEP: Nanos = 10 * MS;
/// The nice value of an invocation longer than its function's whole history.
pub const TAIL_NICE: i8 = 19;
/// The real-time ladder's first step, for the invocations expected
/// shortest: one below the wait guard's promotion, which stays above every
/// step ([`crate::os::wait_guard::PROMOTED_RT_PRIO`]).
pub const LADDER_TOP: u8 = BASELINE_RT_PRIO - 1;

/// What an invocation's effective size sets on a stock kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ladder {
    /// Nice 0 to 19 in the fair class: weights, never a ban.
    Nice,
    /// SCHED_FIFO priorities [`LADDER_TOP`] down to 1, then the fair class
    /// at nice 19: strict priorities, needing CAP_SYS_NICE.
    Realtime,
}

/// How effective sizes map to a ladder's steps. Serialised as the TOML
/// tables `[gittins]` and `[gittins_rt]` read it (what a run's summary
/// records).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// The effective remaining size (the index's inverse), ms, at and below
    /// which an invocation runs on the ladder's first step (nice 0, or
    /// [`LADDER_TOP`]).
    pub size_ms: f64,
    /// Steps down the ladder (nice values added, or real-time priorities
    /// taken away) per doubling of the effective size beyond `size_ms`.
    #[serde(alias = "nice_per_doubling")]
    pub steps_per_doubling: f64,
    /// CPU times kept per function, its most recent invocations': the
    /// distribution its index is read from. A short history follows a
    /// function whose sizes drift (the recent past predicts the next
    /// invocation); a long one estimates a steady distribution better.
    pub history: usize,
}

impl Default for Params {
    /// Chosen on the tuning half of `experiment alps-real` alone
    /// (docs/REAL-TRACE.md): the most of srpt's gain in its worst case.
    /// Nice 0 up to an effective 480 ms, nice 19 from about 1.1 s: nearly
    /// two classes, the invocations expected short and the rest, with a
    /// short ramp between. Each function's last 512 CPU times: a shorter
    /// memory did worse there (the trace's sizes do not drift within a
    /// day), a longer one no better.
    fn default() -> Params {
        Params {
            size_ms: 480.0,
            steps_per_doubling: 16.0,
            history: 512,
        }
    }
}

impl Params {
    /// The real-time ladder's defaults, chosen the same way
    /// (docs/REAL-TRACE.md): priority 49 up to an effective 480 ms, 8
    /// priorities fewer per doubling, the fair class from about 32 s.
    pub fn realtime() -> Params {
        Params {
            steps_per_doubling: 8.0,
            ..Params::default()
        }
    }

    /// Reads `[gittins_rt]`: a key it leaves out is [`Params::realtime`]'s,
    /// not the nice ladder's default that `Params`'s own reading fills in.
    pub fn realtime_table<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Params, D::Error> {
        /// The keys a table gives.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Given {
            size_ms: Option<f64>,
            #[serde(alias = "nice_per_doubling")]
            steps_per_doubling: Option<f64>,
            history: Option<usize>,
        }
        let given = Given::deserialize(d)?;
        let d = Params::realtime();
        Ok(Params {
            size_ms: given.size_ms.unwrap_or(d.size_ms),
            steps_per_doubling: given.steps_per_doubling.unwrap_or(d.steps_per_doubling),
            history: given.history.unwrap_or(d.history),
        })
    }

    /// An error naming the first parameter out of its range, in `table`
    /// (`gittins` or `gittins_rt`, the two tables these parameters fill).
    pub fn validate(&self, table: &'static str) -> Result<(), BadParam> {
        BadParam::require(
            self.size_ms.is_finite() && (0.001..=3_600_000.0).contains(&self.size_ms),
            table,
            "size_ms",
            self.size_ms,
            "from 0.001 ms (1 µs) up to 1 h",
        )?;
        BadParam::require(
            self.steps_per_doubling.is_finite() && (0.1..=39.0).contains(&self.steps_per_doubling),
            table,
            "steps_per_doubling",
            self.steps_per_doubling,
            "from 0.1 to 39",
        )?;
        BadParam::require(
            (MIN_HISTORY..=MAX_HISTORY).contains(&self.history),
            table,
            "history",
            self.history,
            "from 8 to 65,536 CPU times",
        )
    }

    /// Steps down the ladder of an effective remaining size, ns: 0 at or
    /// below `size_ms`.
    fn steps(&self, size: f64) -> f64 {
        let doublings = (size / (self.size_ms * MS as f64)).log2();
        (doublings * self.steps_per_doubling).round().max(0.0)
    }

    /// The nice value of an effective remaining size, ns.
    fn nice_of(&self, size: f64) -> i8 {
        self.steps(size).min(f64::from(TAIL_NICE)) as i8
    }
}

impl Ladder {
    /// What runs an invocation of effective remaining size `size`, ns
    /// (`None`: longer than its function's whole history, the tail).
    fn attrs(self, params: &Params, size: Option<f64>, cpus: CpuSet) -> Attrs {
        let tail = Attrs {
            nice: TAIL_NICE,
            ..Attrs::normal(cpus)
        };
        let Some(size) = size else {
            return tail;
        };
        match self {
            Ladder::Nice => Attrs {
                nice: params.nice_of(size),
                ..Attrs::normal(cpus)
            },
            Ladder::Realtime => {
                let prio = f64::from(LADDER_TOP) - params.steps(size);
                if prio < 1.0 {
                    return tail;
                }
                Attrs::normal(cpus).with_class(Class::Fifo(prio as u8))
            }
        }
    }
}

/// The most recent CPU times of some invocations, kept sorted too.
#[derive(Debug)]
struct History {
    capacity: usize,
    /// In arrival order of the outcomes, for eviction.
    recent: VecDeque<Nanos>,
    /// The same times, ascending.
    sorted: Vec<Nanos>,
}

impl History {
    fn new(capacity: usize) -> History {
        History {
            capacity,
            recent: VecDeque::with_capacity(capacity),
            sorted: Vec::with_capacity(capacity),
        }
    }

    /// Adds `cpu`, forgetting the oldest time when full.
    fn push(&mut self, cpu: Nanos) {
        if self.recent.len() == self.capacity
            && let Some(old) = self.recent.pop_front()
        {
            let at = self.sorted.partition_point(|&x| x < old);
            self.sorted.remove(at);
        }
        self.recent.push_back(cpu);
        let at = self.sorted.partition_point(|&x| x < cpu);
        self.sorted.insert(at, cpu);
    }

    fn len(&self) -> usize {
        self.sorted.len()
    }

    /// The effective remaining size, ns, of an invocation that has had
    /// `attained` of CPU: the inverse of its Gittins index over these times,
    /// min over budgets `Δ` of E[min(S − a, Δ) | S > a] / P(S − a ≤ Δ | S > a).
    /// For an empirical distribution the best budgets end at the surviving
    /// times, so with the survivors x₁ ≤ … ≤ xₘ it is the least over j of
    /// (Σ_{i≤j} (xᵢ − a) + (m − j)(xⱼ − a)) / j. `None` when no time is
    /// longer than `attained`.
    fn effective_size(&self, attained: Nanos) -> Option<f64> {
        let survivors = &self.sorted[self.sorted.partition_point(|&x| x <= attained)..];
        let m = survivors.len();
        let mut spent_by_done = 0.0;
        let mut best = f64::INFINITY;
        for (j, &x) in survivors.iter().enumerate() {
            let rest = (x - attained) as f64;
            spent_by_done += rest;
            let done = (j + 1) as f64;
            let spent = spent_by_done + (m - j - 1) as f64 * rest;
            best = best.min(spent / done);
        }
        (m > 0).then_some(best)
    }

    /// The longest time held.
    fn longest(&self) -> Option<Nanos> {
        self.sorted.last().copied()
    }
}

/// A task in flight.
#[derive(Clone, Copy, Debug)]
struct Task {
    function: FunctionId,
    attrs: Attrs,
    /// Where its index is read next; `None` once at the tail.
    watch: Option<Nanos>,
}

/// The Gittins-index policy.
#[derive(Debug)]
pub struct Gittins {
    name: &'static str,
    ladder: Ladder,
    params: Params,
    functions: IdMap<FunctionId, History>,
    pooled: History,
    tasks: IdMap<TaskId, Task>,
}

impl Gittins {
    /// A policy on `ladder` with no history yet, under `name`.
    pub fn new(name: &'static str, ladder: Ladder, params: Params) -> Gittins {
        Gittins {
            name,
            ladder,
            params,
            functions: IdMap::default(),
            pooled: History::new(POOLED_HISTORY),
            tasks: IdMap::default(),
        }
    }

    /// The history `function`'s invocations are judged by: its own once it
    /// has [`MIN_HISTORY`] times, else the pooled one.
    fn history(&self, function: FunctionId) -> &History {
        match self.functions.get(&function) {
            Some(h) if h.len() >= MIN_HISTORY => h,
            _ => &self.pooled,
        }
    }

    /// What runs an invocation of `function` that has had `attained` of
    /// CPU on `cpus`, and its next watch. With no history at all it runs on
    /// the first step: on the nice ladder unwatched (nice 0 is the
    /// kernel's default), on the real-time ladder read again [`MIN_STEP`]
    /// later, so that an early long invocation does not hold the top
    /// strict priority to its end.
    fn steer(&self, function: FunctionId, attained: Nanos, cpus: CpuSet) -> (Attrs, Option<Nanos>) {
        let history = self.history(function);
        let Some(longest) = history.longest() else {
            let watch = (self.ladder == Ladder::Realtime).then_some(attained + MIN_STEP);
            return (self.ladder.attrs(&self.params, Some(0.0), cpus), watch);
        };
        let size = history.effective_size(attained);
        let watch = size.map(|_| {
            let further = ((attained as f64 * RECHECK) as Nanos).max(attained + MIN_STEP);
            further.min(longest)
        });
        (self.ladder.attrs(&self.params, size, cpus), watch)
    }
}

impl Steer for Gittins {
    fn name(&self) -> &str {
        self.name
    }

    fn on_arrival(&mut self, _now: Time, task: &TaskInfo, cpus: CpuSet) -> Attrs {
        let (attrs, watch) = self.steer(task.function, 0, cpus);
        self.tasks.insert(
            task.task,
            Task {
                function: task.function,
                attrs,
                watch,
            },
        );
        attrs
    }

    fn cpu_watch(&self, task: TaskId) -> Option<Nanos> {
        self.tasks.get(&task)?.watch
    }

    fn on_cpu_used(&mut self, _now: Time, task: TaskId, used: Nanos) -> Option<Attrs> {
        let t = self.tasks.get(&task)?;
        let (attrs, watch) = self.steer(t.function, used, t.attrs.cpus);
        let t = self.tasks.get_mut(&task)?;
        t.watch = watch;
        if t.attrs == attrs {
            return None;
        }
        t.attrs = attrs;
        Some(attrs)
    }

    fn on_exit(&mut self, _now: Time, task: TaskId, outcome: &Outcome) {
        self.tasks.remove(&task);
        let function = outcome.function.id;
        self.functions
            .entry(function)
            .or_insert_with(|| History::new(self.params.history))
            .push(outcome.cpu);
        self.pooled.push(outcome.cpu);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::testkit::{info, outcome};

    fn history(times: &[Nanos]) -> History {
        let mut h = History::new(Params::default().history);
        for &t in times {
            h.push(t);
        }
        h
    }

    #[test]
    fn the_effective_size_is_the_gittins_index_inverted_by_hand() {
        // Sizes 1 and 9, equally likely. From 0: a budget of 1 finishes half
        // for an expected 1 spent (size 2); a budget of 9 finishes all for
        // an expected 5 spent (size 5): the index picks 2.
        let h = history(&[9, 1]);
        assert_eq!(h.effective_size(0), Some(2.0));
        // Past 1, only 9 is left: 8 more.
        assert_eq!(h.effective_size(1), Some(8.0));
        assert_eq!(h.effective_size(9), None);
        // One size: the remaining work itself, the index of a known size.
        assert_eq!(history(&[5, 5, 5]).effective_size(2), Some(3.0));
        // A decreasing hazard (most short, a few long) keeps a small size at
        // first and a large one once the short ones are ruled out.
        let h = history(&[1, 1, 1, 1000]);
        assert_eq!(h.effective_size(0), Some((3.0 + 1.0) / 3.0));
        assert_eq!(h.effective_size(1), Some(999.0));
    }

    #[test]
    fn the_history_forgets_its_oldest_and_stays_sorted() {
        let mut h = History::new(3);
        for t in [5, 1, 3, 2] {
            h.push(t);
        }
        assert_eq!(h.sorted, [1, 2, 3]);
        h.push(3);
        assert_eq!(h.sorted, [2, 3, 3]);
        assert_eq!(h.longest(), Some(3));
    }

    #[test]
    fn nice_rises_by_its_step_per_doubling_past_the_size_and_stops_at_19() {
        let p = Params {
            size_ms: 10.0,
            steps_per_doubling: 2.0,
            ..Params::default()
        };
        assert_eq!(p.nice_of(1e6), 0);
        assert_eq!(p.nice_of((10 * MS) as f64), 0);
        assert_eq!(p.nice_of((20 * MS) as f64), 2);
        assert_eq!(p.nice_of((80 * MS) as f64), 6);
        assert_eq!(p.nice_of(1e12), 19);
        let bad = Params {
            steps_per_doubling: 0.0,
            ..p
        };
        assert_eq!(
            bad.validate("gittins").unwrap_err().name,
            "steps_per_doubling"
        );
        for history in [MIN_HISTORY - 1, MAX_HISTORY + 1] {
            let bad = Params { history, ..p };
            assert_eq!(bad.validate("gittins").unwrap_err().name, "history");
        }
        assert!(Params::default().validate("gittins").is_ok());
    }

    #[test]
    fn the_realtime_ladder_takes_priorities_away_per_doubling_then_shares_the_fair_class() {
        let p = Params::realtime();
        let cpus = CpuSet::first(2);
        let on = |size_ms: f64| Ladder::Realtime.attrs(&p, Some(size_ms * MS as f64), cpus);
        assert_eq!(on(0.0).class, Class::Fifo(LADDER_TOP));
        assert_eq!(on(480.0).class, Class::Fifo(49));
        // One doubling: 8 priorities; two: 16.
        assert_eq!(on(960.0).class, Class::Fifo(41));
        assert_eq!(on(1920.0).class, Class::Fifo(33));
        // 48 priorities down is the last step (6 doublings, 30.72 s); the
        // next one would be 0: the fair class at nice 19, as the tail.
        assert_eq!(on(480.0 * 64.0).class, Class::Fifo(1));
        let beyond = on(480.0 * 128.0);
        assert_eq!((beyond.class, beyond.nice), (Class::Normal, TAIL_NICE));
        let tail = Ladder::Realtime.attrs(&p, None, cpus);
        assert_eq!((tail.class, tail.nice), (Class::Normal, TAIL_NICE));
        // The nice ladder reads the same sizes as weights.
        let nice = Ladder::Nice.attrs(&Params::default(), Some(960.0 * MS as f64), cpus);
        assert_eq!((nice.class, nice.nice), (Class::Normal, 16));
        assert!(p.validate("gittins_rt").is_ok());
    }

    /// On the real-time ladder, a long invocation is ranked below a short
    /// one from its arrival and moves as its attained service is read.
    #[test]
    fn a_realtime_invocation_moves_down_and_up_its_functions_distribution() {
        let cpus = CpuSet::first(2);
        let mut p = Gittins::new("gittins-rt", Ladder::Realtime, Params::realtime());
        // With no history at all: the top step, read again as it runs.
        assert_eq!(p.on_arrival(0, &info(9, 9, 0), cpus).class, Class::Fifo(49));
        assert_eq!(p.cpu_watch(TaskId(9)), Some(MIN_STEP));
        assert_eq!(p.on_cpu_used(0, TaskId(9), MIN_STEP), None);
        assert_eq!(p.cpu_watch(TaskId(9)), Some(2 * MIN_STEP));
        for i in 0..MIN_HISTORY as u64 {
            p.on_exit(0, TaskId(100 + i), &outcome(1, 0, 2 * MS));
            p.on_exit(0, TaskId(200 + i), &outcome(2, 0, 3840 * MS));
        }
        assert_eq!(p.on_arrival(0, &info(1, 1, 0), cpus).class, Class::Fifo(49));
        // 3,840 ms is three doublings past 480 ms: 24 priorities down.
        assert_eq!(p.on_arrival(0, &info(2, 2, 0), cpus).class, Class::Fifo(25));
        // 240 ms left: the first step again.
        let near = p.on_cpu_used(0, TaskId(2), 3600 * MS).unwrap();
        assert_eq!(near.class, Class::Fifo(49));
        // Past its history: the tail, in the fair class.
        let past = p.on_cpu_used(0, TaskId(2), 3840 * MS).unwrap();
        assert_eq!((past.class, past.nice), (Class::Normal, TAIL_NICE));
    }

    /// A function that ran short 16 times and then long 8 times: a history
    /// of 8 sees only the long ones, one of 512 mostly short ones.
    #[test]
    fn a_short_history_follows_a_function_whose_sizes_drift() {
        let cpus = CpuSet::first(2);
        let run = |history| {
            let params = Params {
                size_ms: 10.0,
                steps_per_doubling: 2.0,
                history,
            };
            let mut p = Gittins::new("gittins", Ladder::Nice, params);
            for i in 0..16 {
                p.on_exit(0, TaskId(i), &outcome(1, 0, 2 * MS));
            }
            for i in 16..24 {
                p.on_exit(0, TaskId(i), &outcome(1, 0, 640 * MS));
            }
            p.on_arrival(0, &info(99, 1, 0), cpus).nice
        };
        // 640 ms: 6 doublings past 10 ms.
        assert_eq!(run(MIN_HISTORY), 12);
        // A 2 ms budget ends two thirds of them for 2 ms spent: 3 ms.
        assert_eq!(run(512), 0);
    }

    #[test]
    fn a_function_of_long_invocations_starts_demoted_and_a_short_one_does_not() {
        let cpus = CpuSet::first(2);
        let mut p = Gittins::new(
            "gittins",
            Ladder::Nice,
            Params {
                size_ms: 10.0,
                steps_per_doubling: 2.0,
                ..Params::default()
            },
        );
        // No history: nice 0, nothing watched.
        assert_eq!(p.on_arrival(0, &info(1, 7, 0), cpus).nice, 0);
        assert_eq!(p.cpu_watch(TaskId(1)), None);
        p.on_exit(0, TaskId(1), &outcome(7, 0, 2 * MS));
        for i in 0..MIN_HISTORY as u64 {
            p.on_exit(0, TaskId(100 + i), &outcome(1, 0, 2 * MS));
            p.on_exit(0, TaskId(200 + i), &outcome(2, 0, 640 * MS));
        }
        // Function 1's 2 ms: nice 0; function 2's 640 ms: 6 doublings.
        assert_eq!(p.on_arrival(0, &info(2, 1, 0), cpus).nice, 0);
        let long = p.on_arrival(0, &info(3, 2, 0), cpus);
        assert_eq!(long.nice, 12);
        assert_eq!(p.cpu_watch(TaskId(3)), Some(10 * MS));
        // Near the end of its known size it is raised again: 40 ms left.
        let w = p.on_cpu_used(0, TaskId(3), 600 * MS).unwrap();
        assert_eq!(w.nice, 4);
        assert_eq!(p.cpu_watch(TaskId(3)), Some(640 * MS));
        // Past every time it has had: the tail.
        assert_eq!(p.on_cpu_used(0, TaskId(3), 640 * MS).unwrap().nice, 19);
        assert_eq!(p.cpu_watch(TaskId(3)), None);
        // A function with too little history of its own is judged by the
        // pooled one (mostly 2 ms and 640 ms: half short, so nice 0 at first).
        assert_eq!(p.on_arrival(0, &info(4, 9, 0), cpus).nice, 0);
    }
}
