//! The learning policies' parameters as a command gives them: a TOML file,
//! then flags on top of it, validated once into a [`Tuning`].

use crate::os::catalog::Tuning;
use anyhow::{Context, Result, anyhow};
use faasched_policy::os::alps::window_ns;
use std::path::PathBuf;

/// The ALPS slice trainer, which `--alps-trainer` names.
pub use faasched_policy::os::alps::Trainer;

/// The parameters a command was given: a file, and each flag that
/// overrides it (`None`, `false`: left as the file or the default has it).
#[derive(Debug, Clone, Default)]
pub struct TuningFlags {
    /// TOML file of `[alps]` and `[hybrid]` parameters.
    pub config: Option<PathBuf>,
    /// ALPS's sliding window W, in ms.
    pub alps_window_ms: Option<f64>,
    /// Invocations ALPS waits for before it learns.
    pub alps_window_min: Option<usize>,
    /// ALPS's slice trainer.
    pub alps_trainer: Option<Trainer>,
    /// ALPS's α (Eq. 2).
    pub alps_alpha: Option<f64>,
    /// ALPS's β (Eq. 2).
    pub alps_beta: Option<f64>,
    /// ALPS's γ (Eq. 3).
    pub alps_gamma: Option<f64>,
    /// ALPS's θ, in percent (Eq. 3).
    pub alps_theta: Option<f64>,
    /// Switch off ALPS's unpredictability fine-tuning.
    pub alps_no_unpredictability: bool,
    /// Switch off ALPS's overload fine-tuning.
    pub alps_no_overload: bool,
    /// Hybrid's FIFO time limit, in ms.
    pub hybrid_time_limit_ms: Option<f64>,
    /// The percentile hybrid's adaptive limit follows.
    pub hybrid_percentile: Option<f64>,
}

impl TuningFlags {
    /// The parameters: defaults, then the file, then the flags; validated,
    /// an error naming where the bad value came from.
    pub fn tuning(&self) -> Result<Tuning> {
        let mut t = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                toml::from_str::<Tuning>(&text)
                    .map_err(|e| anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?
            }
            None => Tuning::default(),
        };
        let a = &mut t.alps;
        if let Some(ms) = self.alps_window_ms {
            a.window = window_ns(ms).map_err(|e| anyhow!("in flags: {e}"))?;
        }
        if let Some(n) = self.alps_window_min {
            a.min_invocations = n;
        }
        if let Some(x) = self.alps_trainer {
            a.trainer = x;
        }
        for (flag, field) in [
            (self.alps_alpha, &mut a.alpha),
            (self.alps_beta, &mut a.beta),
            (self.alps_gamma, &mut a.gamma),
            (self.alps_theta, &mut a.theta),
        ] {
            if let Some(x) = flag {
                *field = x;
            }
        }
        a.unpredictability &= !self.alps_no_unpredictability;
        a.overload &= !self.alps_no_overload;
        let source = self.config.as_ref().map_or("flags".to_string(), |p| {
            format!("{} and flags", p.display())
        });
        a.validate().with_context(|| format!("in {source}"))?;
        let h = &mut t.hybrid;
        if let Some(ms) = self.hybrid_time_limit_ms {
            h.time_limit_ms = ms;
        }
        if let Some(p) = self.hybrid_percentile {
            h.percentile = p;
        }
        h.validate().with_context(|| format!("in {source}"))?;
        Ok(t)
    }
}

/// A trainer by name, for `--alps-trainer`: an unknown name's error lists
/// the known ones.
pub fn parse_trainer(s: &str) -> Result<Trainer, String> {
    Trainer::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Trainer::ALL.iter().map(|t| t.0).collect();
        format!("unknown trainer `{s}` (known: {})", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_defaults_and_are_validated() {
        let flags = TuningFlags {
            alps_alpha: Some(0.5),
            alps_no_overload: true,
            ..TuningFlags::default()
        };
        let t = flags.tuning().unwrap();
        assert_eq!(t.alps.alpha, 0.5);
        assert!(!t.alps.overload);
        assert!(t.alps.unpredictability);
        let bad = TuningFlags {
            hybrid_percentile: Some(150.0),
            ..TuningFlags::default()
        };
        assert!(format!("{:#}", bad.tuning().unwrap_err()).starts_with("in flags: "));
    }

    #[test]
    fn an_unknown_trainer_lists_the_known_ones() {
        assert_eq!(parse_trainer("ewma"), Ok(Trainer::Ewma));
        assert_eq!(
            parse_trainer("mean").unwrap_err(),
            "unknown trainer `mean` (known: average, linear-regression, ewma)"
        );
    }
}
