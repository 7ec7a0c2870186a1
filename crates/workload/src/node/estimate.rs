//! The estimate a workload gives with each request: its work exactly
//! (SledgeScale's oracle for synthetic workloads), or its work with a
//! seeded relative error.

use crate::{Error, Result};
use faasched_model::Nanos;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::fmt;

/// Mixed into the seed of the estimates' generator, so that it never runs
/// in step with the one drawing arrivals and work.
const ESTIMATE_STREAM: u64 = 0x6a09_e667_f3bc_c908;

/// The generator of a stream's noisy estimates under `seed`: its own, so a
/// seed gives the same arrivals, functions and work whatever the estimate
/// error, and runs that differ only in it compare like with like.
pub(super) fn estimate_rng(seed: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed ^ ESTIMATE_STREAM)
}

/// How a request's estimate relates to its work.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Estimate {
    /// The estimate is the work.
    #[default]
    Exact,
    /// The estimate is work × a factor uniform in [1 − error, 1 + error),
    /// drawn per request, rounded to whole ns and at least 1 ns: unbiased,
    /// off by at most `error` of the work. Build with [`Estimate::noisy`].
    Noisy {
        /// The largest relative error, in [0, 1].
        error: f64,
    },
}

impl Estimate {
    /// Estimates off by up to `error` × work; `error` must be in [0, 1]
    /// (beyond 1 an estimate could be negative). 0 is [`Estimate::Exact`].
    pub fn noisy(error: f64) -> Result<Estimate> {
        if !(0.0..=1.0).contains(&error) {
            return Err(Error::invalid(
                "estimate error",
                format!("must be a number in [0, 1], got {error:?}"),
            ));
        }
        Ok(if error == 0.0 {
            Estimate::Exact
        } else {
            Estimate::Noisy { error }
        })
    }

    /// The largest relative error: 0 when exact.
    pub fn error(self) -> f64 {
        match self {
            Estimate::Exact => 0.0,
            Estimate::Noisy { error } => error,
        }
    }

    /// The estimate of `work`; draws from `rng` only when noisy.
    pub fn of<R: Rng + ?Sized>(self, work: Nanos, rng: &mut R) -> Nanos {
        match self {
            Estimate::Exact => work,
            Estimate::Noisy { error } => {
                let factor = 1.0 + error * (2.0 * rng.random::<f64>() - 1.0);
                ((work as f64 * factor).round() as Nanos).max(1)
            }
        }
    }
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Estimate::Exact => f.write_str("exact"),
            Estimate::Noisy { error } => write!(f, "±{error} of the work, uniform"),
        }
    }
}
