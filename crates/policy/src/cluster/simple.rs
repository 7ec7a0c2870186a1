//! The locality-blind baselines: least loaded (CH-RLU §6.1, §6.3), random,
//! round robin, the paper's simulated greedy (§6.3) and power of two
//! choices. Each reads only the [`Servers`] it is handed; ties go to the
//! lowest server id.

use faasched_model::Time;
use faasched_model::cluster::{Choice, InvocationInfo, Route, ServerId, Servers};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::least_loaded;

/// The server with the lowest stale load (§6.1: "least loaded"), ties to
/// the lowest id. Between two publications every invocation sees the same
/// loads and goes to the same server: the herd the paper blames it for.
#[derive(Clone, Debug, Default)]
pub struct LeastLoaded;

impl LeastLoaded {
    /// The router; it has no parameters.
    pub fn new() -> LeastLoaded {
        LeastLoaded
    }
}

impl Route for LeastLoaded {
    fn name(&self) -> &str {
        "least-loaded"
    }

    fn route(&mut self, _now: Time, _inv: &InvocationInfo, servers: &Servers) -> Choice {
        least_loaded(servers).map_or(Choice::Drop, |(s, _)| Choice::Server(s))
    }
}

/// A server drawn uniformly at random: the floor any policy must beat.
#[derive(Clone, Debug)]
pub struct Random {
    rng: Pcg64,
}

impl Random {
    /// The router, drawing from a Pcg64 seeded with `seed`.
    pub fn new(seed: u64) -> Random {
        Random {
            rng: Pcg64::seed_from_u64(seed),
        }
    }
}

impl Route for Random {
    fn name(&self) -> &str {
        "random"
    }

    fn route(&mut self, _now: Time, _inv: &InvocationInfo, servers: &Servers) -> Choice {
        match servers.len() as u32 {
            0 => Choice::Drop,
            n => Choice::Server(ServerId(self.rng.random_range(0..n))),
        }
    }
}

/// Invocation k to server k mod n, from server 0: even counts, no state of
/// the servers read.
#[derive(Clone, Debug, Default)]
pub struct RoundRobin {
    next: usize,
}

impl RoundRobin {
    /// Starting at server 0.
    pub fn new() -> RoundRobin {
        RoundRobin::default()
    }
}

impl Route for RoundRobin {
    fn name(&self) -> &str {
        "round-robin"
    }

    fn route(&mut self, _now: Time, _inv: &InvocationInfo, servers: &Servers) -> Choice {
        if servers.is_empty() {
            return Choice::Drop;
        }
        let s = self.next % servers.len();
        self.next = (s + 1) % servers.len();
        Choice::Server(ServerId(s as u32))
    }
}

/// The paper's simulated "online greedy" baseline (§6.3): over every
/// server, the lowest expected running time, which knows each server's
/// warm containers ([`Servers::warm`]) but reads stale loads.
///
/// Expected time on `s` = (warm time if `s` holds an idle warm container of
/// the function, else cold time) × S(load), with S(L) = max(1, L): the
/// slowdown of a processor-sharing server whose jobs each use at most one
/// core, at L runnable jobs per core (below one per core every job has a
/// core; above, each gets 1/L of one). It never drops.
#[derive(Clone, Debug, Default)]
pub struct Greedy;

impl Greedy {
    /// The router; it has no parameters.
    pub fn new() -> Greedy {
        Greedy
    }
}

impl Route for Greedy {
    fn name(&self) -> &str {
        "greedy"
    }

    fn route(&mut self, _now: Time, inv: &InvocationInfo, servers: &Servers) -> Choice {
        let p = &inv.profile;
        servers
            .iter()
            .map(|(s, v)| {
                let base = if servers.warm(s, p.function) > 0 {
                    p.warm
                } else {
                    p.cold
                };
                (s, base as f64 * v.load.max(1.0))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            .map_or(Choice::Drop, |(s, _)| Choice::Server(s))
    }
}

/// Power of two choices (ours, not the paper's; Mitzenmacher 2001): two
/// distinct servers drawn at random, the one with the lower stale load
/// (ties to the lower id). Against stale loads it herds less than least
/// loaded, since each invocation compares a different random pair, while
/// still avoiding the most loaded servers; it ignores locality.
#[derive(Clone, Debug)]
pub struct PowerOfTwo {
    rng: Pcg64,
}

impl PowerOfTwo {
    /// The router, drawing from a Pcg64 seeded with `seed`.
    pub fn new(seed: u64) -> PowerOfTwo {
        PowerOfTwo {
            rng: Pcg64::seed_from_u64(seed),
        }
    }
}

impl Route for PowerOfTwo {
    fn name(&self) -> &str {
        "power-of-two"
    }

    fn route(&mut self, _now: Time, _inv: &InvocationInfo, servers: &Servers) -> Choice {
        let n = servers.len() as u32;
        match n {
            0 => Choice::Drop,
            1 => Choice::Server(ServerId(0)),
            _ => {
                let a = self.rng.random_range(0..n);
                let mut b = self.rng.random_range(0..n - 1);
                if b >= a {
                    b += 1;
                }
                let (a, b) = (ServerId(a.min(b)), ServerId(a.max(b)));
                let lower = if servers.get(b).load.total_cmp(&servers.get(a).load).is_lt() {
                    b
                } else {
                    a
                };
                Choice::Server(lower)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testkit::{inv, profile, servers};
    use faasched_model::FunctionId;

    fn on(s: u32) -> Choice {
        Choice::Server(ServerId(s))
    }

    #[test]
    fn least_loaded_takes_the_lowest_load_and_the_lowest_id_on_ties() {
        let i = inv(0, 0, profile(1, 128, 100, 200));
        let mut r = LeastLoaded::new();
        assert_eq!(r.route(0, &i, &servers(4, &[0.5, 0.2, 0.2, 0.9])), on(1));
        assert_eq!(r.route(0, &i, &servers(4, &[f64::NAN, 3.0])), on(1));
        assert_eq!(r.route(0, &i, &servers(4, &[])), Choice::Drop);
    }

    #[test]
    fn round_robin_cycles_and_random_is_seeded_and_in_range() {
        let i = inv(0, 0, profile(1, 128, 100, 200));
        let s = servers(4, &[9.0, 0.0, 0.0]);
        let mut rr = RoundRobin::new();
        let got: Vec<Choice> = (0..4).map(|_| rr.route(0, &i, &s)).collect();
        assert_eq!(got, [on(0), on(1), on(2), on(0)]);
        let draw = |seed| {
            let mut r = Random::new(seed);
            (0..100).map(|_| r.route(0, &i, &s)).collect::<Vec<_>>()
        };
        let a = draw(4);
        assert_eq!(a, draw(4));
        assert!((0..3).all(|k| a.contains(&on(k))));
        assert_eq!(
            RoundRobin::new().route(0, &i, &servers(4, &[])),
            Choice::Drop
        );
        assert_eq!(Random::new(0).route(0, &i, &servers(4, &[])), Choice::Drop);
    }

    #[test]
    fn greedy_weighs_warm_containers_against_load() {
        // Warm 100, cold 400. Server 0: warm, load 3 → 300. Server 1: cold,
        // load 0.5 → 400 × 1 = 400. Server 2: cold, load 2 → 800.
        let i = inv(0, 0, profile(1, 128, 100, 400));
        let mut s = servers(4, &[3.0, 0.5, 2.0]);
        s.add_warm(ServerId(0), FunctionId(1));
        s.add_warm(ServerId(2), FunctionId(2));
        assert_eq!(Greedy::new().route(0, &i, &s), on(0));
        // At load 5 the warm server's 500 loses to the idle cold one's 400.
        s.get_mut(ServerId(0)).load = 5.0;
        assert_eq!(Greedy::new().route(0, &i, &s), on(1));
        // Below one per core there is no slowdown: ties go to the lowest id.
        let s = servers(4, &[0.3, 0.1]);
        assert_eq!(Greedy::new().route(0, &i, &s), on(0));
    }

    #[test]
    fn power_of_two_takes_the_lower_of_two_distinct_servers() {
        let i = inv(0, 0, profile(1, 128, 100, 400));
        // Server 2 is never the lower of any pair; server 0 always is.
        let s = servers(4, &[0.0, 1.0, 2.0]);
        let mut r = PowerOfTwo::new(7);
        let got: Vec<Choice> = (0..200).map(|_| r.route(0, &i, &s)).collect();
        assert!(!got.contains(&on(2)));
        let zeros = got.iter().filter(|&&c| c == on(0)).count();
        // Pairs {0,1}, {0,2}, {1,2} equally likely: server 0 wins 2/3.
        assert!((110..160).contains(&zeros), "{zeros}");
        assert_eq!(PowerOfTwo::new(0).route(0, &i, &servers(4, &[5.0])), on(0));
        assert_eq!(
            PowerOfTwo::new(0).route(0, &i, &servers(4, &[])),
            Choice::Drop
        );
        let mut a = PowerOfTwo::new(3);
        let mut b = PowerOfTwo::new(3);
        let s = servers(4, &[0.0; 8]);
        assert!((0..50).all(|_| a.route(0, &i, &s) == b.route(0, &i, &s)));
    }
}
