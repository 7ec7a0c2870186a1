//! The papers' experiments, of every level, by name.
//!
//! Each [`Name`] is one experiment: its level's cases, planned from the
//! command line's [`Settings`], and the table of what they measured
//! ([`Experiment`]); [`crate::level`] runs and writes them the one way
//! for every level. [`command`] is `faasched experiment` itself: the cases
//! printed as a plan, or run and their table published.

pub mod command;
pub mod sweep;

use crate::cluster::experiment::Cluster;
use crate::cluster::figures as cl;
use crate::cluster::stack;
use crate::level::{Level, Settings};
use crate::node::experiment::{Capacity, Node};
use crate::node::figures as nf;
use crate::os::experiment::{Os, alps, hybrid, io, real};
use crate::table::Table;
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// The experiments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Name {
    /// ALPS Fig. 5-7: Huawei- and Azure-like at 70/80/90% load, 56 cores; cfs,
    /// fifo, rr, sfs, alps, alps-kernel, srpt; turnaround per group and
    /// context switches.
    AlpsLoad,
    /// ALPS Fig. 9: alps-kernel and alps with both fine-tunings, none, only
    /// unpredictability, only overload.
    AlpsAblation,
    /// ALPS Fig. 10-14: trainer, window 5-30 s, alpha, beta, gamma.
    AlpsSensitivity,
    /// The ALPS I/O study's Table 1 and Fig. 6: mixed-io under cfs, alps and
    /// alps-io, per class.
    AlpsIo,
    /// The hybrid paper's Table I and Figs. 12, 15, 18, 20: fifo, cfs, sfs and
    /// the hybrid variants; p99 response, execution, turnaround and cost.
    HybridCost,
    /// ALPS Fig. 2: SRPT with exact, error-bounded, partly random and random
    /// predictions, against sfs and cfs.
    SrptNoise,
    /// Not in the paper: alps against cfs at the live replay's scale
    /// (Huawei-like, 2,000 invocations, 2 cores, 80%, 20 seeds) with a lesson
    /// needing 0 to 1,000 finished invocations.
    AlpsWindowMin,
    /// Not in the paper: nine policies on a day of the real Azure 2019
    /// trace (`--trace DIR`).
    AlpsReal,
    /// SledgeScale Fig. 3: extreme bimodal, long requests due in 100 or
    /// 500 ms.
    SledgescaleDeadline,
    /// SledgeScale Fig. 8: the dispatch policies on the log-normal, rising
    /// load.
    SledgescaleLognormal,
    /// SledgeScale Fig. 13: SD-VBS at 14.4 kRPS, SIFT's deadline from 1.13
    /// to 11.3 ms.
    SledgescaleSdvbs,
    /// Not in the paper: the SRPT control, sledgescale+, estimate errors,
    /// dispatcher groups.
    SledgescaleBeyond,
    /// Not in the paper: admission control past the node's capacity, tuned
    /// on one workload and judged on two others.
    NodeAdmission,
    /// SledgeScale Fig. 9: capacity at p99.9 latency 200 µs, fixed 10 µs.
    SledgescaleFixed,
    /// SledgeScale Fig. 10: capacity at p99.9 latency 10 ms, exponential.
    SledgescaleExponential,
    /// SledgeScale Fig. 12: capacity at p99.9 slowdown 40, high bimodal.
    SledgescaleBimodal,
    /// SledgeScale Fig. 11: capacity at p99.9 slowdown 200, log-normal.
    SledgescaleLognormalCapacity,
    /// CH-RLU Fig. 7: the live cluster at low load.
    ChrluLow,
    /// CH-RLU Fig. 8: the live cluster at heavy load.
    ChrluHeavy,
    /// CH-RLU Fig. 9: bursts of two top functions every 30 s.
    ChrluBursts,
    /// CH-RLU Fig. 10: a rising open-loop burst.
    ChrluRising,
    /// CH-RLU Figs. 12-13: the simulated Azure cluster.
    ChrluSim,
    /// CH-RLU Fig. 14: one cluster's CPUs split over 4 to 64 servers.
    ChrluSize,
    /// Not in the CH-RLU paper: an ablation of its parts, and what stale
    /// loads cost each router.
    ChrluBeyond,
    /// Not in any paper: routers in front of servers that run each level's
    /// disciplines, on built-in clusters and (`--trace DIR`) a day of the
    /// real Azure 2019 trace.
    StackDisciplines,
}

/// An experiment of level `L`: its cases and its table.
pub struct Experiment<L: Level> {
    /// Which it is.
    pub name: Name,
    /// Its cases, for the command line's settings.
    pub cases: fn(&Settings) -> Result<Vec<L::Case>>,
    /// The table of what its cases measured.
    pub table: fn(&[L::Ran]) -> Table,
}

impl<L: Level> Experiment<L> {
    /// Its cases for `s`; refuses settings its level does not take.
    pub fn plan(&self, s: &Settings) -> Result<Vec<L::Case>> {
        let name = self.name.spelled();
        if s.trace.is_some() && !self.name.takes_trace() {
            bail!("{name} runs built-in workloads: --trace is for alps-real and stack-disciplines");
        }
        if !L::SIZED && s.invocations.is_some() {
            bail!(
                "{name} runs built-in workloads of its own length: --invocations is for the OS \
                 level's experiments"
            );
        }
        (self.cases)(s)
    }
}

/// An experiment, of whichever level it runs.
pub enum Of {
    /// Workloads on simulated machines under steering policies.
    Os(Experiment<Os>),
    /// Workloads on simulated nodes under dispatch policies.
    Node(Experiment<Node>),
    /// Node policies' capacities at a tail target.
    Capacity(Experiment<Capacity>),
    /// Workloads on simulated clusters under routers.
    Cluster(Experiment<Cluster>),
}

/// What is done with an experiment at its own level: [`Name::with`]
/// hands it the experiment, typed by level, so that code written once
/// for every level runs whichever the name is of.
pub trait AtLevel {
    /// What doing it gives.
    type Output;
    /// Does it with `e`.
    fn at<L: Level>(self, e: &Experiment<L>) -> Self::Output;
}

impl Name {
    /// Does `what` with this experiment, at its level.
    pub fn with<A: AtLevel>(self, what: A) -> A::Output {
        match self.experiment() {
            Of::Os(e) => what.at(&e),
            Of::Node(e) => what.at(&e),
            Of::Capacity(e) => what.at(&e),
            Of::Cluster(e) => what.at(&e),
        }
    }

    /// The experiment spelled `s`; the error lists every name.
    pub fn parse(s: &str) -> Result<Name> {
        match Name::ALL.into_iter().find(|n| n.spelled() == s) {
            Some(n) => Ok(n),
            None => {
                let names: Vec<_> = Name::ALL.map(Name::spelled).into();
                bail!("no experiment `{s}`: expected one of {}", names.join(", "))
            }
        }
    }

    /// Every experiment.
    pub const ALL: [Name; 25] = [
        Name::AlpsLoad,
        Name::AlpsAblation,
        Name::AlpsSensitivity,
        Name::AlpsIo,
        Name::HybridCost,
        Name::SrptNoise,
        Name::AlpsWindowMin,
        Name::AlpsReal,
        Name::SledgescaleDeadline,
        Name::SledgescaleLognormal,
        Name::SledgescaleSdvbs,
        Name::SledgescaleBeyond,
        Name::NodeAdmission,
        Name::SledgescaleFixed,
        Name::SledgescaleExponential,
        Name::SledgescaleBimodal,
        Name::SledgescaleLognormalCapacity,
        Name::ChrluLow,
        Name::ChrluHeavy,
        Name::ChrluBursts,
        Name::ChrluRising,
        Name::ChrluSim,
        Name::ChrluSize,
        Name::ChrluBeyond,
        Name::StackDisciplines,
    ];

    /// Whether it runs a day of a production trace given as `--trace`:
    /// alps-real needs one, stack-disciplines adds one to its built-in
    /// clusters.
    pub fn takes_trace(self) -> bool {
        matches!(self, Name::AlpsReal | Name::StackDisciplines)
    }

    /// What it reproduces, in a line or two.
    pub fn about(self) -> &'static str {
        match self {
            Name::AlpsLoad => {
                "ALPS Fig. 5-7: Huawei- and Azure-like at 70/80/90% load, 56 cores; cfs, fifo, \
                 rr, sfs, alps, alps-kernel, srpt; turnaround per group and context switches"
            }
            Name::AlpsAblation => {
                "ALPS Fig. 9: alps-kernel and alps with both fine-tunings, none, only \
                 unpredictability, only overload"
            }
            Name::AlpsSensitivity => "ALPS Fig. 10-14: trainer, window 5-30 s, alpha, beta, gamma",
            Name::AlpsIo => {
                "The ALPS I/O study's Table 1 and Fig. 6: mixed-io under cfs, alps and alps-io, \
                 per class"
            }
            Name::HybridCost => {
                "The hybrid paper's Table I and Figs. 12, 15, 18, 20: fifo, cfs, sfs and the \
                 hybrid variants; p99 response, execution, turnaround and cost"
            }
            Name::SrptNoise => {
                "ALPS Fig. 2: SRPT with exact, error-bounded, partly random and random \
                 predictions, against sfs and cfs"
            }
            Name::AlpsWindowMin => {
                "Not in the paper: alps against cfs at the live replay's scale (Huawei-like, \
                 2,000 invocations, 2 cores, 80%, 20 seeds) with a lesson needing 0 to 1,000 \
                 finished invocations"
            }
            Name::AlpsReal => {
                "Not in the paper: thirteen policies (cfs, fifo, sfs, alps, alps-kernel, hybrid, \
                 las, alps-las, gittins, gittins-rt, sfs-alps, sfs-gittins, srpt) on a day of the real Azure Functions 2019 trace \
                 (--trace DIR), its first half of minutes for tuning and its second held out, \
                 at 24 and 56 cores, loads 0.8/0.9/1.0; every invocation, and those of at most 4 s"
            }
            Name::SledgescaleDeadline => {
                "SledgeScale Fig. 3: sledgescale on extreme bimodal at 90% and 95% load, long \
                 requests due in 100 or 500 ms; latency per function"
            }
            Name::SledgescaleLognormal => {
                "SledgeScale Fig. 8: sledge, rr, jsq, lld and sledgescale on the log-normal at \
                 20-100% load, 1 dispatcher + 6 workers; p99.9 slowdown and misses"
            }
            Name::SledgescaleSdvbs => {
                "SledgeScale Fig. 13: sledgescale, darc and darc-paper on SD-VBS at 14.4 kRPS, \
                 SIFT's deadline from 1.13 to 11.3 ms; misses per function"
            }
            Name::SledgescaleBeyond => {
                "Not in the paper: the SRPT control and sledgescale+, estimates off by 0-100%, \
                 1-3 dispatchers over 6 workers"
            }
            Name::NodeAdmission => {
                "Not in the paper: backlog bounds and a deadline test tuned on the exponential                  at 150% load, judged on high bimodal and the log-normal at 80-200%"
            }
            Name::SledgescaleFixed => {
                "SledgeScale Fig. 9: sledgescale, sledge, darc and shinjuku's capacity at p99.9 \
                 latency 200 us on fixed 10 us requests"
            }
            Name::SledgescaleExponential => {
                "SledgeScale Fig. 10: sledgescale, darc, darc-paper and shinjuku's capacity at \
                 p99.9 latency 10 ms on the exponential"
            }
            Name::SledgescaleBimodal => {
                "SledgeScale Fig. 12: sledgescale, sledgescale+, darc and shinjuku-mq's capacity \
                 at p99.9 slowdown 40 on high bimodal"
            }
            Name::SledgescaleLognormalCapacity => {
                "SledgeScale Fig. 11: sledgescale, darc, darc-paper and shinjuku's capacity at \
                 p99.9 slowdown 200 on the log-normal"
            }
            Name::ChrluLow => {
                "CH-RLU Fig. 7: ch-rlu, ch-bl, least-loaded, openwhisk and openwhisk:ttl on 8 x 16 \
                 cores, 20 closed-loop FunctionBench clients"
            }
            Name::ChrluHeavy => "CH-RLU Fig. 8: the same with 120 clients",
            Name::ChrluBursts => {
                "CH-RLU Fig. 9: the same, two of the top functions bursting every 30 s"
            }
            Name::ChrluRising => {
                "CH-RLU Fig. 10: the same policies, open loop rising to 18 invocations/s at 25 min"
            }
            Name::ChrluSim => {
                "CH-RLU Figs. 12-13: least-loaded, ch-bl, ch-rlu and greedy on 1,000 Azure-like \
                 functions, a million invocations, 8 x 32 cores"
            }
            Name::ChrluSize => {
                "CH-RLU Fig. 14: least-loaded, ch-rlu and greedy on 256 cores and 512 GB split \
                 over 4 to 64 servers, without and with contention"
            }
            Name::ChrluBeyond => {
                "Not in the paper: ch-rlu without each of its parts, and six routers on stale \
                 and on exact loads (power-of-two among them)"
            }
            Name::StackDisciplines => {
                "Not in the papers: ch-rlu, ch-bl, least-loaded, power-of-two and random in front \
                 of servers run as ps, os:cfs, os:fifo, os:sfs, os:alps, node:sledgescale and \
                 node:srpt, on the Azure-like and the FunctionBench clusters and (--trace DIR) a \
                 day of the real Azure Functions 2019 trace; which router wins under which \
                 discipline"
            }
        }
    }

    /// The experiment, with its level.
    pub fn experiment(self) -> Of {
        let name = self;
        let os = |cases, table| Of::Os(Experiment { name, cases, table });
        let node = |cases, table| Of::Node(Experiment { name, cases, table });
        let capacity = |cases| {
            Of::Capacity(Experiment {
                name,
                cases,
                table: nf::capacity_table,
            })
        };
        let cluster = |cases, table| Of::Cluster(Experiment { name, cases, table });
        match self {
            Name::AlpsLoad => os(|s| Ok(alps::load_cases(s)), alps::load_table),
            Name::AlpsAblation => os(|s| Ok(alps::ablation_cases(s)), alps::variants_table),
            Name::AlpsSensitivity => os(|s| Ok(alps::sensitivity_cases(s)), alps::variants_table),
            Name::AlpsIo => os(|s| Ok(io::cases(s)), io::table),
            Name::HybridCost => os(hybrid::cases, hybrid::table),
            Name::SrptNoise => os(|s| Ok(alps::noise_cases(s)), alps::noise_table),
            Name::AlpsWindowMin => os(|s| Ok(alps::window_min_cases(s)), alps::window_min_table),
            Name::AlpsReal => os(real::cases, real::table),
            Name::SledgescaleDeadline => {
                node(|s| Ok(nf::deadline_cases(s.seed)), nf::deadline_table)
            }
            Name::SledgescaleLognormal => {
                node(|s| Ok(nf::lognormal_cases(s.seed)), nf::sweep_table)
            }
            Name::SledgescaleSdvbs => node(|s| Ok(nf::sdvbs_cases(s.seed)), nf::sdvbs_table),
            Name::SledgescaleBeyond => node(|s| Ok(nf::beyond_cases(s.seed)), nf::sweep_table),
            Name::NodeAdmission => node(|s| Ok(nf::admission_cases(s.seed)), nf::sweep_table),
            Name::SledgescaleFixed => capacity(|s| Ok(nf::fixed_cases(s.seed))),
            Name::SledgescaleExponential => capacity(|s| Ok(nf::exponential_cases(s.seed))),
            Name::SledgescaleBimodal => capacity(|s| Ok(nf::bimodal_cases(s.seed))),
            Name::SledgescaleLognormalCapacity => {
                capacity(|s| Ok(nf::lognormal_capacity_cases(s.seed)))
            }
            Name::ChrluLow => cluster(
                |s| Ok(cl::low_cases(s.seed)),
                |r| cl::cluster_table(r, cl::LOW_PAPER),
            ),
            Name::ChrluHeavy => cluster(
                |s| Ok(cl::heavy_cases(s.seed)),
                |r| cl::cluster_table(r, cl::HEAVY_PAPER),
            ),
            Name::ChrluBursts => cluster(
                |s| Ok(cl::bursts_cases(s.seed)),
                |r| cl::cluster_table(r, cl::BURSTS_PAPER),
            ),
            Name::ChrluRising => cluster(
                |s| Ok(cl::rising_cases(s.seed)),
                |r| cl::cluster_table(r, cl::RISING_PAPER),
            ),
            Name::ChrluSim => cluster(
                |s| Ok(cl::sim_cases(s.seed)),
                |r| cl::cluster_table(r, cl::SIM_PAPER),
            ),
            Name::ChrluSize => cluster(
                |s| Ok(cl::size_cases(s.seed)),
                |r| cl::cluster_table(r, cl::SIZE_PAPER),
            ),
            Name::ChrluBeyond => cluster(
                |s| Ok(cl::beyond_cases(s.seed)),
                |r| cl::cluster_table(r, &[]),
            ),
            Name::StackDisciplines => cluster(stack::cases, stack::table),
        }
    }

    /// The name as the command line (and serde) spells it.
    pub fn spelled(self) -> &'static str {
        match self {
            Name::AlpsLoad => "alps-load",
            Name::AlpsAblation => "alps-ablation",
            Name::AlpsSensitivity => "alps-sensitivity",
            Name::AlpsIo => "alps-io",
            Name::HybridCost => "hybrid-cost",
            Name::SrptNoise => "srpt-noise",
            Name::AlpsWindowMin => "alps-window-min",
            Name::AlpsReal => "alps-real",
            Name::SledgescaleDeadline => "sledgescale-deadline",
            Name::SledgescaleLognormal => "sledgescale-lognormal",
            Name::SledgescaleSdvbs => "sledgescale-sdvbs",
            Name::SledgescaleBeyond => "sledgescale-beyond",
            Name::NodeAdmission => "node-admission",
            Name::SledgescaleFixed => "sledgescale-fixed",
            Name::SledgescaleExponential => "sledgescale-exponential",
            Name::SledgescaleBimodal => "sledgescale-bimodal",
            Name::SledgescaleLognormalCapacity => "sledgescale-lognormal-capacity",
            Name::ChrluLow => "chrlu-low",
            Name::ChrluHeavy => "chrlu-heavy",
            Name::ChrluBursts => "chrlu-bursts",
            Name::ChrluRising => "chrlu-rising",
            Name::ChrluSim => "chrlu-sim",
            Name::ChrluSize => "chrlu-size",
            Name::ChrluBeyond => "chrlu-beyond",
            Name::StackDisciplines => "stack-disciplines",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Debug;
    use std::path::Path;

    /// The Azure 2019 reader's fixture: a day of five functions.
    fn fixture() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../workload/tests/fixtures/azure2019")
    }

    /// `e`'s cases for `s`, which make the JSON round trip; an error if
    /// they cannot be planned.
    fn round_trip<L: Level>(e: &Experiment<L>, s: &Settings) -> Result<usize>
    where
        L::Case: PartialEq + Debug,
    {
        let cases = e.plan(s)?;
        let json = serde_json::to_string(&cases).unwrap();
        assert_eq!(serde_json::from_str::<Vec<L::Case>>(&json).unwrap(), cases);
        assert!(!cases.is_empty(), "{:?} plans no cases", e.name);
        Ok(cases.len())
    }

    #[test]
    fn every_name_is_spelled_as_serde_spells_it_and_plans_its_cases() {
        let cache = tempfile::tempdir().unwrap();
        let sized = Settings {
            invocations: Some(10),
            seed: 1,
            trace: None,
            cache: Some(cache.path().to_path_buf()),
        };
        for name in Name::ALL {
            assert_eq!(serde_json::to_value(name).unwrap(), name.spelled());
            let s = Settings {
                trace: (name == Name::AlpsReal).then(fixture),
                ..sized.clone()
            };
            let plain = Settings {
                invocations: None,
                ..sized.clone()
            };
            // Cases are data: they make the round trip. Only the OS
            // level's take --invocations; the others refuse it, naming it.
            let refused = |planned: Result<usize>| {
                let e = planned.unwrap_err().to_string();
                assert!(e.contains("--invocations"), "{name:?}: {e}");
            };
            match name.experiment() {
                Of::Os(e) => drop(round_trip(&e, &s).unwrap()),
                Of::Node(e) => {
                    refused(round_trip(&e, &s));
                    round_trip(&e, &plain).unwrap();
                }
                Of::Capacity(e) => {
                    refused(round_trip(&e, &s));
                    round_trip(&e, &plain).unwrap();
                }
                Of::Cluster(e) => {
                    refused(round_trip(&e, &s));
                    round_trip(&e, &plain).unwrap();
                }
            }
        }
    }

    #[test]
    fn a_trace_is_for_the_experiments_that_run_one() {
        let Of::Os(e) = Name::AlpsLoad.experiment() else {
            panic!("alps-load is an OS experiment");
        };
        let misplaced = Settings {
            trace: Some(fixture()),
            ..Settings::default()
        };
        let err = e.plan(&misplaced).unwrap_err().to_string();
        assert!(
            err.contains("--trace is for alps-real and stack-disciplines"),
            "{err}"
        );
        // Built-in clusters of their own length take no --invocations,
        // with or without a trace.
        let Of::Cluster(e) = Name::StackDisciplines.experiment() else {
            panic!("stack-disciplines is a cluster experiment");
        };
        let sized = Settings {
            invocations: Some(10),
            ..misplaced
        };
        let err = e.plan(&sized).unwrap_err().to_string();
        assert!(err.contains("--invocations is for the OS level"), "{err}");
    }
}
