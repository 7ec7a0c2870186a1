//! What the gateway counts and times, and how it shows them: `GET
//! /metrics` in Prometheus text, `GET /status` as JSON, and the
//! [`GatewayServed`] a served gateway returns.

use super::link::NodeLink;
use super::{GatewayServed, Inner, State, lock};
use crate::cluster::table::Membership;
use crate::wire::response::family;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The histograms' top, ns: 60 s, past any invocation.
const HISTOGRAM_MAX: u64 = 60_000_000_000;

/// The most error kinds of nodes' answers counted apart: a node may name
/// any kind, and what the gateway keeps of them stays bounded; the rest
/// count as [`OTHER_KIND`].
const NODE_ERROR_KINDS: usize = 32;

/// The longest node error kind counted as sent.
const NODE_ERROR_KIND_BYTES: usize = 32;

/// The kind a node error is counted under when its own is not kept: too
/// long, not lowercase letters, digits and dashes, or past
/// [`NODE_ERROR_KINDS`].
const OTHER_KIND: &str = "other";

/// The quantiles the metrics and the status give.
const QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];

/// The gateway's own counters and timings.
pub(super) struct Metrics {
    pub(super) received: AtomicU64,
    pub(super) answered: AtomicU64,
    pub(super) unreachable: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) malformed: AtomicU64,
    pub(super) registrations: AtomicU64,
    pub(super) node_drops: AtomicU64,
    pub(super) leaves: AtomicU64,
    /// Invocations a node refused before any byte reached it, sent to
    /// the router's next choice.
    pub(super) rerouted: AtomicU64,
    /// Nodes taken out at once: a refused connect, or a failed probe.
    pub(super) taken_out: AtomicU64,
    /// Client connections refused past the limit.
    pub(super) refused_connections: AtomicU64,
    /// Static nodes found to be another's address (the same node id).
    pub(super) aliases: AtomicU64,
    pub(super) responses: Mutex<BTreeMap<(u16, &'static str), u64>>,
    /// Nodes' answers with an `x-faasched-error`, by its kind: what the
    /// nodes refused (their `overloaded`), apart from the router's drops.
    node_failures: Mutex<BTreeMap<String, u64>>,
    pub(super) decision: Mutex<Histogram<u64>>,
    pub(super) overhead: Mutex<Histogram<u64>>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let histogram = || {
            // The bounds are constants within hdrhistogram's range.
            Histogram::new_with_bounds(1, HISTOGRAM_MAX, 3)
                .unwrap_or_else(|e| unreachable!("valid histogram bounds: {e}"))
        };
        Metrics {
            received: AtomicU64::new(0),
            answered: AtomicU64::new(0),
            unreachable: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            malformed: AtomicU64::new(0),
            registrations: AtomicU64::new(0),
            node_drops: AtomicU64::new(0),
            leaves: AtomicU64::new(0),
            rerouted: AtomicU64::new(0),
            taken_out: AtomicU64::new(0),
            refused_connections: AtomicU64::new(0),
            aliases: AtomicU64::new(0),
            responses: Mutex::new(BTreeMap::new()),
            node_failures: Mutex::new(BTreeMap::new()),
            decision: Mutex::new(histogram()),
            overhead: Mutex::new(histogram()),
        }
    }
}

impl Metrics {
    /// Counts a node's answer whose `x-faasched-error` is `kind`.
    pub(super) fn node_failure(&self, kind: &[u8]) {
        let mut failures = lock(&self.node_failures);
        let named = (1..=NODE_ERROR_KIND_BYTES).contains(&kind.len())
            && kind
                .iter()
                .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        let key = match std::str::from_utf8(kind) {
            Ok(k) if named && (failures.contains_key(k) || failures.len() < NODE_ERROR_KINDS) => k,
            _ => OTHER_KIND,
        };
        *failures.entry(key.to_string()).or_default() += 1;
    }
}

/// Records `value` ns, clamped into the histogram's range.
pub(super) fn record(histogram: &Mutex<Histogram<u64>>, value: u64) {
    let _ = lock(histogram).record(value.clamp(1, HISTOGRAM_MAX));
}

impl Inner {
    /// What the gateway measured over its life, `cut` the connections its
    /// drain cut.
    pub(super) fn served(&self, cut: crate::http::Cut) -> GatewayServed {
        let m = &self.metrics;
        let (polls, load_variance) = {
            let state = lock(&self.state);
            (state.polls, state.loads.mean_variance)
        };
        GatewayServed {
            received: m.received.load(Ordering::SeqCst),
            answered: m.answered.load(Ordering::SeqCst),
            unreachable: m.unreachable.load(Ordering::Relaxed),
            dropped: m.dropped.load(Ordering::Relaxed),
            decision_p50: lock(&m.decision).value_at_quantile(0.5),
            overhead_p50: lock(&m.overhead).value_at_quantile(0.5),
            connections_cut: cut,
            polls,
            load_variance,
            registrations: m.registrations.load(Ordering::Relaxed),
            drops: m.node_drops.load(Ordering::Relaxed),
            leaves: m.leaves.load(Ordering::Relaxed),
            node_failures: lock(&m.node_failures).clone(),
        }
    }

    /// `GET /metrics`: every node's families, then the gateway's own.
    pub(super) fn render(&self) -> String {
        let mut out = String::new();
        let state = lock(&self.state);
        render_nodes(&mut out, &state);
        let (polls, load_variance) = (state.polls, state.loads.mean_variance);
        drop(state);
        self.metrics.render(&mut out, polls, load_variance);
        out
    }

    /// `GET /status`: the gateway, its counts, the load evenness, the
    /// timings and the nodes.
    pub(super) fn status(&self) -> serde_json::Value {
        let (nodes, polls, load_variance) = {
            let state = lock(&self.state);
            let nodes: Vec<serde_json::Value> = state
                .links
                .iter()
                .map(|(&i, link)| node_status(&state, i, link))
                .collect();
            (nodes, state.polls, state.loads.mean_variance)
        };
        let m = &self.metrics;
        let (decision, overhead) = (lock(&m.decision).clone(), lock(&m.overhead).clone());
        serde_json::json!({
            "gateway": {
                "listen": lock(&self.listen).map(|a| a.to_string()),
                "uptime_ms": self.now() / 1_000_000,
                "policy": self.policy,
                "period_ms": u64::try_from(self.period.as_millis()).unwrap_or(u64::MAX),
            },
            "invocations": {
                "received": m.received.load(Ordering::SeqCst),
                "answered": m.answered.load(Ordering::SeqCst),
                "unreachable": m.unreachable.load(Ordering::Relaxed),
                "dropped": m.dropped.load(Ordering::Relaxed),
                "malformed": m.malformed.load(Ordering::Relaxed),
                "rerouted": m.rerouted.load(Ordering::Relaxed),
                "node_failures": lock(&m.node_failures).clone(),
            },
            "membership": {
                "registrations": m.registrations.load(Ordering::Relaxed),
                "drops": m.node_drops.load(Ordering::Relaxed),
                "leaves": m.leaves.load(Ordering::Relaxed),
                "taken_out": m.taken_out.load(Ordering::Relaxed),
                "aliases": m.aliases.load(Ordering::Relaxed),
            },
            "loads": {
                "polls": polls,
                "variance_mean": load_variance,
            },
            "decision_ns": quantiles(&decision),
            "overhead_ns": quantiles(&overhead),
            "nodes": nodes,
        })
    }
}

/// Node `i`'s entry in `GET /status`.
fn node_status(state: &State, i: usize, link: &NodeLink) -> serde_json::Value {
    let view = state.table.view(i);
    let membership = match state.table.membership(i) {
        Membership::Static => "static",
        Membership::Registered => "registered",
    };
    serde_json::json!({
        "node": link.addr,
        "membership": membership,
        "up": state.table.is_up(i),
        "misses": state.table.misses(i),
        "cores": view.cores,
        "memory_mb": view.memory_mb,
        "load": view.load,
        "published_ms": view.published / 1_000_000,
        "running": view.running,
        "requests": link.requests.load(Ordering::Relaxed),
        "errors": link.errors.load(Ordering::Relaxed),
        "cold_starts": link.cold.load(Ordering::Relaxed),
    })
}

/// The per node families, a line per node of the table, labelled with
/// its address.
fn render_nodes(out: &mut String, state: &State) {
    type Value<'a> = &'a dyn Fn(usize, &NodeLink) -> String;
    let families: [(&str, &str, &str, Value); 6] = [
        (
            "faasched_gateway_node_requests_total",
            "Invocations forwarded to the node.",
            "counter",
            &|_, link| link.requests.load(Ordering::Relaxed).to_string(),
        ),
        (
            "faasched_gateway_node_errors_total",
            "Invocations whose node failed before its answer (answered 502 node-unreachable).",
            "counter",
            &|_, link| link.errors.load(Ordering::Relaxed).to_string(),
        ),
        (
            "faasched_gateway_node_cold_starts_total",
            "Invocations the node answered from a container it started cold.",
            "counter",
            &|_, link| link.cold.load(Ordering::Relaxed).to_string(),
        ),
        (
            "faasched_gateway_node_load",
            "The node's last reported 1-minute load average over its cores.",
            "gauge",
            &|i, _| state.table.view(i).load.to_string(),
        ),
        (
            "faasched_gateway_node_up",
            "1 if the node answers its load polls (down after 3 missed in a row).",
            "gauge",
            &|i, _| u8::from(state.table.is_up(i)).to_string(),
        ),
        (
            "faasched_gateway_node_running",
            "Invocations the gateway has in flight on the node.",
            "gauge",
            &|i, _| state.table.view(i).running.to_string(),
        ),
    ];
    for (name, help, kind, value) in families {
        family(out, name, help, kind);
        for (&i, link) in &state.links {
            let _ = writeln!(out, "{name}{{node=\"{}\"}} {}", link.addr, value(i, link));
        }
    }
}

impl Metrics {
    /// The gateway's own families: its totals, `polls` and
    /// `load_variance` read with the nodes, its responses and its timings.
    fn render(&self, out: &mut String, polls: u64, load_variance: f64) {
        self.render_totals(out, polls);
        family(
            out,
            "faasched_gateway_load_variance_mean",
            "The mean over the poll rounds of the population variance of the up nodes' reported loads (load average over cores).",
            "gauge",
        );
        let _ = writeln!(out, "faasched_gateway_load_variance_mean {load_variance}");
        family(
            out,
            "faasched_gateway_responses_total",
            "HTTP responses sent, by status code and error kind.",
            "counter",
        );
        for ((code, kind), count) in lock(&self.responses).iter() {
            let _ = writeln!(
                out,
                "faasched_gateway_responses_total{{code=\"{code}\",kind=\"{kind}\"}} {count}"
            );
        }
        family(
            out,
            "faasched_gateway_node_failures_total",
            "Nodes' answers passed on with an error, by its kind (a node's overloaded is its own refusal, not the router's drop).",
            "counter",
        );
        for (kind, count) in lock(&self.node_failures).iter() {
            let _ = writeln!(
                out,
                "faasched_gateway_node_failures_total{{kind=\"{kind}\"}} {count}"
            );
        }
        summary(
            out,
            "faasched_gateway_decision_seconds",
            "The router's decision time alone.",
            &lock(&self.decision),
        );
        summary(
            out,
            "faasched_gateway_overhead_seconds",
            "Forwarding overhead: the gateway's time for an invocation less the node's x-faasched-runtime-us.",
            &lock(&self.overhead),
        );
    }

    /// The counters, each a family of one line, `polls` among them.
    fn render_totals(&self, out: &mut String, polls: u64) {
        for (name, help, value) in [
            (
                "faasched_gateway_invocations_received_total",
                "Invocations received, well-formed and of a known function.",
                self.received.load(Ordering::SeqCst),
            ),
            (
                "faasched_gateway_invocations_answered_total",
                "Invocations answered (each received one exactly once).",
                self.answered.load(Ordering::SeqCst),
            ),
            (
                "faasched_gateway_drops_total",
                "Invocations the router dropped (answered 503 overloaded).",
                self.dropped.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_malformed_total",
                "Requests refused 4xx before any node saw them.",
                self.malformed.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_node_registrations_total",
                "Nodes that joined the table by registering (PUT /nodes/HOST:PORT).",
                self.registrations.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_node_drops_total",
                "Registered nodes dropped from the table once down after 3 missed polls.",
                self.node_drops.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_node_leaves_total",
                "Nodes that said they left (DELETE /nodes/HOST:PORT).",
                self.leaves.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_rerouted_total",
                "Invocations a node refused before any byte reached it, sent to the router's next choice.",
                self.rerouted.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_node_aliases_total",
                "Nodes given twice under two addresses (the same node id), kept as one.",
                self.aliases.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_node_taken_out_total",
                "Nodes taken out at once: a refused connect, or a failed probe after a failed forward.",
                self.taken_out.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_connections_refused_total",
                "Client connections refused 503 because the most connections were open.",
                self.refused_connections.load(Ordering::Relaxed),
            ),
            (
                "faasched_gateway_polls_total",
                "Rounds of load polls of every node.",
                polls,
            ),
        ] {
            family(out, name, help, "counter");
            let _ = writeln!(out, "{name} {value}");
        }
    }
}

fn quantiles(h: &Histogram<u64>) -> serde_json::Value {
    serde_json::json!({
        "count": h.len(),
        "p50": h.value_at_quantile(0.5),
        "p90": h.value_at_quantile(0.9),
        "p99": h.value_at_quantile(0.99),
    })
}

/// A Prometheus summary of `h` (ns) in seconds.
fn summary(out: &mut String, name: &str, help: &str, h: &Histogram<u64>) {
    family(out, name, help, "summary");
    for q in QUANTILES {
        let _ = writeln!(
            out,
            "{name}{{quantile=\"{q}\"}} {}",
            h.value_at_quantile(q) as f64 / 1e9
        );
    }
    let sum: f64 = h
        .iter_recorded()
        .map(|v| v.value_iterated_to() as f64 * v.count_at_value() as f64)
        .sum();
    let _ = writeln!(out, "{name}_sum {}", sum / 1e9);
    let _ = writeln!(out, "{name}_count {}", h.len());
}
