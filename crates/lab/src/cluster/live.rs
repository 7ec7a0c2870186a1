//! The cluster level, live: the gateway in front of several node runtimes
//! ([`crate::node::live::serve`], which publish their loads), routing with
//! a router of the catalogue over a workload's function table.

use super::catalog::contenders;
use super::run::{FUNCTIONBENCH, FUNCTIONBENCH_BURSTS, FUNCTIONBENCH_COPIES, FUNCTIONBENCH_RISING};
use anyhow::{Context, Result, bail};
use faasched_live::cluster::{Gateway, GatewayConfig, GatewayServed};
use faasched_live::http::FrontConfig;
use faasched_live::node::ingress::{self, StopSignal};
use faasched_live::tls::ClientTls;
use faasched_model::cluster::FunctionProfile;
use faasched_workload::cluster::FunctionTable;
use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// A gateway to run: its nodes, router and workload.
#[derive(Clone, Debug)]
pub struct GatewaySpec {
    /// The nodes, `HOST:PORT` each.
    pub nodes: Vec<String>,
    /// The router, as the catalogue names it.
    pub policy: String,
    /// The workload whose function table gives each request's profile.
    pub workload: String,
    /// How often the nodes' loads are polled.
    pub period: Duration,
    /// The router's seed.
    pub seed: u64,
    /// How long a shutdown waits for the requests in flight.
    pub drain: Duration,
    /// How long an invocation waits for its node's answer.
    pub forward_timeout: Duration,
    /// An invocation that names a deadline waits at most this many times
    /// it, where that is shorter.
    pub deadline_factor: Option<u32>,
    /// The function table's times multiplied by this, as the nodes' are.
    pub time_scale: f64,
    /// Its tokens, connections, a body's pace and TLS.
    pub front: FrontConfig,
    /// The largest node answer passed on.
    pub max_response_bytes: usize,
    /// Nodes are spoken to under TLS, checked against this CA.
    pub node_tls: Option<ClientTls>,
}

/// What a served gateway did before it stopped.
#[derive(Debug)]
pub struct GatewayRun {
    /// Its counts and timings.
    pub served: GatewayServed,
    /// The signal that stopped it.
    pub signal: Option<StopSignal>,
}

/// The function table of a live cluster's `workload`: the `functionbench`
/// workloads' ten copies of each CH-RLU Table 1 function
/// (`aes-encryption-0` .. `aes-encryption-9`, ...), as the simulator runs
/// them. What the gateway routes by and the nodes keep containers of.
/// Errs naming the workloads it knows.
pub fn function_table(workload: &str) -> Result<FunctionTable> {
    if ![FUNCTIONBENCH, FUNCTIONBENCH_BURSTS, FUNCTIONBENCH_RISING].contains(&workload) {
        bail!(
            "unknown live cluster workload `{workload}`; there are {FUNCTIONBENCH}, \
             {FUNCTIONBENCH_BURSTS} and {FUNCTIONBENCH_RISING} (their function table)"
        );
    }
    Ok(FunctionTable::functionbench().copies(FUNCTIONBENCH_COPIES)?)
}

/// The CPU limit a node of `workload` at `time_scale` gives one request,
/// ms: twice the table's longest scaled warm time (a warm run's spin with
/// room for preemption and a slow machine), and never below the node's
/// own default of 1 s. Without it, a scale that makes a function's warm
/// time longer than a second (video encoding at 0.1) would have every
/// call of it stopped as a runaway.
pub fn cpu_limit_ms(workload: &str, time_scale: f64) -> Result<f64> {
    let table = function_table(workload)?
        .scaled(time_scale)
        .context("the time scale")?;
    let longest = table.profiles().iter().map(|p| p.warm).max().unwrap_or(0);
    Ok((2.0 * longest as f64 / 1e6).max(1_000.0))
}

/// The functions a gateway knows for `workload`, by name
/// ([`function_table`]'s, times multiplied by `time_scale`).
pub fn gateway_functions(
    workload: &str,
    time_scale: f64,
) -> Result<Vec<(String, FunctionProfile)>> {
    Ok(function_table(workload)?
        .scaled(time_scale)
        .context("the time scale")?
        .iter()
        .map(|(f, p)| (f.name.to_string(), *p))
        .collect())
}

impl GatewaySpec {
    /// The gateway, its router built from the catalogue.
    pub fn build(&self) -> Result<Gateway> {
        let [contender] = &contenders(std::slice::from_ref(&self.policy))?[..] else {
            bail!("one cluster policy at a time");
        };
        if contender.keep_alive.is_some() {
            bail!(
                "--policy {}: the gateway takes a router alone; keep-alive is the nodes'",
                self.policy
            );
        }
        let router = contender.router.build(self.seed)?;
        let mut config = GatewayConfig::new(self.nodes.clone());
        config
            .period(self.period)
            .drain_timeout(self.drain)
            .forward_timeout(self.forward_timeout)
            .deadline_factor(self.deadline_factor)
            .front(self.front.clone())
            .max_response_bytes(self.max_response_bytes)
            .node_tls(self.node_tls.clone());
        Ok(Gateway::new(
            &config,
            router,
            gateway_functions(&self.workload, self.time_scale)?,
        )?)
    }
}

/// Serves the gateway `spec` describes on `listen` until SIGTERM or
/// SIGINT, then drains and stops; `ready` learns the address once it
/// listens (after the first poll of the nodes).
pub fn serve_gateway(
    spec: &GatewaySpec,
    listen: &str,
    ready: impl FnOnce(SocketAddr),
) -> Result<GatewayRun> {
    let gateway = spec.build()?;
    let tokio = ingress::runtime().context("the gateway's runtime")?;
    tokio.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("cannot listen on {listen}"))?;
        ready(listener.local_addr()?);
        let stop = ingress::shutdown_signal().context("the stop signals")?;
        let mut signal = None;
        let served = gateway
            .serve(listener, async {
                signal = Some(stop.await);
            })
            .await
            .context("serving")?;
        Ok(GatewayRun { served, signal })
    })
}

/// A gateway serving on a thread of its own, on a free loopback port,
/// until [`RunningGateway::stop`].
pub struct RunningGateway {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: oneshot::Sender<()>,
    thread: JoinHandle<Result<GatewayServed>>,
}

impl RunningGateway {
    /// Starts the gateway `spec` describes (it polls its nodes once before
    /// it listens).
    pub fn start(spec: &GatewaySpec) -> Result<RunningGateway> {
        let gateway = spec.build()?;
        let tokio = ingress::runtime().context("the gateway's runtime")?;
        let listener = tokio.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            Ok(tokio.block_on(gateway.serve(listener, async {
                let _ = stopped.await;
            }))?)
        });
        Ok(RunningGateway { addr, stop, thread })
    }

    /// Stops it (it answers what it read) and says what it did.
    pub fn stop(self) -> Result<GatewayServed> {
        let _ = self.stop.send(());
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("the gateway's thread panicked"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodes_cpu_limit_lets_the_longest_function_run_twice_over() {
        // sklearn-regression, 53.57 s warm: 535.7 ms at 0.01, 5.357 s at 0.1.
        assert!((cpu_limit_ms("functionbench", 0.01).unwrap() - 1_071.4).abs() < 1e-9);
        assert!((cpu_limit_ms("functionbench-rising", 0.1).unwrap() - 10_714.0).abs() < 1e-9);
        // Never below the node's default.
        assert_eq!(cpu_limit_ms("functionbench", 0.001).unwrap(), 1_000.0);
        assert!(cpu_limit_ms("nope", 0.01).is_err());
    }

    #[test]
    fn the_functionbench_table_is_the_simulators_and_others_are_refused() {
        let functions = gateway_functions("functionbench", 1.0).unwrap();
        assert_eq!(functions.len(), 80);
        let (name, p) = &functions[50];
        assert_eq!(name, "aes-encryption-0");
        assert_eq!(
            (p.memory_mb, p.warm, p.cold),
            (256, 587_000_000, 2_064_000_000)
        );
        let e = gateway_functions("azure-functions", 1.0)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("azure-functions") && e.contains("functionbench"),
            "{e}"
        );
        let spec = GatewaySpec {
            nodes: vec!["127.0.0.1:1".into()],
            policy: "ch-rlu:ttl".into(),
            workload: "functionbench".into(),
            period: Duration::from_secs(5),
            seed: 0,
            drain: Duration::from_secs(1),
            forward_timeout: Duration::from_secs(60),
            deadline_factor: Some(faasched_live::cluster::DEFAULT_DEADLINE_FACTOR),
            time_scale: 1.0,
            front: Default::default(),
            max_response_bytes: faasched_live::cluster::DEFAULT_MAX_RESPONSE_BYTES,
            node_tls: None,
        };
        assert!(spec.build().is_err());
        let built = GatewaySpec {
            policy: "ch-rlu".into(),
            ..spec.clone()
        };
        assert!(built.build().is_ok());
        let bad = GatewaySpec {
            nodes: vec!["nowhere".into()],
            ..built
        };
        assert!(bad.build().unwrap_err().to_string().contains("nowhere"));
    }
}
