//! The work a request of one function needs: a fixed amount, or a draw from
//! an exponential or a clamped log-normal, each with its mean.

use faasched_model::{MS, Nanos, SEC, US};
use rand::Rng;
use rand_distr::{Exp1, StandardNormal};

/// μ of the log-normal workload, ln(ms): the Azure 2019 fit's μ = −0.38
/// (ln s) with every duration scaled down 1000× (SledgeScale §4, Table 3),
/// so its median is e^−0.38 ms ≈ 0.684 ms.
pub const LOGNORMAL_MU_LN_MS: f64 = -0.38;
/// σ of the log-normal workload (the Azure 2019 fit's, unchanged by scaling).
pub const LOGNORMAL_SIGMA: f64 = 2.36;
/// Shortest work the log-normal workload emits: 10 µs. SledgeScale says its
/// "short requests can be as brief as 10 microseconds" (§4.3), while the
/// untruncated fit puts 3.7% of requests below that (p1 = 2.8 µs): a floor
/// of 10 µs is the reading that matches the paper.
pub const LOGNORMAL_FLOOR: Nanos = 10 * US;
/// Longest work the log-normal workload emits: 1 s. The paper states no
/// cap, yet one is needed: the fit's mean (11.08 ms) is set by draws of
/// tens of seconds, longer than a 20 s run itself. 1 s clips only the
/// slowest 0.1% (it sits at the fit's p99.9, 1.005 s) and keeps the paper's
/// "99th percentile ... exceeds 140 milliseconds" (p99 = 165.7 ms) intact;
/// the clamped mean is ≈ 9.50 ms.
pub const LOGNORMAL_CAP: Nanos = SEC;

/// How the work of one function's requests is distributed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Work {
    /// Always this much.
    Fixed(Nanos),
    /// Exponential with this mean, rounded to whole ns, at least 1 ns.
    Exponential {
        /// The mean.
        mean: Nanos,
    },
    /// Log-normal, clamped: a draw below `floor` is `floor`, one above `cap`
    /// is `cap` (not redrawn, so the median stays e^μ and the mean has a
    /// closed form), rounded to whole ns.
    Lognormal {
        /// μ of ln(work in ms).
        mu_ln_ms: f64,
        /// σ of ln(work).
        sigma: f64,
        /// The least work.
        floor: Nanos,
        /// The most work.
        cap: Nanos,
    },
}

impl Work {
    /// The log-normal workload's distribution: SledgeScale's scaled Azure
    /// fit between [`LOGNORMAL_FLOOR`] and [`LOGNORMAL_CAP`].
    pub const SLEDGESCALE_LOGNORMAL: Work = Work::Lognormal {
        mu_ln_ms: LOGNORMAL_MU_LN_MS,
        sigma: LOGNORMAL_SIGMA,
        floor: LOGNORMAL_FLOOR,
        cap: LOGNORMAL_CAP,
    };

    /// The mean work, ns: exact for `Fixed` and `Lognormal`; for
    /// `Exponential` the mean before rounding (rounding to the nearest ns
    /// shifts it by far less than 1 ns).
    pub fn mean(&self) -> f64 {
        match *self {
            Work::Fixed(w) => w as f64,
            Work::Exponential { mean } => mean as f64,
            Work::Lognormal {
                mu_ln_ms,
                sigma,
                floor,
                cap,
            } => clamped_lognormal_mean(mu_ln_ns(mu_ln_ms), sigma, floor as f64, cap as f64),
        }
    }

    /// The median work, ns: what splits a one-function workload in two
    /// halves of its requests (DARC's split of the exponential and the
    /// log-normal at the median). Exponential: mean × ln 2 (unrounded);
    /// log-normal: e^μ clamped to [floor, cap].
    pub fn median(&self) -> f64 {
        match *self {
            Work::Fixed(w) => w as f64,
            Work::Exponential { mean } => mean as f64 * std::f64::consts::LN_2,
            Work::Lognormal {
                mu_ln_ms,
                floor,
                cap,
                ..
            } => mu_ln_ns(mu_ln_ms).exp().clamp(floor as f64, cap as f64),
        }
    }

    /// One request's work, at least 1 ns.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Nanos {
        match *self {
            Work::Fixed(w) => w,
            Work::Exponential { mean } => {
                let e: f64 = rng.sample(Exp1);
                ((e * mean as f64).round() as Nanos).max(1)
            }
            Work::Lognormal {
                mu_ln_ms,
                sigma,
                floor,
                cap,
            } => {
                let z: f64 = rng.sample(StandardNormal);
                let x = (mu_ln_ns(mu_ln_ms) + sigma * z)
                    .exp()
                    .clamp(floor as f64, cap as f64);
                (x.round() as Nanos).max(1)
            }
        }
    }
}

/// μ of ln(work in ns) from μ of ln(work in ms).
fn mu_ln_ns(mu_ln_ms: f64) -> f64 {
    mu_ln_ms + (MS as f64).ln()
}

/// E[clamp(e^(μ+σZ), lo, hi)] for Z standard normal, by composite Simpson in
/// z: below α = (ln lo − μ)/σ the value is `lo`, above β = (ln hi − μ)/σ it
/// is `hi`, between them e^(μ+σz); each piece is smooth, so splitting at α
/// and β keeps Simpson's error far below the 1e-9 relative this needs.
/// Mass beyond |z| = 12 (below 1e-32) is left out.
fn clamped_lognormal_mean(mu: f64, sigma: f64, lo: f64, hi: f64) -> f64 {
    const Z: f64 = 12.0;
    let alpha = ((lo.ln() - mu) / sigma).clamp(-Z, Z);
    let beta = ((hi.ln() - mu) / sigma).clamp(alpha, Z);
    let phi = |z: f64| (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
    lo * simpson(phi, -Z, alpha)
        + simpson(|z| (mu + sigma * z).exp() * phi(z), alpha, beta)
        + hi * simpson(phi, beta, Z)
}

/// ∫ f over [a, b] by composite Simpson with 20,000 panels.
fn simpson(f: impl Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    const N: usize = 20_000; // even
    if b <= a {
        return 0.0;
    }
    let h = (b - a) / N as f64;
    let inner: f64 = (1..N)
        .map(|i| f(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 })
        .sum();
    (f(a) + inner + f(b)) * h / 3.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unclamped_lognormal_mean_is_the_closed_form() {
        // Bounds far outside the mass: the mean is e^(μ+σ²/2).
        let mu = mu_ln_ns(LOGNORMAL_MU_LN_MS);
        let got = clamped_lognormal_mean(mu, LOGNORMAL_SIGMA, 1e-30, 1e60);
        let want = (mu + LOGNORMAL_SIGMA * LOGNORMAL_SIGMA / 2.0).exp();
        assert!(((got - want) / want).abs() < 1e-9, "{got} vs {want}");
        // The note's uncapped mean: 11.08 ms.
        assert!((want / MS as f64 - 11.08).abs() < 0.01, "{want}");
    }

    #[test]
    fn sledgescale_lognormal_mean_matches_the_note() {
        // Capped at 1 s the mean is ≈ 9.50 ms (node-level note, section 6).
        let mean = Work::SLEDGESCALE_LOGNORMAL.mean() / MS as f64;
        assert!((mean - 9.50).abs() < 0.01, "{mean}");
    }

    #[test]
    fn medians_are_the_papers() {
        // Table 3's percentiles: exponential median 69.3 µs, log-normal 684 µs.
        let exp = Work::Exponential { mean: 100 * US }.median();
        assert!((exp / US as f64 - 69.31).abs() < 0.01, "{exp}");
        let ln = Work::SLEDGESCALE_LOGNORMAL.median();
        assert!((ln / US as f64 - 683.9).abs() < 0.1, "{ln}");
        assert_eq!(Work::Fixed(7).median(), 7.0);
    }

    #[test]
    fn degenerate_clamps_give_the_bound() {
        let mu = mu_ln_ns(LOGNORMAL_MU_LN_MS);
        let at = 5_000.0;
        let got = clamped_lognormal_mean(mu, LOGNORMAL_SIGMA, at, at);
        assert!((got - at).abs() < 1e-6, "{got}");
    }
}
