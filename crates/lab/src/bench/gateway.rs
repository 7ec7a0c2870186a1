//! `bench gateway`: what the cluster gateway adds to an invocation on
//! this machine. Two node runtimes (sledgescale, one dispatcher and one
//! worker each, as `bench runtime` runs them) serve on loopback, each
//! publishing its load; a client sends no-ops back to back on one
//! kept-alive connection, first to a node directly, then through a
//! gateway for each router, and the gateway measures its own decision
//! time and forwarding overhead (its time for an invocation less the
//! node's `x-faasched-runtime-us`).

use super::runtime::{Latency, http_sequence, node};
use super::{BUILD, release_only};
use crate::cluster::catalog::contenders;
use crate::cluster::live::{GatewaySpec, RunningGateway};
use crate::outln;
use anyhow::{Context, Result, anyhow};
use faasched_live::node::ingress::{self, Ingress, LoadConfig};
use faasched_live::wire::FUNCTION_HEADER;
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// The function every invocation through the gateway stands for: a
/// `functionbench` one (the gateway's table), while the node runs `noop`.
const LABEL: &str = "aes-encryption-0";

/// How often the nodes sample their load and the gateway polls it: 1 s,
/// so a run of some seconds sees several rounds.
const PERIOD: Duration = Duration::from_secs(1);

/// One router through the gateway.
#[derive(Clone, Debug, Serialize)]
pub struct Routed {
    /// The router.
    pub policy: String,
    /// The client's round trip through the gateway.
    pub round_trip: Latency,
    /// The router's decision alone, median, µs.
    pub decision_p50_us: f64,
    /// The gateway's time less the node's, median, µs.
    pub overhead_p50_us: f64,
    /// Invocations the gateway received and answered.
    pub received: u64,
    /// Of those, answered.
    pub answered: u64,
}

/// Everything measured, as `--json` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct Measured {
    /// Sequential no-ops per measurement (after a tenth as many to warm up).
    pub round_trips: u64,
    /// The client's round trip to a node directly.
    pub direct: Latency,
    /// Through the gateway, per router.
    pub routed: Vec<Routed>,
}

/// A server on a thread of its own, stopped by its sender.
struct Serving<T> {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    thread: JoinHandle<Result<T>>,
}

impl<T> Serving<T> {
    fn stop(self) -> Result<T> {
        let _ = self.stop.send(());
        self.thread
            .join()
            .map_err(|_| anyhow!("a server thread panicked"))?
    }
}

/// A node runtime with its ingress, publishing its load.
fn serve_node() -> Result<Serving<()>> {
    let runtime = Arc::new(node(false, Vec::new()).start()?);
    let tokio = ingress::runtime()?;
    let listener = tokio.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let mut ingress = Ingress::new(runtime);
        ingress.load_report(*LoadConfig::new().period(PERIOD));
        tokio.block_on(ingress.serve(listener, async {
            let _ = stopped.await;
        }))?;
        Ok(())
    });
    Ok(Serving { addr, stop, thread })
}

/// A gateway over `nodes` routing with `policy`.
fn serve_gateway(policy: &str, nodes: &[SocketAddr]) -> Result<RunningGateway> {
    RunningGateway::start(&GatewaySpec {
        nodes: nodes.iter().map(SocketAddr::to_string).collect(),
        policy: policy.to_owned(),
        workload: "functionbench".into(),
        period: PERIOD,
        seed: 1,
        drain: Duration::from_secs(10),
        forward_timeout: faasched_live::cluster::DEFAULT_FORWARD_TIMEOUT,
        deadline_factor: Some(faasched_live::cluster::DEFAULT_DEADLINE_FACTOR),
        time_scale: 1.0,
        front: Default::default(),
        max_response_bytes: faasched_live::cluster::DEFAULT_MAX_RESPONSE_BYTES,
        node_tls: None,
    })
}

/// Measures `round_trips` no-ops directly and through a gateway for each
/// of `policies`; `each` sees a router as it is done.
pub fn measure(
    round_trips: u64,
    policies: &[String],
    mut each: impl FnMut(&Routed) -> Result<()>,
    direct_done: impl FnOnce(&Latency) -> Result<()>,
) -> Result<Measured> {
    let nodes = [serve_node()?, serve_node()?];
    let addrs: Vec<SocketAddr> = nodes.iter().map(|n| n.addr).collect();
    let measured = (|| -> Result<Measured> {
        let noop = b"POST /invoke/noop HTTP/1.1\r\nhost: bench\r\ncontent-length: 0\r\n\r\n";
        let direct = Latency::of(http_sequence(addrs[0], noop, round_trips)?);
        direct_done(&direct)?;
        let through = format!(
            "POST /invoke/noop HTTP/1.1\r\nhost: bench\r\n{FUNCTION_HEADER}: {LABEL}\r\ncontent-length: 0\r\n\r\n"
        );
        let mut routed = Vec::with_capacity(policies.len());
        for policy in policies {
            let gateway = serve_gateway(policy, &addrs)?;
            let times = http_sequence(gateway.addr, through.as_bytes(), round_trips);
            let served = gateway
                .stop()
                .with_context(|| format!("the gateway under {policy}"))?;
            let r = Routed {
                policy: policy.clone(),
                round_trip: Latency::of(times?),
                decision_p50_us: served.decision_p50 as f64 / 1e3,
                overhead_p50_us: served.overhead_p50 as f64 / 1e3,
                received: served.received,
                answered: served.answered,
            };
            each(&r)?;
            routed.push(r);
        }
        Ok(Measured {
            round_trips,
            direct,
            routed,
        })
    })();
    for n in nodes {
        n.stop()?;
    }
    measured
}

/// What `faasched bench gateway` measures, and how it prints.
#[derive(Debug, Clone)]
pub struct Options {
    /// Sequential no-ops per measurement.
    pub round_trips: u64,
    /// The routers, each behind a gateway of its own.
    pub policies: Vec<String>,
    /// Print the results as JSON rather than a line each.
    pub json: bool,
}

/// Runs the bench ([`measure`]) in a release build and prints it.
pub fn run(o: Options) -> Result<()> {
    release_only("gateway")?;
    // Refuse an unknown router before starting anything.
    contenders(&o.policies)?;
    if !o.json {
        outln!(
            "{BUILD} build, 2 nodes of sledgescale 1 dispatcher x 1 worker, {} sequential no-ops each",
            o.round_trips
        )?;
    }
    let measured = measure(
        o.round_trips,
        &o.policies,
        |r| match o.json {
            true => Ok(()),
            false => outln!(
                "{:<14} via gateway  {}  decision p50 {:>5.2} us  overhead p50 {:>6.1} us  ({} received, {} answered)",
                r.policy,
                r.round_trip,
                r.decision_p50_us,
                r.overhead_p50_us,
                r.received,
                r.answered
            ),
        },
        |direct| match o.json {
            true => Ok(()),
            false => outln!("{:<14} to a node    {direct}", "direct"),
        },
    )?;
    if o.json {
        outln!("{}", serde_json::to_string_pretty(&measured)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench's whole path on real node runtimes: every no-op sent
    /// through each gateway is received and answered, the warm-up's
    /// included.
    #[test]
    fn every_no_op_through_each_gateway_is_answered() {
        let policies = ["ch-rlu".to_owned(), "least-loaded".to_owned()];
        let mut seen = Vec::new();
        let measured = measure(
            40,
            &policies,
            |r| {
                seen.push(r.policy.clone());
                Ok(())
            },
            |direct| {
                assert_eq!(direct.count, 40);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, policies);
        for r in &measured.routed {
            assert_eq!((r.received, r.answered, r.round_trip.count), (44, 44, 40));
            assert!(r.decision_p50_us > 0.0 && r.overhead_p50_us > 0.0, "{r:?}");
        }
    }
}
