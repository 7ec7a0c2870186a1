//! The numbers experiment tables read from a policy's summary.

use crate::table::{change, fixed};
use faasched_model::Group;
use faasched_report::Stats;
use faasched_report::os::{Metric, PolicySummary, Scope};

/// The duration groups, in order.
pub const GROUPS: [Scope; 4] = [
    Scope::Group(Group::G1),
    Scope::Group(Group::G2),
    Scope::Group(Group::G3),
    Scope::Group(Group::G4),
];

/// A statistic of `metric` over `scope`, in ms; `None` for an empty scope.
pub fn stat(
    p: &PolicySummary,
    scope: Scope,
    metric: Metric,
    pick: fn(&Stats) -> f64,
) -> Option<f64> {
    p.scope(scope).stats(metric).map(pick)
}

/// Mean turnaround over `scope`, ms.
pub fn mean(p: &PolicySummary, scope: Scope) -> Option<f64> {
    stat(p, scope, Metric::Turnaround, |s| s.mean)
}

/// 99th-percentile turnaround over `scope`, ms.
pub fn p99(p: &PolicySummary, scope: Scope) -> Option<f64> {
    stat(p, scope, Metric::Turnaround, |s| s.p99)
}

/// Involuntary (preemption) switches per invocation, formatted.
pub fn preemptions(p: &PolicySummary) -> String {
    fixed(p.all().involuntary_per_invocation(), 2)
}

/// A policy's name, starred when sim-only.
pub fn label(p: &PolicySummary) -> String {
    format!("{}{}", p.policy, if p.sim_only { " *" } else { "" })
}

/// The policy labelled `name` in `policies`.
pub fn find<'a>(policies: &'a [PolicySummary], name: &str) -> Option<&'a PolicySummary> {
    policies.iter().find(|p| p.policy == name)
}

/// Mean turnaround overall, then per group, formatted.
pub fn means(p: &PolicySummary) -> impl Iterator<Item = String> + '_ {
    std::iter::once(Scope::All)
        .chain(GROUPS)
        .map(|scope| fixed(mean(p, scope), 2))
}

/// The change of the mean turnaround against `base`'s, formatted.
pub fn mean_change(p: &PolicySummary, base: Option<&PolicySummary>) -> String {
    change(mean(p, Scope::All), base.and_then(|b| mean(b, Scope::All)))
}
