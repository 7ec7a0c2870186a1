//! Tiny dispatch policies and helpers for the node engine's tests, and its
//! error cases.

use faasched_model::node::{
    Decision, Dispatch, Local, Order, Placement, Refusal, Request, RequestId, RequestInfo,
    RequestOutcome, WorkerId, Workers,
};
use faasched_model::{Function, FunctionId, Nanos, Time, US};
use faasched_sim::node::{ConfigError, Costs, NodeConfig, NodeError, NodeStats, run};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

/// A request of function `f` arriving at `at` with `work`, deadline and
/// estimate as given.
pub fn request(id: u64, f: u32, at: Time, work: Nanos, deadline: Nanos) -> Request {
    Request {
        id: RequestId(id),
        function: Function {
            id: FunctionId(f),
            name: Arc::from(format!("f{f}")),
        },
        arrival: at,
        work,
        deadline,
        estimate: work,
    }
}

/// A request of function 0 at `at_us` with `work_us` and a deadline 10× its
/// work, all in µs.
pub fn us(id: u64, at_us: u64, work_us: u64) -> Request {
    request(id, 0, at_us * US, work_us * US, 10 * work_us * US)
}

/// Runs `reqs` and returns the outcomes in the order the sink got them,
/// and the stats.
pub fn simulate_in_order<P: Dispatch>(
    config: &NodeConfig,
    policies: Vec<P>,
    reqs: Vec<Request>,
) -> Result<(Vec<RequestOutcome>, NodeStats), NodeError<Infallible>> {
    let mut boxes: Vec<Box<P>> = policies.into_iter().map(Box::new).collect();
    let mut out = Vec::new();
    let stats = run(
        config,
        &mut boxes,
        reqs.into_iter().map(Ok::<_, Infallible>),
        |o| out.push(o),
    )?;
    Ok((out, stats))
}

/// Runs `reqs` and returns the outcomes by id, and the stats.
pub fn simulate<P: Dispatch>(
    config: &NodeConfig,
    policies: Vec<P>,
    reqs: Vec<Request>,
) -> (Vec<RequestOutcome>, NodeStats) {
    let (mut out, stats) = simulate_in_order(config, policies, reqs).unwrap();
    out.sort_by_key(|o| o.info.id);
    (out, stats)
}

/// Finish instants in µs, by id (`None` for a drop).
pub fn finishes_us(out: &[RequestOutcome]) -> Vec<Option<u64>> {
    out.iter().map(|o| o.finish.map(|f| f / US)).collect()
}

/// A config of `workers` workers under one dispatcher with `costs`.
pub fn node(workers: usize, costs: Costs) -> NodeConfig {
    NodeConfig {
        costs,
        ..NodeConfig::new(1, workers)
    }
}

/// Early binding to a fixed worker, preempting or not, reporting `scanned`.
pub struct ToWorker {
    pub worker: u32,
    pub preempt: bool,
    pub local: Local,
    pub scanned: u32,
}

impl ToWorker {
    /// Everything to worker 0, no preemption, run by `order`.
    pub fn zero(order: Order) -> ToWorker {
        ToWorker {
            worker: 0,
            preempt: false,
            local: Local {
                order,
                quantum: None,
            },
            scanned: 1,
        }
    }
}

impl Dispatch for ToWorker {
    fn name(&self) -> &str {
        "to-worker"
    }
    fn local(&self) -> Local {
        self.local
    }
    fn on_request(&mut self, _now: Time, _req: &RequestInfo, _workers: &Workers) -> Decision {
        Decision {
            placement: Placement::Worker {
                worker: WorkerId(self.worker),
                preempt: self.preempt,
            },
            scanned: self.scanned,
        }
    }
}

/// Early binding to each worker in turn.
pub struct RoundRobin {
    pub next: u32,
    pub local: Local,
    pub scanned: u32,
}

impl Dispatch for RoundRobin {
    fn name(&self) -> &str {
        "round-robin"
    }
    fn local(&self) -> Local {
        self.local
    }
    fn on_request(&mut self, _now: Time, _req: &RequestInfo, workers: &Workers) -> Decision {
        let w = self.next % workers.len() as u32;
        self.next += 1;
        Decision {
            placement: Placement::Worker {
                worker: WorkerId(w),
                preempt: false,
            },
            scanned: self.scanned,
        }
    }
}

/// Late binding: one central FIFO queue; an idle worker pulls up to
/// `batch`; with `quantum`, a request that ran that long goes back to the
/// tail when something waits (Shinjuku's way), or with `pin` to the queue
/// of the worker it left.
pub struct Central {
    pub queue: VecDeque<RequestId>,
    pub batch: usize,
    pub local: Local,
    pub quantum: Option<Nanos>,
    pub returned: Vec<RequestId>,
    /// A request taken back resumes on the worker it left.
    pub pin: bool,
}

impl Central {
    /// Pulls of `batch`, local FIFO without quantum.
    pub fn new(batch: usize) -> Central {
        Central {
            queue: VecDeque::new(),
            batch,
            local: Local {
                order: Order::Fifo,
                quantum: None,
            },
            quantum: None,
            returned: Vec::new(),
            pin: false,
        }
    }
}

impl Dispatch for Central {
    fn name(&self) -> &str {
        "central"
    }
    fn local(&self) -> Local {
        self.local
    }
    fn on_request(&mut self, _now: Time, req: &RequestInfo, _workers: &Workers) -> Decision {
        self.queue.push_back(req.id);
        Decision {
            placement: Placement::Hold,
            scanned: 0,
        }
    }
    fn on_idle(&mut self, _now: Time, _w: WorkerId, _ws: &Workers, out: &mut Vec<RequestId>) {
        let n = self.batch.min(self.queue.len());
        out.extend(self.queue.drain(..n));
    }
    fn quantum(&self) -> Option<Nanos> {
        self.quantum
    }
    fn on_quantum(&mut self, _now: Time, _w: WorkerId, _ws: &Workers, out: &mut Vec<RequestId>) {
        out.extend(self.queue.pop_front());
    }
    fn on_returned(&mut self, _now: Time, req: &RequestInfo, w: WorkerId) -> Option<WorkerId> {
        self.returned.push(req.id);
        if self.pin {
            return Some(w);
        }
        self.queue.push_back(req.id);
        None
    }
}

/// Drops every request of an odd id, sends the rest to worker 0; counts the
/// outcomes it is told of.
#[derive(Default)]
pub struct DropOdd {
    pub finished: Vec<RequestId>,
}

impl Dispatch for DropOdd {
    fn name(&self) -> &str {
        "drop-odd"
    }
    fn local(&self) -> Local {
        Local {
            order: Order::Fifo,
            quantum: None,
        }
    }
    fn on_request(&mut self, _now: Time, req: &RequestInfo, _workers: &Workers) -> Decision {
        let placement = if req.id.0 % 2 == 1 {
            Placement::Drop(Refusal::Unplaced)
        } else {
            Placement::Worker {
                worker: WorkerId(0),
                preempt: false,
            }
        };
        Decision {
            placement,
            scanned: 1,
        }
    }
    fn on_finish(&mut self, _now: Time, outcome: &RequestOutcome) {
        self.finished.push(outcome.info.id);
    }
}

/// Records the estimate it is shown and sends everything to worker 0.
#[derive(Default)]
pub struct Seen {
    pub estimates: Vec<Nanos>,
}

impl Dispatch for Seen {
    fn name(&self) -> &str {
        "seen"
    }
    fn local(&self) -> Local {
        Local {
            order: Order::Fifo,
            quantum: None,
        }
    }
    fn on_request(&mut self, _now: Time, req: &RequestInfo, _workers: &Workers) -> Decision {
        self.estimates.push(req.estimate);
        Decision {
            placement: Placement::Worker {
                worker: WorkerId(0),
                preempt: false,
            },
            scanned: 1,
        }
    }
}

fn zero_fifo() -> ToWorker {
    ToWorker::zero(Order::Fifo)
}

fn run_err<P: Dispatch>(
    config: &NodeConfig,
    policies: Vec<P>,
    reqs: Vec<Request>,
) -> NodeError<Infallible> {
    simulate_in_order(config, policies, reqs).unwrap_err()
}

#[test]
fn requests_out_of_arrival_order_are_refused_by_id() {
    let e = run_err(
        &node(1, Costs::zero()),
        vec![zero_fifo()],
        vec![us(0, 10, 1), us(1, 5, 1)],
    );
    assert!(
        matches!(
            e,
            NodeError::Request {
                id: RequestId(1),
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("arrival order"), "{e}");
    let e = run_err(
        &node(1, Costs::zero()),
        vec![zero_fifo()],
        vec![us(3, 0, 1), us(3, 5, 1)],
    );
    assert!(
        matches!(
            e,
            NodeError::Request {
                id: RequestId(3),
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("ids must increase"), "{e}");
    let e = run_err(
        &node(1, Costs::zero()),
        vec![zero_fifo()],
        vec![request(0, 0, 0, u64::MAX, 1)],
    );
    assert!(e.to_string().contains("request 0: needs"), "{e}");
}

#[test]
fn a_bad_configuration_is_named() {
    let e = run_err(&node(0, Costs::zero()), vec![zero_fifo()], vec![]);
    assert!(
        matches!(e, NodeError::Config(ConfigError::NoWorkers)),
        "{e}"
    );
    let e = run_err(&NodeConfig::new(2, 1), vec![zero_fifo()], vec![]);
    assert!(
        matches!(e, NodeError::Config(ConfigError::Policies { .. })),
        "{e}"
    );
    let mut costs = Costs::zero();
    costs.wake = u64::MAX;
    let e = run_err(&node(1, costs), vec![zero_fifo()], vec![]);
    assert!(e.to_string().contains("wake"), "{e}");
    let mut p = zero_fifo();
    p.local.quantum = Some(0);
    let e = run_err(&node(1, Costs::zero()), vec![p], vec![]);
    assert!(e.to_string().contains("local quantum of 0"), "{e}");
}

#[test]
fn a_policy_naming_a_worker_it_lacks_is_an_error() {
    let mut p = zero_fifo();
    p.worker = 3;
    let e = run_err(&node(2, Costs::zero()), vec![p], vec![us(0, 0, 1)]);
    assert!(matches!(e, NodeError::Policy { dispatcher: 0, .. }), "{e}");
    assert!(e.to_string().contains("worker 3 of a group of 2"), "{e}");
}

/// Holds everything and never hands it out.
pub struct Hoarder;

impl Dispatch for Hoarder {
    fn name(&self) -> &str {
        "hoarder"
    }
    fn local(&self) -> Local {
        Local {
            order: Order::Fifo,
            quantum: None,
        }
    }
    fn on_request(&mut self, _now: Time, _req: &RequestInfo, _workers: &Workers) -> Decision {
        Decision {
            placement: Placement::Hold,
            scanned: 0,
        }
    }
}

/// Hands out a request it never held.
struct Forger;

impl Dispatch for Forger {
    fn name(&self) -> &str {
        "forger"
    }
    fn local(&self) -> Local {
        Local {
            order: Order::Fifo,
            quantum: None,
        }
    }
    fn on_request(&mut self, _now: Time, _req: &RequestInfo, _workers: &Workers) -> Decision {
        Decision {
            placement: Placement::Hold,
            scanned: 0,
        }
    }
    fn on_idle(&mut self, _now: Time, _w: WorkerId, _ws: &Workers, out: &mut Vec<RequestId>) {
        out.push(RequestId(77));
    }
}

#[test]
fn a_policy_that_keeps_or_forges_requests_is_an_error() {
    let e = run_err(&node(1, Costs::zero()), vec![Hoarder], vec![us(5, 0, 1)]);
    assert!(
        e.to_string()
            .contains("still held 1 requests (the first, 5)"),
        "{e}"
    );
    let e = run_err(&node(1, Costs::zero()), vec![Forger], vec![us(5, 0, 1)]);
    assert!(
        e.to_string().contains("request 77, which it does not hold"),
        "{e}"
    );
}

#[test]
fn an_input_error_stops_the_run() {
    let mut boxes = vec![Box::new(zero_fifo())];
    let reqs = vec![Ok(us(0, 0, 1)), Err("line 2: bad work")];
    let e = run(&node(1, Costs::zero()), &mut boxes, reqs, |_| {}).unwrap_err();
    assert!(matches!(e, NodeError::Input("line 2: bad work")), "{e}");
}

#[test]
fn equal_assignment_alternates_and_random_is_seeded() {
    let reqs = || (0..40).map(|i| us(i, i, 1)).collect::<Vec<_>>();
    let policies = || vec![zero_fifo(), zero_fifo()];
    let (out, _) = simulate(&NodeConfig::new(2, 1), policies(), reqs());
    let by: Vec<u32> = out.iter().map(|o| o.dispatcher).collect();
    assert_eq!(by, (0..40).map(|i| i % 2).collect::<Vec<u32>>());
    let random = |seed| {
        let mut c = NodeConfig::new(2, 1);
        c.assign = faasched_sim::node::Assign::Random { seed };
        let (out, _) = simulate(&c, policies(), reqs());
        out.iter().map(|o| o.dispatcher).collect::<Vec<u32>>()
    };
    assert_eq!(random(7), random(7));
    assert_ne!(random(7), random(8));
    assert!(random(7).contains(&0) && random(7).contains(&1));
}

#[test]
fn boxed_trait_objects_and_references_are_policies() {
    let mut boxes: Vec<Box<dyn Dispatch + Send>> = vec![Box::new(zero_fifo())];
    let reqs = vec![us(0, 0, 1)].into_iter().map(Ok::<_, Infallible>);
    let stats = run(&node(1, Costs::zero()), &mut boxes, reqs, |_| {}).unwrap();
    assert_eq!(stats.finished, 1);
    let mut p = zero_fifo();
    let mut refs: Vec<&mut dyn Dispatch> = vec![&mut p];
    let reqs = vec![us(0, 0, 1)].into_iter().map(Ok::<_, Infallible>);
    let stats = run(&node(1, Costs::zero()), &mut refs, reqs, |_| {}).unwrap();
    assert_eq!(stats.finished, 1);
}

#[test]
fn a_costs_file_fills_in_defaults_and_refuses_unknown_fields() {
    let c: Costs = toml::from_str("dispatch_base = 2500\npoll = true\n").unwrap();
    assert_eq!(
        c,
        Costs {
            dispatch_base: 2_500,
            poll: true,
            ..Costs::default()
        }
    );
    let e = toml::from_str::<Costs>("dispatch_bsae = 2500\n").unwrap_err();
    assert!(e.to_string().contains("dispatch_bsae"), "{e}");
    let e = toml::from_str::<Costs>("wake = -1\n").unwrap_err();
    assert!(e.to_string().contains("wake"), "{e}");
}

#[test]
fn public_types_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<NodeConfig>();
    send_sync::<Costs>();
    send_sync::<NodeStats>();
    send_sync::<NodeError<std::io::Error>>();
}
