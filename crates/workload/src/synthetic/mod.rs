//! Synthetic workloads: the built-ins a `--workload` name selects ([`Spec`]), and
//! a streaming [`Generator`] that turns one into invocations.
//!
//! Arrivals are a Poisson process whose rate makes the offered load what the
//! caller asks: λ = load × cores / E[CPU demand] (load = offered CPU demand /
//! core-time; I/O waits are not demand). Everything random comes from
//! one PCG generator seeded by [`Params::seed`], so a seed and a spec fix the
//! whole sequence.
//!
//! The built-ins:
//! - `huawei`, `azure`: the ALPS paper's 50 deployments and group mixes ([`alps`]);
//! - `lognormal`: the Azure 2019 duration fit, clamped like invitro;
//! - `exponential`, `fixed`, `bimodal` (+ SledgeScale's `bimodal-high` and
//!   `bimodal-extreme` presets): the classic scheduling distributions;
//! - `mixed-io`: the ALPS I/O study's CPU-bound and I/O-bound classes ([`mixed_io`]).

pub mod alps;
mod dist;
pub mod mixed_io;
mod spec;

pub use dist::{AZURE_LN_MU, AZURE_LN_SIGMA, LOGNORMAL_MAX, LOGNORMAL_MIN};
pub use spec::{
    BIMODAL_EXTREME, BIMODAL_HIGH, DEFAULT_EXPONENTIAL_MEAN, DEFAULT_FIXED_CPU, MAX_DURATION,
    MAX_LOGNORMAL_SCALE, MIN_LOGNORMAL_SCALE, Spec,
};

use crate::{Error, Result};
use dist::ClampedLognormal;
use faasched_model::{
    Function, Functions, Group, Invocation, Nanos, Phase, Phases, SEC, TIME_LIMIT, Time, US,
};
use rand::{Rng, SeedableRng};
use rand_distr::Exp1;
use rand_pcg::Pcg64Mcg;
use std::iter::FusedIterator;

/// Memory billed per invocation of the single-distribution workloads
/// (`lognormal`, `exponential`, `fixed`, `bimodal`), MB: AWS Lambda's smallest
/// common size. The ALPS and mixed-io tables carry their own.
pub const SYNTHETIC_MEMORY_MB: u32 = 128;

/// Everything that determines a synthetic workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// What each invocation needs.
    pub spec: Spec,
    /// Cores the load is relative to; at least 1.
    pub cores: usize,
    /// Offered CPU demand per core-time: finite and positive; above 1 is overload.
    pub load: f64,
    /// How many invocations to generate; at least 1.
    pub invocations: u64,
    /// Seed of the only random generator used.
    pub seed: u64,
}

/// A streaming source of invocations: ids `0..invocations` in arrival order.
///
/// Memory is O(number of functions) whatever the length; per invocation it
/// allocates only the phase list and clones the interned [`Function`] (an `Arc`).
///
/// The first invocation arrives one inter-arrival gap after time 0, not at 0: a
/// Poisson process observed from 0 has its first event after an exponential wait,
/// so the window `[0, last arrival]` holds the offered load exactly.
#[derive(Clone, Debug)]
pub struct Generator {
    rng: Pcg64Mcg,
    functions: Functions,
    draw: Draw,
    rate_per_s: f64,
    /// Scale of the exponential whose floor is a gap; see [`gap_scale`].
    gap_scale: f64,
    now: Time,
    next_id: u64,
    invocations: u64,
    /// The load asked for, for the error of an invocation past the time
    /// limit.
    load: f64,
}

impl Generator {
    /// A generator for `params`, with every function interned up front.
    ///
    /// Errors name the parameter: `cores` < 1, `load` not finite and positive (or
    /// so low the workload would outlast the ns clock), `invocations` < 1, or a
    /// spec whose fields are out of the ranges [`Spec::parse`] enforces.
    pub fn new(params: &Params) -> Result<Generator> {
        let Params {
            ref spec,
            cores,
            load,
            invocations,
            seed,
        } = *params;
        if cores < 1 {
            return Err(Error::invalid("cores", "must be at least 1, got 0"));
        }
        if !(load.is_finite() && load > 0.0) {
            return Err(Error::invalid(
                "load",
                format!("must be a finite number above 0, got {load:?}"),
            ));
        }
        if invocations < 1 {
            return Err(Error::invalid("invocations", "must be at least 1, got 0"));
        }
        spec.validate()?;
        let mean_cpu = spec.mean_cpu_exact();
        let mean_gap = mean_cpu / (load * cores as f64);
        // Never NaN (mean_cpu ≥ 1 ns, load finite and > 0, cores ≥ 1), but may be infinite.
        let span = mean_gap * invocations as f64;
        // A load so low that the arrivals would run past the latest instant a
        // workload may reach is refused rather than overflowing the clock.
        if span > TIME_LIMIT as f64 {
            return Err(past_time_limit(format!(
                "{invocations} arrivals at load {load:?} on {cores} cores would span about \
                 {:.3e} s,",
                span / SEC as f64
            )));
        }
        let mut functions = Functions::new();
        let draw = Draw::new(spec, &mut functions);
        Ok(Generator {
            rng: Pcg64Mcg::seed_from_u64(seed),
            functions,
            draw,
            rate_per_s: SEC as f64 / mean_gap,
            gap_scale: gap_scale(mean_gap),
            now: 0,
            next_id: 0,
            invocations,
            load,
        })
    }

    /// Every function the workload can invoke, interned before the first
    /// invocation (ids are dense, in table order).
    pub fn functions(&self) -> &Functions {
        &self.functions
    }

    /// The Poisson arrival rate λ = load × cores / mean CPU demand, per second.
    pub fn arrival_rate_per_s(&self) -> f64 {
        self.rate_per_s
    }
}

/// The scale θ for which `⌊E·θ⌋`, E ~ Exp(1), has mean exactly `mean_gap` ns:
/// θ = 1 / ln(1 + 1/mean_gap).
///
/// `⌊E·θ⌋` is geometric — the integer-ns version of the exponential gap — and,
/// unlike rounding an exponential of mean `mean_gap`, it keeps the arrival rate
/// exact even when gaps are a few ns (rounding biases the mean by about
/// −1/(24·mean_gap²) relative, −15% at half a ns).
fn gap_scale(mean_gap: f64) -> f64 {
    1.0 / (1.0 / mean_gap).ln_1p()
}

/// The error of a workload that `what` past [`TIME_LIMIT`], the expected
/// span ([`Generator::new`]) or one drawn invocation.
fn past_time_limit(what: String) -> Error {
    Error::invalid(
        "load and invocations",
        format!(
            "{what} past the latest instant a workload may reach (about {} days): ask for \
             fewer invocations or a higher load",
            TIME_LIMIT / (86_400 * SEC)
        ),
    )
}

/// Invocations in arrival order; an error (and nothing after it) for one
/// that would end past [`TIME_LIMIT`]: the check in [`Generator::new`] is
/// of the expected span, and Poisson gaps may run past it.
impl Iterator for Generator {
    type Item = Result<Invocation>;

    fn next(&mut self) -> Option<Result<Invocation>> {
        if self.next_id == self.invocations {
            return None;
        }
        let e: f64 = self.rng.sample(Exp1);
        self.now = self.now.saturating_add((e * self.gap_scale) as Nanos);
        let (function, mut phases, memory_mb) = self.draw.sample(&mut self.rng);
        for p in &mut phases {
            let (Phase::Cpu(d) | Phase::Io(d)) = p;
            *d = whole_us(*d).max(US);
        }
        let id = self.next_id;
        self.next_id += 1;
        let inv = Invocation {
            id,
            function,
            arrival: whole_us(self.now),
            phases,
            memory_mb,
            deadline: None,
        };
        // An invocation has at most three phases, each at most MAX_DURATION
        // (whole µs, rounded): one arriving a week before the limit cannot
        // end past it, and the sum over its phases is spared (0.7% of
        // `bench sim`'s (b)).
        debug_assert!(
            inv.phases.len() <= 3
                && inv
                    .phases
                    .iter()
                    .all(|&(Phase::Cpu(d) | Phase::Io(d))| d <= MAX_DURATION + US),
            "{inv:?}"
        );
        if inv.arrival > TIME_LIMIT - 7 * MAX_DURATION && !inv.within_time_limit() {
            self.next_id = self.invocations; // nothing after an error
            return Some(Err(past_time_limit(format!(
                "invocation {id} at load {:?} would arrive at {:.3e} s and end",
                self.load,
                inv.arrival as f64 / SEC as f64
            ))));
        }
        Some(Ok(inv))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.invocations - self.next_id;
        (
            usize::try_from(left).unwrap_or(usize::MAX),
            usize::try_from(left).ok(),
        )
    }
}

impl ExactSizeIterator for Generator {}

/// `ns` rounded to the nearest whole µs. Generators emit whole microseconds, the
/// workload CSV's resolution, so a workload written to a file and read back is
/// the built-in exactly. Rounding is monotone, so arrivals stay sorted; the clock
/// underneath keeps full ns precision, so no error accumulates.
fn whole_us(ns: Nanos) -> Nanos {
    ns.saturating_add(US / 2) / US * US
}

impl FusedIterator for Generator {}

/// A deployment ready to draw from: its interned function and demand range.
#[derive(Clone, Debug)]
struct Ranged {
    function: Function,
    lo: Nanos,
    hi: Nanos,
    memory_mb: u32,
}

/// Per-invocation sampling state of each built-in, functions already interned.
#[derive(Clone, Debug)]
enum Draw {
    Alps {
        /// Cumulative group mix in tenths of a percent; the last is 1000.
        cumulative: [u32; 4],
        groups: [Vec<Ranged>; 4],
    },
    Lognormal {
        function: Function,
        dist: ClampedLognormal,
    },
    Exponential {
        function: Function,
        mean: f64,
    },
    Fixed {
        function: Function,
        cpu: Nanos,
    },
    Bimodal {
        short: Function,
        long: Function,
        short_fraction: f64,
        short_cpu: Nanos,
        long_cpu: Nanos,
    },
    MixedIo {
        classes: Vec<(Function, &'static mixed_io::Class)>,
    },
}

impl Draw {
    fn new(spec: &Spec, functions: &mut Functions) -> Draw {
        match *spec {
            Spec::Huawei => Self::alps(&alps::HUAWEI_MIX, functions),
            Spec::Azure => Self::alps(&alps::AZURE_MIX, functions),
            Spec::Lognormal { scale } => Draw::Lognormal {
                function: functions.intern("lognormal"),
                dist: ClampedLognormal::azure(scale),
            },
            Spec::Exponential { mean } => Draw::Exponential {
                function: functions.intern("exponential"),
                mean: mean as f64,
            },
            Spec::Fixed { cpu } => Draw::Fixed {
                function: functions.intern("fixed"),
                cpu,
            },
            Spec::Bimodal {
                short_fraction,
                short,
                long,
            } => Draw::Bimodal {
                short: functions.intern("short"),
                long: functions.intern("long"),
                short_fraction,
                short_cpu: short,
                long_cpu: long,
            },
            Spec::MixedIo => Draw::MixedIo {
                classes: mixed_io::CLASSES
                    .iter()
                    .map(|c| (functions.intern(c.name), c))
                    .collect(),
            },
        }
    }

    fn alps(mix: &alps::Mix, functions: &mut Functions) -> Draw {
        let mut groups: [Vec<Ranged>; 4] = Default::default();
        for d in &alps::DEPLOYMENTS {
            groups[d.group.index()].push(Ranged {
                function: functions.intern(d.name),
                lo: d.lo,
                hi: d.hi,
                memory_mb: d.memory_mb(),
            });
        }
        let mut cumulative = [0; 4];
        let mut sum = 0;
        for g in Group::ALL {
            sum += mix[g.index()];
            cumulative[g.index()] = sum;
        }
        Draw::Alps { cumulative, groups }
    }

    /// One invocation's function, phases and memory.
    fn sample(&self, rng: &mut Pcg64Mcg) -> (Function, Phases, u32) {
        let cpu = |function: &Function, d: Nanos| {
            (
                function.clone(),
                Phases::from_buf([Phase::Cpu(d)]),
                SYNTHETIC_MEMORY_MB,
            )
        };
        match self {
            Draw::Alps { cumulative, groups } => {
                // ALPS §7.1: a group by the trace's mix, a deployment of that group
                // (uniformly: the paper gives no per-deployment popularity), then a
                // demand uniform in the deployment's range.
                let u = rng.random_range(0..1000);
                let g = cumulative.iter().position(|&c| u < c).unwrap_or(3);
                let group = &groups[g];
                let d = &group[rng.random_range(0..group.len())];
                (
                    d.function.clone(),
                    Phases::from_buf([Phase::Cpu(rng.random_range(d.lo..=d.hi))]),
                    d.memory_mb,
                )
            }
            Draw::Lognormal { function, dist } => cpu(function, dist.sample(rng)),
            Draw::Exponential { function, mean } => {
                let e: f64 = rng.sample(Exp1);
                cpu(function, ((e * mean).round() as Nanos).max(1))
            }
            Draw::Fixed { function, cpu: d } => cpu(function, *d),
            Draw::Bimodal {
                short,
                long,
                short_fraction,
                short_cpu,
                long_cpu,
            } => {
                if rng.random::<f64>() < *short_fraction {
                    cpu(short, *short_cpu)
                } else {
                    cpu(long, *long_cpu)
                }
            }
            Draw::MixedIo { classes } => {
                let (function, class) = &classes[rng.random_range(0..classes.len())];
                (
                    function.clone(),
                    Phases::from_slice(class.phases),
                    class.memory_mb,
                )
            }
        }
    }
}

#[cfg(test)]
mod tests;
