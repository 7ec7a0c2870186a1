//! Why a live load's calls failed, as its user reads it: how many, the
//! most common kinds, and for each what it means and what to try. `node
//! load` and `cluster load` print it on stderr, so that a run that mostly
//! failed says so, and why, where a user looks; summary.json keeps every
//! kind.

/// The most kinds a report names.
const TOP: usize = 3;

/// What a call that failed with `kind` (a node's or the gateway's
/// `x-faasched-error`, or the load's own) met, and what to try.
fn hint(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "overloaded" => {
            "no room for it: a node's sandboxes or container memory were full, or the \
             gateway's router found no node with room. Offer less (a lower --rate, fewer \
             --clients) or give the nodes more (--memory-mb of `node serve` and `cluster up`, \
             `node serve --max-sandboxes`)"
        }
        "unsent" => {
            "it came due while every connection waited on an answer: the target serves \
             less than was offered. Offer less, or serve with more workers"
        }
        "connect-failed" => {
            "nothing took a connection at --target: is it running at that address (and, \
             for a TLS target, is --tls-ca given)?"
        }
        "connection-lost" => {
            "the target closed the connection before its answer: it stopped, or had more \
             connections than its --max-connections"
        }
        "response-timeout" => {
            "no whole answer within --timeout-ms: the target is overloaded, or its calls \
             run longer than that"
        }
        "unfinished" => "still in flight when --drain-ms ran out after the sending",
        "interrupted" => "in flight when the run was stopped",
        "unauthorized" | "http-401" => {
            "the target wants a token: give its --invoke-token-file's token as --token-file"
        }
        "unknown-function" => {
            "the target has no function of that name (`node serve --functions`, `cluster up \
             --deploy`)"
        }
        "queue-full" | "backlog-full" | "over-share" | "deadline-infeasible" => {
            "the node's admission control turned it away (`node serve` --max-queued, \
             --max-backlog-ms, --fair-share, --refuse-late): it would have waited too long"
        }
        "unplaced" => "the node's policy had no worker that takes it",
        "timeout" => "it ran past the node's --cpu-limit-ms",
        "node-unreachable" => "its node failed before answering; the gateway's log names it",
        "trap" | "memory" | "output-limit" | "exit-status" | "internal" => {
            "the function failed on the node; the answer's body and the node's log say how"
        }
        "shutting-down" => "the node was stopping",
        _ => return None,
    })
}

/// The lines a load prints when some of its `calls` failed, `errors`
/// counting them by kind: the count, the [`TOP`] kinds, most first, and
/// what each means; `None` when none failed.
pub fn report<'a>(calls: u64, errors: impl IntoIterator<Item = (&'a str, u64)>) -> Option<String> {
    let mut kinds: Vec<(&str, u64)> = errors.into_iter().filter(|&(_, n)| n > 0).collect();
    // Most first; a tie in the kinds' order, so the text is the same each run.
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let failed: u64 = kinds.iter().map(|&(_, n)| n).sum();
    if failed == 0 {
        return None;
    }
    let named: Vec<String> = kinds
        .iter()
        .take(TOP)
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    let others = kinds.len().saturating_sub(TOP);
    let mut out = format!(
        "{failed} of {calls} calls failed: {}{}\n",
        named.join(", "),
        match others {
            0 => String::new(),
            n => format!(" and {n} other kind(s), in summary.json"),
        }
    );
    for (kind, _) in kinds.iter().take(TOP) {
        if let Some(hint) = hint(kind) {
            out.push_str(&format!("  {kind}: {hint}\n"));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_common_kinds_come_first_with_what_they_mean() {
        let r = report(
            100,
            [("unsent", 5), ("overloaded", 80), ("trap", 1), ("odd", 1)],
        )
        .unwrap();
        let mut lines = r.lines();
        assert_eq!(
            lines.next(),
            Some(
                "87 of 100 calls failed: overloaded 80, unsent 5, odd 1 and 1 other kind(s), in summary.json"
            )
        );
        assert!(
            lines
                .next()
                .unwrap()
                .starts_with("  overloaded: no room for it")
        );
        assert!(lines.next().unwrap().starts_with("  unsent: it came due"));
        // A kind without a hint is named but not explained; the fourth
        // kind not at all.
        assert_eq!(lines.next(), None);
    }

    #[test]
    fn nothing_failed_is_no_report() {
        assert_eq!(report(10, []), None);
        assert_eq!(report(10, [("overloaded", 0)]), None);
    }
}
