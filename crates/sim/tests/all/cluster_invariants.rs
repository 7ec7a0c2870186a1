//! Cluster engine invariants on random workloads, with and without waits
//! for memory: every invocation finishes or is dropped exactly once, never
//! before its work is done; memory never exceeds a server's; the cores'
//! busy time is the work done; the same inputs give the same outcomes.

use crate::cluster::{Lru, by, profile, simulate};
use faasched_model::cluster::{
    Choice, FunctionProfile, Invocation, InvocationId, InvocationOutcome, KeepAlive, ServerId,
};
use faasched_model::{FunctionId, MS, Nanos, US};
use faasched_sim::cluster::{ClusterConfig, ClusterStats, ColdStart, DEFAULT_MEMORY_WAIT, Loads};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// Six functions of 64–320 MB, warm 1–20 ms, cold 1–5× warm.
fn profiles(rng: &mut Pcg64) -> Vec<FunctionProfile> {
    (0..6)
        .map(|f| {
            let warm = rng.random_range(1..=20);
            profile(
                f,
                64 * rng.random_range(1..=5),
                warm,
                warm * rng.random_range(1..=5),
            )
        })
        .collect()
}

/// `n` invocations at random gaps (0–2 ms), work around their function's
/// warm time.
fn invocations(rng: &mut Pcg64, profiles: &[FunctionProfile], n: u64) -> Vec<Invocation> {
    let mut at = 0;
    (0..n)
        .map(|i| {
            at += rng.random_range(0..2_000) * US;
            let f = rng.random_range(0..profiles.len() as u32);
            let warm = profiles[f as usize].warm;
            Invocation {
                id: InvocationId(i),
                function: FunctionId(f),
                arrival: at,
                work: rng.random_range(warm / 2..=warm * 2),
            }
        })
        .collect()
}

/// A run on 3 servers of 2 cores and 512 MB, routed at random (a tenth
/// dropped), LRU keep-alive (with a TTL, or `fresh` loads, contention,
/// cold starts and waits for memory as asked).
fn random_run(
    seed: u64,
    ttl: bool,
    fresh: bool,
    contention: f64,
    cold_start: ColdStart,
    memory_wait: Option<Nanos>,
) -> (
    Vec<Invocation>,
    Vec<FunctionProfile>,
    Vec<InvocationOutcome>,
    ClusterStats,
) {
    let mut rng = Pcg64::seed_from_u64(seed);
    let p = profiles(&mut rng);
    let invs = invocations(&mut rng, &p, 3_000);
    let config = ClusterConfig {
        loads: if fresh {
            Loads::Exact
        } else {
            Loads::Published
        },
        contention,
        cold_start,
        memory_wait,
        ..ClusterConfig::new(3, 2, 512)
    };
    let mut pick = Pcg64::seed_from_u64(seed ^ 0x5eed);
    let mut router = by(move |_, s| {
        let r = pick.random_range(0..=s.len() as u32 * 10);
        match r / 10 {
            x if (x as usize) < s.len() && r % 10 != 0 => Choice::Server(ServerId(x)),
            _ => Choice::Drop,
        }
    });
    let keep = |_| -> Box<dyn KeepAlive> { Box::new(Lru::with_ttl(ttl.then_some(20 * MS))) };
    let (out, stats) = simulate(&config, &mut router, keep, &p, invs.clone()).unwrap();
    (invs, p, out, stats)
}

#[test]
fn every_invocation_ends_once_after_its_work_within_memory() {
    let waits = [Some(DEFAULT_MEMORY_WAIT), Some(0), None, Some(3 * MS)];
    for seed in 0..8 {
        let (ttl, fresh) = (seed % 2 == 0, seed % 3 == 0);
        let cold_start = [ColdStart::Cpu, ColdStart::Wall][seed as usize % 2];
        let memory_wait = waits[(seed / 2) as usize];
        let (invs, p, out, stats) = random_run(seed, ttl, fresh, 0.0, cold_start, memory_wait);
        // Exactly once each (sorted by id).
        assert_eq!(out.len(), invs.len());
        assert!(out.iter().zip(&invs).all(|(o, i)| o.info.id == i.id));
        let mut work = 0;
        for (o, i) in out.iter().zip(&invs) {
            assert_eq!((o.info.arrival, o.work), (i.arrival, i.work));
            let Some(finish) = o.finish else {
                assert!(!o.cold && o.first_run.is_none());
                continue;
            };
            let extra = if o.cold {
                p[i.function.0 as usize].cold_extra()
            } else {
                0
            };
            // It first took a core after it arrived (and, in wall time,
            // after its start), and then used at most one: it ended no
            // sooner than the work it held the cores for.
            let run = o.first_run.expect("a finished invocation ran");
            let (ready, held) = match cold_start {
                ColdStart::Cpu => (i.arrival, i.work + extra),
                ColdStart::Wall => (i.arrival + extra, i.work),
            };
            assert!(run >= ready && finish >= run + held, "seed {seed}: {o:?}");
            // At most one core: never sooner than its work.
            assert!(finish >= i.arrival + i.work + extra, "seed {seed}: {o:?}");
            work += match cold_start {
                ColdStart::Cpu => i.work + extra,
                ColdStart::Wall => i.work,
            };
        }
        let finished = out.iter().filter(|o| !o.dropped()).count() as u64;
        assert_eq!(stats.finished, finished);
        assert_eq!(stats.finished + stats.dropped(), stats.invocations);
        assert!(stats.dropped_by_router > 0 && stats.finished > 0);
        // Only the router's drops name no server.
        let unplaced = out.iter().filter(|o| o.server.is_none()).count() as u64;
        assert_eq!(unplaced, stats.dropped_by_router);
        assert!(out.iter().all(|o| o.server.is_some() || o.dropped()));
        // Memory short on some server: something was evicted, waited or
        // dropped; waits only where they are allowed, and drops only after
        // a wait that is bounded.
        assert!(stats.servers.iter().any(|s| s.evictions > 0 || s.drops > 0));
        let waited: u64 = stats.servers.iter().map(|s| s.waits).sum();
        let after_wait: u64 = stats.servers.iter().map(|s| s.drops_after_wait).sum();
        assert_eq!(after_wait > 0, memory_wait == Some(3 * MS), "seed {seed}");
        assert_eq!(waited > 0, memory_wait != Some(0), "seed {seed}");
        let mut busy = 0;
        for s in &stats.servers {
            assert!(s.max_memory_mb <= 512, "seed {seed}: {s:?}");
            assert_eq!(s.routed, s.cold_starts + s.warm_starts + s.drops);
            assert!(s.drops_after_wait <= s.waits.min(s.drops));
            if let Some(limit) = memory_wait {
                assert!(s.wait_time <= s.waits * limit, "seed {seed}: {s:?}");
            }
            busy += s.busy;
        }
        assert_eq!(
            stats.cold_starts(),
            out.iter().filter(|o| o.cold).count() as u64
        );
        if ttl {
            assert!(stats.servers.iter().any(|s| s.expirations > 0));
        }
        // The cores did exactly the work, but for the clock's rounding
        // (under 1 ns per event) against the invocations.
        assert!(
            busy >= work && busy - work <= stats.events,
            "{busy} vs {work}"
        );
    }
}

#[test]
fn contention_only_delays() {
    let wait = Some(DEFAULT_MEMORY_WAIT);
    let (_, _, plain, _) = random_run(7, false, false, 0.0, ColdStart::Cpu, wait);
    let (_, _, slow, _) = random_run(7, false, false, 0.2, ColdStart::Cpu, wait);
    let latency =
        |out: &[InvocationOutcome]| -> u64 { out.iter().filter_map(|o| o.latency()).sum() };
    assert!(latency(&slow) > latency(&plain));
}

#[test]
fn same_inputs_same_outcomes() {
    for wait in [Some(DEFAULT_MEMORY_WAIT), Some(MS), None] {
        let a = random_run(11, true, false, 0.1, ColdStart::Wall, wait);
        let b = random_run(11, true, false, 0.1, ColdStart::Wall, wait);
        assert!(a.3.servers.iter().any(|s| s.waits > 0));
        assert_eq!(a.2, b.2);
        assert_eq!(a.3, b.3);
    }
}

/// How fast the engine runs: a million invocations of 1,000 functions on
/// 8 servers of 16 cores, routed by function (as a hash would), at half
/// load. Prints invocations per second; run with `--ignored --nocapture`
/// in release.
#[test]
#[ignore]
fn speed() {
    let mut rng = Pcg64::seed_from_u64(1);
    let p: Vec<_> = (0..1_000)
        .map(|f| {
            let warm = rng.random_range(1..=200);
            profile(f, 64 * rng.random_range(1..=4), warm, warm + warm / 10)
        })
        .collect();
    // Mean work ≈ 100 ms on 128 cores at ρ = 0.5: 640 arrivals per second.
    let mut at = 0;
    let invs: Vec<_> = (0..1_000_000u64)
        .map(|i| {
            at += rng.random_range(0..3_125) * US;
            let f = rng.random_range(0..1_000u32);
            Invocation {
                id: InvocationId(i),
                function: FunctionId(f),
                arrival: at,
                work: p[f as usize].warm,
            }
        })
        .collect();
    let mut router = by(|i, s| Choice::Server(ServerId(i.profile.function.0 % s.len() as u32)));
    let keep = |_| -> Box<dyn KeepAlive> { Box::new(Lru::default()) };
    let t = std::time::Instant::now();
    let (out, stats) = simulate(&ClusterConfig::default(), &mut router, keep, &p, invs).unwrap();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{} invocations ({} cold, {} dropped, {} events) in {secs:.2} s: {:.0} per second",
        out.len(),
        stats.cold_starts(),
        stats.dropped(),
        stats.events,
        out.len() as f64 / secs
    );
}
