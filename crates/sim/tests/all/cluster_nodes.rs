//! Servers run as nodes: the composed engine against each engine alone. A
//! cluster of one node server runs exactly as the node engine does on the
//! same requests; node servers whose mechanisms are free and whose policy
//! round-robins every core with a tiny quantum share their cores as the
//! processor-sharing servers do.

use crate::cluster::{Lru, by, cluster, inv, lru, profile, simulate, simulate_on, to_zero};
use crate::node::Hoarder;
use faasched_model::cluster::{
    Choice, FunctionProfile, Invocation, InvocationId, InvocationOutcome, KeepAlive, NodePlace,
    Route, ServerId,
};
use faasched_model::node::{
    Decision, Dispatch, Local, Order, Placement, Refusal, Request, RequestId, RequestInfo,
    WorkerId, Workers,
};
use faasched_model::{Function, FunctionId, MS, Nanos, Time, US};
use faasched_policy::node::{PreemptTest, Queues, Resume, Scan, Shinjuku, SledgeScale};
use faasched_sim::cluster::{
    ClusterConfig, ClusterError, ClusterStats, ColdStart, ConfigError, NodeServers, ServerShape,
    run_on,
};
use faasched_sim::node::{Costs, NodeConfig};
use rand::{Rng, SeedableRng};
use rand_distr::Exp;
use rand_pcg::Pcg64;
use std::cell::RefCell;
use std::convert::Infallible;
use std::rc::Rc;
use std::sync::Arc;

/// The deadline factor of these runs.
const FACTOR: f64 = 10.0;

/// `n` Poisson arrivals at `rate` per ms over `functions` functions (by id
/// in turn), each needing its function's warm time times an exponential
/// factor of mean 1; with the profiles, warm `(1 + f) × unit` and cold as
/// warm (so a cold start costs nothing and a node run can be fed the same
/// work).
pub(crate) fn workload(
    seed: u64,
    n: u64,
    rate: f64,
    functions: u32,
    unit: Nanos,
) -> (Vec<FunctionProfile>, Vec<Invocation>) {
    let profiles: Vec<FunctionProfile> = (0..functions)
        .map(|f| FunctionProfile {
            warm: (1 + u64::from(f)) * unit,
            cold: (1 + u64::from(f)) * unit,
            ..profile(f, 1, 0, 0)
        })
        .collect();
    let mut rng = Pcg64::seed_from_u64(seed);
    let gap = Exp::new(rate).unwrap();
    let size = Exp::new(1.0).unwrap();
    let mut t = 0.0f64;
    let invs = (0..n)
        .map(|i| {
            t += rng.sample(gap);
            let f = (i % u64::from(functions)) as u32;
            let work = (profiles[f as usize].warm as f64 * rng.sample(size)) as Nanos;
            Invocation {
                id: InvocationId(i),
                function: FunctionId(f),
                arrival: (t * MS as f64) as Time,
                work: work.max(1),
            }
        })
        .collect();
    (profiles, invs)
}

/// Runs `invs` on node servers of `node`'s shape under the policies
/// `policy` builds per dispatcher; the outcomes by id and the stats.
fn simulate_nodes<R: Route, P: Dispatch + 'static>(
    config: &ClusterConfig,
    router: &mut R,
    node: &NodeConfig,
    mut policy: impl FnMut() -> P,
    profiles: &[FunctionProfile],
    invs: Vec<Invocation>,
) -> Result<(Vec<InvocationOutcome>, ClusterStats), ClusterError<Infallible>> {
    let dispatchers = node.dispatchers;
    let nodes = NodeServers {
        config: node.clone(),
        deadline_factor: FACTOR,
        policies: |_| {
            (0..dispatchers)
                .map(|_| Box::new(policy()) as Box<dyn Dispatch>)
                .collect::<Vec<_>>()
        },
    };
    simulate_on(config, router, lru, nodes, profiles, invs)
}

fn sledgescale() -> SledgeScale {
    SledgeScale::new(Scan::Paper, PreemptTest::Paper)
}

fn shinjuku_any() -> Shinjuku {
    Shinjuku::new(Queues::Single, Resume::AnyWorker)
}

/// One server with memory for everything: every invocation runs as it
/// arrives, as a node request would.
pub(crate) fn one_server(cores: u32) -> ClusterConfig {
    cluster(1, cores, u32::MAX)
}

/// The node engine alone on the requests the invocations make.
fn node_alone<P: Dispatch>(
    node: &NodeConfig,
    mut policy: impl FnMut() -> P,
    profiles: &[FunctionProfile],
    invs: &[Invocation],
) -> (
    Vec<faasched_model::node::RequestOutcome>,
    faasched_sim::node::NodeStats,
) {
    let name: Arc<str> = Arc::from("f");
    let reqs: Vec<Request> = invs
        .iter()
        .map(|i| {
            let warm = profiles[i.function.0 as usize].warm;
            Request {
                id: RequestId(i.id.0),
                function: Function {
                    id: i.function,
                    name: Arc::clone(&name),
                },
                arrival: i.arrival,
                work: i.work,
                deadline: (warm as f64 * FACTOR) as Nanos,
                estimate: warm,
            }
        })
        .collect();
    let mut policies: Vec<Box<P>> = (0..node.dispatchers).map(|_| Box::new(policy())).collect();
    let mut out = Vec::new();
    let stats = faasched_sim::node::run(
        node,
        &mut policies,
        reqs.into_iter().map(Ok::<_, Infallible>),
        |o| out.push(o),
    )
    .unwrap();
    out.sort_by_key(|o| o.info.id);
    (out, stats)
}

/// A cluster of one node server runs every request as the node engine
/// does: the same finish, dispatcher, worker, first run and preemptions
/// for each, and the same node stats.
fn one_server_is_the_node<P: Dispatch + 'static>(
    node: &NodeConfig,
    policy: impl FnMut() -> P + Clone,
) {
    let cores = (node.dispatchers * node.workers) as u32;
    // About 80% of the cores busy: queues form and policies preempt.
    let (profiles, invs) = workload(3, 3_000, 0.8 * f64::from(cores) / 2.5, 4, MS);
    let (alone, alone_stats) = node_alone(node, policy.clone(), &profiles, &invs);
    let (out, stats) = simulate_nodes(
        &one_server(cores),
        &mut to_zero(),
        node,
        policy,
        &profiles,
        invs,
    )
    .unwrap();
    assert_eq!(out.len(), alone.len());
    for (o, a) in out.iter().zip(&alone) {
        assert_eq!(o.finish, a.finish, "invocation {}", o.info.id.0);
        assert_eq!(o.first_run, a.first_run, "invocation {}", o.info.id.0);
        let place = o.inside.and_then(|i| i.node().copied()).unwrap();
        assert_eq!(
            place,
            NodePlace {
                dispatcher: a.dispatcher,
                worker: a.worker,
                preemptions: a.preemptions,
                missed: a.missed(),
            },
            "invocation {}",
            o.info.id.0
        );
    }
    let node_stats = stats.servers[0]
        .inside
        .as_ref()
        .and_then(|i| i.node())
        .cloned()
        .unwrap();
    assert_eq!(node_stats, alone_stats);
    assert_eq!(
        stats.servers[0].busy,
        alone_stats.worker_busy.iter().sum::<Nanos>()
    );
    assert_eq!((stats.finished, stats.dropped()), (alone_stats.finished, 0));
}

#[test]
fn one_node_server_is_the_node_engine_under_sledgescale() {
    one_server_is_the_node(&NodeConfig::new(1, 6), sledgescale);
}

#[test]
fn one_node_server_is_the_node_engine_with_two_dispatchers_under_shinjuku() {
    one_server_is_the_node(&NodeConfig::new(2, 3), || {
        Shinjuku::new(Queues::Single, Resume::SameWorker)
    });
}

#[test]
fn free_round_robin_nodes_share_their_cores_as_processor_sharing_does() {
    // Four servers of four cores at 70% load, invocations routed by id in
    // turn; works of 0.5–2 ms (mean 1.25 ms) against Shinjuku's 15 µs
    // quantum with free mechanisms: every core round-robins what waits, as
    // processor sharing serves it continuously.
    let (profiles, invs) = workload(7, 8_000, 0.7 * 16.0 / 1.25, 4, 500 * US);
    let config = cluster(4, 4, u32::MAX);
    let work: Nanos = invs.iter().map(|i| i.work).sum();
    let mut router = by(|inv, _| Choice::Server(ServerId((inv.id.0 % 4) as u32)));
    let keep = |_| -> Box<dyn KeepAlive> { Box::new(Lru::default()) };
    let (ps, ps_stats) = simulate(&config, &mut router, keep, &profiles, invs.clone()).unwrap();
    let mut router = by(|inv, _| Choice::Server(ServerId((inv.id.0 % 4) as u32)));
    let node = NodeConfig {
        costs: Costs::zero(),
        ..NodeConfig::new(1, 4)
    };
    let (nodes, node_stats) =
        simulate_nodes(&config, &mut router, &node, shinjuku_any, &profiles, invs).unwrap();
    let mean = |out: &[InvocationOutcome]| {
        out.iter().map(|o| o.latency().unwrap() as f64).sum::<f64>() / out.len() as f64
    };
    let (a, b) = (mean(&ps), mean(&nodes));
    assert!((b / a - 1.0).abs() < 0.01, "ps {a} ns, nodes {b} ns");
    // Every core-nanosecond of work, and nothing else, on both.
    let busy = |s: &ClusterStats| s.servers.iter().map(|s| s.busy).sum::<Nanos>();
    assert_eq!(busy(&node_stats), work);
    assert!(
        busy(&ps_stats).abs_diff(work) <= 8_000,
        "{}",
        busy(&ps_stats)
    );
    assert!(node_stats.servers.iter().all(|s| {
        s.inside
            .as_ref()
            .and_then(|i| i.node())
            .unwrap()
            .preemptions
            > 0
    }));
    assert_eq!(node_stats.finished, ps_stats.finished);
    // A node's worker takes a container at its first pick, up to a few
    // quanta after the arrival processor sharing takes one at: now and
    // then a container freed meanwhile serves it warm.
    let (cold_nodes, cold_ps) = (node_stats.cold_starts(), ps_stats.cold_starts());
    assert!(
        cold_nodes <= cold_ps && cold_ps - cold_nodes <= cold_ps / 100,
        "nodes {cold_nodes} cold starts, ps {cold_ps}"
    );
}

/// Drops every request its estimate says exceeds `limit`, and queues the
/// rest on the least loaded worker; records the estimates it is shown
/// where the test reads them after the run.
struct DropOver {
    limit: Nanos,
    seen: Rc<RefCell<Vec<Nanos>>>,
}

impl Dispatch for DropOver {
    fn name(&self) -> &str {
        "drop-over"
    }
    fn local(&self) -> Local {
        Local {
            order: Order::Fifo,
            quantum: None,
        }
    }
    fn on_request(&mut self, _now: Time, req: &RequestInfo, workers: &Workers) -> Decision {
        self.seen.borrow_mut().push(req.estimate);
        let placement = if req.estimate > self.limit {
            Placement::Drop(Refusal::Unplaced)
        } else {
            let w = (0..workers.len() as u32)
                .min_by_key(|&w| {
                    let w = workers.get(WorkerId(w));
                    w.queued() + usize::from(w.running().is_some())
                })
                .unwrap_or(0);
            Placement::Worker {
                worker: WorkerId(w),
                preempt: false,
            }
        };
        Decision {
            placement,
            scanned: workers.len() as u32,
        }
    }
}

/// One server of `workers` workers (one dispatcher, free mechanisms) and
/// `memory_mb`, under `DropOver` at `limit`, serving `invs` of `p`: the
/// outcomes by id, the estimates the policy saw, and the run's stats.
fn run_drop_over(
    cold_start: ColdStart,
    workers: usize,
    memory_mb: u32,
    limit: Nanos,
    p: &[FunctionProfile],
    invs: Vec<Invocation>,
) -> (Vec<InvocationOutcome>, Vec<Nanos>, ClusterStats) {
    let config = ClusterConfig {
        cold_start,
        ..cluster(1, workers as u32, memory_mb)
    };
    let seen = Rc::new(RefCell::new(Vec::new()));
    let shared = seen.clone();
    let nodes = NodeServers {
        config: NodeConfig {
            costs: Costs::zero(),
            ..NodeConfig::new(1, workers)
        },
        deadline_factor: FACTOR,
        policies: |_| {
            vec![Box::new(DropOver {
                limit,
                seen: Rc::clone(&shared),
            })]
        },
    };
    let mut out = Vec::new();
    let stats = run_on(
        &config,
        &mut to_zero(),
        lru,
        nodes,
        p,
        invs.into_iter().map(Ok::<_, Infallible>),
        |o| out.push(o),
    )
    .unwrap();
    out.sort_by_key(|o: &InvocationOutcome| o.info.id);
    let seen = seen.borrow().clone();
    (out, seen, stats)
}

#[test]
fn a_node_worker_takes_the_container_when_it_first_picks_the_invocation() {
    // Function 0: warm 10 ms, cold 30 ms; one worker. The first
    // invocation (0 ms) starts cold: its 20 ms start, then its 10 ms, to
    // 30 ms. The second (1 ms) waits on the worker holding no container
    // and takes the first's, warm, at 30 ms: done at 40 ms. Either kind of
    // cold start: the worker waits it out. The policy is shown both
    // estimated warm.
    let p = [profile(0, 128, 10, 30)];
    for cold_start in [ColdStart::Cpu, ColdStart::Wall] {
        let invs = vec![inv(0, 0, 0, 10), inv(1, 0, 1, 10)];
        let (out, seen, stats) = run_drop_over(cold_start, 1, 1024, Nanos::MAX, &p, invs);
        assert_eq!(seen, [10 * MS, 10 * MS], "{cold_start:?}");
        let got: Vec<_> = out
            .iter()
            .map(|o| (o.cold, o.first_run, o.finish))
            .collect();
        assert_eq!(
            got,
            [
                (true, Some(0), Some(30 * MS)),
                (false, Some(30 * MS), Some(40 * MS))
            ],
            "{cold_start:?}"
        );
        let s = &stats.servers[0];
        assert_eq!((s.cold_starts, s.warm_starts, s.waits), (1, 1, 0));
        assert_eq!(stats.dropped(), 0);
    }
}

#[test]
fn a_node_worker_refuses_an_invocation_whose_memory_running_ones_hold() {
    // 128 MB, two workers. The first invocation (function 0, 0 ms) runs
    // in a new container of all of it; the second (function 1, 1 ms),
    // picked at once by the other worker, finds that memory held by a
    // running invocation: refused, dropped for memory on its server. The
    // third (function 1, 100 ms) evicts the first's idle container and
    // starts cold: its 20 ms start and 10 ms, to 130 ms.
    let p = [profile(0, 128, 10, 30), profile(1, 128, 10, 30)];
    let invs = vec![inv(0, 0, 0, 10), inv(1, 1, 1, 10), inv(2, 1, 100, 10)];
    let (out, _, stats) = run_drop_over(ColdStart::Cpu, 2, 128, Nanos::MAX, &p, invs);
    let got: Vec<_> = out
        .iter()
        .map(|o| (o.server, o.first_run, o.finish))
        .collect();
    assert_eq!(
        got,
        [
            (Some(ServerId(0)), Some(0), Some(30 * MS)),
            (Some(ServerId(0)), None, None),
            (Some(ServerId(0)), Some(100 * MS), Some(130 * MS))
        ]
    );
    assert_eq!((stats.dropped_for_memory, stats.dropped_by_server), (1, 0));
    let s = &stats.servers[0];
    assert_eq!(
        (s.drops, s.node_drops, s.evictions, s.cold_starts),
        (1, 0, 1, 2)
    );
    let node = s.inside.as_ref().and_then(|i| i.node()).unwrap();
    assert_eq!((node.finished, node.dropped), (2, 1));
}

#[test]
fn a_request_its_node_policy_drops_holds_no_container() {
    // Estimated 10 ms against a limit of 5 ms: dropped on its server
    // before any worker picks it, so no container is started for it.
    let p = [profile(0, 128, 10, 30)];
    let (out, seen, stats) =
        run_drop_over(ColdStart::Cpu, 2, 1024, 5 * MS, &p, vec![inv(0, 0, 0, 10)]);
    assert_eq!(seen, [10 * MS]);
    assert_eq!((out[0].server, out[0].finish), (Some(ServerId(0)), None));
    assert!(out[0].inside.unwrap().node().unwrap().missed);
    assert_eq!(
        (stats.dropped_by_server, stats.servers[0].node_drops),
        (1, 1)
    );
    assert_eq!(stats.cold_starts(), 0);
}

#[test]
fn node_servers_run_deterministically() {
    let (profiles, invs) = workload(11, 2_000, 4.0, 8, MS);
    let config = cluster(3, 6, 4096);
    let run = || {
        let mut router = by(|inv, _| Choice::Server(ServerId((inv.id.0 % 3) as u32)));
        simulate_nodes(
            &config,
            &mut router,
            &NodeConfig::new(1, 6),
            sledgescale,
            &profiles,
            invs.clone(),
        )
        .unwrap()
    };
    let (a, sa) = run();
    let (b, sb) = run();
    assert_eq!(a, b);
    assert_eq!(sa, sb);
    assert_eq!(sa.finished, 2_000);
    assert!(a.iter().all(|o| {
        o.first_run
            .is_some_and(|run| run >= o.info.arrival && o.finish >= Some(run))
            && o.inside.is_some_and(|i| i.node().is_some())
    }));
}

/// The error of running one invocation on node servers as given.
fn node_error(
    config: &ClusterConfig,
    node: NodeConfig,
    deadline_factor: f64,
    policies: usize,
) -> ClusterError<Infallible> {
    let p = [profile(0, 128, 10, 10)];
    let nodes = NodeServers {
        config: node,
        deadline_factor,
        policies: |_| {
            (0..policies)
                .map(|_| Box::new(sledgescale()) as Box<dyn Dispatch>)
                .collect::<Vec<_>>()
        },
    };
    run_on(
        config,
        &mut to_zero(),
        lru,
        nodes,
        &p,
        [Ok::<_, Infallible>(inv(0, 0, 0, 10))],
        |_| {},
    )
    .unwrap_err()
}

#[test]
fn node_servers_that_do_not_fit_the_cluster_are_named() {
    let e = node_error(&cluster(2, 8, 1024), NodeConfig::new(1, 6), FACTOR, 1);
    assert!(matches!(
        e,
        ClusterError::Config(ConfigError::Server(ServerShape::Cores { cores: 8, .. }))
    ));
    assert!(e.to_string().contains("1 dispatchers × 6 workers"), "{e}");
    let contended = ClusterConfig {
        contention: 0.1,
        ..cluster(2, 6, 1024)
    };
    let e = node_error(&contended, NodeConfig::new(1, 6), FACTOR, 1);
    assert!(e.to_string().contains("contention"), "{e}");
    for k in [0.0, -1.0, f64::NAN, 1e9] {
        let e = node_error(&cluster(2, 6, 1024), NodeConfig::new(1, 6), k, 1);
        assert!(e.to_string().contains("deadline factor"), "{k}: {e}");
    }
    let e = node_error(&cluster(2, 6, 1024), NodeConfig::new(2, 3), FACTOR, 1);
    assert!(
        matches!(
            e,
            ClusterError::Config(ConfigError::Server(ServerShape::Node(_)))
        ),
        "{e}"
    );
}

#[test]
fn a_node_policy_that_holds_work_forever_is_named_with_its_server() {
    let p = [profile(0, 128, 10, 10)];
    let nodes = NodeServers {
        config: NodeConfig::new(1, 2),
        deadline_factor: FACTOR,
        policies: |_| vec![Box::new(Hoarder) as Box<dyn Dispatch>],
    };
    let mut router = by(|_, _| Choice::Server(ServerId(1)));
    let e = run_on(
        &cluster(2, 2, 1024),
        &mut router,
        lru,
        nodes,
        &p,
        [Ok::<_, Infallible>(inv(0, 0, 0, 10))],
        |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            ClusterError::Server {
                server: ServerId(1),
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().starts_with("server 1: policy hoarder"), "{e}");
}
