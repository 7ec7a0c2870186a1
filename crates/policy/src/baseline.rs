//! The baselines the papers measure against: the kernel's defaults (`cfs`),
//! every invocation SCHED_FIFO (`fifo`), every invocation SCHED_RR (`rr`).

use faasched_model::{Attrs, Class, CpuSet, Steer, TaskInfo, Time};

/// RT priority the `fifo` and `rr` baselines use. Every invocation gets the same
/// one, so the order among them is arrival order; 50 is the midpoint of 1..=99,
/// leaving room above for system RT threads.
pub const BASELINE_RT_PRIO: u8 = 50;

/// The kernel's defaults: SCHED_NORMAL, nice 0, base slice. Called `cfs` as in
/// the papers, whichever fair class the kernel runs.
#[derive(Debug, Default)]
pub struct Stock;

impl Steer for Stock {
    fn name(&self) -> &str {
        "cfs"
    }
    fn on_arrival(&mut self, _now: Time, _task: &TaskInfo, cpus: CpuSet) -> Attrs {
        Attrs::normal(cpus)
    }
}

/// Every invocation SCHED_FIFO at [`BASELINE_RT_PRIO`].
#[derive(Debug, Default)]
pub struct Fifo;

impl Steer for Fifo {
    fn name(&self) -> &str {
        "fifo"
    }
    fn on_arrival(&mut self, _now: Time, _task: &TaskInfo, cpus: CpuSet) -> Attrs {
        Attrs::normal(cpus).with_class(Class::Fifo(BASELINE_RT_PRIO))
    }
}

/// Every invocation SCHED_RR at [`BASELINE_RT_PRIO`].
#[derive(Debug, Default)]
pub struct Rr;

impl Steer for Rr {
    fn name(&self) -> &str {
        "rr"
    }
    fn on_arrival(&mut self, _now: Time, _task: &TaskInfo, cpus: CpuSet) -> Attrs {
        Attrs::normal(cpus).with_class(Class::Rr(BASELINE_RT_PRIO))
    }
}

/// Sets nothing: for the sim-only disciplines, which schedule by themselves.
#[derive(Debug)]
pub struct Passive(pub &'static str);

impl Steer for Passive {
    fn name(&self) -> &str {
        self.0
    }
    fn on_arrival(&mut self, _now: Time, _task: &TaskInfo, cpus: CpuSet) -> Attrs {
        Attrs::normal(cpus)
    }
}
