//! Policy parameters from the command line: a TOML file, then flags on top.

use clap::Args as ClapArgs;
use faasched_lab::os::tuning::{Trainer, TuningFlags, parse_trainer};
use std::path::PathBuf;

/// The learning policies' parameters.
#[derive(ClapArgs, Debug, Clone, Default)]
pub struct TuningArgs {
    /// TOML file of policy parameters: `[alps]` with `window_ms`,
    /// `window_min_invocations`, `trainer`, `alpha`, `beta`, `gamma`, `theta`,
    /// `ewma_weight`, `unpredictability`, `overload`; `[hybrid]` with `time_limit_ms`, `adaptive`, `percentile`,
    /// `rightsizing`, `threshold`, `fifo_share`. Flags below override it.
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
}

impl TuningArgs {
    /// The file and flags given, which lab reads and validates.
    pub fn flags(self) -> TuningFlags {
        TuningFlags {
            config: self.config,
            alps_window_ms: self.alps_window_ms,
            alps_window_min: self.alps_window_min,
            alps_trainer: self.alps_trainer,
            alps_alpha: self.alps_alpha,
            alps_beta: self.alps_beta,
            alps_gamma: self.alps_gamma,
            alps_theta: self.alps_theta,
            alps_no_unpredictability: self.alps_no_unpredictability,
            alps_no_overload: self.alps_no_overload,
            hybrid_time_limit_ms: self.hybrid_time_limit_ms,
            hybrid_percentile: self.hybrid_percentile,
        }
    }
}
