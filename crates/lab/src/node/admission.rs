//! Admission control as a run's options give it: the bounds of
//! [`faasched_policy::node::Admitted`], spelled as their flags are
//! ([`AdmitArgs`]: what `node simulate`, `node capacity`, `node replay`,
//! `node compare`, `node serve` and `cluster simulate`'s node servers
//! share), with the defaults of a simulation (nothing bounded, as the
//! paper's node) and of a served node (bounded, since a node that faces
//! clients must not queue without end).

use anyhow::{Result, bail};
use faasched_model::MS;
pub use faasched_policy::node::Admission;
use serde::{Deserialize, Serialize};

/// `--max-queued`'s default on a served node: requests a group holds
/// admitted and unfinished (twice the connections a node keeps open by
/// default, so that it bites only on more dispatchers' worth of requests).
pub const SERVE_MAX_QUEUED: u32 = 1_024;

/// `--max-backlog-ms`'s default on a served node: estimated work a group
/// holds per worker, ms.
pub const SERVE_MAX_BACKLOG_MS: f64 = 2_000.0;

/// The bounds as flags and files give them; every field may be left out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Admit {
    /// Most requests a group holds admitted and unfinished; `None`: no
    /// bound.
    pub max_queued: Option<u32>,
    /// Most estimated work a group holds admitted and unfinished, per
    /// worker, ms; `None`: no bound.
    pub max_backlog_ms: Option<f64>,
    /// Each function held to what is left free under the bounds.
    pub fair_share: bool,
    /// Refuse a request the work ahead of it would make miss its deadline.
    pub refuse_late: bool,
}

impl Admit {
    /// A served node's: bounded by count and work, with fair shares; no
    /// refusal by deadline, since a request that names none has the node's
    /// default, which its client never chose.
    pub const SERVE: Admit = Admit {
        max_queued: Some(SERVE_MAX_QUEUED),
        max_backlog_ms: Some(SERVE_MAX_BACKLOG_MS),
        fair_share: true,
        refuse_late: false,
    };

    /// A served node's defaults (serde's form of [`Admit::SERVE`]).
    pub fn serve() -> Admit {
        Admit::SERVE
    }

    /// The rules a policy admits under; errors name the flag.
    pub fn rules(&self) -> Result<Admission> {
        let max_backlog = match self.max_backlog_ms {
            None => None,
            Some(ms) if ms.is_finite() && ms > 0.0 && ms <= 86_400_000.0 => {
                Some((ms * MS as f64).round() as u64)
            }
            Some(ms) => bail!("--max-backlog-ms {ms}: give ms above 0 and at most a day"),
        };
        if self.max_queued == Some(0) {
            bail!("--max-queued 0: give at least 1 (or leave it out for no bound)");
        }
        Ok(Admission {
            max_queued: self.max_queued,
            max_backlog,
            fair_share: self.fair_share,
            refuse_late: self.refuse_late,
        })
    }
}

/// The bounds each dispatcher admits requests under. A simulation or
/// replay bounds nothing unless told; `node serve` bounds by default
/// (`--max-queued 1024 --max-backlog-ms 2000 --fair-share`). A refused
/// request never runs: live, it is answered 503 with `Retry-After` and
/// its reason in x-faasched-error; simulated, it counts as dropped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
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
    /// Whether no flag was given.
    pub fn is_unset(&self) -> bool {
        *self == AdmitArgs::default()
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_take_ms_and_refuse_what_bounds_nothing_sensible() {
        let rules = Admit::SERVE.rules().unwrap();
        assert_eq!(rules.max_backlog, Some(2_000 * MS));
        assert_eq!(rules.max_queued, Some(1_024));
        assert!(!Admit::default().rules().unwrap().bounds_anything());
        for bad in [
            Admit {
                max_backlog_ms: Some(0.0),
                ..Admit::default()
            },
            Admit {
                max_backlog_ms: Some(f64::NAN),
                ..Admit::default()
            },
            Admit {
                max_queued: Some(0),
                ..Admit::default()
            },
        ] {
            let e = bad.rules().unwrap_err().to_string();
            assert!(e.contains("--max-"), "{e}");
        }
    }

    #[test]
    fn a_file_may_leave_every_field_out() {
        let a: Admit = serde_json::from_str(r#"{"refuse_late":true}"#).unwrap();
        assert_eq!(
            a,
            Admit {
                refuse_late: true,
                ..Admit::default()
            }
        );
        assert!(serde_json::from_str::<Admit>(r#"{"max_queue":3}"#).is_err());
    }
}
