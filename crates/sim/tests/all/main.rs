//! Integration tests of the kernel model through the engine: hand-computed
//! timelines, invariants, and queueing theory.

mod cluster;
mod cluster_invariants;
mod cluster_nodes;
mod cluster_os;
mod cluster_queueing;
mod cluster_timelines;
mod invariants;
mod node;
mod node_invariants;
mod node_queueing;
mod node_speed;
mod node_timelines;
mod queueing;
mod starvation;
mod timelines;

use faasched_model::{
    Attrs, Class, CpuSet, Function, FunctionId, Invocation, Load, MS, Nanos, Outcome, Phase,
    Phases, Steer, TaskId, TaskInfo, Time,
};
use faasched_sim::os::{Config, Discipline, run};
use std::convert::Infallible;
use std::sync::Arc;

/// Steers each task by its function id: `attrs(function, cpus)`.
pub struct ByFunction<F: FnMut(u32, CpuSet) -> Attrs>(pub F);

impl<F: FnMut(u32, CpuSet) -> Attrs> Steer for ByFunction<F> {
    fn name(&self) -> &str {
        "test"
    }
    fn on_arrival(&mut self, _now: Time, task: &TaskInfo, cpus: CpuSet) -> Attrs {
        (self.0)(task.function.0, cpus)
    }
}

/// Every task gets `class` (nice 0, base slice).
pub fn all(class: Class) -> ByFunction<impl FnMut(u32, CpuSet) -> Attrs> {
    ByFunction(move |_, cpus| Attrs::normal(cpus).with_class(class))
}

/// An invocation of function `f` arriving at `at` with these phases.
pub fn inv(id: u64, f: u32, at: Time, phases: &[Phase]) -> Invocation {
    Invocation {
        id,
        function: Function {
            id: FunctionId(f),
            name: Arc::from(format!("f{f}")),
        },
        arrival: at,
        phases: Phases::from_slice(phases),
        memory_mb: 128,
        deadline: None,
    }
}

/// A CPU-bound invocation (function = id) of `cpu_ms` arriving at `at_ms`.
pub fn cpu(id: u64, at_ms: u64, cpu_ms: u64) -> Invocation {
    inv(id, id as u32, at_ms * MS, &[Phase::Cpu(cpu_ms * MS)])
}

/// A kernel config with free context switches, so timelines are round numbers.
pub fn ideal(cores: usize, discipline: Discipline) -> Config {
    let mut c = Config::new(cores);
    c.discipline = discipline;
    c.context_switch = 0;
    c
}

/// Runs and returns the outcomes by id.
pub fn simulate(cfg: &Config, policy: &mut dyn Steer, invs: Vec<Invocation>) -> Vec<Outcome> {
    let mut out = Vec::new();
    run(
        cfg,
        policy,
        invs.into_iter().map(Ok::<_, Infallible>),
        |o| out.push(o),
    )
    .unwrap();
    out.sort_by_key(|o| o.id);
    out
}

/// Finish instants in ms, by id.
pub fn finishes_ms(out: &[Outcome]) -> Vec<f64> {
    out.iter().map(|o| o.finish as f64 / MS as f64).collect()
}

/// Nanoseconds to ms.
pub fn ms(ns: Nanos) -> f64 {
    ns as f64 / MS as f64
}
