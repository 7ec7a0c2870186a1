//! `faasched experiment NAME`: the papers' experiments as canned, seeded runs.
//!
//! An experiment is a list of [`Case`]s (a workload on a machine) each run
//! under several [`Variant`]s (a policy with its parameters), and a function
//! that turns what they measured into the experiment's [`Table`]. The runner
//! here is shared: it runs every (case, variant) pair, on as many threads as
//! the machine has (runs are independent and each is deterministic, so the
//! output does not depend on the thread count), prints the table and, with
//! `--out`, writes:
//!
//! - `table.txt` and `table.csv`: the printed table;
//! - `<case>/summary.json`, `<case>/summary.csv`: everything measured in a case,
//!   as `simulate --out` writes it;
//! - `report.html`: one section per case (and per function class, for
//!   experiments that ask for it), with the CDFs, percentile bars, switches,
//!   cost and completions over time.

mod alps;
mod hybrid;
mod io;
mod stats;
mod table;

use crate::run::{KernelArgs, run_policy};
use crate::source::{Source, WorkloadArgs};
use crate::stdout::{out, outln};
use anyhow::{Context, Result};
use clap::{Args as ClapArgs, ValueEnum};
use faasched_model::Nanos;
use faasched_policy::Tuning;
use faasched_report::{
    Collector, PolicySummary, REPORT_HTML, Report, Section, Staged, Summary, write_outputs,
    write_report,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
pub use table::Table;

/// Reproduce a paper's experiment: canned, seeded runs and their table.
///
/// A fixed set of workloads, machines and policies, seeded, printing its
/// table.
///
/// Every experiment is deterministic: the same seed gives the same bytes. Each
/// runs its simulations on all of this machine's cores (the results do not
/// depend on how many). docs/EXPERIMENTS.md sets each table beside the paper's
/// numbers.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Which experiment.
    #[arg(value_enum)]
    name: Name,
    /// Write table.txt, table.csv, report.html and a summary per case here.
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// Invocations per run instead of the experiment's own (the paper's)
    /// number; smaller is faster and noisier.
    #[arg(long, short = 'n', value_parser = crate::source::count)]
    invocations: Option<u64>,
    /// Seed of every workload and random choice.
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
}

/// The experiments.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
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
}

/// One configuration: a workload on a machine, run under every variant.
#[derive(Clone, Debug)]
pub struct Case {
    /// The report's heading for it.
    pub title: String,
    /// Its directory under `--out`, and its key in the table.
    pub slug: String,
    pub workload: WorkloadArgs,
    pub kernel: KernelArgs,
    pub variants: Vec<Variant>,
    /// Also summarise each function (class) on its own.
    pub by_function: bool,
}

/// A policy under a label, with its parameters.
#[derive(Clone, Debug)]
pub struct Variant {
    /// The name in tables and reports (distinct within a case).
    pub label: String,
    /// The catalogue's policy name.
    pub policy: &'static str,
    pub tuning: Tuning,
}

impl Variant {
    /// Policy `policy` under its own name, with default parameters.
    pub fn plain(policy: &'static str) -> Variant {
        Variant::tuned(policy, policy, Tuning::default())
    }

    /// Policy `policy` labelled `label`, with `tuning`.
    pub fn tuned(label: &str, policy: &'static str, tuning: Tuning) -> Variant {
        Variant {
            label: label.to_string(),
            policy,
            tuning,
        }
    }
}

/// What one case measured.
pub struct Ran {
    pub case: Case,
    /// One policy summary per variant, labelled as the variant.
    pub summary: Summary,
    /// With [`Case::by_function`]: per function name, a summary per variant.
    pub by_function: BTreeMap<String, Vec<PolicySummary>>,
}

/// Settings every experiment takes from the command line.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub invocations: Option<u64>,
    pub seed: u64,
}

impl Settings {
    /// A built-in workload's arguments: `invocations` unless overridden.
    pub fn workload(&self, name: &str, cores: u16, load: f64, invocations: u64) -> WorkloadArgs {
        WorkloadArgs {
            workload: name.to_string(),
            cores: Some(cores),
            load: Some(load),
            invocations: Some(self.invocations.unwrap_or(invocations)),
            seed: self.seed,
        }
    }
}

impl Name {
    /// The cases to run.
    fn cases(self, s: &Settings) -> Result<Vec<Case>> {
        Ok(match self {
            Name::AlpsLoad => alps::load_cases(s),
            Name::AlpsAblation => alps::ablation_cases(s),
            Name::AlpsSensitivity => alps::sensitivity_cases(s),
            Name::AlpsIo => io::cases(s),
            Name::HybridCost => hybrid::cases(s)?,
            Name::SrptNoise => alps::noise_cases(s),
            Name::AlpsWindowMin => alps::window_min_cases(s),
        })
    }

    /// The table of what the cases measured.
    fn table(self, ran: &[Ran]) -> Table {
        match self {
            Name::AlpsLoad => alps::load_table(ran),
            Name::AlpsAblation | Name::AlpsSensitivity => alps::variants_table(ran),
            Name::AlpsIo => io::table(ran),
            Name::HybridCost => hybrid::table(ran),
            Name::SrptNoise => alps::noise_table(ran),
            Name::AlpsWindowMin => alps::window_min_table(ran),
        }
    }

    /// The name as the command line spells it.
    fn spelled(self) -> String {
        self.to_possible_value()
            .map_or_else(|| format!("{self:?}"), |v| v.get_name().to_string())
    }
}

impl Args {
    pub fn execute(self) -> Result<()> {
        let settings = Settings {
            invocations: self.invocations,
            seed: self.seed,
        };
        let name = self.name.spelled();
        let cases = self.name.cases(&settings)?;
        // A directory that cannot be made is found before the runs, not
        // after them.
        if let Some(dir) = &self.out {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let ran = run_cases(cases)?;
        let table = self.name.table(&ran);
        let text = table.render();
        out!("{text}")?;
        if let Some(dir) = &self.out {
            write_files(dir, &name, &ran, &table, &text)?;
            outln!(
                "wrote table.txt, table.csv, {REPORT_HTML} and a summary per case to {}",
                dir.display()
            )?;
        }
        Ok(())
    }
}

/// Writes the experiment's files into `dir` (see the module docs), all put
/// in place together once written.
fn write_files(dir: &Path, name: &str, ran: &[Ran], table: &Table, text: &str) -> Result<()> {
    let mut staged = Staged::new();
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

/// Runs every variant of every case, on all cores, and gathers the results in
/// case and variant order.
fn run_cases(cases: Vec<Case>) -> Result<Vec<Ran>> {
    let sources = cases
        .iter()
        .map(|c| Source::resolve(&c.workload).with_context(|| format!("case {}", c.slug)))
        .collect::<Result<Vec<_>>>()?;
    let jobs: Vec<(usize, usize)> = cases
        .iter()
        .enumerate()
        .flat_map(|(c, case)| (0..case.variants.len()).map(move |v| (c, v)))
        .collect();
    let bar = ProgressBar::new(jobs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>10} [{bar:40}] {pos}/{len} runs ({elapsed}) {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix("experiment");
    let results: Vec<Mutex<Option<Result<Measured>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(c, v)) = jobs.get(i) else { break };
                    let (case, variant) = (&cases[c], &cases[c].variants[v]);
                    bar.set_message(format!("{} {}", case.slug, variant.label));
                    let measured = run_variant(case, variant, &sources[c]);
                    // A poisoned slot only means another run panicked; keep going.
                    *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(measured);
                    bar.inc(1);
                }
            });
        }
    });
    bar.finish_and_clear();
    let mut measured = results.into_iter().map(|m| {
        m.into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .expect("every job ran")
    });
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
                .describe(case.workload.cores(), case.workload.seed),
        };
        ran.push(Ran {
            case,
            summary,
            by_function,
        });
    }
    Ok(ran)
}

/// Runs one variant of a case, summarised under the variant's label. A
/// function's summary has its share of the run's utilisation: the run's,
/// scaled by the function's part of the CPU time.
fn run_variant(case: &Case, variant: &Variant, source: &Source) -> Result<Measured> {
    let mut by_function: BTreeMap<String, (Collector, Nanos)> = BTreeMap::new();
    let mut all_cpu: Nanos = 0;
    let mut summary = run_policy(
        variant.policy,
        &variant.tuning,
        source,
        &case.kernel,
        case.workload.cores(),
        case.workload.seed,
        |o| {
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
        },
    )?;
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
