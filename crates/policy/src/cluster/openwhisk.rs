//! OpenWhisk's default balancer (apache/openwhisk
//! ShardingContainerPoolBalancer.scala; CH-RLU §2.3): a function's home is
//! its hash mod n, and it probes home, home + step, home + 2·step, ... mod
//! n, `step` one of the pairwise-coprime numbers ≤ n chosen by the same
//! hash, so every function visits every server once in its own order.
//!
//! 1. A server takes the invocation if its outstanding memory (this
//!    router's own counter: + the function's memory at each placement,
//!    − at each finish) plus the function's memory fits the server's
//!    memory (the code's `NestedSemaphore.tryAcquireConcurrent`, one
//!    permit per MB).
//! 2. After n probes it goes to a random server anyway, counted there too
//!    (`forceAcquireConcurrent`, "system is overloaded"): OpenWhisk never
//!    drops.
//!
//! With one controller each server's whole memory is its capacity (the
//! code divides it by the number of controllers). Health checks are the
//! engine's business: every server in [`Servers`] is healthy.

use faasched_model::FunctionId;
use faasched_model::Time;
use faasched_model::cluster::{
    Choice, InvocationInfo, InvocationOutcome, Route, ServerId, Servers,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::ring::hash64;

/// Salt for OpenWhisk's function hash, apart from the ring's and the
/// sampler's.
const OPENWHISK_DOMAIN: u64 = 0x4f50_454e_5748_534b; // "OPENWHSK"

/// The numbers in 1..=n coprime with n and with every smaller one taken
/// (OpenWhisk's `pairwiseCoprimeNumbersUntil`): n = 10 gives 1, 3, 7. Each
/// is a step that visits all n servers.
pub fn pairwise_coprimes(n: u32) -> Vec<u32> {
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    let mut out: Vec<u32> = Vec::new();
    for cur in 1..=n {
        if gcd(cur, n) == 1 && out.iter().all(|&p| gcd(p, cur) == 1) {
            out.push(cur);
        }
    }
    out
}

/// The probe order of a function hashing to `hash` over `n` servers with
/// these `steps`: home = hash mod n, step = steps[hash mod |steps|].
fn probes(hash: u64, n: u32, steps: &[u32]) -> impl Iterator<Item = u32> {
    let n64 = u64::from(n.max(1));
    let home = hash % n64;
    let step = steps
        .get((hash % steps.len().max(1) as u64) as usize)
        .map_or(1, |&s| u64::from(s));
    (0..u64::from(n)).map(move |i| ((home + i * step) % n64) as u32)
}

/// The OpenWhisk router (module docs).
#[derive(Clone, Debug)]
pub struct OpenWhisk {
    /// Outstanding memory per server, in MB.
    outstanding: Vec<u64>,
    /// The step sizes for `outstanding.len()` servers.
    steps: Vec<u32>,
    rng: Pcg64,
}

impl OpenWhisk {
    /// The router, its overflow choices drawn from a Pcg64 seeded with
    /// `seed`.
    pub fn new(seed: u64) -> OpenWhisk {
        OpenWhisk {
            outstanding: Vec::new(),
            steps: Vec::new(),
            rng: Pcg64::seed_from_u64(seed),
        }
    }

    /// The memory this router counts as outstanding on `s`, in MB.
    pub fn outstanding(&self, s: ServerId) -> u64 {
        self.outstanding.get(s.0 as usize).copied().unwrap_or(0)
    }

    /// The fixed hash of `f` (the code's `generateHash`).
    fn hash(f: FunctionId) -> u64 {
        hash64(OPENWHISK_DOMAIN ^ u64::from(f.0))
    }
}

impl Route for OpenWhisk {
    fn name(&self) -> &str {
        "openwhisk"
    }

    fn route(&mut self, _now: Time, inv: &InvocationInfo, servers: &Servers) -> Choice {
        let n = servers.len() as u32;
        if n == 0 {
            return Choice::Drop;
        }
        if self.outstanding.len() != n as usize {
            self.outstanding.resize(n as usize, 0);
            self.steps = pairwise_coprimes(n);
        }
        let need = u64::from(inv.profile.memory_mb);
        let fits = |s: u32| {
            self.outstanding[s as usize] + need <= u64::from(servers.get(ServerId(s)).memory_mb)
        };
        let s = probes(Self::hash(inv.profile.function), n, &self.steps)
            .find(|&s| fits(s))
            .unwrap_or_else(|| self.rng.random_range(0..n));
        self.outstanding[s as usize] += need;
        Choice::Server(ServerId(s))
    }

    fn on_finish(&mut self, _now: Time, outcome: &InvocationOutcome) {
        if let Some(s) = outcome.server
            && let Some(m) = self.outstanding.get_mut(s.0 as usize)
        {
            *m = m.saturating_sub(u64::from(outcome.info.profile.memory_mb));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testkit::{inv, profile, servers};

    #[test]
    fn ten_servers_step_by_1_3_7_and_home_3_step_3_visits_all() {
        assert_eq!(pairwise_coprimes(10), [1, 3, 7]);
        assert_eq!(pairwise_coprimes(1), [1]);
        assert_eq!(pairwise_coprimes(12), [1, 5, 7, 11]);
        // hash 13: home 13 mod 10 = 3, step steps[13 mod 3 = 1] = 3.
        let order: Vec<u32> = probes(13, 10, &pairwise_coprimes(10)).collect();
        assert_eq!(order, [3, 6, 9, 2, 5, 8, 1, 4, 7, 0]);
    }

    #[test]
    fn outstanding_memory_forwards_and_finishing_frees_it() {
        let s = servers(4, &[0.0; 10]);
        let f = profile(1, 600, 100, 200);
        let order: Vec<u32> =
            probes(OpenWhisk::hash(f.function), 10, &pairwise_coprimes(10)).collect();
        let mut r = OpenWhisk::new(0);
        // 600 MB on 1,024 MB servers: one each, along the probe order.
        let first = r.route(0, &inv(0, 0, f), &s);
        let second = r.route(0, &inv(1, 0, f), &s);
        assert_eq!(first, Choice::Server(ServerId(order[0])));
        assert_eq!(second, Choice::Server(ServerId(order[1])));
        assert_eq!(r.outstanding(ServerId(order[0])), 600);
        let done = InvocationOutcome {
            info: inv(0, 0, f),
            work: 100,
            server: Some(ServerId(order[0])),
            cold: true,
            first_run: Some(100),
            finish: Some(200),
            inside: None,
        };
        r.on_finish(200, &done);
        assert_eq!(r.outstanding(ServerId(order[0])), 0);
        assert_eq!(
            r.route(300, &inv(2, 300, f), &s),
            Choice::Server(ServerId(order[0]))
        );
    }

    #[test]
    fn a_full_cluster_overflows_to_a_random_server_and_never_drops() {
        let s = servers(4, &[0.0; 3]);
        let f = profile(1, 1_000, 100, 200);
        let mut r = OpenWhisk::new(9);
        let mut seen = [0u64; 3];
        for i in 0..30 {
            match r.route(0, &inv(i, 0, f), &s) {
                Choice::Server(s) => seen[s.0 as usize] += 1,
                Choice::Drop => panic!("openwhisk never drops"),
            }
        }
        assert!(seen.iter().all(|&c| c >= 1), "{seen:?}");
        assert_eq!(
            (0..3).map(|i| r.outstanding(ServerId(i))).sum::<u64>(),
            30_000
        );
        let empty = servers(4, &[]);
        assert_eq!(r.route(0, &inv(31, 0, f), &empty), Choice::Drop);
    }
}
