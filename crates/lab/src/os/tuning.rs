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
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TuningFlags {
    /// TOML file of policy parameters: `[alps]` with `window_ms`,
    /// `window_min_invocations`, `trainer`, `alpha`, `beta`, `gamma`, `theta`,
    /// `ewma_weight`, `unpredictability`, `overload`; `[hybrid]` with `time_limit_ms`, `adaptive`, `percentile`,
    /// `rightsizing`, `threshold`, `fifo_share`; `[gittins]` with `size_ms`,
    /// `steps_per_doubling`, `history`, and `[gittins_rt]` with the same for
    /// gittins-rt. Flags below override it (the gittins ones `[gittins]`
    /// only, which gittins and sfs-gittins read).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// ALPS: retrain every this many ms from the invocations finished in it
    /// (the sliding window W) [default: 5000].
    #[arg(long, value_name = "MS")]
    pub alps_window_ms: Option<f64>,
    /// ALPS: learn only once this many invocations finished since the last
    /// lesson; until then the window keeps filling [default: 250].
    #[arg(long, value_name = "N")]
    pub alps_window_min: Option<usize>,
    /// ALPS: slice trainer, average, linear-regression or ewma [default: average].
    #[arg(long, value_name = "NAME", value_parser = parse_trainer)]
    pub alps_trainer: Option<Trainer>,
    /// ALPS: α, reward on the trained slice (Eq. 2) [default: 2].
    #[arg(long, value_name = "X")]
    pub alps_alpha: Option<f64>,
    /// ALPS: β, penalty per standard deviation of the slices (Eq. 2) [default: 1].
    #[arg(long, value_name = "X")]
    pub alps_beta: Option<f64>,
    /// ALPS: γ, reaction to load (Eq. 3) [default: 1].
    #[arg(long, value_name = "X")]
    pub alps_gamma: Option<f64>,
    /// ALPS: θ, the utilisation in percent from which slices shrink (Eq. 3)
    /// [default: 50].
    #[arg(long, value_name = "PERCENT")]
    pub alps_theta: Option<f64>,
    /// ALPS: switch off the unpredictability fine-tuning (Eq. 2).
    #[arg(long)]
    pub alps_no_unpredictability: bool,
    /// ALPS: switch off the overload fine-tuning (Eq. 3).
    #[arg(long)]
    pub alps_no_overload: bool,
    /// Hybrid: the FIFO group's time limit in ms, fixed or the adaptive one's
    /// start [default: 1633].
    #[arg(long, value_name = "MS")]
    pub hybrid_time_limit_ms: Option<f64>,
    /// Hybrid: the percentile of recent CPU times the adaptive limit follows
    /// [default: 95].
    #[arg(long, value_name = "P")]
    pub hybrid_percentile: Option<f64>,
    /// Gittins: the effective remaining size in ms at and below which an
    /// invocation runs at nice 0 [default: 480].
    #[arg(long, value_name = "MS")]
    pub gittins_size_ms: Option<f64>,
    /// Gittins: nice added per doubling of the effective size past
    /// --gittins-size-ms, `[gittins]`'s `steps_per_doubling` [default: 16].
    #[arg(long, value_name = "X")]
    pub gittins_nice_per_doubling: Option<f64>,
    /// Gittins: CPU times kept per function, its most recent invocations',
    /// 8 to 65,536 [default: 512].
    #[arg(long, value_name = "N")]
    pub gittins_history: Option<usize>,
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
        if let Some(n) = self.gittins_history {
            t.gittins.history = n;
        }
        // Every plain number a flag overrides, of any table.
        for (flag, field) in [
            (self.alps_alpha, &mut t.alps.alpha),
            (self.alps_beta, &mut t.alps.beta),
            (self.alps_gamma, &mut t.alps.gamma),
            (self.alps_theta, &mut t.alps.theta),
            (self.hybrid_time_limit_ms, &mut t.hybrid.time_limit_ms),
            (self.hybrid_percentile, &mut t.hybrid.percentile),
            (self.gittins_size_ms, &mut t.gittins.size_ms),
            (
                self.gittins_nice_per_doubling,
                &mut t.gittins.steps_per_doubling,
            ),
        ] {
            if let Some(x) = flag {
                *field = x;
            }
        }
        t.alps.unpredictability &= !self.alps_no_unpredictability;
        t.alps.overload &= !self.alps_no_overload;
        let source = self.config.as_ref().map_or("flags".to_string(), |p| {
            format!("{} and flags", p.display())
        });
        t.validate().with_context(|| format!("in {source}"))?;
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
        let gittins = TuningFlags {
            gittins_size_ms: Some(40.0),
            ..TuningFlags::default()
        };
        assert_eq!(gittins.tuning().unwrap().gittins.size_ms, 40.0);
        let bad = TuningFlags {
            gittins_nice_per_doubling: Some(-1.0),
            ..TuningFlags::default()
        };
        let e = format!("{:#}", bad.tuning().unwrap_err());
        assert!(e.contains("steps_per_doubling"), "{e}");
        let history = |n| TuningFlags {
            gittins_history: Some(n),
            ..TuningFlags::default()
        };
        assert_eq!(history(64).tuning().unwrap().gittins.history, 64);
        let e = format!("{:#}", history(4).tuning().unwrap_err());
        assert!(e.contains("history"), "{e}");
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
