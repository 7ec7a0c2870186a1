//! A cluster run, live, once per router: fresh nodes ([`Nodes`]), a
//! gateway with the router in front ([`RunningGateway`]), CH-RLU's
//! clients against it ([`LiveLoadSpec`]), then everything stopped before
//! the next router's run, so each router starts from cold nodes. Each
//! router's row takes its `load_variance` from its gateway's polls.

use super::live::{GatewaySpec, RunningGateway};
use super::load::{LiveLoad, LiveLoadSpec};
use super::up::Nodes;
use anyhow::{Context, Result};
use std::time::Duration;

/// What a replay runs: the routers, the nodes and what drives them.
#[derive(Clone, Debug)]
pub struct ReplaySpec {
    /// The routers, one run each, in order.
    pub routers: Vec<String>,
    /// Node processes per run.
    pub nodes: u32,
    /// Cores per node.
    pub cores_per_node: u32,
    /// Workers per node, over its cores.
    pub workers_per_node: u32,
    /// What each `node serve` is given beyond its address, workers and
    /// CPUs (`--functions`, `--time-scale`, ...).
    pub node_args: Vec<String>,
    /// The gateway; its nodes and router are set per run.
    pub gateway: GatewaySpec,
    /// The clients; their target and label are set per run.
    pub load: LiveLoadSpec,
}

/// Runs every router of `spec` in turn, calling `each` with a router's
/// load once its run is over; stops early (returning what was run) when
/// `stop` says so.
pub fn replay(
    spec: &ReplaySpec,
    stop: &dyn Fn() -> bool,
    mut each: impl FnMut(&LiveLoad),
) -> Result<Vec<LiveLoad>> {
    let mut loads = Vec::new();
    for router in &spec.routers {
        if stop() {
            break;
        }
        let nodes = Nodes::start(
            spec.nodes,
            spec.cores_per_node,
            spec.workers_per_node,
            &spec.node_args,
        )
        .with_context(|| format!("{router}: starting the nodes"))?;
        let gateway = RunningGateway::start(&GatewaySpec {
            nodes: nodes.addrs().iter().map(|a| a.to_string()).collect(),
            policy: router.clone(),
            ..spec.gateway.clone()
        })
        .with_context(|| format!("{router}: starting the gateway"))?;
        let load = LiveLoadSpec {
            target: gateway.addr.to_string(),
            label: router.clone(),
            ..spec.load.clone()
        }
        .run(stop);
        let served = gateway.stop();
        nodes.stop(spec.gateway.drain.max(Duration::from_secs(1)));
        let mut load = load.with_context(|| format!("{router}: the clients"))?;
        let served = served.with_context(|| format!("{router}: the gateway"))?;
        // What the clients cannot measure, the gateway did: the spread of
        // the loads its nodes reported, as the simulator's rows have it.
        load.row.load_variance = served.load_variance;
        each(&load);
        loads.push(load);
    }
    Ok(loads)
}
