//! Every node-level dispatch policy by the name the CLI and the outputs use.
//!
//! A `--policy` list is looked up once into [`NodePolicy`]s; each builds a
//! fresh [`Dispatch`] per dispatcher, from what the run knows in advance
//! ([`Knowledge`]: the group's size, the workload's profile for DARC).

use crate::catalogue::{Catalogue, Entry};
use anyhow::{Result, bail};
use faasched_model::node::Dispatch;
use faasched_model::{FunctionId, Nanos};
use faasched_policy::node::{Admission, Admitted};
use faasched_policy::node::{
    Class, Darc, Group, Jsq, Lld, PreemptTest, Queues, Resume, RoundRobin, Scan, Shinjuku, Sledge,
    SledgeScale, Srpt, Stretched, TypeProfile,
};
use faasched_workload::node::{Profile, Work, Workload};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// One policy of the node catalogue.
#[derive(Debug)]
pub struct NodeSpec {
    /// The name `--policy` and every output use.
    pub name: &'static str,
    /// What it does, in a line.
    pub about: &'static str,
    kind: Kind,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    SledgeScale(Scan),
    Srpt,
    Rr,
    Jsq,
    Lld,
    Sledge,
    Shinjuku(Queues, Resume),
    Darc,
    DarcPaper,
}

/// Every node policy, with a line each (for `--help` and errors).
pub static NODE_CATALOG: Catalogue<NodeSpec> = Catalogue {
    kind: "node policy",
    note: None,
    entries: SPECS,
};

static SPECS: &[NodeSpec] = &[
    NodeSpec {
        name: "sledgescale",
        about: "SledgeScale (Alg. 1 + 2): early binding by expected wait, EDF workers, preempting only when slack allows",
        kind: Kind::SledgeScale(Scan::Paper),
    },
    NodeSpec {
        name: "sledgescale+",
        about: "sledgescale that tells an empty worker from a busy one reporting no wait, so nothing queues behind a long non-preemptible request",
        kind: Kind::SledgeScale(Scan::Plus),
    },
    NodeSpec {
        name: "srpt",
        about: "control: sledgescale's dispatch and preemption by size (least remaining estimate first)",
        kind: Kind::Srpt,
    },
    NodeSpec {
        name: "rr",
        about: "early binding in turn; EDF workers with a 1 ms quantum",
        kind: Kind::Rr,
    },
    NodeSpec {
        name: "jsq",
        about: "early binding to the worker with the fewest unfinished requests; EDF workers with a 1 ms quantum",
        kind: Kind::Jsq,
    },
    NodeSpec {
        name: "lld",
        about: "LL(D): early binding to the worker with the least remaining work; EDF workers with a 1 ms quantum",
        kind: Kind::Lld,
    },
    NodeSpec {
        name: "sledge",
        about: "Sledge: one global FIFO queue, idle workers pull batches of 5, round robin with a 1 ms quantum",
        kind: Kind::Sledge,
    },
    NodeSpec {
        name: "shinjuku",
        about: "Shinjuku as the SledgeScale paper runs it: one central FIFO queue, 15 us dispatcher quantum, a preempted request resumed by the worker it left",
        kind: Kind::Shinjuku(Queues::Single, Resume::SameWorker),
    },
    NodeSpec {
        name: "shinjuku-mq",
        about: "shinjuku with a queue per function; an idle worker serves the queue whose head waited longest for its deadline",
        kind: Kind::Shinjuku(Queues::Multi, Resume::SameWorker),
    },
    NodeSpec {
        name: "shinjuku-any",
        about: "Shinjuku as its authors built it: a preempted request goes to the central queue's tail and any worker resumes it",
        kind: Kind::Shinjuku(Queues::Single, Resume::AnyWorker),
    },
    NodeSpec {
        name: "shinjuku-mq-any",
        about: "shinjuku-any with a queue per function",
        kind: Kind::Shinjuku(Queues::Multi, Resume::AnyWorker),
    },
    NodeSpec {
        name: "darc",
        about: "DARC: workers reserved per group of request types as Persephone plans them, shorter groups borrow from longer, no preemption",
        kind: Kind::Darc,
    },
    NodeSpec {
        name: "darc-paper",
        about: "darc with the SledgeScale paper's reservations on 6 workers: 3 + 3 split at the median (lognormal, exponential), 1 + 5 (bimodal-high), sift 3 / segmentation 2 / classification 1 (sd-vbs)",
        kind: Kind::DarcPaper,
    },
];

impl NodeSpec {
    /// Why it cannot decide for a cluster's servers, if it cannot: DARC
    /// plans its reservations from a node workload's request types, which
    /// a server fed by a router has not profiled.
    pub fn needs_a_profile(&self) -> Option<&'static str> {
        matches!(self.kind, Kind::Darc | Kind::DarcPaper).then_some(
            "DARC plans its reservations from a node workload's request types; a cluster's \
             servers have none to plan from",
        )
    }
}

impl Entry for NodeSpec {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }
}

/// What a run knows in advance, from which each dispatcher's policy is built.
#[derive(Clone, Debug)]
pub struct Knowledge {
    /// Workers in each dispatcher's group.
    pub workers: u32,
    /// The preemption test of `sledgescale` and `sledgescale+`.
    pub preempt_test: PreemptTest,
    /// DARC's request types: what it reserves workers from.
    pub darc_types: Vec<TypeProfile>,
    /// The paper's manual reservations for the workload, if it gives any.
    pub darc_paper: Option<Vec<Group>>,
    /// The factor the workload's times are stretched by: the policies'
    /// quanta stretch with them.
    pub stretch: u32,
    /// The bounds each dispatcher admits requests under.
    pub admission: Admission,
}

impl Knowledge {
    /// What is known in advance of built-in `w` on groups of `workers`.
    pub fn of_builtin(w: &Workload, workers: u32, preempt_test: PreemptTest) -> Knowledge {
        Knowledge {
            workers,
            preempt_test,
            darc_types: darc_types_of_builtin(w),
            darc_paper: darc_paper_groups(w),
            stretch: 1,
            admission: Admission::default(),
        }
    }

    /// The same with each dispatcher admitting under `admission`.
    pub fn admitting(self, admission: Admission) -> Knowledge {
        Knowledge { admission, ..self }
    }

    /// The same with the workload's times multiplied by `factor`: DARC's
    /// types and the paper's bounds, which are times of the workload, and
    /// the policies' quanta.
    pub fn stretched(self, factor: u32) -> Knowledge {
        let k = Nanos::from(factor);
        let class = |c: Class| match c {
            Class::EstimateUpTo(bound) => Class::EstimateUpTo(bound.saturating_mul(k)),
            c => c,
        };
        Knowledge {
            darc_types: self
                .darc_types
                .into_iter()
                .map(|t| TypeProfile {
                    class: class(t.class),
                    mean: t.mean.saturating_mul(k),
                    ..t
                })
                .collect(),
            darc_paper: self.darc_paper.map(|groups| {
                groups
                    .into_iter()
                    .map(|g| Group {
                        classes: g.classes.into_iter().map(class).collect(),
                        ..g
                    })
                    .collect()
            }),
            stretch: self.stretch.saturating_mul(factor),
            admission: self.admission.stretched(factor),
            ..self
        }
    }
}

/// A policy chosen to run.
#[derive(Clone, Copy, Debug)]
pub struct NodePolicy {
    /// What it is.
    pub spec: &'static NodeSpec,
}

impl NodePolicy {
    /// Its name.
    pub fn name(&self) -> &'static str {
        self.spec.name
    }

    /// A fresh instance for one dispatcher.
    pub fn build(&self, k: &Knowledge) -> Result<Box<dyn Dispatch + Send>> {
        let policy = self.build_unstretched(k)?;
        let policy: Box<dyn Dispatch + Send> = match k.stretch {
            1 => policy,
            factor => Box::new(Stretched::new(policy, factor)),
        };
        Ok(if k.admission.bounds_anything() {
            Box::new(Admitted::new(policy, k.admission))
        } else {
            policy
        })
    }

    fn build_unstretched(&self, k: &Knowledge) -> Result<Box<dyn Dispatch + Send>> {
        Ok(match self.spec.kind {
            Kind::SledgeScale(scan) => Box::new(SledgeScale::new(scan, k.preempt_test)),
            Kind::Srpt => Box::new(Srpt::new()),
            Kind::Rr => Box::new(RoundRobin::new()),
            Kind::Jsq => Box::new(Jsq::new()),
            Kind::Lld => Box::new(Lld::new()),
            Kind::Sledge => Box::new(Sledge::new()),
            Kind::Shinjuku(queues, resume) => Box::new(Shinjuku::new(queues, resume)),
            Kind::Darc => Box::new(Darc::from_profile(&k.darc_types, k.workers)?),
            Kind::DarcPaper => {
                let Some(groups) = k.darc_paper.clone().filter(|_| k.workers == PAPER_WORKERS)
                else {
                    bail!(
                        "darc-paper: the paper reserves 6 workers of lognormal, exponential, \
                         bimodal-high or sd-vbs only; use darc, which plans from the workload"
                    );
                };
                Box::new(Darc::new(groups, k.workers)?.named(self.spec.name))
            }
        })
    }
}

/// The policies of a `--policy` list, in its order; an unknown name or a
/// repeat is refused, naming it and the catalogue.
pub fn node_policies(names: &[String]) -> Result<Vec<NodePolicy>> {
    let lookup = |name: &str| NODE_CATALOG.lookup(name).map(|spec| NodePolicy { spec });
    Ok(NODE_CATALOG.list(names, lookup, |p| p.name().to_string())?)
}

/// The workers of the paper's node (§4.3–4.5), which its reservations
/// divide.
const PAPER_WORKERS: u32 = 6;

/// The SledgeScale paper's DARC reservations for a built-in, shortest group
/// first: 3 + 3 split at the median for the exponential and the log-normal
/// (§4.4, "Each group is allocated an equal number of CPU cores"), 1 + 5
/// for high bimodal, and SIFT 3, Segmentation 2, Classification 1 for
/// SD-VBS (§4.5); `None` for the others.
pub fn darc_paper_groups(w: &Workload) -> Option<Vec<Group>> {
    let f = |i: u32| Class::Function(FunctionId(i));
    let group = |classes: Vec<Class>, reserved| Group { classes, reserved };
    Some(match w.name {
        "exponential" | "lognormal" => {
            let median = w.functions[0].work.median().round() as Nanos;
            vec![
                group(vec![Class::EstimateUpTo(median)], 3),
                group(vec![f(0)], 3),
            ]
        }
        "bimodal-high" => vec![group(vec![f(0)], 1), group(vec![f(1)], 5)],
        "sd-vbs" => vec![
            group(vec![f(0)], 3),
            group(vec![f(1)], 2),
            group(vec![f(2)], 1),
        ],
        _ => return None,
    })
}

/// Draws used to split a one-function built-in at its median.
const SPLIT_DRAWS: usize = 200_000;

/// DARC's request types for a built-in workload: one per function; a
/// workload of one function whose work varies is split at its median work,
/// as the paper splits the exponential and the log-normal (§4.4), the two
/// halves' means measured on a fixed-seed sample (a dispatcher profiles
/// before it reserves).
pub fn darc_types_of_builtin(w: &Workload) -> Vec<TypeProfile> {
    if let [only] = w.functions
        && !matches!(only.work, Work::Fixed(_))
    {
        let median = only.work.median().round() as Nanos;
        let mut rng = Pcg64Mcg::seed_from_u64(0);
        let (mut lo, mut hi) = ((0u128, 0u64), (0u128, 0u64));
        for _ in 0..SPLIT_DRAWS {
            let x = only.work.sample(&mut rng);
            let half = if x <= median { &mut lo } else { &mut hi };
            half.0 += u128::from(x);
            half.1 += 1;
        }
        let mean = |(sum, n): (u128, u64)| (sum / u128::from(n.max(1))) as Nanos;
        let share = |n: u64| n as f64 / SPLIT_DRAWS as f64;
        return vec![
            TypeProfile {
                class: Class::EstimateUpTo(median),
                mean: mean(lo),
                share: share(lo.1),
            },
            TypeProfile {
                class: Class::Function(FunctionId(0)),
                mean: mean(hi),
                share: share(hi.1),
            },
        ];
    }
    darc_types_of_profile(&w.profile())
}

/// DARC's request types for a workload known by its profile (a file): one
/// per function.
pub fn darc_types_of_profile(p: &Profile) -> Vec<TypeProfile> {
    p.functions()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.request_share > 0.0)
        .map(|(i, f)| TypeProfile {
            class: Class::Function(FunctionId(i as u32)),
            mean: f.mean_work.round() as Nanos,
            share: f.request_share,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_policy::node::Plan;

    #[test]
    fn lists_are_looked_up_once_and_checked() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let p = node_policies(&names(&["sledgescale", "darc"])).unwrap();
        assert_eq!(p[1].name(), "darc");
        let err = node_policies(&names(&["sledgescale", "nope"])).unwrap_err();
        assert!(err.to_string().contains("`nope`") && err.to_string().contains("shinjuku"));
        assert!(node_policies(&names(&["rr", "rr"])).is_err());
        assert!(node_policies(&[]).is_err());
    }

    #[test]
    fn every_policy_builds_and_names_itself_as_listed() {
        for spec in NODE_CATALOG.iter() {
            let w = Workload::builtin("sd-vbs").unwrap();
            let k = Knowledge::of_builtin(&w, 6, PreemptTest::Paper);
            let p = NodePolicy { spec }.build(&k).unwrap();
            assert_eq!(p.name(), spec.name);
        }
    }

    /// The log-normal split at its median: DARC's short half holds 0.9% of
    /// the work, so Perséphone's rule gives
    /// it one worker of six and the long half five.
    #[test]
    fn a_one_function_workload_splits_at_its_median() {
        let w = Workload::builtin("lognormal").unwrap();
        let types = darc_types_of_builtin(&w);
        assert_eq!(types.len(), 2);
        assert!((types[0].share - 0.5).abs() < 0.01, "{types:?}");
        let work = |t: &TypeProfile| t.mean as f64 * t.share;
        let short = work(&types[0]) / (work(&types[0]) + work(&types[1]));
        assert!((0.005..0.015).contains(&short), "short share {short}");
        assert_eq!(Plan::new(&types, 6).unwrap().reservations(), vec![1, 5]);
        // A fixed work is one type.
        assert_eq!(
            darc_types_of_builtin(&Workload::builtin("fixed").unwrap()).len(),
            1
        );
    }
}
