//! Admission control's flags: what `node simulate`, `node capacity`, `node
//! replay`, `node compare` and `node serve` share.

use clap::Args as ClapArgs;
use faasched_lab::node::admission::Admit;

/// The bounds each dispatcher admits requests under. A simulation or
/// replay bounds nothing unless told; `node serve` bounds by default
/// (`--max-queued 1024 --max-backlog-ms 2000 --fair-share`). A refused
/// request never runs: live, it is answered 503 with `Retry-After` and
/// its reason in x-faasched-error; simulated, it counts as dropped.
#[derive(ClapArgs, Debug)]
pub struct AdmitArgs {
    /// Most requests a dispatcher holds admitted and not finished (queued,
    /// held or running); one more is refused `queue-full`. 0: no bound.
    /// By default 1024 on `node serve`, none in simulations and replays.
    #[arg(long, value_name = "N")]
    max_queued: Option<u32>,
    /// Most estimated work a dispatcher holds admitted and not finished,
    /// ms per worker; a request whose estimate would pass it is refused
    /// `backlog-full`. 0: no bound. By default 2000 on `node serve`, none
    /// in simulations and replays.
    #[arg(long, value_name = "MS")]
    max_backlog_ms: Option<f64>,
    /// Hold each function to as much as is left free under the bounds
    /// (a dynamic threshold): alone it may fill half, and a function that
    /// arrives while another floods always finds room; past its share a
    /// request is refused `over-share`. `--fair-share=false` turns it off.
    /// By default on for `node serve`, off in simulations and replays.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    fair_share: Option<bool>,
    /// Refuse, `deadline-infeasible`, a request that the work queued
    /// ahead of it on the best worker would make miss its deadline, by the
    /// estimates. Live, a request without x-faasched-deadline-us is held
    /// to --deadline. Off by default.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    refuse_late: Option<bool>,
}

impl AdmitArgs {
    /// The bounds, each flag given overriding `defaults`.
    pub fn admit(&self, defaults: Admit) -> Admit {
        Admit {
            max_queued: match self.max_queued {
                Some(0) => None,
                Some(n) => Some(n),
                None => defaults.max_queued,
            },
            max_backlog_ms: match self.max_backlog_ms {
                Some(0.0) => None,
                Some(ms) => Some(ms),
                None => defaults.max_backlog_ms,
            },
            fair_share: self.fair_share.unwrap_or(defaults.fair_share),
            refuse_late: self.refuse_late.unwrap_or(defaults.refuse_late),
        }
    }
}
