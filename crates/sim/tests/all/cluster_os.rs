//! Servers run as machines: the composed engine against each engine
//! alone. A cluster of one OS server runs every invocation as the OS
//! engine does on the same invocations; OS servers whose kernel shares
//! its cores ideally run as the cluster's processor-sharing servers do.

use crate::cluster::{Lru, by, cluster, lru, simulate, simulate_on, to_zero};
use crate::cluster_nodes::{one_server, workload};
use faasched_model::cluster::{
    Choice, FunctionProfile, Inside, Invocation, InvocationOutcome, KeepAlive, OsPlace, Route,
    ServerId,
};
use faasched_model::{
    Function, Invocation as Process, MS, Nanos, Outcome, Phase, Phases, Steer, Time,
};
use faasched_policy::os::Uniform;
use faasched_policy::os::alps::{Alps, Enforcement, Params};
use faasched_policy::os::sfs::Sfs;
use faasched_sim::cluster::{
    ClusterConfig, ClusterError, ClusterStats, ConfigError, OsServers, ServerShape,
};
use faasched_sim::os::{self, Config, Discipline};
use std::convert::Infallible;
use std::sync::Arc;

/// Runs `invs` on OS servers of `kernel` under the policies `policy`
/// builds per server; the outcomes by id and the stats.
fn simulate_os<R: Route, P: Steer + 'static>(
    config: &ClusterConfig,
    router: &mut R,
    kernel: &Config,
    mut policy: impl FnMut() -> P,
    profiles: &[FunctionProfile],
    invs: Vec<Invocation>,
) -> Result<(Vec<InvocationOutcome>, ClusterStats), ClusterError<Infallible>> {
    let servers = OsServers {
        config: kernel.clone(),
        policies: |_| Box::new(policy()) as Box<dyn Steer>,
    };
    simulate_on(config, router, lru, servers, profiles, invs)
}

/// The OS engine alone on the processes the invocations make: one CPU
/// burst each, its function's id and the name the cluster gives every
/// process.
fn os_alone<P: Steer>(
    kernel: &Config,
    mut policy: P,
    profiles: &[FunctionProfile],
    invs: &[Invocation],
) -> (Vec<Outcome>, os::RunStats) {
    let name: Arc<str> = Arc::from("invocation");
    let procs = invs.iter().map(|i| {
        Ok::<_, Infallible>(Process {
            id: i.id.0,
            function: Function {
                id: i.function,
                name: Arc::clone(&name),
            },
            arrival: i.arrival,
            phases: Phases::from_elem(Phase::Cpu(i.work), 1),
            memory_mb: profiles[i.function.0 as usize].memory_mb,
            deadline: None,
        })
    });
    let mut out = Vec::new();
    let stats = os::run(kernel, &mut policy, procs, |o: Outcome| out.push(o)).unwrap();
    out.sort_by_key(|o| o.id);
    (out, stats)
}

/// A cluster of one OS server runs every invocation as the OS engine
/// does: the same finish, first run and switches for each, the same busy
/// time, invocations and kernel events.
fn one_server_is_the_kernel<P: Steer + 'static>(kernel: &Config, policy: impl FnMut() -> P) {
    let mut policy = policy;
    let cores = kernel.cores as u32;
    // About 80% of the cores busy; works of 2 ms and more against the
    // fair class's slices: queues form and the kernel preempts.
    let (profiles, invs) = workload(5, 3_000, 0.8 * f64::from(cores) / 5.0, 4, 2 * MS);
    let (alone, alone_stats) = os_alone(kernel, policy(), &profiles, &invs);
    let (out, stats) = simulate_os(
        &one_server(cores),
        &mut to_zero(),
        kernel,
        policy,
        &profiles,
        invs,
    )
    .unwrap();
    assert_eq!(out.len(), alone.len());
    let mut preempted = 0;
    for (o, a) in out.iter().zip(&alone) {
        assert_eq!(o.finish, Some(a.finish), "invocation {}", o.info.id.0);
        assert_eq!(o.first_run, Some(a.first_run), "invocation {}", o.info.id.0);
        assert_eq!(
            o.inside,
            Some(Inside::Os(OsPlace {
                voluntary_switches: a.voluntary_switches,
                involuntary_switches: a.involuntary_switches,
            })),
            "invocation {}",
            o.info.id.0
        );
        preempted += u64::from(a.involuntary_switches > 0);
    }
    assert!(preempted > 0, "the workload preempts nothing");
    let inside = stats.servers[0]
        .inside
        .as_ref()
        .and_then(|i| i.os())
        .copied();
    let inside = inside.unwrap();
    assert_eq!(
        (inside.invocations, inside.busy, inside.events, inside.end),
        (
            alone_stats.invocations,
            alone_stats.busy,
            alone_stats.events,
            alone_stats.end
        )
    );
    assert_eq!(stats.servers[0].busy, alone_stats.busy);
    assert_eq!(
        (stats.finished, stats.dropped()),
        (alone_stats.invocations, 0)
    );
}

#[test]
fn one_os_server_is_the_os_engine_under_the_stock_kernel() {
    one_server_is_the_kernel(&Config::new(4), || Uniform::STOCK);
}

#[test]
fn one_os_server_is_the_os_engine_under_sfs() {
    one_server_is_the_kernel(&Config::new(4), Sfs::default);
}

#[test]
fn one_os_server_is_the_os_engine_under_alps_and_its_periodic_calls() {
    let params = Params::default();
    assert!(params.window > 0, "alps calls on a period");
    one_server_is_the_kernel(&Config::new(2), move || {
        Alps::new("alps", Enforcement::Stock, params)
    });
}

#[test]
fn ideal_sharing_kernels_share_their_cores_as_processor_sharing_does() {
    // Four servers of four cores at 70% load, invocations routed by id in
    // turn; the kernel's ideal processor sharing has no switch cost.
    let (profiles, invs) = workload(7, 8_000, 0.7 * 16.0 / 2.5, 4, MS);
    let config = cluster(4, 4, u32::MAX);
    let route = || by(|inv, _| Choice::Server(ServerId((inv.id.0 % 4) as u32)));
    let keep = |_| -> Box<dyn KeepAlive> { Box::new(Lru::default()) };
    let (ps, ps_stats) = simulate(&config, &mut route(), keep, &profiles, invs.clone()).unwrap();
    let kernel = Config {
        discipline: Discipline::Ps,
        ..Config::new(4)
    };
    let (os, os_stats) = simulate_os(
        &config,
        &mut route(),
        &kernel,
        || Uniform::passive("ps"),
        &profiles,
        invs,
    )
    .unwrap();
    assert_eq!(ps.len(), os.len());
    // The two round their clocks differently: each finish within 1 µs.
    for (a, b) in ps.iter().zip(&os) {
        let (a, b) = (a.finish.unwrap(), b.finish.unwrap());
        assert!(a.abs_diff(b) <= 1_000, "ps {a} ns, os {b} ns");
    }
    let busy = |s: &ClusterStats| s.servers.iter().map(|s| s.busy).sum::<Nanos>();
    assert!(busy(&ps_stats).abs_diff(busy(&os_stats)) <= 16_000);
    assert!(
        os.iter()
            .all(|o| o.inside.is_some_and(|i| i.os().is_some()))
    );
}

#[test]
fn os_runs_are_deterministic() {
    let (profiles, invs) = workload(9, 2_000, 4.0, 6, MS);
    let config = cluster(3, 2, u32::MAX);
    let run = || {
        let mut router = by(|inv, _| Choice::Server(ServerId((inv.id.0 * 7 % 3) as u32)));
        simulate_os(
            &config,
            &mut router,
            &Config::new(2),
            Sfs::default,
            &profiles,
            invs.clone(),
        )
        .unwrap()
    };
    assert_eq!(run(), run());
}

#[test]
fn os_servers_that_do_not_fit_are_named() {
    let (profiles, invs) = workload(1, 10, 1.0, 1, MS);
    let fails = |config: ClusterConfig, kernel: Config| {
        simulate_os(
            &config,
            &mut to_zero(),
            &kernel,
            || Uniform::STOCK,
            &profiles,
            invs.clone(),
        )
        .unwrap_err()
    };
    let e = fails(cluster(1, 4, u32::MAX), Config::new(2));
    assert!(
        matches!(
            e,
            ClusterError::Config(ConfigError::Server(ServerShape::KernelCores {
                kernel: 2,
                cores: 4
            }))
        ),
        "{e}"
    );
    let contended = ClusterConfig {
        contention: 0.1,
        ..cluster(1, 2, u32::MAX)
    };
    let e = fails(contended, Config::new(2));
    assert!(e.to_string().contains("contention"), "{e}");
    let e = fails(
        cluster(1, 2, u32::MAX),
        Config {
            hz: 0,
            ..Config::new(2)
        },
    );
    assert!(
        matches!(
            e,
            ClusterError::Config(ConfigError::Server(ServerShape::Kernel(_)))
        ),
        "{e}"
    );
}

/// An invocation that needs no CPU finishes as it starts, on an OS server
/// as on a shared one.
#[test]
fn work_of_none_is_done_at_once() {
    let profiles = [crate::cluster::profile(0, 1, 1, 1)];
    let invs = vec![Invocation {
        work: 0,
        ..crate::cluster::inv(0, 0, 5, 1)
    }];
    let (out, _) = simulate_os(
        &one_server(1),
        &mut to_zero(),
        &Config::new(1),
        || Uniform::STOCK,
        &profiles,
        invs,
    )
    .unwrap();
    let at: Time = 5 * MS;
    assert_eq!(out[0].finish, Some(at));
}
