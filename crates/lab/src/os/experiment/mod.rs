//! The operating-system level's experiments: the ALPS papers' and the
//! hybrid scheduler's figures as canned, seeded runs.
//!
//! A case ([`Case`]) is a workload on a simulated machine, run under each
//! of its [`Variant`]s (a policy with its parameters); every (case,
//! variant) run is a job of [`crate::level`]'s runner. Each case's
//! directory gets `summary.json` and `summary.csv`, as `simulate --out`
//! writes them, and the experiment's `report.html` has one section per
//! case (and per function class, for cases that ask for it): the CDFs,
//! percentile bars, switches, cost and completions over time.

pub(crate) mod alps;
pub(crate) mod hybrid;
pub(crate) mod io;
pub(crate) mod real;
mod stats;

use crate::level::Level;
use crate::os::catalog::{Policy, Tuning};
use crate::os::run::{Kernel, Machine};
use anyhow::{Context, Result, bail};
use faasched_model::Nanos;
use faasched_report::Staged;
use faasched_report::os::{
    Collector, PolicySummary, Report, Section, Summary, write_outputs, write_report,
};
use faasched_workload::{Choice, Source};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The operating-system level, as the experiment runner runs it.
pub struct Os;

impl Level for Os {
    type Case = Case;
    type Ready = (Vec<Policy>, Source);
    type Measured = Measured;
    type Ran = Ran;
    const SIZED: bool = true;

    fn slug(case: &Case) -> &str {
        &case.slug
    }

    fn title(case: &Case) -> &str {
        &case.title
    }

    fn case(ran: &Ran) -> &Case {
        &ran.case
    }

    /// Checks the case's kernel and variants, looks its policies up and
    /// makes its workload.
    fn ready(case: &Case) -> Result<(Vec<Policy>, Source)> {
        Ok((check(case)?, Source::resolve(&case.workload)?))
    }

    /// A run per variant.
    fn jobs(case: &Case, _: &Self::Ready) -> Vec<String> {
        case.variants
            .iter()
            .map(|v| format!("variant {}", v.label))
            .collect()
    }

    fn measure(case: &Case, (policies, source): &Self::Ready, job: usize) -> Result<Measured> {
        run_variant(case, &case.variants[job], &policies[job], source)
    }

    fn gather(case: Case, (_, source): Self::Ready, measured: Vec<Measured>) -> Result<Ran> {
        let mut policies = Vec::new();
        let mut by_function: BTreeMap<String, Vec<PolicySummary>> = BTreeMap::new();
        for m in measured {
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
        Ok(Ran {
            case,
            summary,
            by_function,
        })
    }

    fn write(ran: &Ran, dir: &Path, _title: &str, staged: &mut Staged) -> Result<()> {
        Ok(write_outputs(dir, &ran.summary, staged)?)
    }

    /// One report.html: a section per case, and per function of the cases
    /// that ask for it.
    fn write_all(ran: &[Ran], dir: &Path, title: &str, staged: &mut Staged) -> Result<()> {
        let mut sections = Vec::new();
        for r in ran {
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
            title: title.to_string(),
            sections,
        };
        write_report(dir, &report, staged)?;
        Ok(())
    }
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

/// What one (case, variant) run measured.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    summary: PolicySummary,
    by_function: BTreeMap<String, PolicySummary>,
}

/// A case's variants' policies, looked up once; refuses, before anything
/// runs, variants whose results would collide (one label: one summary),
/// and a kernel, policy or parameter out of range (a cases file has passed
/// no flag's check).
fn check(case: &Case) -> Result<Vec<Policy>> {
    case.kernel.validate()?;
    for (j, v) in case.variants.iter().enumerate() {
        if case.variants[..j].iter().any(|w| w.label == v.label) {
            bail!("two variants are labelled `{}`", v.label);
        }
    }
    let looked_up = case.variants.iter().map(|v| {
        let context = || format!("variant {}", v.label);
        v.tuning.validate().with_context(context)?;
        Policy::new(&v.policy, &v.tuning).with_context(context)
    });
    looked_up.collect()
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
    use crate::level::{Settings, run};

    /// The Azure 2019 reader's fixture: a day of five functions.
    fn fixture() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../workload/tests/fixtures/azure2019")
    }

    #[test]
    fn alps_real_runs_a_trace_day_and_needs_one() {
        let err = real::cases(&Settings::default()).unwrap_err().to_string();
        assert!(err.contains("--trace DIR"), "{err}");
        let cache = tempfile::tempdir().unwrap();
        let s = Settings {
            trace: Some(fixture()),
            seed: 3,
            cache: Some(cache.path().to_path_buf()),
            ..Settings::default()
        };
        let cases = real::cases(&s).unwrap();
        assert_eq!(cases.len(), 24);
        assert_eq!(cases[0].slug, "tuning-all-24-80");
        assert_eq!(cases[11].slug, "tuning-short-56-100");
        assert_eq!(cases[12].slug, "held-out-all-24-80");
        assert_eq!(cases[23].slug, "held-out-short-56-100");
        // The fixture's day, minutes 1 to 1440, in halves.
        assert!(
            cases[0].title.contains("minutes 1..720 (tuning)"),
            "{}",
            cases[0].title
        );
        assert!(
            cases[12].title.contains("minutes 721..1440 (held-out)"),
            "{}",
            cases[12].title
        );
        assert_ne!(cases[0].workload.workload, cases[12].workload.workload);
        // The imported halves are written once and found again.
        assert_eq!(real::cases(&s).unwrap(), cases);
        let ran = run::<Os>(cases).unwrap();
        let table = real::table(&ran);
        let n = real::POLICIES.len();
        assert_eq!(table.rows.len(), 24 * n);
        let row = |i: usize| &table.rows[i];
        assert_eq!(row(0)[..2], ["tuning-all-24-80".to_string(), "cfs".into()]);
        assert_eq!(
            row(12 * n)[..2],
            ["held-out-all-24-80".to_string(), "cfs".into()]
        );
        // Per case, cfs takes none of srpt's gain and srpt all of it, or
        // neither has a share where srpt gains nothing (as on the
        // fixture's few invocations, which hardly queue).
        for case in table.rows.chunks(n) {
            assert_eq!((case[0][1].as_str(), case[0][3].as_str()), ("cfs", "+0.0%"));
            assert_eq!(case[n - 1][1], "srpt *");
            let shares = (case[0][4].as_str(), case[n - 1][4].as_str());
            assert!(matches!(shares, ("0%", "100%") | ("-", "-")), "{case:?}");
        }
        // A note per part, naming every policy but cfs and srpt.
        for (note, part) in table.notes[1..].iter().zip(["tuning", "held-out"]) {
            assert!(
                note.starts_with(&format!("{part}, least of_srpt over its 12 cases: fifo ")),
                "{note}"
            );
            assert!(
                note.contains(", gittins ") && !note.contains(", srpt "),
                "{note}"
            );
        }
    }

    #[test]
    fn colliding_or_unknown_cases_are_refused_before_any_run() {
        let s = Settings {
            invocations: Some(10),
            seed: 1,
            ..Settings::default()
        };
        let cases = io::cases(&s);
        let mut twice = cases.clone();
        twice[1].slug = twice[0].slug.clone();
        let err = run::<Os>(twice).err().unwrap().to_string();
        assert!(err.contains("two cases have the slug"), "{err}");
        let mut labels = cases.clone();
        labels[0].variants[1].label = "cfs".into();
        let err = check(&labels[0]).unwrap_err().to_string();
        assert!(err.contains("two variants are labelled `cfs`"), "{err}");
        let mut unknown = cases.clone();
        unknown[0].variants[0].policy = "nope".into();
        let err = format!("{:#}", check(&unknown[0]).unwrap_err());
        assert!(err.contains("unknown policy `nope`"), "{err}");
        let mut bad = cases.clone();
        bad[0].slug = "../escaped".into();
        let err = run::<Os>(bad).err().unwrap().to_string();
        assert!(err.contains("case slug `../escaped`"), "{err}");
        let mut tuned = cases.clone();
        tuned[0].variants[1].tuning.hybrid.fifo_share = -3.0;
        let err = format!("{:#}", check(&tuned[0]).unwrap_err());
        assert!(err.contains("fifo_share"), "{err}");
        let mut kernel = cases.clone();
        kernel[1].kernel.base_slice_us = Some(u64::MAX / 1000);
        let err = format!("{:#}", check(&kernel[1]).unwrap_err());
        assert!(
            err.contains("`base_slice_us` (--base-slice-us) must be 1 to 1000000"),
            "{err}"
        );
        let err = run::<Os>(Vec::new()).err().unwrap().to_string();
        assert!(err.contains("no cases"), "{err}");
    }
}
