//! What kernel the model is, and the knobs of that kernel.

use faasched_model::{MS, Nanos, SEC, US};
use std::fmt;

/// The fair class the model runs for SCHED_NORMAL/BATCH/IDLE tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FairClass {
    /// EEVDF, Linux ≥ 6.6 with 6.12+ semantics (custom slices, RUN_TO_PARITY,
    /// PREEMPT_SHORT). The default: it is what a stock kernel runs today.
    #[default]
    Eevdf,
    /// Legacy CFS (Linux ≤ 6.5), for the papers' 5.x baselines.
    Cfs,
}

/// How predictions are made for the SRPT family (ALPS §2, Fig. 2).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Prediction {
    /// The oracle: remaining CPU known exactly.
    #[default]
    Exact,
    /// Each invocation's demand is mispredicted by a factor drawn uniformly from
    /// `1 ± bound` (SRPT-EB: ±50%).
    ErrorBound(f64),
    /// This fraction of invocations gets a random prediction (SRPT-RANDOM: 40%;
    /// RANDOM: 100%); see [`RANDOM_PREDICTION_RANGE`].
    Random(f64),
}

/// A random prediction is drawn log-uniformly from this range. ALPS says only
/// "generated randomly"; log-uniform over 0.1 ms–10 s covers every group of
/// Table 1 evenly in order of magnitude, so a random guess carries no information
/// about the invocation.
pub const RANDOM_PREDICTION_RANGE: (Nanos, Nanos) = (100 * US, 10 * SEC);

/// The longest fair-server period a configuration may set: a minute (Linux's
/// default is 1 s). Bounded so that a timer it arms stays within the event
/// queue's range (see [`crate::RUN_LIMIT`]).
pub const MAX_FAIR_SERVER_PERIOD: Nanos = 60 * SEC;

/// The longest [`Config::alps_wait_limit`]: a minute, as the fair-server
/// period, so that a timer armed for it stays within the event queue's range
/// (see [`crate::RUN_LIMIT`]).
pub const MAX_ALPS_WAIT_LIMIT: Nanos = 60 * SEC;

/// The scheduling discipline of the whole machine.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Discipline {
    /// A Linux kernel: RT (FIFO/RR) > fair (the configured [`FairClass`]) with
    /// SCHED_IDLE inside fair, exactly the knobs a steering policy sets.
    #[default]
    Linux,
    /// Sim only: preemptive shortest remaining (predicted) processing time.
    Srpt(Prediction),
    /// Sim only: ideal processor sharing, every runnable task at rate min(1, M/n).
    Ps,
    /// Sim only: one global first-in-first-out queue, never preempted.
    FifoNp,
    /// Sim only: the ALPS paper's patched CFS (Linux 5.18 with its eBPF hooks):
    /// the legacy CFS class, whatever [`Config::fair`] says, with the queue
    /// ordered by [`Attrs::rank`](faasched_model::Attrs::rank) and then
    /// vruntime, and a running task kept on its core while its CPU time in this
    /// turn is below its [`Attrs::slice`](faasched_model::Attrs::slice);
    /// bounded by [`Config::alps_wait_limit`] so that nothing starves.
    AlpsKernel,
}

impl Discipline {
    /// Whether this discipline exists only in the simulator.
    pub fn sim_only(&self) -> bool {
        !matches!(self, Discipline::Linux)
    }
}

/// The kernel's configuration. Build with [`Config::new`], then adjust fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Number of cores. By default 1.
    pub cores: usize,
    /// Machine-wide discipline. By default [`Discipline::Linux`].
    pub discipline: Discipline,
    /// The fair class. By default [`FairClass::Eevdf`].
    pub fair: FairClass,
    /// Timer interrupt frequency. By default 250 (Debian/Ubuntu kernels).
    pub hz: u32,
    /// Core time spent by every context switch. By default 3.5 µs, the CFS
    /// switch cost the ALPS paper measured.
    pub context_switch: Nanos,
    /// EEVDF base slice. By default 0.70 ms × (1 + ilog2(min(cores, 8))), the
    /// kernel's `sysctl_sched_base_slice` scaling since 6.15.
    pub base_slice: Nanos,
    /// CFS `sched_latency`. By default 6 ms × (1 + ilog2(min(cores, 8))).
    pub cfs_latency: Nanos,
    /// CFS `sched_min_granularity`. By default 0.75 ms × the same factor.
    pub cfs_min_granularity: Nanos,
    /// CFS `sched_wakeup_granularity`. By default 1 ms × the same factor.
    pub cfs_wakeup_granularity: Nanos,
    /// SCHED_RR quantum. By default 100 ms (`RR_TIMESLICE`).
    pub rr_timeslice: Nanos,
    /// Whether the fair server reserves fair tasks time under RT load. By default
    /// on, as in Linux 6.12+.
    pub fair_server: bool,
    /// Fair-server runtime per period. By default 50 ms.
    pub fair_server_runtime: Nanos,
    /// Fair-server period. By default 1 s.
    pub fair_server_period: Nanos,
    /// Seed for the sim-only classes that draw random predictions.
    pub seed: u64,
    /// Whether to report every turn on a core ([`Notice::Turn`](crate::Notice::Turn)).
    /// Off by default: only the ALPS learner's window simulation reads turns,
    /// and a notice per preemption costs the others for nothing.
    pub report_turns: bool,
    /// Whether to report every task's first run
    /// ([`Notice::Started`](crate::Notice::Started)). Off by default: only
    /// policies that ask for it react (`Steer::wants_start`), and the engine
    /// turns it on for them.
    pub report_starts: bool,
    /// When a policy hears that a task's CPU time reached its watch
    /// ([`Notice::Watch`](crate::Notice::Watch)). `None` (the default): at
    /// that instant, an ideal watcher. `Some(lag)`: at the first tick at or
    /// after it, plus `lag`, as a watcher on a stock kernel sees it (the
    /// kernel brings a running task's CPU time up to date at the tick, and
    /// the watcher then takes `lag` to act: `faasched replay` measures
    /// about 30 µs from the CPU timer's wake-up at the median).
    pub watch_at_tick: Option<Nanos>,
    /// [`Discipline::AlpsKernel`]'s starvation guard. Once a task has
    /// waited this long since it last joined its run queue, it runs before
    /// every task that has waited less (the longest waiting first), no hold
    /// keeps a core past its CFS turn, and no wakeup preempts by rank. So no
    /// task is overtaken by one that joined the queue this much after it.
    /// `None`: the paper's kernel as published, where the rank order is
    /// strict and a task may wait as long as better-ranked work keeps
    /// coming. By default [`DEFAULT_ALPS_WAIT_LIMIT`].
    pub alps_wait_limit: Option<Nanos>,
}

/// The default [`Config::alps_wait_limit`]: 250 ms. Not in the paper, whose
/// rank order is strict (alps-atc24 §5.3). Five times the longest
/// invocation of the shortest group (G1, up to 50 ms). A shorter limit
/// turns the order into first come, first served sooner: on the Azure 2019
/// sample, where strict ranks had invocations wait minutes, 100 ms to 1 s
/// all beat cfs, shorter a little more; on the Poisson Azure-like workload
/// at 90% each step down gives back some of the gain over cfs. The numbers
/// are in docs/POLICIES.md.
pub const DEFAULT_ALPS_WAIT_LIMIT: Nanos = 250 * MS;

/// A configuration the model cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid kernel configuration: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// The defaults of a stock kernel on `cores` cores.
    pub fn new(cores: usize) -> Config {
        let factor = 1 + (cores.clamp(1, 8) as u64).ilog2() as u64;
        Config {
            cores,
            discipline: Discipline::Linux,
            fair: FairClass::Eevdf,
            hz: 250,
            context_switch: 3_500,
            base_slice: 700 * US * factor,
            cfs_latency: 6 * MS * factor,
            cfs_min_granularity: 750 * US * factor,
            cfs_wakeup_granularity: MS * factor,
            rr_timeslice: 100 * MS,
            fair_server: true,
            fair_server_runtime: 50 * MS,
            fair_server_period: SEC,
            seed: 0,
            report_turns: false,
            report_starts: false,
            watch_at_tick: None,
            alps_wait_limit: Some(DEFAULT_ALPS_WAIT_LIMIT),
        }
    }

    /// The tick period, `1 s / hz`.
    pub fn tick(&self) -> Nanos {
        SEC / self.hz as u64
    }

    /// Checks that the model can run this configuration.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |m: String| Err(ConfigError(m));
        if self.cores == 0 || self.cores > faasched_model::MAX_CPUS {
            return err(format!(
                "cores must be 1..={}, got {}",
                faasched_model::MAX_CPUS,
                self.cores
            ));
        }
        if !(1..=10_000).contains(&self.hz) {
            return err(format!("hz must be 1..=10000, got {}", self.hz));
        }
        if self.base_slice == 0 || self.cfs_latency == 0 || self.cfs_min_granularity == 0 {
            return err("slices and granularities must be positive".into());
        }
        // A turn that ends at a tick must get some work done: with a switch
        // as long as a tick, a preempted task's successor is preempted again
        // before it starts, and the simulation never ends.
        if self.context_switch >= self.tick() {
            return err(format!(
                "a context switch of {} µs must be shorter than a tick ({} µs at {} Hz)",
                self.context_switch as f64 / 1e3,
                self.tick() / 1_000,
                self.hz
            ));
        }
        if self.rr_timeslice == 0 {
            return err("rr_timeslice must be positive".into());
        }
        if self.fair_server_runtime >= self.fair_server_period {
            return err("fair_server_runtime must be below fair_server_period".into());
        }
        if self.fair_server_period > MAX_FAIR_SERVER_PERIOD {
            return err(format!(
                "fair_server_period must be at most {} s",
                MAX_FAIR_SERVER_PERIOD / SEC
            ));
        }
        if self
            .alps_wait_limit
            .is_some_and(|w| w == 0 || w > MAX_ALPS_WAIT_LIMIT)
        {
            return err(format!(
                "the ALPS wait limit must be positive and at most {} s",
                MAX_ALPS_WAIT_LIMIT / SEC
            ));
        }
        if self.watch_at_tick.is_some_and(|lag| lag > SEC) {
            return err("the watch lag must be at most 1 s".into());
        }
        match self.discipline {
            Discipline::Srpt(Prediction::ErrorBound(b)) if !(0.0..1.0).contains(&b) => {
                err(format!("error bound must be in [0, 1), got {b}"))
            }
            Discipline::Srpt(Prediction::Random(f)) if !(0.0..=1.0).contains(&f) => {
                err(format!("random fraction must be in [0, 1], got {f}"))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_scale_like_the_kernel() {
        assert_eq!(Config::new(1).base_slice, 700 * US);
        assert_eq!(Config::new(2).base_slice, 1_400 * US);
        assert_eq!(Config::new(56).base_slice, 2_800 * US);
        assert_eq!(Config::new(56).cfs_latency, 24 * MS);
        assert_eq!(Config::new(4).tick(), 4 * MS);
    }

    #[test]
    fn validation_rejects_nonsense() {
        assert!(Config::new(0).validate().is_err());
        let mut c = Config::new(2);
        c.discipline = Discipline::Srpt(Prediction::Random(1.5));
        assert!(c.validate().is_err());
        assert!(Config::new(56).validate().is_ok());
        let mut c = Config::new(2);
        c.context_switch = c.tick();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("4000 µs must be shorter than a tick (4000 µs at 250 Hz)"),
            "{e}"
        );
        c.context_switch = c.tick() - 1;
        assert!(c.validate().is_ok());
        c.fair_server_period = MAX_FAIR_SERVER_PERIOD + 1;
        assert!(c.validate().is_err());
        let mut c = Config::new(2);
        for (limit, ok) in [
            (None, true),
            (Some(MAX_ALPS_WAIT_LIMIT), true),
            (Some(0), false),
            (Some(MAX_ALPS_WAIT_LIMIT + 1), false),
        ] {
            c.alps_wait_limit = limit;
            assert_eq!(c.validate().is_ok(), ok, "{limit:?}");
        }
    }
}
