//! Every policy by the name the CLI and the outputs use.

use crate::alps::{self, Alps, Enforcement};
use crate::baseline::Uniform;
use crate::hybrid::{Hybrid, HybridParams};
use crate::sfs::Sfs;
use faasched_model::{Privileges, Steer};
use faasched_sim::{Discipline, Prediction};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The policies, with a one-line description each (for `--help` and errors).
pub const POLICIES: &[(&str, &str)] = &[
    (
        "cfs",
        "kernel defaults: SCHED_NORMAL under the fair class (EEVDF, or CFS with --fair cfs)",
    ),
    (
        "fifo",
        "every invocation SCHED_FIFO, one priority: arrival order, run to completion",
    ),
    (
        "rr",
        "every invocation SCHED_RR, one priority: round robin with a 100 ms quantum",
    ),
    (
        "sfs",
        "SFS: SCHED_FIFO for a credit T (mean of the last 200 arrival gaps x cores), then the fair class",
    ),
    (
        "hybrid",
        "hybrid FIFO+CFS: FIFO core group until a time limit (p95 of recent), then fair cores; groups rightsized",
    ),
    (
        "hybrid-fixed",
        "hybrid FIFO+CFS with a fixed time limit and fixed groups (the paper's first variant)",
    ),
    (
        "hybrid-adaptive",
        "hybrid FIFO+CFS with the adaptive time limit and fixed groups",
    ),
    (
        "hybrid-rightsized",
        "hybrid FIFO+CFS with a fixed time limit and rightsized groups",
    ),
    (
        "alps",
        "ALPS on a stock kernel: learned rank -> nice, learned slice -> EEVDF custom slice",
    ),
    (
        "alps-io",
        "ALPS that is not fooled by I/O: learns from invocations' real shape; I/O-bound functions unranked, nice 0, short slice",
    ),
    (
        "alps-kernel",
        "sim only: ALPS on the paper's patched CFS (queue by rank, hold for the learned slice)",
    ),
    (
        "srpt",
        "sim only: preemptive shortest remaining CPU time, exact oracle",
    ),
    (
        "srpt-eb",
        "sim only: SRPT on predictions off by up to ±50% (ALPS Fig. 2)",
    ),
    (
        "srpt-random",
        "sim only: SRPT where 40% of predictions are random (ALPS Fig. 2)",
    ),
    (
        "random",
        "sim only: SRPT on random predictions (ALPS Fig. 2 RANDOM)",
    ),
    (
        "ps",
        "sim only: ideal processor sharing, rate min(1, cores/n), no switch cost",
    ),
    (
        "fifo-np",
        "sim only: one global FIFO queue, never preempted",
    ),
];

/// The parameters of the policies that have any: a TOML file's tables
/// (`[alps]`), then command-line flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Tuning {
    /// The ALPS learner's parameters (`alps` and `alps-kernel`).
    pub alps: alps::Params,
    /// The hybrid scheduler's parameters (`hybrid`; its named variants
    /// override `adaptive` and `rightsizing`).
    pub hybrid: HybridParams,
}

/// What a policy name stands for: the one match on names, so that a
/// policy's constructor, parameters and privileges cannot disagree.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Family {
    Stock,
    Fifo,
    Rr,
    Sfs,
    /// `hybrid` and its named variants.
    Hybrid,
    Alps,
    AlpsIo,
    AlpsKernel,
    /// A sim-only discipline with a policy that sets nothing.
    Oracle(Discipline),
}

impl Family {
    /// The family of policy `name`, if the catalogue has one by that name.
    fn of(name: &str) -> Option<Family> {
        Some(match name {
            "cfs" => Family::Stock,
            "fifo" => Family::Fifo,
            "rr" => Family::Rr,
            "sfs" => Family::Sfs,
            "hybrid" | "hybrid-fixed" | "hybrid-adaptive" | "hybrid-rightsized" => Family::Hybrid,
            "alps" => Family::Alps,
            "alps-io" => Family::AlpsIo,
            "alps-kernel" => Family::AlpsKernel,
            "srpt" => Family::Oracle(Discipline::Srpt(Prediction::Exact)),
            "srpt-eb" => Family::Oracle(Discipline::Srpt(Prediction::ErrorBound(0.5))),
            "srpt-random" => Family::Oracle(Discipline::Srpt(Prediction::Random(0.4))),
            "random" => Family::Oracle(Discipline::Srpt(Prediction::Random(1.0))),
            "ps" => Family::Oracle(Discipline::Ps),
            "fifo-np" => Family::Oracle(Discipline::FifoNp),
            _ => return None,
        })
    }
}

/// A policy ready to run: what the kernel model must be, and who steers it.
pub struct Setup {
    /// The policy's name.
    pub name: &'static str,
    family: Family,
    /// The machine-wide discipline the kernel model runs.
    pub discipline: Discipline,
    /// The steering policy.
    pub steer: Box<dyn Steer + Send>,
}

impl Setup {
    /// Whether this policy exists only in the simulator.
    pub fn sim_only(&self) -> bool {
        self.discipline.sim_only()
    }

    /// What this policy's attributes need on a real kernel beyond an
    /// ordinary user's rights: known before it runs, so a live run can
    /// refuse it up front (this module's tests check the claim against the
    /// attributes it sets in a simulation).
    pub fn privileges(&self) -> Privileges {
        let realtime = Privileges {
            realtime: true,
            ..Privileges::default()
        };
        match self.family {
            Family::Fifo | Family::Rr | Family::Sfs | Family::Hybrid => realtime,
            // Learned ranks map to nice values below 0.
            Family::Alps | Family::AlpsIo => Privileges {
                raise_priority: true,
                ..Privileges::default()
            },
            Family::Stock | Family::AlpsKernel | Family::Oracle(_) => Privileges::default(),
        }
    }
}

impl fmt::Debug for Setup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Setup")
            .field("name", &self.name)
            .field("discipline", &self.discipline)
            .finish_non_exhaustive()
    }
}

/// A policy name the catalogue does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicy(pub String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = POLICIES.iter().map(|p| p.0).collect();
        write!(
            f,
            "unknown policy `{}` (known: {})",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownPolicy {}

/// The parameters a policy runs with, as the TOML table that sets them:
/// `{"alps": {...}}` or `{"hybrid": {...}}`. A run's summary records them,
/// so that a tuned run does not pass for a default one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Parameters {
    /// The ALPS learner's (`alps`, `alps-io`, `alps-kernel`).
    Alps(alps::Params),
    /// The hybrid scheduler's (`hybrid` and its named variants).
    Hybrid(HybridParams),
}

/// What policy `name` runs with under `tuning`; `None` for a policy without
/// parameters (or an unknown name).
pub fn parameters(name: &str, tuning: &Tuning) -> Option<Parameters> {
    match Family::of(name)? {
        Family::Alps | Family::AlpsIo | Family::AlpsKernel => Some(Parameters::Alps(tuning.alps)),
        Family::Hybrid => Some(Parameters::Hybrid(hybrid_params(name, tuning))),
        Family::Stock | Family::Fifo | Family::Rr | Family::Sfs | Family::Oracle(_) => None,
    }
}

/// The hybrid parameters of policy `name`: the tuning's, except that a named
/// variant fixes `adaptive` and `rightsizing`.
fn hybrid_params(name: &str, tuning: &Tuning) -> HybridParams {
    match name {
        "hybrid" => tuning.hybrid,
        variant => HybridParams {
            adaptive: variant == "hybrid-adaptive",
            rightsizing: variant == "hybrid-rightsized",
            ..tuning.hybrid
        },
    }
}

/// The policy named `name`, with `tuning` for those that have parameters.
pub fn setup(name: &str, tuning: &Tuning) -> Result<Setup, UnknownPolicy> {
    let unknown = || UnknownPolicy(name.to_string());
    let (name, _) = POLICIES.iter().find(|p| p.0 == name).ok_or_else(unknown)?;
    // A listed name without a family is a catalogue bug; a test checks
    // every name has one.
    let family = Family::of(name).ok_or_else(unknown)?;
    let linux = |steer: Box<dyn Steer + Send>| (Discipline::Linux, steer);
    let (discipline, steer) = match family {
        Family::Stock => linux(Box::new(Uniform::STOCK)),
        Family::Fifo => linux(Box::new(Uniform::FIFO)),
        Family::Rr => linux(Box::new(Uniform::RR)),
        Family::Sfs => linux(Box::<Sfs>::default()),
        Family::Hybrid => linux(Box::new(Hybrid::new(name, hybrid_params(name, tuning)))),
        Family::Alps => linux(Box::new(Alps::new(name, Enforcement::Stock, tuning.alps))),
        Family::AlpsIo => linux(Box::new(Alps::io_aware(name, tuning.alps))),
        Family::AlpsKernel => (
            Discipline::AlpsKernel,
            Box::new(Alps::new(name, Enforcement::Kernel, tuning.alps)) as Box<dyn Steer + Send>,
        ),
        Family::Oracle(discipline) => (discipline, Box::new(Uniform::passive(name)) as _),
    };
    Ok(Setup {
        name,
        family,
        discipline,
        steer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_the_tables_a_policy_runs_with() {
        let tuning = Tuning::default();
        for (name, _) in POLICIES {
            let params = parameters(name, &tuning);
            match *name {
                n if n.starts_with("alps") => {
                    assert_eq!(params, Some(Parameters::Alps(tuning.alps)), "{n}");
                }
                n if n.starts_with("hybrid") => {
                    let Some(Parameters::Hybrid(h)) = params else {
                        panic!("{n}: {params:?}");
                    };
                    let (adaptive, rightsizing) = match n {
                        "hybrid" => (tuning.hybrid.adaptive, tuning.hybrid.rightsizing),
                        _ => (n == "hybrid-adaptive", n == "hybrid-rightsized"),
                    };
                    assert_eq!((h.adaptive, h.rightsizing), (adaptive, rightsizing), "{n}");
                }
                n => assert_eq!(params, None, "{n}"),
            }
        }
    }

    #[test]
    fn every_listed_policy_builds_and_says_if_it_is_sim_only() {
        for (name, _) in POLICIES {
            assert!(Family::of(name).is_some(), "{name} has no family");
            let s = setup(name, &Tuning::default()).unwrap();
            assert_eq!(s.name, *name);
            assert_eq!(
                s.sim_only(),
                matches!(*name, "alps-kernel" | "ps" | "fifo-np" | "random")
                    || name.starts_with("srpt"),
                "{name}"
            );
        }
        let err = setup("alps-nope", &Tuning::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("alps-nope") && err.contains("srpt-eb"));
    }
}

#[cfg(test)]
mod privilege_tests {
    use super::*;
    use faasched_model::{Attrs, CpuSet, Load, Nanos, Outcome, TaskId, TaskInfo, Time};
    use faasched_sim::Config;
    use faasched_workload::synthetic::{Generator, Params, Spec};

    /// Forwards to a policy and notes what every attribute it sets needs.
    struct Recorder<'a> {
        inner: &'a mut (dyn Steer + Send),
        seen: Privileges,
    }

    impl Recorder<'_> {
        fn note(&mut self, a: Option<Attrs>) -> Option<Attrs> {
            if let Some(a) = &a {
                self.seen = self.seen.union(Privileges::of(a));
            }
            a
        }
    }

    impl Steer for Recorder<'_> {
        fn name(&self) -> &str {
            self.inner.name()
        }
        fn on_arrival(&mut self, now: Time, task: &TaskInfo, cpus: CpuSet) -> Attrs {
            let a = self.inner.on_arrival(now, task, cpus);
            self.note(Some(a)).unwrap_or(a)
        }
        fn cpu_watch(&self, task: TaskId) -> Option<Nanos> {
            self.inner.cpu_watch(task)
        }
        fn on_cpu_used(&mut self, now: Time, task: TaskId, used: Nanos) -> Option<Attrs> {
            let a = self.inner.on_cpu_used(now, task, used);
            self.note(a)
        }
        fn on_start(&mut self, now: Time, task: TaskId) -> Option<Attrs> {
            let a = self.inner.on_start(now, task);
            self.note(a)
        }
        fn wants_start(&self) -> bool {
            self.inner.wants_start()
        }
        fn on_block(&mut self, now: Time, task: TaskId) {
            self.inner.on_block(now, task)
        }
        fn on_wake(&mut self, now: Time, task: TaskId) -> Option<Attrs> {
            let a = self.inner.on_wake(now, task);
            self.note(a)
        }
        fn on_exit(&mut self, now: Time, task: TaskId, outcome: &Outcome) {
            self.inner.on_exit(now, task, outcome)
        }
        fn rewatch(&mut self) -> Vec<TaskId> {
            self.inner.rewatch()
        }
        fn period(&self) -> Option<Nanos> {
            self.inner.period()
        }
        fn on_period(&mut self, now: Time, load: Load) -> Vec<(TaskId, Attrs)> {
            let v = self.inner.on_period(now, load);
            for (_, a) in &v {
                self.seen = self.seen.union(Privileges::of(a));
            }
            v
        }
    }

    #[test]
    fn each_policy_declares_exactly_the_privileges_its_attributes_need() {
        let params = Params {
            spec: Spec::parse("huawei").unwrap(),
            cores: 4,
            load: 0.9,
            invocations: 3000,
            seed: 1,
        };
        for (name, _) in POLICIES {
            let mut setup = setup(name, &Tuning::default()).unwrap();
            let mut config = Config::new(params.cores);
            config.discipline = setup.discipline;
            let declared = setup.privileges();
            let mut rec = Recorder {
                inner: setup.steer.as_mut(),
                seen: Privileges::default(),
            };
            let stream = Generator::new(&params).unwrap();
            faasched_sim::run(&config, &mut rec, stream, |_| {}).unwrap();
            assert_eq!(rec.seen, declared, "{name}");
        }
    }
}
