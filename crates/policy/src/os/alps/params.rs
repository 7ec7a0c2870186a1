//! The ALPS learner's parameters (alps-atc24 §5.2, §7.1), as a TOML table or
//! command-line flags set them.

use crate::param::BadParam;
use faasched_model::{Nanos, SEC};
use serde::{Deserialize, Serialize};
use std::fmt;

/// How a function's vector of SRPT time slices becomes one slice (Eq. 1).
///
/// The paper also lists a random forest; it is not built here: the paper's
/// Fig. 10 shows it no better than the average, and the public ALPS code's
/// non-average trainers crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Trainer {
    /// The mean slice (the paper's default).
    #[default]
    Average,
    /// Least-squares line through the slices in time order, read at the next one.
    LinearRegression,
    /// Exponentially weighted moving average over the slices in time order,
    /// with weight [`Params::ewma_weight`] on the newest.
    Ewma,
}

impl Trainer {
    /// Every trainer, by the name flags and TOML use.
    pub const ALL: [(&str, Trainer); 3] = [
        ("average", Trainer::Average),
        ("linear-regression", Trainer::LinearRegression),
        ("ewma", Trainer::Ewma),
    ];

    /// The trainer called `name`.
    pub fn parse(name: &str) -> Option<Trainer> {
        Self::ALL.iter().find(|t| t.0 == name).map(|t| t.1)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|t| t.1 == self).map_or("?", |t| t.0)
    }
}

impl fmt::Display for Trainer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything the learner can be told. Defaults are the paper's (§7.1).
/// Serialised as the TOML table reads it (what a run's summary records).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Sliding window W: the learner retrains every W from the invocations that
    /// finished in the last W. In ms in TOML (`window_ms`).
    #[serde(
        rename = "window_ms",
        deserialize_with = "ms",
        serialize_with = "as_ms"
    )]
    pub window: Nanos,
    /// The fewest finished invocations a lesson learns from: at a period
    /// with fewer in the window, the lesson waits and the window keeps
    /// filling. 0: every W, as the paper. See docs/POLICIES.md.
    #[serde(rename = "window_min_invocations")]
    pub min_invocations: usize,
    /// Slice trainer (Eq. 1).
    pub trainer: Trainer,
    /// EWMA weight on the newest slice, in (0, 1].
    pub ewma_weight: f64,
    /// Unpredictability fine-tuning (Eq. 2) on or off.
    pub unpredictability: bool,
    /// α, Eq. 2: reward that lengthens the trained slice.
    pub alpha: f64,
    /// β, Eq. 2: penalty per standard deviation of the slices.
    pub beta: f64,
    /// Overload fine-tuning (Eq. 3) on or off.
    pub overload: bool,
    /// θ, Eq. 3: CPU utilisation (percent) from which slices shrink.
    pub theta: f64,
    /// γ, Eq. 3: reaction to load; lower shrinks less.
    pub gamma: f64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            window: 5 * SEC,
            min_invocations: 250,
            trainer: Trainer::Average,
            ewma_weight: 0.5,
            unpredictability: true,
            alpha: 2.0,
            beta: 1.0,
            overload: true,
            theta: 50.0,
            gamma: 1.0,
        }
    }
}

fn ms<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Nanos, D::Error> {
    window_ns(f64::deserialize(d)?).map_err(serde::de::Error::custom)
}

/// A window of `ms` milliseconds in ns, if it is one: from 1 ms to 1 h, as
/// [`Params::validate`] checks. Checked on the ms, before the conversion,
/// which would turn NaN into 0 and 1e300 into the largest u64 and report
/// those instead.
pub fn window_ns(ms: f64) -> Result<Nanos, BadParam> {
    let ok = (1.0..=3_600_000.0).contains(&ms);
    BadParam::require(ok, "alps", "window_ms", format!("{ms:?} ms"), WINDOW_RANGE)?;
    Ok((ms * 1e6).round() as Nanos)
}

/// The range of a window, as its errors say.
const WINDOW_RANGE: &str = "between 1 ms and 1 h";

fn as_ms<S: serde::Serializer>(ns: &Nanos, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(*ns as f64 / 1e6)
}

impl Params {
    /// Checks every parameter's range.
    pub fn validate(&self) -> Result<(), BadParam> {
        let check = |ok, name, value: String, expected| {
            BadParam::require(ok, "alps", name, value, expected)
        };
        let finite_nonneg = |x: f64| x.is_finite() && x >= 0.0;
        check(
            self.window >= 1_000_000 && self.window <= 3600 * SEC,
            "window_ms",
            format!("{} ms", self.window as f64 / 1e6),
            WINDOW_RANGE,
        )?;
        check(
            self.ewma_weight > 0.0 && self.ewma_weight <= 1.0,
            "ewma_weight",
            self.ewma_weight.to_string(),
            "in (0, 1]",
        )?;
        check(
            finite_nonneg(self.alpha),
            "alpha",
            self.alpha.to_string(),
            "finite and ≥ 0",
        )?;
        check(
            finite_nonneg(self.beta),
            "beta",
            self.beta.to_string(),
            "finite and ≥ 0",
        )?;
        check(
            (0.0..=100.0).contains(&self.theta),
            "theta",
            self.theta.to_string(),
            "a utilisation in percent, 0..=100",
        )?;
        check(
            self.gamma.is_finite() && self.gamma > 0.0,
            "gamma",
            self.gamma.to_string(),
            "finite and > 0",
        )
    }

    /// The overload penalty p of Eq. 3 at `utilisation` (0..=1), or 1 when the
    /// overload fine-tuning is off.
    pub fn penalty(&self, utilisation: f64) -> f64 {
        let load = utilisation * 100.0;
        if !self.overload || load < self.theta {
            1.0
        } else {
            (100.0 + self.theta - load) / (100.0 * self.gamma)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn penalty_follows_equation_3() {
        let p = Params::default();
        assert_eq!(p.penalty(0.49), 1.0);
        // (100 + 50 − 90) / 100
        assert!((p.penalty(0.9) - 0.6).abs() < 1e-12);
        let g = Params { gamma: 2.0, ..p };
        assert!((g.penalty(0.9) - 0.3).abs() < 1e-12);
        let off = Params {
            overload: false,
            ..p
        };
        assert_eq!(off.penalty(1.0), 1.0);
    }

    #[test]
    fn toml_overrides_defaults_and_rejects_unknown_keys() {
        let p: Params = toml::from_str(
            "window_ms = 10000\ntrainer = \"ewma\"\nalpha = 1.5\nwindow_min_invocations = 40",
        )
        .unwrap();
        assert_eq!(p.window, 10 * SEC);
        assert_eq!(p.min_invocations, 40);
        assert_eq!(p.trainer, Trainer::Ewma);
        assert_eq!(p.alpha, 1.5);
        assert_eq!(p.beta, 1.0);
        assert!(toml::from_str::<Params>("alpah = 1").is_err());
        let bad = Params {
            gamma: 0.0,
            ..Params::default()
        };
        assert_eq!(bad.validate().unwrap_err().name, "gamma");
        assert!(Params::default().validate().is_ok());
    }

    #[test]
    fn a_window_is_checked_in_ms_before_its_conversion() {
        assert_eq!(window_ns(10.0).unwrap(), 10_000_000);
        for (ms, shown) in [(f64::NAN, "NaN ms"), (1e300, "1e300 ms"), (0.5, "0.5 ms")] {
            let err = window_ns(ms).unwrap_err().to_string();
            assert!(err.contains("window_ms") && err.contains(shown), "{err}");
        }
        let err = toml::from_str::<Params>("window_ms = nan")
            .unwrap_err()
            .to_string();
        assert!(err.contains("NaN ms"), "{err}");
    }

    #[test]
    fn trainer_names_round_trip() {
        for (name, t) in Trainer::ALL {
            assert_eq!(Trainer::parse(name), Some(t));
            assert_eq!(t.to_string(), name);
        }
        assert_eq!(Trainer::parse("forest"), None);
    }
}
