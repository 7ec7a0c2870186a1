//! The ingress's own counters, shared by its connections and the replies
//! the backend calls on its own threads, and their Prometheus text.
//!
//! The invariant they expose: every accepted invocation is answered exactly
//! once, so `accepted = answered + in flight` in every scrape. Answers are
//! counted when the backend calls the reply, whether or not the client is
//! still there to read it.

use crate::wire::request::RouteKind;
use crate::wire::response::family;
use faasched_model::Nanos;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The latency histogram's upper bounds, ns, with their labels in seconds:
/// from 50 µs (a no-op through HTTP on loopback) to 10 s (past any CPU-time
/// limit), about three per decade.
const BUCKETS: [(Nanos, &str); 17] = [
    (50_000, "0.00005"),
    (100_000, "0.0001"),
    (250_000, "0.00025"),
    (500_000, "0.0005"),
    (1_000_000, "0.001"),
    (2_500_000, "0.0025"),
    (5_000_000, "0.005"),
    (10_000_000, "0.01"),
    (25_000_000, "0.025"),
    (50_000_000, "0.05"),
    (100_000_000, "0.1"),
    (250_000_000, "0.25"),
    (500_000_000, "0.5"),
    (1_000_000_000, "1"),
    (2_500_000_000, "2.5"),
    (5_000_000_000, "5"),
    (10_000_000_000, "10"),
];

/// The counters. Every one only grows; the in-flight gauge is derived.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: [AtomicU64; RouteKind::ALL.len()],
    /// Responses by status code and error kind (`ok` for none).
    responses: Mutex<BTreeMap<(u16, &'static str), u64>>,
    accepted: AtomicU64,
    answered: AtomicU64,
    malformed: AtomicU64,
    disconnects: AtomicU64,
    connections: AtomicU64,
    connection_errors: AtomicU64,
    accept_errors: AtomicU64,
    refused_connections: AtomicU64,
    deadlines_ignored: AtomicU64,
    /// Per bucket (not cumulative), the last one past every bound.
    latency: [AtomicU64; BUCKETS.len() + 1],
    latency_sum: AtomicU64,
    /// Set when the drain timeout closes connections: a request dropped
    /// then lost its answer to the shutdown, not to its client.
    cut: AtomicBool,
}

impl Metrics {
    /// Counts a request on `route`.
    pub fn request(&self, route: RouteKind) {
        let index = RouteKind::ALL
            .iter()
            .position(|&r| r == route)
            .unwrap_or(RouteKind::ALL.len() - 1);
        self.requests[index].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a response.
    pub fn response(&self, status: u16, kind: &'static str) {
        let mut responses = self
            .responses
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *responses.entry((status, kind)).or_default() += 1;
    }

    /// Counts an invocation handed to the backend: before the handing, so
    /// that an answer never outruns its acceptance.
    pub fn accepted(&self) {
        self.accepted.fetch_add(1, Ordering::SeqCst);
    }

    /// Counts an invocation's answer, `latency` ns after it was received.
    pub fn answered(&self, latency: Nanos) {
        let bucket = BUCKETS
            .iter()
            .position(|&(bound, _)| latency <= bound)
            .unwrap_or(BUCKETS.len());
        self.latency[bucket].fetch_add(1, Ordering::Relaxed);
        self.latency_sum.fetch_add(latency, Ordering::Relaxed);
        self.answered.fetch_add(1, Ordering::SeqCst);
    }

    /// Counts a request refused as malformed.
    pub fn malformed(&self) {
        self.malformed.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a client that left before its invocation's answer, unless the
    /// drain timeout is what dropped it.
    pub fn client_left(&self) {
        if !self.cut.load(Ordering::SeqCst) {
            self.disconnects.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts an accepted TCP connection.
    pub fn connection(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a connection that ended in an error (a request HTTP could not
    /// parse, a reset).
    pub fn connection_error(&self) {
        self.connection_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a failed `accept`.
    pub fn accept_error(&self) {
        self.accept_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a connection refused past the limit.
    pub fn refused_connection(&self) {
        self.refused_connections.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a deadline a client without the control token named, which
    /// the node's own replaced.
    pub fn deadline_ignored(&self) {
        self.deadlines_ignored.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks the drain timeout: the connections still open are cut.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    /// Invocations accepted and answered so far, read so that the first is
    /// never below the second.
    pub fn invocations(&self) -> (u64, u64) {
        let answered = self.answered.load(Ordering::SeqCst);
        let accepted = self.accepted.load(Ordering::SeqCst);
        (accepted, answered)
    }

    /// Appends the counters in Prometheus text format (version 0.0.4).
    pub fn render(&self, out: &mut String) {
        let counter = |out: &mut String, name: &str, help: &str, value: u64| {
            family(out, name, help, "counter");
            let _ = writeln!(out, "{name} {value}");
        };

        family(
            out,
            "faasched_ingress_requests_total",
            "HTTP requests received, by route (other: a path that is no route).",
            "counter",
        );
        for (route, count) in RouteKind::ALL.iter().zip(&self.requests) {
            let _ = writeln!(
                out,
                "faasched_ingress_requests_total{{route=\"{}\"}} {}",
                route.label(),
                count.load(Ordering::Relaxed)
            );
        }

        family(
            out,
            "faasched_ingress_responses_total",
            "HTTP responses sent, by status code and error kind (x-faasched-error; ok for none).",
            "counter",
        );
        let responses = self
            .responses
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        for ((code, kind), count) in responses {
            let _ = writeln!(
                out,
                "faasched_ingress_responses_total{{code=\"{code}\",kind=\"{kind}\"}} {count}"
            );
        }

        let (accepted, answered) = self.invocations();
        counter(
            out,
            "faasched_ingress_invocations_accepted_total",
            "Invocations handed to the backend.",
            accepted,
        );
        counter(
            out,
            "faasched_ingress_invocations_answered_total",
            "Invocations the backend answered (each accepted one exactly once), the client still there or not.",
            answered,
        );
        family(
            out,
            "faasched_ingress_invocations_in_flight",
            "Invocations accepted and not yet answered: accepted less answered.",
            "gauge",
        );
        let _ = writeln!(
            out,
            "faasched_ingress_invocations_in_flight {}",
            accepted - answered
        );

        family(
            out,
            "faasched_ingress_invocation_latency_seconds",
            "From the ingress's parse of an invocation to the backend's answer.",
            "histogram",
        );
        let mut cumulative = 0;
        for (i, count) in self.latency.iter().enumerate() {
            cumulative += count.load(Ordering::Relaxed);
            let le = BUCKETS.get(i).map_or("+Inf", |&(_, label)| label);
            let _ = writeln!(
                out,
                "faasched_ingress_invocation_latency_seconds_bucket{{le=\"{le}\"}} {cumulative}"
            );
        }
        let sum = self.latency_sum.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "faasched_ingress_invocation_latency_seconds_sum {}.{:09}",
            sum / 1_000_000_000,
            sum % 1_000_000_000
        );
        let _ = writeln!(
            out,
            "faasched_ingress_invocation_latency_seconds_count {cumulative}"
        );

        counter(
            out,
            "faasched_ingress_malformed_requests_total",
            "Requests the ingress refused before the backend saw them (4xx, x-faasched-error: bad-request).",
            self.malformed.load(Ordering::Relaxed),
        );
        counter(
            out,
            "faasched_ingress_client_disconnects_total",
            "Invocations whose client left before their answer (the answer is still counted, then dropped).",
            self.disconnects.load(Ordering::Relaxed),
        );
        counter(
            out,
            "faasched_ingress_connections_total",
            "TCP connections accepted.",
            self.connections.load(Ordering::Relaxed),
        );
        counter(
            out,
            "faasched_ingress_connection_errors_total",
            "Connections that ended in an error: bytes that are no HTTP/1.1 request (answered 400 by the HTTP layer), a reset, a header read timeout.",
            self.connection_errors.load(Ordering::Relaxed),
        );
        counter(
            out,
            "faasched_ingress_accept_errors_total",
            "Failed accepts (out of file descriptors, a connection aborted before it was accepted).",
            self.accept_errors.load(Ordering::Relaxed),
        );
        counter(
            out,
            "faasched_ingress_connections_refused_total",
            "Connections refused 503 because the most connections were open.",
            self.refused_connections.load(Ordering::Relaxed),
        );
        counter(
            out,
            "faasched_ingress_deadlines_ignored_total",
            "Invocations whose x-faasched-deadline-us came without the control token: the node's own deadline (--deadline) replaced it.",
            self.deadlines_ignored.load(Ordering::Relaxed),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_is_cumulative_and_counts_every_answer() {
        let metrics = Metrics::default();
        for latency in [40_000, 50_000, 50_001, 3_000_000, 20_000_000_000] {
            metrics.accepted();
            metrics.answered(latency);
        }
        metrics.accepted();
        let mut out = String::new();
        metrics.render(&mut out);
        let line = |name: &str| {
            out.lines()
                .find(|line| line.starts_with(name) && line[name.len()..].starts_with(' '))
                .unwrap_or_else(|| panic!("no {name} in\n{out}"))
                .rsplit(' ')
                .next()
                .unwrap()
                .to_owned()
        };
        assert_eq!(
            line("faasched_ingress_invocation_latency_seconds_bucket{le=\"0.00005\"}"),
            "2"
        );
        assert_eq!(
            line("faasched_ingress_invocation_latency_seconds_bucket{le=\"0.005\"}"),
            "4"
        );
        assert_eq!(
            line("faasched_ingress_invocation_latency_seconds_bucket{le=\"10\"}"),
            "4"
        );
        assert_eq!(
            line("faasched_ingress_invocation_latency_seconds_bucket{le=\"+Inf\"}"),
            "5"
        );
        assert_eq!(
            line("faasched_ingress_invocation_latency_seconds_count"),
            "5"
        );
        assert_eq!(
            line("faasched_ingress_invocation_latency_seconds_sum"),
            "20.003140001"
        );
        assert_eq!(line("faasched_ingress_invocations_accepted_total"), "6");
        assert_eq!(line("faasched_ingress_invocations_answered_total"), "5");
        assert_eq!(line("faasched_ingress_invocations_in_flight"), "1");
    }

    #[test]
    fn a_disconnect_after_the_drain_timeout_is_not_the_clients() {
        let metrics = Metrics::default();
        metrics.client_left();
        metrics.cut();
        metrics.client_left();
        assert_eq!(metrics.disconnects.load(Ordering::Relaxed), 1);
    }
}
