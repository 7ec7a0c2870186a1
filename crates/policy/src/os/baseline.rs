//! The baselines the papers measure against: the kernel's defaults (`cfs`),
//! every invocation SCHED_FIFO (`fifo`), every invocation SCHED_RR (`rr`).

use faasched_model::{Attrs, Class, CpuSet, Steer, TaskInfo, Time};

/// RT priority the `fifo` and `rr` baselines use. Every invocation gets the same
/// one, so the order among them is arrival order; 50 is the midpoint of 1..=99,
/// leaving room above for system RT threads.
pub const BASELINE_RT_PRIO: u8 = 50;

/// Puts every invocation in one class, with the kernel's other defaults (nice 0,
/// base slice, every core), and never changes it.
#[derive(Debug, Clone, Copy)]
pub struct Uniform {
    name: &'static str,
    class: Class,
}

impl Uniform {
    /// `cfs`: the kernel's defaults, SCHED_NORMAL. Called cfs as in the papers,
    /// whichever fair class the kernel runs.
    pub const STOCK: Uniform = Uniform {
        name: "cfs",
        class: Class::Normal,
    };
    /// `fifo`: every invocation SCHED_FIFO at [`BASELINE_RT_PRIO`].
    pub const FIFO: Uniform = Uniform {
        name: "fifo",
        class: Class::Fifo(BASELINE_RT_PRIO),
    };
    /// `rr`: every invocation SCHED_RR at [`BASELINE_RT_PRIO`].
    pub const RR: Uniform = Uniform {
        name: "rr",
        class: Class::Rr(BASELINE_RT_PRIO),
    };

    /// Sets nothing beyond the defaults, under another name: for the sim-only
    /// disciplines, which schedule by themselves.
    pub fn passive(name: &'static str) -> Uniform {
        Uniform {
            name,
            class: Class::Normal,
        }
    }
}

impl Steer for Uniform {
    fn name(&self) -> &str {
        self.name
    }
    fn on_arrival(&mut self, _now: Time, _task: &TaskInfo, cpus: CpuSet) -> Attrs {
        Attrs::normal(cpus).with_class(self.class)
    }
}
