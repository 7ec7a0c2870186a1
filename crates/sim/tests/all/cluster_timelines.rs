//! Hand-computed cluster timelines: every instant below is derived in the
//! comments.

use crate::cluster::{Loop, Lru, by, cluster, finishes_ms, inv, lru, profile, simulate, to_zero};
use faasched_model::cluster::{
    Choice, FunctionProfile, Invocation, InvocationId, InvocationOutcome, KeepAlive, ServerId,
};
use faasched_model::{FunctionId, MS, SEC};
use faasched_sim::cluster::{
    ClusterConfig, ColdStart, EXP_1, FIXED_1, LoadAvg, Loads, MAX_TRANSPORT, calc_load, run_closed,
};

#[test]
fn two_invocations_share_one_core() {
    // A needs 10 ms from 0, B 4 ms from 4 ms. A runs alone 0–4 (6 ms
    // left); both at 1/2: B's 4 ms take 8, B ends at 12 with A 2 ms short;
    // A alone again ends at 14.
    let p = [profile(0, 128, 10, 10)];
    let (out, stats) = simulate(
        &cluster(1, 1, 1024),
        &mut to_zero(),
        lru,
        &p,
        vec![inv(0, 0, 0, 10), inv(1, 0, 4, 4)],
    )
    .unwrap();
    assert_eq!(finishes_ms(&out), [Some(14), Some(12)]);
    assert_eq!(stats.servers[0].busy, 14 * MS);
    assert_eq!((stats.finished, stats.span), (2, 14 * MS));
}

#[test]
fn an_invocation_never_runs_on_more_than_one_core() {
    // Two on four cores each run at 1, not 2; six on four run at 4/6.
    let p = [profile(0, 128, 10, 10)];
    let (out, stats) = simulate(
        &cluster(1, 4, 4096),
        &mut to_zero(),
        lru,
        &p,
        vec![inv(0, 0, 0, 10), inv(1, 0, 0, 10)],
    )
    .unwrap();
    assert_eq!(finishes_ms(&out), [Some(10), Some(10)]);
    assert_eq!(stats.servers[0].busy, 20 * MS);
    let six = (0..6).map(|i| inv(i, 0, 0, 10)).collect();
    let (out, stats) = simulate(&cluster(1, 4, 4096), &mut to_zero(), lru, &p, six).unwrap();
    assert_eq!(finishes_ms(&out), [Some(15); 6]);
    assert_eq!(stats.servers[0].busy, 60 * MS);
}

#[test]
fn contention_slows_a_busy_server() {
    // γ = 0.5, two on two cores: each at 1 / (1 + 0.5 × 2) = 1/2.
    let config = ClusterConfig {
        contention: 0.5,
        ..cluster(1, 2, 1024)
    };
    let p = [profile(0, 128, 10, 10)];
    let (out, stats) = simulate(
        &config,
        &mut to_zero(),
        lru,
        &p,
        vec![inv(0, 0, 0, 10), inv(1, 0, 0, 10)],
    )
    .unwrap();
    assert_eq!(finishes_ms(&out), [Some(20), Some(20)]);
    // Both cores were busy throughout, half of it lost to contention.
    assert_eq!(stats.servers[0].busy, 40 * MS);
}

#[test]
fn a_cold_start_adds_cold_minus_warm_and_a_warm_container_is_reused() {
    // Warm 10 ms, cold 30 ms. A (12 ms of work) starts cold: 12 + 20, ends
    // at 32. B at 40 reuses A's container: 40 + 10 = 50. C at 45 finds it
    // busy and starts cold in a second: 45 + 10 + 20 = 75, sharing nothing
    // (two cores). D at 80 finds both idle and takes the most recently
    // used, C's.
    let p = [profile(0, 128, 10, 30)];
    let mut seen = Vec::new();
    let mut router = by(|i, s| {
        seen.push((i.id.0, s.warm(ServerId(0), FunctionId(0))));
        Choice::Server(ServerId(0))
    });
    let mut containers = Vec::new();
    /// Records the container of each start.
    struct Spy<'a>(Lru, &'a mut Vec<(u64, bool)>);
    impl KeepAlive for Spy<'_> {
        fn name(&self) -> &str {
            "spy"
        }
        fn on_created(&mut self, now: u64, c: &faasched_model::cluster::Container) {
            assert_eq!((c.created, c.last_used), (now, now));
            self.1.push((c.id.0, true));
        }
        fn on_idle(&mut self, now: u64, c: &faasched_model::cluster::Container) {
            self.0.on_idle(now, c)
        }
        fn on_reuse(&mut self, now: u64, c: &faasched_model::cluster::Container) {
            self.1.push((c.id.0, false));
            self.0.on_reuse(now, c)
        }
        fn victim(&mut self, now: u64) -> Option<faasched_model::cluster::ContainerId> {
            self.0.victim(now)
        }
    }
    let invs = vec![
        inv(0, 0, 0, 12),
        inv(1, 0, 40, 10),
        inv(2, 0, 45, 10),
        inv(3, 0, 80, 10),
    ];
    let (out, stats) = {
        let mut spy = Some(Spy(Lru::default(), &mut containers));
        let mut out = Vec::new();
        let stats = faasched_sim::cluster::run(
            &cluster(1, 2, 1024),
            &mut router,
            |_| spy.take().map(Box::new).unwrap(),
            &p,
            invs.into_iter().map(Ok::<_, std::convert::Infallible>),
            |o| out.push(o),
        )
        .unwrap();
        (out, stats)
    };
    assert_eq!(finishes_ms(&out), [Some(32), Some(50), Some(75), Some(90)]);
    assert_eq!(
        out.iter().map(|o| o.cold).collect::<Vec<_>>(),
        [true, false, true, false]
    );
    assert_eq!(containers, [(0, true), (0, false), (1, true), (1, false)]);
    assert_eq!(seen, [(0, 0), (1, 1), (2, 0), (3, 2)]);
    let s = &stats.servers[0];
    assert_eq!((s.cold_starts, s.warm_starts, s.max_memory_mb), (2, 2, 256));
    // Busy: 32 + 10 + 30 + 10 ms.
    assert_eq!(s.busy, 82 * MS);
}

#[test]
fn a_cold_start_in_wall_time_takes_no_core_but_counts_in_the_load() {
    // One core. A (f0: warm 10, cold 30) needs 10 ms from 0 and starts
    // cold; B (f1, nothing to start) needs 20 ms from 0.
    let p = [profile(0, 128, 10, 30), profile(1, 128, 20, 20)];
    let invs = || vec![inv(0, 0, 0, 10), inv(1, 1, 0, 20)];
    // As CPU: A needs 30, B 20 on the shared core: B ends at 40, A (10
    // short) at 50.
    let (out, _) = simulate(&cluster(1, 1, 1024), &mut to_zero(), lru, &p, invs()).unwrap();
    assert_eq!(finishes_ms(&out), [Some(50), Some(40)]);
    // Both take the core as they arrive: A's start is CPU, billed.
    let first_runs = |out: &[InvocationOutcome]| -> Vec<_> {
        out.iter().map(|o| o.first_run.map(|t| t / MS)).collect()
    };
    assert_eq!(first_runs(&out), [Some(0), Some(0)]);
    assert_eq!(out[0].execution(), Some(50 * MS));
    // As wall time: B runs alone 0–20, A's start ends at 20 (after B's
    // finish at that instant) and it runs 20–30.
    let config = ClusterConfig {
        cold_start: ColdStart::Wall,
        loads: Loads::Exact,
        ..cluster(1, 1, 1024)
    };
    let mut router = to_zero();
    let (out, stats) = simulate(&config, &mut router, lru, &p, invs()).unwrap();
    assert_eq!(finishes_ms(&out), [Some(30), Some(20)]);
    // A first takes the core when its start is done.
    assert_eq!(first_runs(&out), [Some(20), Some(0)]);
    assert_eq!(stats.servers[0].busy, 30 * MS);
    // The starting A counts in the load from its arrival.
    let loads: Vec<_> = router.loads.iter().map(|(at, l)| (at / MS, l[0])).collect();
    assert_eq!(loads, [(0, 1.0), (0, 2.0), (20, 1.0), (30, 0.0)]);
}

#[test]
fn memory_runs_short_and_the_least_recently_used_is_evicted() {
    // 256 MB, three functions of 128 MB, two cores. A (f0) 0–5, B (f1)
    // 0–10 fill the memory. C (f2) at 20 evicts A's container (idle since
    // 5) and runs 20–30. D (f0) at 40 starts cold again, evicting B's
    // (idle since 10, before C's at 30).
    let p = [
        profile(0, 128, 5, 5),
        profile(1, 128, 10, 10),
        profile(2, 128, 10, 10),
    ];
    let invs = vec![
        inv(0, 0, 0, 5),
        inv(1, 1, 0, 10),
        inv(2, 2, 20, 10),
        inv(3, 0, 40, 5),
        inv(4, 2, 50, 10),
    ];
    let (out, stats) = simulate(&cluster(1, 2, 256), &mut to_zero(), lru, &p, invs).unwrap();
    assert_eq!(
        finishes_ms(&out),
        [Some(5), Some(10), Some(30), Some(45), Some(60)]
    );
    // E (f2) at 50 finds C's container still there.
    assert_eq!(
        out.iter().map(|o| o.cold).collect::<Vec<_>>(),
        [true, true, true, true, false]
    );
    let s = &stats.servers[0];
    assert_eq!((s.evictions, s.drops, s.max_memory_mb), (2, 0, 256));
}

/// Four functions of 128 MB but the last (512 MB), 10 ms warm and cold;
/// A (f0) and B (f1) fill 256 MB 0–10 ms, C (f2) arrives at 1, D (f2) at
/// 20, E (f3) at 30.
fn three_that_cannot_fit() -> (Vec<FunctionProfile>, Vec<Invocation>) {
    let p = vec![
        profile(0, 128, 10, 10),
        profile(1, 128, 10, 10),
        profile(2, 128, 10, 10),
        profile(3, 512, 10, 10),
    ];
    let invs = vec![
        inv(0, 0, 0, 10),
        inv(1, 1, 0, 10),
        inv(2, 2, 1, 10),
        inv(3, 2, 20, 10),
        inv(4, 3, 30, 10),
    ];
    (p, invs)
}

#[test]
fn with_no_wait_an_invocation_that_cannot_fit_is_dropped_at_once() {
    // C at 1 finds nothing idle to evict. D at 20 finds A's and B's idle,
    // but the keep-alive refuses to evict. E could never fit. Each is
    // dropped at its arrival, its outcome naming the server.
    let (p, invs) = three_that_cannot_fit();
    let config = ClusterConfig {
        memory_wait: Some(0),
        ..cluster(1, 2, 256)
    };
    let mut router = to_zero();
    let refuse = |_| -> Box<dyn KeepAlive> { Box::new(Lru::refusing()) };
    let (out, stats) = simulate(&config, &mut router, refuse, &p, invs).unwrap();
    assert_eq!(finishes_ms(&out), [Some(10), Some(10), None, None, None]);
    assert!(
        out[2..]
            .iter()
            .all(|o| o.server == Some(ServerId(0)) && !o.cold)
    );
    assert_eq!(router.finished, [2, 0, 1, 3, 4].map(InvocationId));
    let s = &stats.servers[0];
    assert_eq!((s.drops, s.evictions, s.routed), (3, 0, 5));
    assert_eq!((s.waits, s.wait_time, s.drops_after_wait), (0, 0, 0));
    assert_eq!(
        (stats.dropped_for_memory, stats.dropped(), stats.finished),
        (3, 3, 2)
    );
}

#[test]
fn a_wait_ends_in_a_drop_once_nothing_can_free_memory() {
    // C at 1 waits: A and B will end. At 10 they do, but the keep-alive
    // refuses to evict them and nothing else runs or expires: C is dropped
    // then, after 9 ms. D at 20 meets the same refusal with nothing in
    // flight, E needs more than the server has: both dropped at once.
    let (p, invs) = three_that_cannot_fit();
    let mut router = to_zero();
    let refuse = |_| -> Box<dyn KeepAlive> { Box::new(Lru::refusing()) };
    let (out, stats) = simulate(&cluster(1, 2, 256), &mut router, refuse, &p, invs).unwrap();
    assert_eq!(finishes_ms(&out), [Some(10), Some(10), None, None, None]);
    assert!(
        out[2..]
            .iter()
            .all(|o| o.server == Some(ServerId(0)) && !o.cold)
    );
    // C's drop comes after A's and B's finishes at 10.
    assert_eq!(router.finished, [0, 1, 2, 3, 4].map(InvocationId));
    let s = &stats.servers[0];
    assert_eq!((s.drops, s.evictions, s.routed), (3, 0, 5));
    assert_eq!((s.waits, s.wait_time, s.drops_after_wait), (1, 9 * MS, 1));
    assert_eq!((stats.dropped_for_memory, stats.finished), (3, 2));
}

#[test]
fn an_invocation_waits_for_a_container_to_end_then_starts_cold_after_evicting_it() {
    // 256 MB, two cores, 128 MB each. A (f0) runs 0–10 and B (f1) 0–20. C
    // (f2: warm 10, cold 15) at 5 waits; A's container, idle at 10, is
    // evicted for it and it starts cold then: 10 + 15 = 25 (its own core).
    let p = [
        profile(0, 128, 10, 10),
        profile(1, 128, 20, 20),
        profile(2, 128, 10, 15),
    ];
    let invs = vec![inv(0, 0, 0, 10), inv(1, 1, 0, 20), inv(2, 2, 5, 10)];
    let (out, stats) = simulate(&cluster(1, 2, 256), &mut to_zero(), lru, &p, invs).unwrap();
    assert_eq!(finishes_ms(&out), [Some(10), Some(20), Some(25)]);
    assert!(out[2].cold && out[2].server == Some(ServerId(0)));
    // Its latency includes the 5 ms wait.
    assert_eq!(out[2].latency(), Some(20 * MS));
    let s = &stats.servers[0];
    assert_eq!((s.waits, s.wait_time, s.drops_after_wait), (1, 5 * MS, 0));
    assert_eq!((s.evictions, s.cold_starts, s.drops), (1, 3, 0));
    assert_eq!(s.max_memory_mb, 256);
    // The wait counted in no load: the server ran two at most.
    assert_eq!(s.busy, 10 * MS + 20 * MS + 15 * MS);
}

#[test]
fn a_waiting_invocation_takes_a_container_of_its_function_that_became_idle() {
    // f0: warm 5, cold 10. A (f0) 0–10 (5 + 5 cold) and B (f1) 0–20 fill
    // 256 MB. C (f0, 5 ms) at 2 waits; at 10 A's container is idle and C
    // takes it warm: 10 + 5 = 15 (20 had it started cold).
    let p = [profile(0, 128, 5, 10), profile(1, 128, 20, 20)];
    let invs = vec![inv(0, 0, 0, 5), inv(1, 1, 0, 20), inv(2, 0, 2, 5)];
    let (out, stats) = simulate(&cluster(1, 2, 256), &mut to_zero(), lru, &p, invs).unwrap();
    assert_eq!(finishes_ms(&out), [Some(10), Some(20), Some(15)]);
    assert_eq!(
        out.iter().map(|o| o.cold).collect::<Vec<_>>(),
        [true, true, false]
    );
    let s = &stats.servers[0];
    assert_eq!((s.waits, s.wait_time, s.evictions), (1, 8 * MS, 0));
    assert_eq!((s.cold_starts, s.warm_starts), (2, 1));
}

#[test]
fn a_waiting_head_blocks_a_later_invocation_that_would_fit() {
    // 256 MB, two cores. A (f0, 128 MB) 0–10, B (f2, 128 MB) 0–30. C (f1,
    // 256 MB) at 1 waits for both to end. D (f0) at 2 waits behind it; at
    // 10 A's container is idle and would serve D warm, but C, the head,
    // still cannot fit (B runs), so D waits on. At 30 C evicts A's
    // container and B's, and runs 30–40; D waits for C's container, then
    // evicts it and starts cold at 40: 40–50.
    let p = [
        profile(0, 128, 10, 10),
        profile(1, 256, 10, 10),
        profile(2, 128, 30, 30),
    ];
    let invs = vec![
        inv(0, 0, 0, 10),
        inv(1, 2, 0, 30),
        inv(2, 1, 1, 10),
        inv(3, 0, 2, 10),
    ];
    let (out, stats) = simulate(&cluster(1, 2, 256), &mut to_zero(), lru, &p, invs).unwrap();
    assert_eq!(finishes_ms(&out), [Some(10), Some(30), Some(40), Some(50)]);
    assert!(out.iter().all(|o| o.cold));
    let s = &stats.servers[0];
    // Waits: C 29 ms, D 38 ms.
    assert_eq!((s.waits, s.wait_time, s.drops), (2, 67 * MS, 0));
    assert_eq!((s.evictions, s.cold_starts, s.max_memory_mb), (3, 4, 256));
}

#[test]
fn a_wait_that_runs_out_is_dropped_at_its_limit() {
    // Waits of at most 5 ms. A (f0) and B (f1) fill 256 MB 0–10. C (f2) at
    // 1 is dropped at 6. D (f2) at 5 may wait until 10, when A's and B's
    // containers are idle: memory freed at its deadline serves it, cold
    // after evicting A's: 10–20.
    let p = [
        profile(0, 128, 10, 10),
        profile(1, 128, 10, 10),
        profile(2, 128, 10, 10),
    ];
    let invs = vec![
        inv(0, 0, 0, 10),
        inv(1, 1, 0, 10),
        inv(2, 2, 1, 10),
        inv(3, 2, 5, 10),
    ];
    let config = ClusterConfig {
        memory_wait: Some(5 * MS),
        ..cluster(1, 2, 256)
    };
    let mut router = to_zero();
    let (out, stats) = simulate(&config, &mut router, lru, &p, invs).unwrap();
    assert_eq!(finishes_ms(&out), [Some(10), Some(10), None, Some(20)]);
    assert_eq!(out[2].server, Some(ServerId(0)));
    // C's drop reached the router before A's and B's finishes at 10.
    assert_eq!(router.finished, [2, 0, 1, 3].map(InvocationId));
    let s = &stats.servers[0];
    // Waits: C 5 ms, D 5 ms.
    assert_eq!((s.waits, s.wait_time, s.drops_after_wait), (2, 10 * MS, 1));
    assert_eq!((s.drops, s.evictions), (1, 1));
    assert_eq!(stats.dropped_for_memory, 1);
}

#[test]
fn a_router_drop_is_final_at_once() {
    let p = [profile(0, 128, 10, 10)];
    let mut router = by(|i, _| {
        if i.id.0 == 1 {
            Choice::Drop
        } else {
            Choice::Server(ServerId(0))
        }
    });
    let invs = vec![inv(0, 0, 0, 10), inv(1, 0, 2, 10)];
    let (out, stats) = simulate(&cluster(1, 1, 1024), &mut router, lru, &p, invs).unwrap();
    assert_eq!(finishes_ms(&out), [Some(10), None]);
    assert_eq!(router.finished, [1, 0].map(InvocationId));
    assert_eq!((stats.dropped_by_router, stats.servers[0].routed), (1, 1));
}

#[test]
fn idle_containers_expire_by_the_keep_alive_s_clock() {
    // TTL 30 ms: A's container, idle at 10, expires at 40; B at 50 starts
    // cold; C at 70 (B's container idle since 60) is warm.
    let p = [profile(0, 128, 10, 20)];
    let ttl = |_| -> Box<dyn KeepAlive> { Box::new(Lru::with_ttl(Some(30 * MS))) };
    let mut seen = Vec::new();
    let mut router = by(|i, s| {
        seen.push((i.id.0, s.warm(ServerId(0), FunctionId(0))));
        Choice::Server(ServerId(0))
    });
    let invs = vec![inv(0, 0, 0, 0), inv(1, 0, 50, 0), inv(2, 0, 70, 0)];
    let (out, stats) = simulate(&cluster(1, 1, 1024), &mut router, ttl, &p, invs).unwrap();
    assert_eq!(finishes_ms(&out), [Some(10), Some(60), Some(70)]);
    assert_eq!(seen, [(0, 0), (1, 0), (2, 1)]);
    assert_eq!(stats.servers[0].expirations, 1);
}

#[test]
fn the_kernel_s_load_average_by_hand() {
    // calc_load from the kernel, by hand: 4 tasks from 0, first sample:
    // (0 × 1884 + 8192 × 164 + 2047) / 2048 = 656.
    assert_eq!(calc_load(0, EXP_1, 4 * FIXED_1), 656);
    // Falling: no round-up; 656 × 1884 / 2048 = 603.
    assert_eq!(calc_load(656, EXP_1, 0), 603);
    // Twelve samples (60 s) of 4 tasks from 0, each step by hand as above.
    let by_hand = [
        656, 1260, 1816, 2327, 2797, 3230, 3628, 3994, 4331, 4641, 4926, 5188,
    ];
    let mut l = LoadAvg::default();
    for want in by_hand {
        l.sample(4);
        assert_eq!(l.fixed(), want);
    }
    // /proc/loadavg: 5188 + 10 = 5198: 2 and (1102 × 100) >> 11 = 53.
    assert_eq!(l.shown(), 2.53);
}

#[test]
fn servers_publish_their_stale_load_average_every_period() {
    // Four invocations of 100 s on four cores from 0: every 5 s the server
    // samples 4 active tasks and publishes the average over 4 cores, as
    // uptime prints it (two decimals).
    let p = [profile(0, 128, 100_000, 100_000)];
    let mut router = to_zero();
    let invs = (0..4).map(|i| inv(i, 0, 0, 100_000)).collect();
    let (_, stats) = simulate(&cluster(1, 4, 1024), &mut router, lru, &p, invs).unwrap();
    let shown = |fixed: u64| {
        let x = fixed + 10;
        ((x >> 11) * 100 + (((x & 2047) * 100) >> 11)) as f64 / 100.0 / 4.0
    };
    let by_hand = [
        656, 1260, 1816, 2327, 2797, 3230, 3628, 3994, 4331, 4641, 4926, 5188,
    ];
    for (k, want) in by_hand.into_iter().enumerate() {
        let (at, loads) = &router.loads[k];
        assert_eq!(*at, (k as u64 + 1) * 5 * SEC);
        assert_eq!(loads[0], shown(want), "publication {k}");
    }
    assert_eq!(router.loads[11].1, [0.6325]);
    // Publications until the last finish at 100 s (which comes first at
    // that instant, and ends the run).
    assert_eq!(router.loads.len(), 19);
    assert_eq!((stats.loads.samples.len(), stats.loads.per_sample), (19, 1));
    assert_eq!(stats.loads.samples[11].mean, 0.6325);
    assert_eq!(stats.loads.samples[11].variance, 0.0);
}

#[test]
fn each_server_samples_at_its_own_phase() {
    // Two servers: server 1's kernel samples from 2.5 s on (7.5, 12.5,
    // ...), so the publication at 5 s still shows 0 for its four tasks,
    // and the one at 10 s its first sample, 656: 0.32 / 4 cores.
    let p = [profile(0, 128, 20_000, 20_000)];
    let mut router = by(|_, _| Choice::Server(ServerId(1)));
    let invs = (0..4).map(|i| inv(i, 0, 0, 20_000)).collect();
    let (_, stats) = simulate(&cluster(2, 4, 1024), &mut router, lru, &p, invs).unwrap();
    let at = |k: usize| (router.loads[k].0 / MS, router.loads[k].1.clone());
    assert_eq!(at(0), (5_000, vec![0.0, 0.0]));
    assert_eq!(at(1), (10_000, vec![0.0, 0.08]));
    // Their spread: mean 0.04, variance 0.04².
    let s = stats.loads.samples[1];
    assert_eq!(s.at, 10 * SEC);
    assert!((s.mean - 0.04).abs() < 1e-12 && (s.variance - 0.0016).abs() < 1e-12);
    assert_eq!(stats.loads.publications, 3);
}

#[test]
fn fresh_loads_are_published_at_every_change() {
    let config = ClusterConfig {
        loads: Loads::Exact,
        ..cluster(2, 4, 1024)
    };
    let p = [profile(0, 128, 10, 10)];
    let mut router = by(|i, _| Choice::Server(ServerId((i.id.0 % 2) as u32)));
    let invs = vec![inv(0, 0, 0, 10), inv(1, 0, 1, 10), inv(2, 0, 2, 10)];
    simulate(&config, &mut router, lru, &p, invs).unwrap();
    let loads: Vec<_> = router
        .loads
        .iter()
        .map(|(at, l)| (at / MS, l.clone()))
        .collect();
    assert_eq!(
        loads,
        [
            (0, vec![0.25, 0.0]),
            (1, vec![0.25, 0.25]),
            (2, vec![0.5, 0.25]),
            (10, vec![0.25, 0.25]),
            (11, vec![0.25, 0.0]),
            (12, vec![0.0, 0.0]),
        ]
    );
}

#[test]
fn closed_loop_clients_send_again_after_each_outcome() {
    // Two clients, 10 ms each on one core, think 5 ms: both share the core
    // 0–20, send again at 25 (ending at 45) and at 50 (ending at 70).
    let p = [profile(0, 128, 10, 10)];
    let mut clients = Loop {
        clients: 2,
        left: vec![3, 3],
        work: 10 * MS,
        think: 5 * MS,
        f: 0,
    };
    let mut out = Vec::new();
    let stats = run_closed(
        &cluster(1, 1, 1024),
        &mut to_zero(),
        lru,
        &p,
        &mut clients,
        |o| out.push(o),
    )
    .unwrap();
    let got: Vec<_> = out
        .iter()
        .map(|o| {
            (
                o.info.id.0,
                o.info.arrival / MS,
                o.finish.map(|f| f / MS),
                o.cold,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, 0, Some(20), true),
            (1, 0, Some(20), true),
            (2, 25, Some(45), false),
            (3, 25, Some(45), false),
            (4, 50, Some(70), false),
            (5, 50, Some(70), false),
        ]
    );
    assert_eq!((stats.invocations, stats.finished), (6, 6));
}

#[test]
fn a_closed_loop_client_sends_again_after_its_wait_ends_in_a_drop() {
    // Room for one 128 MB container, waits of at most 5 ms, think 5 ms.
    // Both clients send at 0: 0 runs cold 0–10, 1 waits and is dropped at
    // 5, so client 1 sends 2 at 10, which takes 0's container (idle at
    // that instant) warm: 10–20. Client 0 sends 3 at 15; it waits until 2
    // ends at 20, its deadline, and runs 20–30 warm.
    let p = [profile(0, 128, 10, 10)];
    let mut clients = Loop {
        clients: 2,
        left: vec![2, 2],
        work: 10 * MS,
        think: 5 * MS,
        f: 0,
    };
    let config = ClusterConfig {
        memory_wait: Some(5 * MS),
        ..cluster(1, 1, 128)
    };
    let mut out = Vec::new();
    let stats = run_closed(&config, &mut to_zero(), lru, &p, &mut clients, |o| {
        out.push(o)
    })
    .unwrap();
    let got: Vec<_> = out
        .iter()
        .map(|o| {
            (
                o.info.id.0,
                o.info.arrival / MS,
                o.finish.map(|f| f / MS),
                o.cold,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, 0, None, false),
            (0, 0, Some(10), true),
            (2, 10, Some(20), false),
            (3, 15, Some(30), false),
        ]
    );
    let s = &stats.servers[0];
    assert_eq!((s.waits, s.wait_time, s.drops_after_wait), (2, 10 * MS, 1));
    assert_eq!((stats.invocations, stats.finished), (4, 3));
}

#[test]
fn an_idle_container_evicted_from_the_middle_of_its_stack_leaves_the_rest_in_order() {
    // A (warm = cold = 10 ms) runs at 0, 1 and 2 ms in containers 0, 1, 2,
    // idle at 10, 11, 12: the stack is 2 on 1 on 0. B at 20 needs one of
    // the three slots of 128 MB and the keep-alive names container 1, from
    // the middle. A at 21 takes the top (2), A at 22 the one below (0).
    let p = [profile(0, 128, 10, 10), profile(1, 128, 10, 10)];
    struct Middle<'a>(&'a mut Vec<u64>);
    impl KeepAlive for Middle<'_> {
        fn name(&self) -> &str {
            "middle"
        }
        fn on_idle(&mut self, _: u64, _: &faasched_model::cluster::Container) {}
        fn on_reuse(&mut self, _: u64, c: &faasched_model::cluster::Container) {
            self.0.push(c.id.0);
        }
        fn victim(&mut self, _: u64) -> Option<faasched_model::cluster::ContainerId> {
            Some(faasched_model::cluster::ContainerId(1))
        }
    }
    let invs = vec![
        inv(0, 0, 0, 10),
        inv(1, 0, 1, 10),
        inv(2, 0, 2, 10),
        inv(3, 1, 20, 10),
        inv(4, 0, 21, 10),
        inv(5, 0, 22, 10),
    ];
    let mut reused = Vec::new();
    let mut keep = Some(Middle(&mut reused));
    let mut out = Vec::new();
    let stats = faasched_sim::cluster::run(
        &cluster(1, 8, 384),
        &mut to_zero(),
        |_| keep.take().map(Box::new).unwrap(),
        &p,
        invs.into_iter().map(Ok::<_, std::convert::Infallible>),
        |o| out.push(o),
    )
    .unwrap();
    assert_eq!(reused, [2, 0]);
    assert_eq!(stats.servers[0].evictions, 1);
    out.sort_by_key(|o| o.info.id);
    assert_eq!(
        out.iter().map(|o| o.cold).collect::<Vec<_>>(),
        [true, true, true, true, false, false]
    );
}

#[test]
fn a_transport_delays_each_answer_and_the_next_send() {
    // One client, 10 ms on one core, think 5 ms, transport 3 ms: the first
    // invocation ends on its server at 10 and its answer comes at 13; the
    // next is sent at 18, ends at 28, answered at 31; the last sent at 36.
    // The server is busy 30 of the 46 ms: the transport takes no core.
    let p = [profile(0, 128, 10, 10)];
    let mut clients = Loop {
        clients: 1,
        left: vec![3],
        work: 10 * MS,
        think: 5 * MS,
        f: 0,
    };
    let config = ClusterConfig {
        transport: 3 * MS,
        ..cluster(1, 1, 1024)
    };
    let mut out = Vec::new();
    let stats = run_closed(&config, &mut to_zero(), lru, &p, &mut clients, |o| {
        out.push(o)
    })
    .unwrap();
    let got: Vec<_> = out
        .iter()
        .map(|o| (o.info.arrival / MS, o.finish.map(|f| f / MS), o.cold))
        .collect();
    assert_eq!(
        got,
        [
            (0, Some(13), true),
            (18, Some(31), false),
            (36, Some(49), false)
        ]
    );
    assert_eq!(stats.servers[0].busy, 30 * MS);
    let too_long = ClusterConfig {
        transport: MAX_TRANSPORT + 1,
        ..cluster(1, 1, 1024)
    };
    assert!(
        too_long
            .validate()
            .unwrap_err()
            .to_string()
            .contains("transport")
    );
}
