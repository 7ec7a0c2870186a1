//! SledgeScale's workloads (sledgescale-sec25 Table 3) as built-ins, by name,
//! each with its per-function profile and capacity.

use super::profile::{FunctionProfile, Profile};
use super::work::Work;
use crate::{Error, Result};
use faasched_model::{Functions, US};

/// SledgeScale's default relative deadline: "10x the execution time" (§4).
pub const DEFAULT_DEADLINE_FACTOR: f64 = 10.0;

/// One function of a workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FunctionMix {
    /// Its name, as requests and deadline overrides spell it.
    pub name: &'static str,
    /// Its share of the requests, in (0, 1]; a workload's shares sum to 1.
    pub share: f64,
    /// The work its requests need.
    pub work: Work,
}

/// A node workload: which functions requests invoke, how often, and how
/// much work each needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    /// Its name, as `--workload` spells it.
    pub name: &'static str,
    /// One line on where it comes from.
    pub summary: &'static str,
    /// Its functions, in the order their ids are given (the first is
    /// `FunctionId(0)`).
    pub functions: &'static [FunctionMix],
    /// Relative deadline over a request's own work, unless overridden.
    pub deadline_factor: f64,
}

/// The built-ins, in the order [`Workload::names`] lists them.
const BUILTINS: [Workload; 7] = [
    Workload {
        name: "fixed",
        summary: "every request 10 µs",
        functions: &[FunctionMix {
            name: "fixed",
            share: 1.0,
            work: Work::Fixed(10 * US),
        }],
        deadline_factor: DEFAULT_DEADLINE_FACTOR,
    },
    Workload {
        name: "bimodal-high",
        summary: "image-resize 26 µs / image-classify 2,070 µs, 50/50",
        functions: &[
            FunctionMix {
                name: "image-resize",
                share: 0.5,
                work: Work::Fixed(26 * US),
            },
            FunctionMix {
                name: "image-classify",
                share: 0.5,
                work: Work::Fixed(2_070 * US),
            },
        ],
        deadline_factor: DEFAULT_DEADLINE_FACTOR,
    },
    Workload {
        name: "bimodal-extreme",
        summary: "short 10 µs / long 10 ms, 99.5/0.5",
        functions: &[
            FunctionMix {
                name: "short",
                share: 0.995,
                work: Work::Fixed(10 * US),
            },
            FunctionMix {
                name: "long",
                share: 0.005,
                work: Work::Fixed(10_000 * US),
            },
        ],
        deadline_factor: DEFAULT_DEADLINE_FACTOR,
    },
    Workload {
        name: "sd-vbs",
        summary: "sift 113 µs / segmentation 1,100 µs / classification 2,070 µs, 90/9/1",
        functions: &[
            FunctionMix {
                name: "sift",
                share: 0.90,
                work: Work::Fixed(113 * US),
            },
            FunctionMix {
                name: "segmentation",
                share: 0.09,
                work: Work::Fixed(1_100 * US),
            },
            FunctionMix {
                name: "classification",
                share: 0.01,
                work: Work::Fixed(2_070 * US),
            },
        ],
        deadline_factor: DEFAULT_DEADLINE_FACTOR,
    },
    Workload {
        name: "exponential",
        summary: "exponential, mean 100 µs",
        functions: &[FunctionMix {
            name: "exponential",
            share: 1.0,
            work: Work::Exponential { mean: 100 * US },
        }],
        deadline_factor: DEFAULT_DEADLINE_FACTOR,
    },
    Workload {
        name: "lognormal",
        summary: "log-normal μ = −0.38, σ = 2.36 in ms (median 0.684 ms), clamped to [10 µs, 1 s]",
        functions: &[FunctionMix {
            name: "lognormal",
            share: 1.0,
            work: Work::SLEDGESCALE_LOGNORMAL,
        }],
        deadline_factor: DEFAULT_DEADLINE_FACTOR,
    },
    // Fig. 1's colocation on one core: 16 streams of fib(1) sent at 5,000
    // requests a second in all, 16 of fib(32) at 48. The paper gives the
    // rates, not the work: short 5 µs stands for fib(1) in a sandbox, long
    // 15 ms for fib(32) (about 7 million calls), so the rates load a core to
    // 74.5%.
    Workload {
        name: "colocated",
        summary: "short 5 µs / long 15 ms at 5,000 : 48 (Fig. 1's fib(1) / fib(32) streams)",
        functions: &[
            FunctionMix {
                name: "short",
                share: COLOCATED_SHORT_RATE / (COLOCATED_SHORT_RATE + COLOCATED_LONG_RATE),
                work: Work::Fixed(5 * US),
            },
            FunctionMix {
                name: "long",
                share: COLOCATED_LONG_RATE / (COLOCATED_SHORT_RATE + COLOCATED_LONG_RATE),
                work: Work::Fixed(15_000 * US),
            },
        ],
        deadline_factor: DEFAULT_DEADLINE_FACTOR,
    },
];

/// Fig. 1's sending rate of the short requests, per second.
const COLOCATED_SHORT_RATE: f64 = 5_000.0;
/// Fig. 1's sending rate of the long requests, per second.
const COLOCATED_LONG_RATE: f64 = 48.0;

impl Workload {
    /// The built-in called `name`; the error lists the names there are.
    pub fn builtin(name: &str) -> Result<Workload> {
        BUILTINS
            .iter()
            .find(|w| w.name == name)
            .copied()
            .ok_or_else(|| {
                Error::invalid(
                    "node workload",
                    format!(
                        "no built-in called `{name}`; there are {}",
                        Workload::names().collect::<Vec<_>>().join(", ")
                    ),
                )
            })
    }

    /// Every built-in.
    pub fn builtins() -> &'static [Workload] {
        &BUILTINS
    }

    /// The built-ins' names.
    pub fn names() -> impl Iterator<Item = &'static str> {
        BUILTINS.iter().map(|w| w.name)
    }

    /// Checks what a workload built by hand may get wrong: no functions, a
    /// share not in (0, 1], shares not summing to 1, a function named twice
    /// or a deadline factor not finite and above 0. The built-ins pass.
    pub fn validate(&self) -> Result<()> {
        let bad = |why: String| Error::invalid("node workload", format!("`{}`: {why}", self.name));
        if self.functions.is_empty() {
            return Err(bad("has no functions".into()));
        }
        for (i, f) in self.functions.iter().enumerate() {
            if !(f.share > 0.0 && f.share <= 1.0) {
                return Err(bad(format!(
                    "`{}` has share {:?}, not in (0, 1]",
                    f.name, f.share
                )));
            }
            if self.functions[..i].iter().any(|g| g.name == f.name) {
                return Err(bad(format!("`{}` is named twice", f.name)));
            }
        }
        let total: f64 = self.functions.iter().map(|f| f.share).sum();
        if (total - 1.0).abs() > 1e-9 {
            return Err(bad(format!("shares sum to {total}, not 1")));
        }
        if !(self.deadline_factor.is_finite() && self.deadline_factor > 0.0) {
            return Err(bad(format!(
                "deadline factor {:?} is not finite and above 0",
                self.deadline_factor
            )));
        }
        Ok(())
    }

    /// Mean work per request, ns: Σ share × mean work.
    pub fn mean_work(&self) -> f64 {
        self.functions.iter().map(|f| f.share * f.work.mean()).sum()
    }

    /// Requests per second `workers` workers can serve at most: workers /
    /// mean work (dispatching and other overheads left out).
    pub fn capacity(&self, workers: u32) -> f64 {
        self.profile().capacity(workers)
    }

    /// Per function: mean work, share of requests, share of work.
    pub fn profile(&self) -> Profile {
        let total = self.mean_work();
        Profile::new(
            self.functions
                .iter()
                .map(|f| {
                    let mean = f.work.mean();
                    FunctionProfile {
                        name: f.name.to_string(),
                        mean_work: mean,
                        request_share: f.share,
                        work_share: f.share * mean / total,
                    }
                })
                .collect(),
        )
    }

    /// Its functions interned in order: `FunctionId(i)` is `functions[i]`.
    pub fn function_table(&self) -> Functions {
        let mut table = Functions::new();
        for f in self.functions {
            table.intern(f.name);
        }
        table
    }
}
