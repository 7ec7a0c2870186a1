//! The continuous distributions behind the synthetic workloads, with their exact
//! means: the clamped log-normal of the Azure 2019 fit, and the normal CDF it needs.

use faasched_model::{MS, Nanos, SEC};
use rand::Rng;
use rand_distr::StandardNormal;

/// μ of the Azure 2019 execution-time fit, ln(seconds): Shahrad et al., "Serverless
/// in the Wild" (ATC'20), log-normal MLE fit to per-function average durations.
pub const AZURE_LN_MU: f64 = -0.38;
/// σ of the same fit, ln(seconds).
pub const AZURE_LN_SIGMA: f64 = 2.36;
/// Shortest demand the log-normal workload emits at scale 1: 1 ms, invitro's
/// `MinExecTimeMilli` ("min. billing unit of AWS").
pub const LOGNORMAL_MIN: Nanos = MS;
/// Longest demand the log-normal workload emits at scale 1: 60 s, invitro's
/// `MaxExecTimeMilli` ("avg. p96 from Wild"); ATC'20 reports 96% of functions
/// average under 60 s. Without it the mean would be e^(μ+σ²/2) ≈ 11 s, set by
/// the rare multi-minute draws.
pub const LOGNORMAL_MAX: Nanos = 60 * SEC;

/// A log-normal CPU demand clamped to `[lo, hi]`, like invitro's
/// `min(Max, max(Min, x))`: draws outside the bounds land *on* them (they are not
/// redrawn), so the median stays e^μ and the mean has a closed form.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ClampedLognormal {
    /// μ of ln(demand in ns).
    mu: f64,
    /// σ of ln(demand).
    sigma: f64,
    /// Lower clamp, ns.
    lo: f64,
    /// Upper clamp, ns.
    hi: f64,
}

impl ClampedLognormal {
    /// The Azure 2019 fit with every duration (the clamps too) multiplied by `scale`.
    pub(crate) fn azure(scale: f64) -> Self {
        let ns = SEC as f64 * scale;
        ClampedLognormal {
            mu: AZURE_LN_MU + ns.ln(),
            sigma: AZURE_LN_SIGMA,
            lo: LOGNORMAL_MIN as f64 * scale,
            hi: LOGNORMAL_MAX as f64 * scale,
        }
    }

    /// Exact mean in ns:
    /// `lo·Φ(α) + e^(μ+σ²/2)·[Φ(β−σ) − Φ(α−σ)] + hi·(1 − Φ(β))`,
    /// with `α = (ln lo − μ)/σ`, `β = (ln hi − μ)/σ`: the clamped mass at each
    /// bound plus the partial expectation of the log-normal between them.
    pub(crate) fn mean(&self) -> f64 {
        let (mu, s) = (self.mu, self.sigma);
        let a = (self.lo.ln() - mu) / s;
        let b = (self.hi.ln() - mu) / s;
        self.lo * normal_cdf(a)
            + (mu + s * s / 2.0).exp() * (normal_cdf(b - s) - normal_cdf(a - s))
            + self.hi * normal_cdf(-b)
    }

    /// One demand in ns, at least 1.
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Nanos {
        let z: f64 = rng.sample(StandardNormal);
        let x = (self.mu + self.sigma * z).exp().clamp(self.lo, self.hi);
        (x.round() as Nanos).max(1)
    }
}

/// The standard normal CDF Φ(x), absolute error below 1e-7.
pub(crate) fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// The complementary error function, by the Chebyshev fit of Numerical Recipes
/// (2nd ed., §6.2, `erfcc`): fractional error below 1.2e-7 everywhere.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    #[test]
    fn normal_cdf_matches_reference_values() {
        // Reference values of Φ to 16 digits (e.g. scipy.stats.norm.cdf).
        let cases = [
            (0.0, 0.5),
            (1.0, 0.841_344_746_068_542_9),
            (-1.0, 0.158_655_253_931_457_05),
            (1.959_963_984_540_054, 0.975),
            (-3.0, 0.001_349_898_031_630_094_6),
            (-5.0, 2.866_515_718_791_939e-7),
            (4.0, 0.999_968_328_758_166_9),
        ];
        for (x, want) in cases {
            let got = normal_cdf(x);
            assert!((got - want).abs() < 1e-7, "Φ({x}) = {got}, want {want}");
        }
    }

    /// E[clamp(e^(μ+σZ), lo, hi)] by composite Simpson over z ∈ [−12, 12].
    fn numeric_mean(d: &ClampedLognormal) -> f64 {
        let n = 200_000; // even
        let (a, b) = (-12.0, 12.0);
        let h = (b - a) / n as f64;
        let f = |z: f64| {
            let x = (d.mu + d.sigma * z).exp().clamp(d.lo, d.hi);
            x * (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt()
        };
        let mut s = f(a) + f(b);
        for i in 1..n {
            s += f(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        s * h / 3.0
    }

    #[test]
    fn clamped_mean_matches_numeric_integration() {
        for scale in [1.0, 0.001] {
            let d = ClampedLognormal::azure(scale);
            let (exact, numeric) = (d.mean(), numeric_mean(&d));
            assert!(
                ((exact - numeric) / numeric).abs() < 1e-6,
                "scale {scale}: {exact} vs {numeric}"
            );
        }
        // At scale 1 the clamped mean is ≈ 5.30 s (the unclamped one is ≈ 11.1 s).
        let m = ClampedLognormal::azure(1.0).mean() / SEC as f64;
        assert!((m - 5.30).abs() < 0.01, "{m}");
    }

    #[test]
    fn samples_respect_the_clamps() {
        let d = ClampedLognormal::azure(0.01);
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        for _ in 0..20_000 {
            let x = d.sample(&mut rng);
            assert!((10 * MS / 1000..=600 * MS).contains(&x), "{x}");
        }
    }
}
