//! Every policy by the name the CLI and the outputs use, as typed specs.
//!
//! A name is looked up once, where it enters (a `--policy` list, an
//! experiment's variant), into a [`Policy`]: its [`Spec`] (what it is, at
//! which level, whether it exists only in the simulator, the privileges its
//! attributes need on a real kernel) and the parameters it runs with. Every
//! later step asks the `Policy`, never the name again.

use crate::catalogue::{BadList, Catalogue, Entry, Unknown};
use faasched_model::{Privileges, Steer};
use faasched_policy::os::Uniform;
use faasched_policy::os::alps::{self, Alps, Enforcement};
use faasched_policy::os::attained::Attained;
use faasched_policy::os::gittins::{self, Gittins, Ladder};
use faasched_policy::os::hybrid::{Hybrid, HybridParams};
use faasched_policy::os::sfs::Sfs;
use faasched_policy::os::wait_guard::{Promotion, WaitGuard};
use faasched_sim::os::{Discipline, Prediction};
use serde::{Deserialize, Serialize};

/// Where a policy schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Which process runs on a core, and for how long.
    Os,
}

/// One policy of the catalogue.
#[derive(Debug)]
pub struct Spec {
    /// The name `--policy` and every output use.
    pub name: &'static str,
    /// What it does, in a line.
    pub about: &'static str,
    /// Where it schedules.
    pub level: Level,
    family: Family,
}

/// Every policy, with a one-line description each (for `--help` and errors).
pub static CATALOG: Catalogue<Spec> = Catalogue {
    kind: "policy",
    note: None,
    entries: SPECS,
};

static SPECS: &[Spec] = &[
    Spec {
        name: "cfs",
        about: "kernel defaults: SCHED_NORMAL under the fair class (EEVDF, or CFS with --fair cfs)",
        level: Level::Os,
        family: Family::Stock,
    },
    Spec {
        name: "fifo",
        about: "every invocation SCHED_FIFO, one priority: arrival order, run to completion",
        level: Level::Os,
        family: Family::Fifo,
    },
    Spec {
        name: "rr",
        about: "every invocation SCHED_RR, one priority: round robin with a 100 ms quantum",
        level: Level::Os,
        family: Family::Rr,
    },
    Spec {
        name: "sfs",
        about: "SFS: SCHED_FIFO for a credit T (mean of the last 200 arrival gaps x cores), then the fair class",
        level: Level::Os,
        family: Family::Sfs,
    },
    Spec {
        name: "hybrid",
        about: "hybrid FIFO+CFS: FIFO core group until a time limit (p95 of recent), then fair cores; groups rightsized",
        level: Level::Os,
        family: Family::Hybrid,
    },
    Spec {
        name: "hybrid-fixed",
        about: "hybrid FIFO+CFS with a fixed time limit and fixed groups (the paper's first variant)",
        level: Level::Os,
        family: Family::Hybrid,
    },
    Spec {
        name: "hybrid-adaptive",
        about: "hybrid FIFO+CFS with the adaptive time limit and fixed groups",
        level: Level::Os,
        family: Family::Hybrid,
    },
    Spec {
        name: "hybrid-rightsized",
        about: "hybrid FIFO+CFS with a fixed time limit and rightsized groups",
        level: Level::Os,
        family: Family::Hybrid,
    },
    Spec {
        name: "alps",
        about: "ALPS on a stock kernel: learned rank -> nice, learned slice -> EEVDF custom slice; nice -20 for a task not run 50 ms after arrival, until it runs",
        level: Level::Os,
        family: Family::Alps,
    },
    Spec {
        name: "alps-io",
        about: "ALPS that is not fooled by I/O: learns from invocations' real shape; I/O-bound functions unranked, nice 0, short slice",
        level: Level::Os,
        family: Family::AlpsIo,
    },
    Spec {
        name: "las",
        about: "least attained service: nice 0, then 5, 10, 15, 19 as an invocation's CPU time passes 50 ms, 400 ms, 2 s, 10 s",
        level: Level::Os,
        family: Family::Las,
    },
    Spec {
        name: "gittins",
        about: "Gittins index of the function's recent CPU times at the service attained -> nice 0..19 (16 per doubling of the remaining size past 480 ms), read again as service grows",
        level: Level::Os,
        family: Family::Gittins(Ladder::Nice),
    },
    Spec {
        name: "gittins-rt",
        about: "gittins with strict priorities: the index -> SCHED_FIFO 49..1 (8 per doubling past 480 ms), beyond them and the tail the fair class at nice 19",
        level: Level::Os,
        family: Family::Gittins(Ladder::Realtime),
    },
    Spec {
        name: "alps-las",
        about: "alps, with las's attained-service steps added to its learned nice: ranked at arrival, the long tail demoted",
        level: Level::Os,
        family: Family::AlpsLas,
    },
    Spec {
        name: "sfs-alps",
        about: "sfs's first-come FIFO credit, then alps's learned rank and slice instead of the kernel's defaults",
        level: Level::Os,
        family: Family::SfsAlps,
    },
    Spec {
        name: "sfs-gittins",
        about: "sfs's first-come FIFO credit, then gittins's nice instead of the kernel's defaults",
        level: Level::Os,
        family: Family::SfsGittins,
    },
    Spec {
        name: "alps-kernel",
        about: "sim only: ALPS on the paper's patched CFS (queue by rank, hold for the learned slice)",
        level: Level::Os,
        family: Family::AlpsKernel,
    },
    Spec {
        name: "srpt",
        about: "sim only: preemptive shortest remaining CPU time, exact oracle",
        level: Level::Os,
        family: Family::Oracle(Discipline::Srpt(Prediction::Exact)),
    },
    Spec {
        name: "srpt-eb",
        about: "sim only: SRPT on predictions off by up to ±50% (ALPS Fig. 2)",
        level: Level::Os,
        family: Family::Oracle(Discipline::Srpt(Prediction::ErrorBound(0.5))),
    },
    Spec {
        name: "srpt-random",
        about: "sim only: SRPT where 40% of predictions are random (ALPS Fig. 2)",
        level: Level::Os,
        family: Family::Oracle(Discipline::Srpt(Prediction::Random(0.4))),
    },
    Spec {
        name: "random",
        about: "sim only: SRPT on random predictions (ALPS Fig. 2 RANDOM)",
        level: Level::Os,
        family: Family::Oracle(Discipline::Srpt(Prediction::Random(1.0))),
    },
    Spec {
        name: "ps",
        about: "sim only: ideal processor sharing, rate min(1, cores/n), no switch cost",
        level: Level::Os,
        family: Family::Oracle(Discipline::Ps),
    },
    Spec {
        name: "fifo-np",
        about: "sim only: one global FIFO queue, never preempted",
        level: Level::Os,
        family: Family::Oracle(Discipline::FifoNp),
    },
];

/// The parameters of the policies that have any: a TOML file's tables
/// (`[alps]`, `[hybrid]`, `[gittins]`, `[gittins_rt]`), then command-line
/// flags.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Tuning {
    /// The ALPS learner's parameters (`alps`, `alps-io`, `alps-kernel` and
    /// `alps-las`).
    pub alps: alps::Params,
    /// The hybrid scheduler's parameters (`hybrid`; its named variants
    /// override `adaptive` and `rightsizing`).
    pub hybrid: HybridParams,
    /// How `gittins` maps effective sizes to nice values.
    pub gittins: gittins::Params,
    /// How `gittins-rt` maps effective sizes to real-time priorities.
    #[serde(deserialize_with = "gittins::Params::realtime_table")]
    pub gittins_rt: gittins::Params,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            alps: alps::Params::default(),
            hybrid: HybridParams::default(),
            gittins: gittins::Params::default(),
            gittins_rt: gittins::Params::realtime(),
        }
    }
}

impl Tuning {
    /// Checks every parameter's range, naming the first out of it.
    pub fn validate(&self) -> Result<(), faasched_policy::BadParam> {
        self.alps.validate()?;
        self.hybrid.validate()?;
        self.gittins.validate("gittins")?;
        self.gittins_rt.validate("gittins_rt")
    }
}

/// What a policy is made of: the one place a spec becomes code, so that a
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
    Las,
    AlpsLas,
    /// `gittins` and `gittins-rt`.
    Gittins(Ladder),
    /// `sfs`'s FIFO credit over `alps`.
    SfsAlps,
    /// `sfs`'s FIFO credit over `gittins`.
    SfsGittins,
    /// A sim-only discipline with a policy that sets nothing.
    Oracle(Discipline),
}

impl Entry for Spec {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }
}

impl Spec {
    /// The machine-wide discipline the kernel model runs under it.
    pub fn discipline(&self) -> Discipline {
        match self.family {
            Family::AlpsKernel => Discipline::AlpsKernel,
            Family::Oracle(d) => d,
            _ => Discipline::Linux,
        }
    }

    /// Whether it exists only in the simulator (it needs a patched kernel
    /// or an oracle).
    pub fn sim_only(&self) -> bool {
        self.discipline().sim_only()
    }

    /// What its attributes need on a real kernel beyond an ordinary user's
    /// rights: known before it runs, so a live run can refuse it up front
    /// (this module's tests check the claim against the attributes it sets
    /// in a simulation).
    pub fn privileges(&self) -> Privileges {
        let realtime = Privileges {
            realtime: true,
            ..Privileges::default()
        };
        let raise = Privileges {
            raise_priority: true,
            ..Privileges::default()
        };
        match self.family {
            Family::Fifo | Family::Rr | Family::Sfs | Family::Hybrid => realtime,
            // Learned ranks map to nice values below 0; gittins's wait
            // guard promotes to nice -20.
            Family::Alps | Family::AlpsIo | Family::AlpsLas | Family::Gittins(Ladder::Nice) => {
                raise
            }
            // The ladder's priorities, and its guard's.
            Family::Gittins(Ladder::Realtime) => realtime,
            // gittins's nice values are 0..19: only its guard raises.
            Family::SfsGittins => realtime,
            Family::SfsAlps => Privileges {
                realtime: true,
                ..raise
            },
            Family::Stock | Family::AlpsKernel | Family::Las | Family::Oracle(_) => {
                Privileges::default()
            }
        }
    }

    /// What it runs with under `tuning`; `None` for a policy without
    /// parameters.
    pub fn parameters(&self, tuning: &Tuning) -> Option<Parameters> {
        match self.family {
            Family::Alps
            | Family::AlpsIo
            | Family::AlpsKernel
            | Family::AlpsLas
            | Family::SfsAlps => Some(Parameters::Alps(tuning.alps)),
            Family::Hybrid => Some(Parameters::Hybrid(self.hybrid_params(tuning))),
            Family::Gittins(Ladder::Nice) | Family::SfsGittins => {
                Some(Parameters::Gittins(tuning.gittins))
            }
            Family::Gittins(Ladder::Realtime) => Some(Parameters::GittinsRt(tuning.gittins_rt)),
            Family::Stock
            | Family::Fifo
            | Family::Rr
            | Family::Sfs
            | Family::Las
            | Family::Oracle(_) => None,
        }
    }

    /// The hybrid parameters of a hybrid policy: the tuning's, except that a
    /// named variant fixes `adaptive` and `rightsizing`.
    fn hybrid_params(&self, tuning: &Tuning) -> HybridParams {
        match self.name {
            "hybrid" => tuning.hybrid,
            variant => HybridParams {
                adaptive: variant == "hybrid-adaptive",
                rightsizing: variant == "hybrid-rightsized",
                ..tuning.hybrid
            },
        }
    }

    /// A fresh steering policy, with `tuning` for those that have
    /// parameters.
    pub fn steer(&self, tuning: &Tuning) -> Box<dyn Steer + Send> {
        let name = self.name;
        match self.family {
            Family::Stock => Box::new(Uniform::STOCK),
            Family::Fifo => Box::new(Uniform::FIFO),
            Family::Rr => Box::new(Uniform::RR),
            Family::Sfs => Box::<Sfs>::default(),
            Family::Hybrid => Box::new(Hybrid::new(name, self.hybrid_params(tuning))),
            Family::Alps => Box::new(WaitGuard::new(Alps::new(
                name,
                Enforcement::Stock,
                tuning.alps,
            ))),
            Family::AlpsIo => Box::new(WaitGuard::new(Alps::io_aware(name, tuning.alps))),
            Family::AlpsKernel => Box::new(Alps::new(name, Enforcement::Kernel, tuning.alps)),
            Family::Las => Box::new(Attained::new(name, Uniform::STOCK)),
            Family::Gittins(ladder) => {
                let (params, promotion) = match ladder {
                    Ladder::Nice => (tuning.gittins, Promotion::Nice),
                    Ladder::Realtime => (tuning.gittins_rt, Promotion::Realtime),
                };
                let gittins = Gittins::new(name, ladder, params);
                Box::new(WaitGuard::promoting(gittins, promotion))
            }
            Family::AlpsLas => Box::new(Attained::new(
                name,
                WaitGuard::new(Alps::new(name, Enforcement::Stock, tuning.alps)),
            )),
            // No wait guard: SFS's FIFO phase runs every newcomer before
            // any fair task, and what a guard gives a task that has not
            // run would be kept, never applied.
            Family::SfsAlps => Box::new(Sfs::new(
                name,
                Alps::new(name, Enforcement::Stock, tuning.alps),
            )),
            Family::SfsGittins => Box::new(Sfs::new(
                name,
                Gittins::new(name, Ladder::Nice, tuning.gittins),
            )),
            Family::Oracle(_) => Box::new(Uniform::passive(name)),
        }
    }
}

/// A policy chosen to run: its spec and the parameters it runs with.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// What it is.
    pub spec: &'static Spec,
    /// Its parameters (ignored by a policy that has none).
    pub tuning: Tuning,
}

impl Policy {
    /// Policy `name` under `tuning`.
    pub fn new(name: &str, tuning: &Tuning) -> Result<Policy, Unknown> {
        Ok(Policy {
            spec: CATALOG.lookup(name)?,
            tuning: *tuning,
        })
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        self.spec.name
    }

    /// A fresh steering policy of it.
    pub fn steer(&self) -> Box<dyn Steer + Send> {
        self.spec.steer(&self.tuning)
    }

    /// The parameters it runs with, as its summary records them (`None` for
    /// a policy without parameters).
    pub fn params_json(&self) -> Option<serde_json::Value> {
        self.spec.parameters(&self.tuning).map(|p| {
            serde_json::to_value(p).expect("parameters are plain numbers, flags and names")
        })
    }
}

/// The policies `names` under `tuning`, in order: an unknown name, or one
/// named twice (its runs would be the same, and the summaries, keyed by
/// policy, would keep only one), is refused.
pub fn policies(names: &[String], tuning: &Tuning) -> Result<Vec<Policy>, BadList> {
    CATALOG.list(names, |n| Policy::new(n, tuning), |p| p.name().to_string())
}

/// The policies that can run live, by name.
pub fn live_names() -> Vec<&'static str> {
    CATALOG
        .entries
        .iter()
        .filter(|s| !s.sim_only())
        .map(|s| s.name)
        .collect()
}

/// The parameters a policy runs with, as the TOML table that sets them:
/// `{"alps": {...}}`, `{"hybrid": {...}}`, `{"gittins": {...}}` or
/// `{"gittins_rt": {...}}`. A run's summary records them,
/// so that a tuned run does not pass for a default one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Parameters {
    /// The ALPS learner's (`alps`, `alps-io`, `alps-kernel`, `alps-las`).
    Alps(alps::Params),
    /// The hybrid scheduler's (`hybrid` and its named variants).
    Hybrid(HybridParams),
    /// `gittins`'s (and `sfs-gittins`'s).
    Gittins(gittins::Params),
    /// `gittins-rt`'s.
    #[serde(rename = "gittins_rt")]
    GittinsRt(gittins::Params),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_gittins_rt_table_keeps_the_realtime_ladders_other_defaults() {
        let t: Tuning = toml::from_str("[gittins_rt]\nsize_ms = 240\n").unwrap();
        let rt = gittins::Params::realtime();
        assert_eq!(
            t.gittins_rt,
            gittins::Params {
                size_ms: 240.0,
                ..rt
            }
        );
        assert_eq!(t.gittins, gittins::Params::default());
        let t: Tuning = toml::from_str("[gittins_rt]\nnice_per_doubling = 4\n").unwrap();
        assert_eq!(t.gittins_rt.steps_per_doubling, 4.0);
        let t: Tuning = toml::from_str("").unwrap();
        assert_eq!(t.gittins_rt, rt);
        let e = toml::from_str::<Tuning>("[gittins_rt]\nsize = 240\n").unwrap_err();
        assert!(e.to_string().contains("unknown field `size`"), "{e}");
    }

    #[test]
    fn a_bad_gittins_rt_parameter_names_its_own_table() {
        let mut t = Tuning::default();
        t.gittins_rt.steps_per_doubling = 0.0;
        let e = t.validate().unwrap_err();
        assert_eq!((e.table, e.name), ("gittins_rt", "steps_per_doubling"));
        assert!(Tuning::default().validate().is_ok());
    }

    #[test]
    fn parameters_are_the_tables_a_policy_runs_with() {
        let tuning = Tuning::default();
        for spec in CATALOG.iter() {
            let params = spec.parameters(&tuning);
            match spec.name {
                n if n.starts_with("alps") || n == "sfs-alps" => {
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
                "gittins" | "sfs-gittins" => {
                    assert_eq!(params, Some(Parameters::Gittins(tuning.gittins)))
                }
                "gittins-rt" => {
                    assert_eq!(params, Some(Parameters::GittinsRt(tuning.gittins_rt)))
                }
                n => assert_eq!(params, None, "{n}"),
            }
        }
    }

    #[test]
    fn every_listed_policy_builds_and_says_if_it_is_sim_only() {
        let specs = CATALOG.entries;
        for (i, spec) in specs.iter().enumerate() {
            let name = spec.name;
            assert!(
                specs[..i].iter().all(|s| s.name != name),
                "{name} listed twice"
            );
            let p = Policy::new(name, &Tuning::default()).unwrap();
            assert_eq!(p.steer().name(), name);
            assert_eq!(
                spec.sim_only(),
                matches!(name, "alps-kernel" | "ps" | "fifo-np" | "random")
                    || name.starts_with("srpt"),
                "{name}"
            );
        }
        let err = Policy::new("alps-nope", &Tuning::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("alps-nope") && err.contains("srpt-eb"));
    }

    #[test]
    fn a_list_is_looked_up_once_and_refuses_repeats() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let t = Tuning::default();
        let ps = policies(&names(&["sfs", "srpt"]), &t).unwrap();
        assert_eq!(
            ps.iter().map(Policy::name).collect::<Vec<_>>(),
            ["sfs", "srpt"]
        );
        assert_eq!(
            policies(&names(&["cfs", "sfs", "cfs"]), &t).unwrap_err(),
            BadList::Repeated {
                kind: "policy",
                name: "cfs".into()
            }
        );
        assert!(matches!(
            policies(&names(&["cfs", "nope"]), &t),
            Err(BadList::Unknown(u)) if u.name == "nope"
        ));
    }
}

#[cfg(test)]
mod privilege_tests {
    use super::*;
    use faasched_model::{Attrs, CpuSet, Load, Nanos, Outcome, TaskId, TaskInfo, Time};
    use faasched_sim::os::Config;
    use faasched_workload::synthetic::{self, Generator, Params};

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
            spec: synthetic::Spec::parse("huawei").unwrap(),
            cores: 4,
            load: 0.9,
            invocations: 3000,
            seed: 1,
        };
        for spec in CATALOG.iter() {
            let mut steer = spec.steer(&Tuning::default());
            let mut config = Config::new(params.cores);
            config.discipline = spec.discipline();
            let declared = spec.privileges();
            let mut rec = Recorder {
                inner: steer.as_mut(),
                seen: Privileges::default(),
            };
            let stream = Generator::new(&params).unwrap();
            faasched_sim::os::run(&config, &mut rec, stream, |_| {}).unwrap();
            assert_eq!(rec.seen, declared, "{}", spec.name);
        }
    }
}
