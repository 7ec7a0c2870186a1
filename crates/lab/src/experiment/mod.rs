//! The papers' experiments as canned, seeded runs.
//!
//! An experiment is data: a list of [`Case`]s (a workload on a machine),
//! each run under several [`Variant`]s (a policy with its parameters), and a
//! function that turns what they measured into the experiment's [`Table`].
//! Cases and variants are serde values (`faasched experiment NAME --plan`
//! prints them). The runner is shared: it runs every (case, variant) pair
//! in parallel on rayon's pool (runs are independent and each is
//! deterministic, so the output does not depend on the thread count, and
//! results are gathered in case and variant order), and [`write_files`]
//! writes:
//!
//! - `table.txt` and `table.csv`: the printed table;
//! - `<case>/summary.json`, `<case>/summary.csv`: everything measured in a case,
//!   as `simulate --out` writes it;
//! - `report.html`: one section per case (and per function class, for
//!   experiments that ask for it), with the CDFs, percentile bars, switches,
//!   cost and completions over time.
//!
//! [`command`] is `faasched experiment` itself, for experiments of every
//! level: their cases printed as a plan, or run and their table published.

mod alps;
pub mod command;
mod hybrid;
mod io;
mod real;
mod stats;
pub mod table;

use crate::os::catalog::{Policy, Tuning};
use crate::os::run::{Kernel, Machine};
use crate::progress;
use anyhow::{Context, Result, bail};
use faasched_model::Nanos;
use faasched_report::Staged;
use faasched_report::os::{
    Collector, PolicySummary, Report, Section, Summary, write_outputs, write_report,
};
use faasched_workload::{Choice, Source};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
pub use table::Table;

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
}

/// An experiment's cases: the OS level's or the node level's.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Cases {
    /// Workloads on simulated machines under steering policies.
    Os(Vec<Case>),
    /// Workloads on simulated nodes under dispatch policies.
    Node(Vec<crate::node::experiment::NodeCase>),
    /// Node policies' capacities at a tail target.
    Capacity(Vec<crate::node::figures::CapacityCase>),
    /// Workloads on simulated clusters under routers.
    Cluster(Vec<crate::cluster::experiment::ClusterCase>),
}

/// One configuration: a workload on a machine, run under every variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The report's heading for it.
    pub title: String,
    /// Its directory under `--out`, and its key in the table.
    pub slug: String,
    /// The workload, on the machine's cores.
    pub workload: Choice,
    /// The simulated kernel.
    pub kernel: Kernel,
    /// The policies it runs under.
    pub variants: Vec<Variant>,
    /// Also summarise each function (class) on its own.
    pub by_function: bool,
}

/// A policy under a label, with its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// The name in tables and reports (distinct within a case).
    pub label: String,
    /// The catalogue's policy name.
    pub policy: String,
    /// Its parameters.
    pub tuning: Tuning,
}

impl Variant {
    /// Policy `policy` under its own name, with default parameters.
    pub fn plain(policy: &str) -> Variant {
        Variant::tuned(policy, policy, Tuning::default())
    }

    /// Policy `policy` labelled `label`, with `tuning`.
    pub fn tuned(label: &str, policy: &str, tuning: Tuning) -> Variant {
        Variant {
            label: label.to_string(),
            policy: policy.to_string(),
            tuning,
        }
    }
}

/// What one case measured.
pub struct Ran {
    /// The case.
    pub case: Case,
    /// One policy summary per variant, labelled as the variant.
    pub summary: Summary,
    /// With [`Case::by_function`]: per function name, a summary per variant.
    pub by_function: BTreeMap<String, Vec<PolicySummary>>,
}

/// Settings every experiment takes from the command line.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Invocations per run instead of the experiment's own number.
    pub invocations: Option<u64>,
    /// Seed of every workload and random choice.
    pub seed: u64,
    /// The folder of a production trace's day, for the experiments that
    /// run one.
    pub trace: Option<std::path::PathBuf>,
    /// Where an imported trace is kept between runs. By default the user's
    /// cache (`$XDG_CACHE_HOME/faasched`, else `~/.cache/faasched`).
    pub cache: Option<std::path::PathBuf>,
}

impl Settings {
    /// A built-in workload: `invocations` unless overridden.
    pub fn workload(&self, name: &str, cores: usize, load: f64, invocations: u64) -> Choice {
        Choice {
            workload: name.to_string(),
            cores,
            load: Some(load),
            invocations: Some(self.invocations.unwrap_or(invocations)),
            seed: self.seed,
        }
    }
}

impl Name {
    /// Every experiment.
    pub const ALL: [Name; 23] = [
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
    ];

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
                "Not in the paper: nine policies (cfs, fifo, sfs, alps, alps-kernel, hybrid, las, alps-las, srpt) on a \
                 day of the real Azure Functions 2019 trace (--trace DIR) at 24 and 56 cores, \
                 loads 0.8/0.9/1.0; every invocation, and those of at most 4 s"
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
        }
    }

    /// The cases to run, of either level.
    pub fn plan(self, s: &Settings) -> Result<Cases> {
        use crate::node::figures;
        if (self.is_node() || self.is_cluster()) && (s.trace.is_some() || s.invocations.is_some()) {
            bail!(
                "{} runs built-in workloads of its own length: --trace and --invocations are for \
                 the OS level's experiments",
                self.spelled()
            );
        }
        let node = |cases| Ok(Cases::Node(cases));
        let capacity = |cases| Ok(Cases::Capacity(cases));
        let cluster = |cases| Ok(Cases::Cluster(cases));
        use crate::cluster::figures as cl;
        match self {
            Name::ChrluLow => cluster(cl::low_cases(s.seed)),
            Name::ChrluHeavy => cluster(cl::heavy_cases(s.seed)),
            Name::ChrluBursts => cluster(cl::bursts_cases(s.seed)),
            Name::ChrluRising => cluster(cl::rising_cases(s.seed)),
            Name::ChrluSim => cluster(cl::sim_cases(s.seed)),
            Name::ChrluSize => cluster(cl::size_cases(s.seed)),
            Name::ChrluBeyond => cluster(cl::beyond_cases(s.seed)),
            Name::SledgescaleDeadline => node(figures::deadline_cases(s.seed)),
            Name::SledgescaleLognormal => node(figures::lognormal_cases(s.seed)),
            Name::SledgescaleSdvbs => node(figures::sdvbs_cases(s.seed)),
            Name::SledgescaleBeyond => node(figures::beyond_cases(s.seed)),
            Name::SledgescaleFixed => capacity(figures::fixed_cases(s.seed)),
            Name::SledgescaleExponential => capacity(figures::exponential_cases(s.seed)),
            Name::SledgescaleBimodal => capacity(figures::bimodal_cases(s.seed)),
            Name::SledgescaleLognormalCapacity => {
                capacity(figures::lognormal_capacity_cases(s.seed))
            }
            _ => Ok(Cases::Os(self.cases(s)?)),
        }
    }

    /// Whether it runs the node level.
    fn is_node(self) -> bool {
        self.spelled().starts_with("sledgescale-")
    }

    /// Whether it runs the cluster level.
    fn is_cluster(self) -> bool {
        self.spelled().starts_with("chrlu-")
    }

    /// The table of what a cluster experiment's cases measured, beside what
    /// the paper says.
    pub fn cluster_table(self, ran: &[crate::cluster::experiment::CaseRan]) -> Table {
        use crate::cluster::figures as cl;
        let paper = match self {
            Name::ChrluLow => cl::LOW_PAPER,
            Name::ChrluHeavy => cl::HEAVY_PAPER,
            Name::ChrluBursts => cl::BURSTS_PAPER,
            Name::ChrluRising => cl::RISING_PAPER,
            Name::ChrluSim => cl::SIM_PAPER,
            Name::ChrluSize => cl::SIZE_PAPER,
            _ => &[],
        };
        cl::cluster_table(ran, paper)
    }

    /// The table of what a node experiment's cases measured.
    pub fn node_table(self, ran: &[crate::node::experiment::NodeRan]) -> Table {
        use crate::node::figures;
        match self {
            Name::SledgescaleDeadline => figures::deadline_table(ran),
            Name::SledgescaleSdvbs => figures::sdvbs_table(ran),
            _ => figures::sweep_table(ran),
        }
    }

    /// The cases to run.
    pub fn cases(self, s: &Settings) -> Result<Vec<Case>> {
        if s.trace.is_some() && self != Name::AlpsReal {
            bail!(
                "{} runs built-in workloads: --trace is for alps-real",
                self.spelled()
            );
        }
        Ok(match self {
            Name::AlpsLoad => alps::load_cases(s),
            Name::AlpsAblation => alps::ablation_cases(s),
            Name::AlpsSensitivity => alps::sensitivity_cases(s),
            Name::AlpsIo => io::cases(s),
            Name::HybridCost => hybrid::cases(s)?,
            Name::SrptNoise => alps::noise_cases(s),
            Name::AlpsWindowMin => alps::window_min_cases(s),
            Name::AlpsReal => real::cases(s)?,
            _ => bail!("{} is a node experiment", self.spelled()),
        })
    }

    /// The table of what the cases measured.
    pub fn table(self, ran: &[Ran]) -> Table {
        match self {
            Name::AlpsLoad => alps::load_table(ran),
            Name::AlpsAblation | Name::AlpsSensitivity => alps::variants_table(ran),
            Name::AlpsIo => io::table(ran),
            Name::HybridCost => hybrid::table(ran),
            Name::SrptNoise => alps::noise_table(ran),
            Name::AlpsWindowMin => alps::window_min_table(ran),
            Name::AlpsReal => real::table(ran),
            _ => Table::new(&[], 0),
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
        }
    }
}

/// The cases in the JSON file at `path` (as `--plan` prints them, of either
/// level); errors name it, and the line and column of what is wrong.
pub fn read_cases<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}", path.display()))
}

/// Writes the experiment's files into `dir` (see the module docs), all put
/// in place together once written with what `staged` holds (the directory,
/// made before the runs so that one that cannot be made is found at once).
pub fn write_files(
    mut staged: Staged,
    dir: &Path,
    name: &str,
    ran: &[Ran],
    table: &Table,
    text: &str,
) -> Result<()> {
    staged.write(&dir.join("table.txt"), text.as_bytes())?;
    table.write_csv(&dir.join("table.csv"), &mut staged)?;
    let mut sections = Vec::new();
    for r in ran {
        write_outputs(&dir.join(&r.case.slug), &r.summary, &mut staged)?;
        sections.push(Section {
            title: r.case.title.clone(),
            summary: r.summary.clone(),
        });
        for (function, policies) in &r.by_function {
            // The section's own invocations, and the whole workload's.
            let mut workload = r.summary.workload.clone();
            workload["function"] = function.as_str().into();
            workload["all_invocations"] = workload["invocations"].take();
            workload["invocations"] = policies.first().map_or(0, |p| p.all().count).into();
            sections.push(Section {
                title: format!("{}: function {function} only", r.case.title),
                summary: Summary {
                    policies: policies.clone(),
                    workload,
                    machine: r.summary.machine.clone(),
                },
            });
        }
    }
    let report = Report {
        title: format!("faasched experiment {name}"),
        sections,
    };
    write_report(dir, &report, &mut staged)?;
    Ok(staged.commit()?)
}

/// What one (case, variant) run measured.
struct Measured {
    summary: PolicySummary,
    by_function: BTreeMap<String, PolicySummary>,
}

/// Runs every variant of every case, in parallel, and gathers the results
/// in case and variant order.
pub fn run_cases(cases: Vec<Case>) -> Result<Vec<Ran>> {
    let policies = check(&cases)?;
    let sources = cases
        .iter()
        .map(|c| Source::resolve(&c.workload).with_context(|| format!("case {}", c.slug)))
        .collect::<Result<Vec<_>>>()?;
    let jobs: Vec<(usize, usize)> = cases
        .iter()
        .enumerate()
        .flat_map(|(c, case)| (0..case.variants.len()).map(move |v| (c, v)))
        .collect();
    let bar = progress::runs("experiment", jobs.len() as u64);
    let measured: Vec<Result<Measured>> = jobs
        .par_iter()
        .map(|&(c, v)| {
            let (case, variant) = (&cases[c], &cases[c].variants[v]);
            bar.set_message(format!("{} {}", case.slug, variant.label));
            let m = run_variant(case, variant, &policies[c][v], &sources[c]);
            bar.inc(1);
            m
        })
        .collect();
    bar.finish_and_clear();
    let mut measured = measured.into_iter();
    let mut ran = Vec::new();
    for (case, source) in cases.into_iter().zip(&sources) {
        let mut policies = Vec::new();
        let mut by_function: BTreeMap<String, Vec<PolicySummary>> = BTreeMap::new();
        for variant in &case.variants {
            let m = measured
                .next()
                .expect("a result per job")
                .with_context(|| format!("case {}, variant {}", case.slug, variant.label))?;
            policies.push(m.summary);
            for (f, s) in m.by_function {
                by_function.entry(f).or_default().push(s);
            }
        }
        let summary = Summary {
            policies,
            workload: source.describe(),
            machine: case
                .kernel
                .describe(case.workload.cores, case.workload.seed),
        };
        ran.push(Ran {
            case,
            summary,
            by_function,
        });
    }
    Ok(ran)
}

/// Each case's variants' policies, looked up once; refuses, before
/// anything runs, no cases at all, a case whose slug is no plain file name
/// (it names the case's directory under `--out`), cases whose results would
/// collide (two with one slug: one directory; two variants of a case with
/// one label: one summary), and a kernel, policy or parameter out of range
/// (a cases file has passed no flag's check).
fn check(cases: &[Case]) -> Result<Vec<Vec<Policy>>> {
    if cases.is_empty() {
        bail!("no cases to run");
    }
    let mut policies = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let slug = &case.slug;
        check_slug(slug, cases[..i].iter().map(|c| c.slug.as_str()))?;
        case.kernel
            .validate()
            .with_context(|| format!("case {slug}"))?;
        for (j, v) in case.variants.iter().enumerate() {
            if case.variants[..j].iter().any(|w| w.label == v.label) {
                bail!("case {slug}: two variants are labelled `{}`", v.label);
            }
        }
        let looked_up = case.variants.iter().map(|v| {
            let context = || format!("case {slug}, variant {}", v.label);
            v.tuning.validate().with_context(context)?;
            Policy::new(&v.policy, &v.tuning).with_context(context)
        });
        policies.push(looked_up.collect::<Result<Vec<_>>>()?);
    }
    Ok(policies)
}

/// Refuses a case slug that is no plain file name (it names the case's
/// directory under `--out`) or that an earlier case of the run has (two
/// cases, one directory).
pub fn check_slug<'a>(slug: &str, earlier: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if slug.is_empty() || slug.starts_with('.') || !slug.chars().all(plain) {
        bail!(
            "case slug `{slug}`: a slug names the case's directory, so it takes letters, \
             digits, `-`, `_` and `.` only, and does not start with `.`"
        );
    }
    if earlier.into_iter().any(|e| e == slug) {
        bail!("two cases have the slug `{slug}`");
    }
    Ok(())
}

/// Runs one variant of a case, summarised under the variant's label. A
/// function's summary has its share of the run's utilisation: the run's,
/// scaled by the function's part of the CPU time.
fn run_variant(
    case: &Case,
    variant: &Variant,
    policy: &Policy,
    source: &Source,
) -> Result<Measured> {
    let mut by_function: BTreeMap<String, (Collector, Nanos)> = BTreeMap::new();
    let mut all_cpu: Nanos = 0;
    let machine = Machine {
        kernel: case.kernel.clone(),
        cores: case.workload.cores,
        seed: case.workload.seed,
    };
    let mut summary = machine.run(policy, source, |o| {
        if case.by_function {
            let (c, cpu) = by_function
                .entry(o.function.name.to_string())
                // Marked sim-only below, from the run's own summary.
                .or_insert_with(|| (Collector::new(&variant.label, false), 0));
            c.record(o);
            *cpu += o.cpu;
            all_cpu += o.cpu;
        }
        Ok(())
    })?;
    summary.policy = variant.label.clone();
    let by_function = by_function
        .into_iter()
        .map(|(f, (c, cpu))| {
            let share = if all_cpu == 0 {
                0.0
            } else {
                cpu as f64 / all_cpu as f64
            };
            let mut s = c.finish(summary.utilisation * share);
            s.sim_only = summary.sim_only;
            s.params.clone_from(&summary.params);
            (f, s)
        })
        .collect();
    Ok(Measured {
        summary,
        by_function,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Azure 2019 reader's fixture: a day of five functions.
    fn fixture() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../workload/tests/fixtures/azure2019")
    }

    #[test]
    fn alps_real_runs_a_trace_day_and_needs_one() {
        let none = Settings::default();
        let err = Name::AlpsReal.cases(&none).unwrap_err().to_string();
        assert!(err.contains("--trace DIR"), "{err}");
        let misplaced = Settings {
            trace: Some(fixture()),
            ..Settings::default()
        };
        let err = Name::AlpsLoad.cases(&misplaced).unwrap_err().to_string();
        assert!(err.contains("--trace is for alps-real"), "{err}");
        let cache = tempfile::tempdir().unwrap();
        let s = Settings {
            trace: Some(fixture()),
            seed: 3,
            cache: Some(cache.path().to_path_buf()),
            ..Settings::default()
        };
        let cases = Name::AlpsReal.cases(&s).unwrap();
        assert_eq!(cases.len(), 12);
        assert_eq!(cases[0].slug, "all-24-80");
        assert_eq!(cases[11].slug, "short-56-100");
        // The imported day is written once and found again.
        assert_eq!(Name::AlpsReal.cases(&s).unwrap(), cases);
        let ran = run_cases(cases).unwrap();
        let table = Name::AlpsReal.table(&ran);
        assert_eq!(table.rows.len(), 12 * 9);
        assert_eq!(table.rows[0][..2], ["all-24-80".to_string(), "cfs".into()]);
        assert_eq!(table.rows[0][3], "+0.0%");
    }

    #[test]
    fn every_name_is_spelled_as_serde_spells_it_and_plans_its_cases() {
        let cache = tempfile::tempdir().unwrap();
        let s = Settings {
            invocations: Some(10),
            seed: 1,
            trace: Some(fixture()),
            cache: Some(cache.path().to_path_buf()),
        };
        for name in Name::ALL {
            assert_eq!(serde_json::to_value(name).unwrap(), name.spelled());
            // Cases are data: they make the round trip.
            let s = Settings {
                trace: (name == Name::AlpsReal).then(fixture),
                ..s.clone()
            };
            match name.plan(&s) {
                Ok(Cases::Os(cases)) => {
                    let json = serde_json::to_string(&cases).unwrap();
                    assert_eq!(serde_json::from_str::<Vec<Case>>(&json).unwrap(), cases);
                    check(&cases).unwrap();
                }
                // A node experiment runs 20 s of arrivals: --invocations is
                // refused, naming it.
                Err(e) => {
                    assert!(e.to_string().contains("--invocations"), "{name:?}: {e}");
                    let plain = Settings {
                        invocations: None,
                        trace: None,
                        ..s.clone()
                    };
                    match name.plan(&plain).unwrap() {
                        Cases::Node(cases) => {
                            let json = serde_json::to_string(&cases).unwrap();
                            let back: Vec<crate::node::experiment::NodeCase> =
                                serde_json::from_str(&json).unwrap();
                            assert_eq!(back, cases);
                            assert!(!cases.is_empty());
                        }
                        Cases::Capacity(cases) => {
                            let json = serde_json::to_string(&cases).unwrap();
                            let back: Vec<crate::node::figures::CapacityCase> =
                                serde_json::from_str(&json).unwrap();
                            assert_eq!(back, cases);
                            assert!(!cases.is_empty());
                        }
                        Cases::Cluster(cases) => {
                            let json = serde_json::to_string(&cases).unwrap();
                            let back: Vec<crate::cluster::experiment::ClusterCase> =
                                serde_json::from_str(&json).unwrap();
                            assert_eq!(back, cases);
                            assert!(!cases.is_empty());
                        }
                        Cases::Os(_) => panic!("{name:?} plans OS cases"),
                    }
                }
                Ok(_) => panic!("{name:?}: --invocations not refused"),
            }
        }
    }

    #[test]
    fn colliding_or_unknown_cases_are_refused_before_any_run() {
        let s = Settings {
            invocations: Some(10),
            seed: 1,
            ..Settings::default()
        };
        let cases = Name::AlpsIo.cases(&s).unwrap();
        let mut twice = cases.clone();
        twice[1].slug = twice[0].slug.clone();
        assert!(
            check(&twice)
                .unwrap_err()
                .to_string()
                .contains("two cases have the slug")
        );
        let mut labels = cases.clone();
        labels[0].variants[1].label = "cfs".into();
        let err = check(&labels).unwrap_err().to_string();
        assert!(err.contains("two variants are labelled `cfs`"), "{err}");
        let mut unknown = cases.clone();
        unknown[0].variants[0].policy = "nope".into();
        let err = format!("{:#}", check(&unknown).unwrap_err());
        assert!(err.contains("unknown policy `nope`"), "{err}");
        for slug in ["../escaped", "/tmp/x", "", ".hidden", "a/b"] {
            let mut bad = cases.clone();
            bad[0].slug = slug.into();
            let err = check(&bad).unwrap_err().to_string();
            assert!(err.contains(&format!("case slug `{slug}`")), "{err}");
        }
        let mut tuned = cases.clone();
        tuned[0].variants[1].tuning.hybrid.fifo_share = -3.0;
        let err = format!("{:#}", check(&tuned).unwrap_err());
        assert!(err.contains("fifo_share"), "{err}");
        let mut kernel = cases.clone();
        kernel[1].kernel.base_slice_us = Some(u64::MAX / 1000);
        let err = format!("{:#}", check(&kernel).unwrap_err());
        assert!(
            err.contains("`base_slice_us` (--base-slice-us) must be 1 to 1000000"),
            "{err}"
        );
        assert!(check(&[]).unwrap_err().to_string().contains("no cases"));
    }
}
