//! Tiny routers and keep-alive policies for the cluster engine's tests,
//! and its error cases.

use faasched_model::cluster::{
    Choice, Container, ContainerId, FunctionProfile, Invocation, InvocationId, InvocationInfo,
    InvocationOutcome, KeepAlive, Route, ServerId, Servers,
};
use faasched_model::{FunctionId, MS, Nanos, Time};
use faasched_sim::cluster::{
    self, ClientCall, Clients, ClusterConfig, ClusterError, ClusterStats, ConfigError, Shared,
    run_closed, run_on,
};
use std::collections::BTreeMap;
use std::convert::Infallible;

/// Function `f`'s profile: `memory_mb`, warm and cold times in ms.
pub fn profile(f: u32, memory_mb: u32, warm_ms: u64, cold_ms: u64) -> FunctionProfile {
    FunctionProfile {
        function: FunctionId(f),
        memory_mb,
        warm: warm_ms * MS,
        cold: cold_ms * MS,
    }
}

/// Invocation `id` of function `f` arriving at `at_ms` needing `work_ms`.
pub fn inv(id: u64, f: u32, at_ms: u64, work_ms: u64) -> Invocation {
    Invocation {
        id: InvocationId(id),
        function: FunctionId(f),
        arrival: at_ms * MS,
        work: work_ms * MS,
    }
}

/// `servers` servers of `cores` cores and `memory_mb` MB, the rest by
/// default.
pub fn cluster(servers: usize, cores: u32, memory_mb: u32) -> ClusterConfig {
    ClusterConfig::new(servers, cores, memory_mb)
}

/// Routes by a function of the invocation and what the servers show;
/// records every publication it is told of.
pub struct By<F: FnMut(&InvocationInfo, &Servers) -> Choice> {
    pub choose: F,
    /// (when, each server's published load) at each `on_loads`.
    pub loads: Vec<(Time, Vec<f64>)>,
    /// Outcomes as the router was told of them.
    pub finished: Vec<InvocationId>,
}

impl<F: FnMut(&InvocationInfo, &Servers) -> Choice> Route for By<F> {
    fn name(&self) -> &str {
        "by"
    }
    fn route(&mut self, _now: Time, inv: &InvocationInfo, servers: &Servers) -> Choice {
        (self.choose)(inv, servers)
    }
    fn on_loads(&mut self, now: Time, servers: &Servers) {
        self.loads
            .push((now, servers.iter().map(|(_, v)| v.load).collect()));
    }
    fn on_finish(&mut self, _now: Time, o: &InvocationOutcome) {
        self.finished.push(o.info.id);
    }
}

/// A router choosing by `choose`.
pub fn by<F: FnMut(&InvocationInfo, &Servers) -> Choice>(choose: F) -> By<F> {
    By {
        choose,
        loads: Vec::new(),
        finished: Vec::new(),
    }
}

/// Everything to server 0.
pub fn to_zero() -> By<impl FnMut(&InvocationInfo, &Servers) -> Choice> {
    by(|_, _| Choice::Server(ServerId(0)))
}

/// Keeps idle containers until memory is short, then evicts the least
/// recently used (or, with `refuse`, none); with `ttl`, an idle container
/// expires `ttl` after its last use.
#[derive(Default)]
pub struct Lru {
    pub refuse: bool,
    pub ttl: Option<Nanos>,
    /// Idle containers by (last use, id).
    idle: BTreeMap<(Time, ContainerId), ()>,
    last_used: BTreeMap<ContainerId, Time>,
}

impl Lru {
    /// Never evicts.
    pub fn refusing() -> Lru {
        Lru {
            refuse: true,
            ..Lru::default()
        }
    }

    /// Lets an idle container expire `ttl` after its last use.
    pub fn with_ttl(ttl: Option<Nanos>) -> Lru {
        Lru {
            ttl,
            ..Lru::default()
        }
    }

    fn forget(&mut self, id: ContainerId) {
        if let Some(t) = self.last_used.remove(&id) {
            self.idle.remove(&(t, id));
        }
    }
}

impl KeepAlive for Lru {
    fn name(&self) -> &str {
        "lru"
    }
    fn on_idle(&mut self, now: Time, c: &Container) {
        assert_eq!(now, c.last_used);
        self.idle.insert((now, c.id), ());
        self.last_used.insert(c.id, now);
    }
    fn on_reuse(&mut self, _now: Time, c: &Container) {
        self.forget(c.id);
    }
    fn victim(&mut self, _now: Time) -> Option<ContainerId> {
        if self.refuse {
            return None;
        }
        let (&(_, id), _) = self.idle.first_key_value()?;
        self.forget(id);
        Some(id)
    }
    fn next_expiry(&self) -> Option<Time> {
        let ttl = self.ttl?;
        self.idle.first_key_value().map(|(&(t, _), _)| t + ttl)
    }
    fn expired(&mut self, now: Time, out: &mut Vec<ContainerId>) {
        while self.next_expiry().is_some_and(|t| t <= now) {
            let Some((&(_, id), _)) = self.idle.first_key_value() else {
                break;
            };
            self.forget(id);
            out.push(id);
        }
    }
}

/// A fresh [`Lru`] for each server.
pub fn lru(_: ServerId) -> Box<dyn KeepAlive> {
    Box::new(Lru::default())
}

/// Runs `invs` on processor-sharing servers and returns the outcomes by id
/// and the stats.
pub fn simulate<R: Route>(
    config: &ClusterConfig,
    router: &mut R,
    keep_alive: impl FnMut(ServerId) -> Box<dyn KeepAlive>,
    profiles: &[FunctionProfile],
    invs: Vec<Invocation>,
) -> Result<(Vec<InvocationOutcome>, ClusterStats), ClusterError<Infallible>> {
    simulate_on(config, router, keep_alive, Shared, profiles, invs)
}

/// Runs `invs` on `servers` and returns the outcomes by id and the stats.
pub fn simulate_on<R: Route, S: cluster::Servers>(
    config: &ClusterConfig,
    router: &mut R,
    keep_alive: impl FnMut(ServerId) -> Box<dyn KeepAlive>,
    servers: S,
    profiles: &[FunctionProfile],
    invs: Vec<Invocation>,
) -> Result<(Vec<InvocationOutcome>, ClusterStats), ClusterError<Infallible>> {
    let mut out = Vec::new();
    let stats = run_on(
        config,
        router,
        keep_alive,
        servers,
        profiles,
        invs.into_iter().map(Ok::<_, Infallible>),
        |o| out.push(o),
    )?;
    out.sort_by_key(|o| o.info.id);
    Ok((out, stats))
}

/// Finish instants in ms, by id (`None` for a drop).
pub fn finishes_ms(out: &[InvocationOutcome]) -> Vec<Option<u64>> {
    out.iter().map(|o| o.finish.map(|f| f / MS)).collect()
}

/// Each client sends `left` invocations of function `f` needing `work`,
/// `think` after the previous one's end.
pub struct Loop {
    pub clients: u32,
    pub left: Vec<u32>,
    pub work: Nanos,
    pub think: Nanos,
    pub f: u32,
}

impl Clients for Loop {
    fn clients(&self) -> u32 {
        self.clients
    }
    fn next(&mut self, client: u32, now: Time) -> Option<ClientCall> {
        let left = &mut self.left[client as usize];
        *left = left.checked_sub(1)?;
        Some(ClientCall {
            function: FunctionId(self.f),
            send: if now == 0 { 0 } else { now + self.think },
            work: self.work,
        })
    }
}

fn error(
    config: &ClusterConfig,
    router: &mut impl Route,
    keep_alive: impl FnMut(ServerId) -> Box<dyn KeepAlive>,
    profiles: &[FunctionProfile],
    invs: Vec<Invocation>,
) -> String {
    match simulate(config, router, keep_alive, profiles, invs) {
        Ok(_) => panic!("the run should fail"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_configs_name_the_field() {
    let p = [profile(0, 128, 10, 10)];
    for (config, want) in [
        (cluster(0, 1, 1024), "servers = 0"),
        (cluster(1, 0, 1024), "cores = 0"),
        (cluster(1, 1, 0), "0 MB"),
        (
            ClusterConfig {
                publish: 0,
                ..cluster(1, 1, 1024)
            },
            "publication period 0 ns",
        ),
        (
            ClusterConfig {
                contention: f64::NAN,
                ..cluster(1, 1, 1024)
            },
            "contention γ = NaN",
        ),
    ] {
        let e: ConfigError = config.validate().unwrap_err();
        let msg = error(&config, &mut to_zero(), lru, &p, vec![inv(0, 0, 0, 1)]);
        assert!(msg.contains(want) && msg == e.to_string(), "{msg}");
    }
    assert_eq!(ClusterConfig::default().validate(), Ok(()));
}

#[test]
fn bad_profiles_and_invocations_are_named() {
    let c = cluster(1, 1, 1024);
    let p = [profile(0, 128, 10, 10)];
    let msg = error(&c, &mut to_zero(), lru, &[profile(1, 1, 1, 1)], vec![]);
    assert!(
        msg.contains("function profile 0: it profiles function 1"),
        "{msg}"
    );
    let msg = error(
        &c,
        &mut to_zero(),
        lru,
        &p,
        vec![inv(0, 0, 5, 1), inv(1, 0, 4, 1)],
    );
    assert!(
        msg.contains("invocation 1: arrives at 4000000 ns, before invocation 0"),
        "{msg}"
    );
    let msg = error(
        &c,
        &mut to_zero(),
        lru,
        &p,
        vec![inv(3, 0, 5, 1), inv(3, 0, 5, 1)],
    );
    assert!(
        msg.contains("invocation 3: comes after invocation 3"),
        "{msg}"
    );
    let msg = error(&c, &mut to_zero(), lru, &p, vec![inv(0, 7, 5, 1)]);
    assert!(
        msg.contains("invocation 0: invokes function 7, of 1 profiled"),
        "{msg}"
    );
}

#[test]
fn a_router_or_keep_alive_that_breaks_its_contract_is_named() {
    let p = [profile(0, 128, 10, 10), profile(1, 128, 10, 10)];
    let mut far = by(|_, _| Choice::Server(ServerId(2)));
    let msg = error(
        &cluster(2, 1, 1024),
        &mut far,
        lru,
        &p,
        vec![inv(0, 0, 0, 1)],
    );
    assert_eq!(msg, "router by sent invocation 0 to server 2, of 2 servers");

    /// Names a container it never saw as its victim.
    struct Liar;
    impl KeepAlive for Liar {
        fn name(&self) -> &str {
            "liar"
        }
        fn on_idle(&mut self, _: Time, _: &Container) {}
        fn on_reuse(&mut self, _: Time, _: &Container) {}
        fn victim(&mut self, _: Time) -> Option<ContainerId> {
            Some(ContainerId(99))
        }
    }
    // Function 0 idles in the only 128 MB; function 1 needs them.
    let msg = error(
        &cluster(1, 1, 128),
        &mut to_zero(),
        |_| Box::new(Liar),
        &p,
        vec![inv(0, 0, 0, 1), inv(1, 1, 5, 1)],
    );
    assert_eq!(
        msg,
        "keep-alive liar (server 0) named container 99 as its victim, which the server does \
         not hold"
    );
}

#[test]
fn a_client_that_sends_into_the_past_is_named() {
    struct Past;
    impl Clients for Past {
        fn clients(&self) -> u32 {
            1
        }
        fn next(&mut self, _: u32, now: Time) -> Option<ClientCall> {
            Some(ClientCall {
                function: FunctionId(0),
                send: now.saturating_sub(MS),
                work: MS,
            })
        }
    }
    let err = run_closed(
        &cluster(1, 1, 1024),
        &mut to_zero(),
        lru,
        &[profile(0, 128, 1, 1)],
        &mut Past,
        |_: InvocationOutcome| {},
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "client 0 would send at 0 ns, before its last answer (1000000 ns)"
    );
}

#[test]
fn public_types_are_send() {
    fn send<T: Send>() {}
    send::<ClusterConfig>();
    send::<ClusterStats>();
    send::<ClusterError<Infallible>>();
    send::<faasched_sim::cluster::LoadAvg>();
}
