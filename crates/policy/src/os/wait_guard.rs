//! A bound on the wait for a first run, on top of another policy: a task that
//! has not had a core [`WAIT_LIMIT`] after it arrived is raised (to nice
//! −20, or above a ladder of real-time steps to SCHED_FIFO
//! [`PROMOTED_RT_PRIO`]: [`Promotion`]) until it first runs, then gets back
//! what the policy beneath gives it.
//!
//! Why: `alps` maps learned ranks to nice values and learned slices to EEVDF
//! custom slices of up to 100 ms. On bursty production arrivals a core can
//! hold several well-ranked tasks, each owed a 100 ms protected run with an
//! earlier virtual deadline than a poorly ranked newcomer's, and the
//! newcomer waits behind all of them: over a second on the Azure 2019 sample
//! at load 1.0, where `cfs` never makes a first run wait 60 ms. Nice −20
//! weighs 88,761 against nice −5's 3,121, so the promoted task's virtual
//! deadline comes first and it is picked at its core's next decision.
//! The promotion lasts only until that first run, so what the policy
//! beneath decides about running tasks is untouched. Checking every
//! [`TICK`] is what a stock kernel allows without a hook on the run queue;
//! the live runtime calls the same code from its periodic timer.

use crate::os::baseline::BASELINE_RT_PRIO;
use crate::os::layer::{Layer, Over};
use faasched_model::{Attrs, Class, CpuSet, IdMap, Load, MS, Nanos, Steer, TaskId, TaskInfo, Time};
use std::collections::VecDeque;

/// How long a task may wait for its first run before it is promoted.
pub const WAIT_LIMIT: Nanos = 50 * MS;

/// How often waiting tasks are checked (at most; the periodic call of the
/// policy beneath, if shorter, sets the pace).
pub const TICK: Nanos = 10 * MS;

/// The nice value of a promoted task: the fair class's heaviest weight.
pub const PROMOTED_NICE: i8 = -20;

/// The priority of a task promoted under real-time steps: the highest an
/// invocation gets, above every step of `gittins-rt`'s ladder.
pub const PROMOTED_RT_PRIO: u8 = BASELINE_RT_PRIO;

/// What a promotion gives a waiting task: what gets it picked at its
/// core's next decision among the tasks its policy runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Promotion {
    /// Nice −20 and the shortest slice, in the fair classes (a policy of
    /// nice values; real-time tasks are left as they are).
    Nice,
    /// SCHED_FIFO at [`PROMOTED_RT_PRIO`], from any class below it: under a
    /// policy of real-time steps, nice −20 would still wait behind them.
    Realtime,
}

/// A task that has not run yet.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    /// What the policy beneath last gave it.
    beneath: Attrs,
    promoted: bool,
}

/// The bound on the wait for a first run, the layer.
#[derive(Debug)]
pub struct FirstRun {
    /// Tasks that have not run yet, by id.
    waiting: IdMap<TaskId, Waiting>,
    /// Every arrival not yet checked, in arrival order; a task that ran or
    /// left before its check is dropped from the front when its turn comes.
    arrivals: VecDeque<(Time, TaskId)>,
    tick: Nanos,
    /// The periodic call of the policy beneath, and what the ticks since
    /// its last one measured: each core's busy time and the time elapsed.
    beneath_period: Option<Nanos>,
    busy: Vec<Nanos>,
    elapsed: Nanos,
    promotion: Promotion,
}

/// Policy `P` with a bound on the wait for a first run.
pub type WaitGuard<P> = Over<FirstRun, P>;

impl<P: Steer> WaitGuard<P> {
    /// `beneath`, with first runs bounded by nice −20.
    pub fn new(beneath: P) -> WaitGuard<P> {
        Self::promoting(beneath, Promotion::Nice)
    }

    /// `beneath`, with first runs bounded by `promotion`.
    pub fn promoting(beneath: P, promotion: Promotion) -> WaitGuard<P> {
        let beneath_period = beneath.period().filter(|&p| p > 0);
        let layer = FirstRun {
            tick: beneath_period.map_or(TICK, |p| p.min(TICK)),
            waiting: IdMap::default(),
            arrivals: VecDeque::new(),
            beneath_period,
            busy: Vec::new(),
            elapsed: 0,
            promotion,
        };
        Over { layer, beneath }
    }
}

impl FirstRun {
    /// What a waiting task runs under: beneath's attributes, promoted if it
    /// is and its promotion applies to its class.
    fn attrs(promotion: Promotion, w: &Waiting) -> Attrs {
        let mut a = w.beneath;
        if !w.promoted {
            return a;
        }
        match (promotion, a.class) {
            (Promotion::Nice, Class::Normal | Class::Batch) => {
                a.nice = PROMOTED_NICE;
                a.slice = Some(Attrs::SLICE_MIN);
            }
            (Promotion::Realtime, Class::Fifo(p) | Class::Rr(p)) if p >= PROMOTED_RT_PRIO => {}
            (Promotion::Realtime, _) => {
                a = Attrs {
                    nice: 0,
                    slice: None,
                    ..a
                }
                .with_class(Class::Fifo(PROMOTED_RT_PRIO));
            }
            (Promotion::Nice, _) => {}
        }
        a
    }

    /// Promotes every task that arrived `WAIT_LIMIT` before `now` and has
    /// not run yet, in arrival order.
    fn promote(&mut self, now: Time, out: &mut Vec<(TaskId, Attrs)>) {
        while let Some(&(arrival, task)) = self.arrivals.front() {
            if arrival + WAIT_LIMIT > now {
                break;
            }
            self.arrivals.pop_front();
            if let Some(w) = self.waiting.get_mut(&task) {
                w.promoted = true;
                let a = Self::attrs(self.promotion, w);
                if a != w.beneath {
                    out.push((task, a));
                }
            }
        }
    }

    /// Adds a tick's load to the tally for beneath; the load of the ticks
    /// since its last call when that call is due. The cores' busy time is
    /// recovered exactly from the fractions (integers below 2⁵³), so
    /// beneath sees the load it would have measured over its own period.
    fn tally(&mut self, load: &Load) -> Option<Load> {
        let period = self.beneath_period?;
        self.busy.resize(load.per_core.len(), 0);
        for (b, u) in self.busy.iter_mut().zip(&load.per_core) {
            *b += (u * self.tick as f64).round() as Nanos;
        }
        self.elapsed += self.tick;
        if self.elapsed < period {
            return None;
        }
        let per_core: Vec<f64> = self
            .busy
            .iter()
            .map(|&b| b as f64 / self.elapsed as f64)
            .collect();
        self.busy.iter_mut().for_each(|b| *b = 0);
        self.elapsed = 0;
        Some(Load {
            utilisation: per_core.iter().sum::<f64>() / load.cores as f64,
            cores: load.cores,
            per_core,
        })
    }
}

impl Layer for FirstRun {
    fn name(&self) -> Option<&str> {
        None
    }

    fn on_arrival(&mut self, now: Time, task: &TaskInfo, _cpus: CpuSet, given: Attrs) -> Attrs {
        self.waiting.insert(
            task.task,
            Waiting {
                beneath: given,
                promoted: false,
            },
        );
        self.arrivals.push_back((now, task.task));
        given
    }

    /// Promoted while the task waits.
    fn pass(&mut self, task: TaskId, given: Attrs) -> Option<Attrs> {
        match self.waiting.get_mut(&task) {
            Some(w) => {
                w.beneath = given;
                Some(Self::attrs(self.promotion, w))
            }
            None => Some(given),
        }
    }

    fn on_start(&mut self, _now: Time, task: TaskId, given: Option<Attrs>) -> Option<Attrs> {
        match self.waiting.remove(&task) {
            // Back to what beneath gives it, now that it has run.
            Some(w) if w.promoted => Some(given.unwrap_or(w.beneath)),
            _ => given,
        }
    }

    fn wants_start(&self) -> bool {
        true
    }

    fn forget(&mut self, task: TaskId) {
        self.waiting.remove(&task);
    }

    fn period(&self, _beneath: Option<Nanos>) -> Option<Nanos> {
        Some(self.tick)
    }

    fn on_period<P: Steer>(
        &mut self,
        now: Time,
        load: Load,
        beneath: &mut P,
    ) -> Vec<(TaskId, Attrs)> {
        // Promoted first, so that what beneath gives a promoted task comes
        // out promoted.
        let mut out = Vec::new();
        self.promote(now, &mut out);
        if let Some(load) = self.tally(&load) {
            for (task, given) in beneath.on_period(now, load) {
                if let Some(a) = self.pass(task, given) {
                    out.push((task, a));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::Uniform;
    use crate::os::testkit::{info, outcome};

    fn load(per_core: Vec<f64>) -> Load {
        Load {
            utilisation: per_core.iter().sum::<f64>() / per_core.len() as f64,
            cores: per_core.len(),
            per_core,
        }
    }

    #[test]
    fn a_task_still_waiting_at_the_limit_is_promoted_until_it_first_runs() {
        let cpus = CpuSet::first(2);
        let mut g = WaitGuard::new(Uniform::STOCK);
        assert_eq!(g.period(), Some(TICK));
        assert!(g.wants_start());
        let normal = Attrs::normal(cpus);
        let promoted = Attrs {
            nice: PROMOTED_NICE,
            slice: Some(Attrs::SLICE_MIN),
            ..normal
        };
        for (task, at) in [(0, 0), (1, 5 * MS), (2, 15 * MS)] {
            assert_eq!(g.on_arrival(at, &info(task, 0, at), cpus), normal);
        }
        // Task 1 runs in time.
        assert_eq!(g.on_start(20 * MS, TaskId(1)), None);
        // The tick at 50 ms: task 0 reached the limit, task 2 not yet.
        assert!(g.on_period(40 * MS, load(vec![1.0, 1.0])).is_empty());
        assert_eq!(
            g.on_period(50 * MS, load(vec![1.0, 1.0])),
            vec![(TaskId(0), promoted)]
        );
        // Task 2 reached it at 65 ms: promoted at the tick after, 70 ms.
        assert!(g.on_period(60 * MS, load(vec![1.0, 1.0])).is_empty());
        assert_eq!(
            g.on_period(70 * MS, load(vec![1.0, 1.0])),
            vec![(TaskId(2), promoted)]
        );
        // Once it has run, a promoted task gets back what beneath gave it.
        assert_eq!(g.on_start(71 * MS, TaskId(0)), Some(normal));
        g.on_exit(80 * MS, TaskId(2), &outcome(0, 15 * MS, MS));
        assert!(g.on_period(500 * MS, load(vec![1.0, 1.0])).is_empty());
    }

    #[test]
    fn a_realtime_promotion_lifts_a_waiting_task_above_every_ladder_step() {
        use crate::os::gittins::{Gittins, LADDER_TOP, Ladder, Params};
        let cpus = CpuSet::first(2);
        let rt = Gittins::new("gittins-rt", Ladder::Realtime, Params::realtime());
        let mut g = WaitGuard::promoting(rt, Promotion::Realtime);
        let first = g.on_arrival(0, &info(0, 0, 0), cpus);
        assert_eq!(first.class, Class::Fifo(LADDER_TOP));
        let promoted = first.with_class(Class::Fifo(PROMOTED_RT_PRIO));
        assert_eq!(
            g.on_period(50 * MS, load(vec![1.0, 1.0])),
            vec![(TaskId(0), promoted)]
        );
        assert_eq!(g.on_start(51 * MS, TaskId(0)), Some(first));
        // A fair task (beyond the ladder) is raised into the same priority,
        // where nice -20 would still wait behind every step.
        let mut g = WaitGuard::promoting(Uniform::STOCK, Promotion::Realtime);
        let fair = g.on_arrival(0, &info(0, 0, 0), cpus);
        assert_eq!(
            g.on_period(50 * MS, load(vec![1.0, 1.0])),
            vec![(TaskId(0), fair.with_class(Class::Fifo(PROMOTED_RT_PRIO)))]
        );
        // Already at the promotion's priority: nothing to raise; and the
        // nice promotion leaves real-time tasks as they are.
        for mut g in [
            WaitGuard::promoting(Uniform::FIFO, Promotion::Realtime),
            WaitGuard::new(Uniform::RR),
        ] {
            g.on_arrival(0, &info(0, 0, 0), cpus);
            assert!(g.on_period(50 * MS, load(vec![1.0, 1.0])).is_empty());
        }
    }

    /// Beneath: learns every 100 ms and records the load it is told; gives
    /// every task nice 3 at arrival and nice 4 at each period.
    #[derive(Default)]
    struct Learner {
        loads: Vec<(Time, Load)>,
    }

    impl Steer for Learner {
        fn name(&self) -> &str {
            "learner"
        }
        fn on_arrival(&mut self, _: Time, _: &TaskInfo, cpus: CpuSet) -> Attrs {
            Attrs {
                nice: 3,
                ..Attrs::normal(cpus)
            }
        }
        fn period(&self) -> Option<Nanos> {
            Some(100 * MS)
        }
        fn on_period(&mut self, now: Time, load: Load) -> Vec<(TaskId, Attrs)> {
            self.loads.push((now, load));
            vec![(
                TaskId(0),
                Attrs {
                    nice: 4,
                    ..Attrs::normal(CpuSet::first(2))
                },
            )]
        }
    }

    /// Beneath is called at its own period, with the load its own period
    /// would have measured (to the bit), and its attributes reach a
    /// promoted task under the promotion.
    #[test]
    fn beneath_learns_at_its_period_from_the_ticks_load_and_its_attrs_pass_through() {
        let cpus = CpuSet::first(2);
        let mut g = WaitGuard::new(Learner::default());
        g.on_arrival(0, &info(0, 0, 0), cpus);
        // Busy time per tick, per core, in ns, as the engine divides it:
        // ten ticks make beneath's period.
        let busy: Vec<[u64; 2]> = (0..10u64)
            .map(|i| [i * 999_999 + 7, (TICK - 1).min(i * 3_333_337)])
            .collect();
        let mut changed = Vec::new();
        for (i, b) in busy.iter().enumerate() {
            let per_core = b.iter().map(|&x| x as f64 / TICK as f64).collect();
            changed = g.on_period((i as u64 + 1) * TICK, load(per_core));
        }
        let loads = &g.beneath().loads;
        assert_eq!(loads.len(), 1);
        let own: Vec<f64> = (0..2)
            .map(|c| busy.iter().map(|b| b[c]).sum::<u64>() as f64 / (100 * MS) as f64)
            .collect();
        assert_eq!(loads[0], (100 * MS, load(own)));
        // Promoted at 50 ms, the task gets beneath's nice 4 under the
        // promotion.
        let promoted = Attrs {
            nice: PROMOTED_NICE,
            slice: Some(Attrs::SLICE_MIN),
            ..Attrs::normal(CpuSet::first(2))
        };
        assert_eq!(changed, vec![(TaskId(0), promoted)]);
        // Started, it runs under what beneath last gave it.
        assert_eq!(g.on_start(101 * MS, TaskId(0)).map(|a| a.nice), Some(4));
    }
}
