//! The cluster level's policies: the routers of CH-RLU (Fuerst, Sharma,
//! HPDC'22) and its baselines, each a pure [`Route`] over the [`Servers`]
//! it is handed, and the per-server keep-alive policies, each a pure
//! [`KeepAlive`]. None holds an engine; each reads plain values and returns
//! a decision, so the simulator and the live gateway share them.
//!
//! Routers, by the name [`Route::name`] returns:
//!
//! | Name | Constructor | Rule |
//! |---|---|---|
//! | `ch-rlu` | [`ChRlu::new`] | Alg. 2: ring walk, bound min(c·b/w, b_max), noise for popular functions, least loaded or drop |
//! | `ch-rlu-code` | [`ChRlu::with_params`] with [`Variant::OpenWhiskCode`] | the authors' OpenWhisk code's tests; whole walk, then random |
//! | `ch-rlu-iluvatar` | [`ChRlu::with_params`] with [`Variant::Iluvatar`] | Ilúvatar's: unpopular at home, popular walk, fallback home |
//! | `ch-bl` | [`ChBl::new`] | Alg. 2 with c = w and no noise: bound min(b, b_max) |
//! | `openwhisk` | [`OpenWhisk::new`] | hash % n with a coprime step, outstanding memory must fit, then random |
//! | `least-loaded` | [`LeastLoaded::new`] | lowest stale load |
//! | `random` | [`Random::new`] | uniform, seeded |
//! | `round-robin` | [`RoundRobin::new`] | in turn |
//! | `greedy` | [`Greedy::new`] | lowest (warm or cold) × max(1, load) over all servers |
//! | `power-of-two` | [`PowerOfTwo::new`] | the lower stale load of two random servers |
//!
//! Keep-alive policies, by the name [`KeepAlive::name`] returns:
//! `greedy-dual` ([`GreedyDual::new`]), `ttl` ([`Ttl::new`]), `lru`
//! ([`Lru::new`]).
//!
//! Every router returns [`Choice::Drop`] rather than panicking when there
//! are no servers, and every random draw comes from a [`rand_pcg::Pcg64`]
//! seeded at construction, so one seed gives one sequence of decisions.
//!
//! [`Route`]: faasched_model::cluster::Route
//! [`Route::name`]: faasched_model::cluster::Route::name
//! [`KeepAlive`]: faasched_model::cluster::KeepAlive
//! [`KeepAlive::name`]: faasched_model::cluster::KeepAlive::name
//! [`Servers`]: faasched_model::cluster::Servers
//! [`Choice::Drop`]: faasched_model::cluster::Choice::Drop

mod chrlu;
mod keepalive;
mod openwhisk;
pub mod popularity;
pub mod ring;
mod simple;

pub use chrlu::{
    B, B_MAX, ChBl, ChBlParams, ChRlu, ChRluParams, MAX_CHAIN_LEN, NOISE_SIGMA, Variant,
};
pub use keepalive::{GreedyDual, Lru, TTL, Ttl};
pub use openwhisk::{OpenWhisk, pairwise_coprimes};
pub use popularity::{Popularity, PopularityParams, Sampling};
pub use ring::Ring;
pub use simple::{Greedy, LeastLoaded, PowerOfTwo, Random, RoundRobin};

use faasched_model::cluster::{ServerId, Servers};

/// The server with the lowest stale load and that load, ties to the lowest
/// id; `None` if there are none. Loads compare by `f64::total_cmp`, so a
/// NaN load (which no engine should publish) ranks last, never first.
fn least_loaded(servers: &Servers) -> Option<(ServerId, f64)> {
    servers
        .iter()
        .map(|(s, v)| (s, v.load))
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
}

#[cfg(test)]
pub(crate) mod testkit {
    //! Hand-built clusters and invocations for the policies' tests.

    use faasched_model::cluster::{
        FunctionProfile, InvocationId, InvocationInfo, ServerView, Servers,
    };
    use faasched_model::{FunctionId, Nanos, Time};

    /// Servers with `cores` cores and 1,024 MB each, at these loads.
    pub fn servers(cores: u32, loads: &[f64]) -> Servers {
        Servers::new(
            loads
                .iter()
                .map(|&load| ServerView {
                    cores,
                    memory_mb: 1024,
                    load,
                    published: 0,
                    running: 0,
                })
                .collect(),
        )
    }

    /// Function `f`'s profile: `memory_mb`, warm and cold times.
    pub fn profile(f: u32, memory_mb: u32, warm: Nanos, cold: Nanos) -> FunctionProfile {
        FunctionProfile {
            function: FunctionId(f),
            memory_mb,
            warm,
            cold,
        }
    }

    /// Invocation `id` of `profile` arriving at `arrival`.
    pub fn inv(id: u64, arrival: Time, profile: FunctionProfile) -> InvocationInfo {
        InvocationInfo {
            id: InvocationId(id),
            arrival,
            profile,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::popularity::Sampling;
    use super::*;
    use faasched_model::cluster::{
        Choice, Container, ContainerId, FunctionProfile, InvocationId, InvocationInfo,
        InvocationOutcome, KeepAlive, Route, ServerView,
    };
    use faasched_model::{FunctionId, Time};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Every router, by name, and whether it may drop.
    fn routers(seed: u64) -> Vec<(Box<dyn Route>, bool)> {
        let variant = |variant| {
            let params = ChRluParams {
                variant,
                popularity: PopularityParams {
                    sampling: Sampling::All,
                    ..PopularityParams::default()
                },
                ..ChRluParams::default()
            };
            Box::new(ChRlu::with_params(params, seed).unwrap()) as Box<dyn Route>
        };
        vec![
            (Box::new(ChRlu::new(seed)), true),
            (variant(Variant::Paper), true),
            (variant(Variant::OpenWhiskCode), false),
            (variant(Variant::Iluvatar), false),
            (Box::new(ChBl::new()), true),
            (Box::new(OpenWhisk::new(seed)), false),
            (Box::new(LeastLoaded::new()), false),
            (Box::new(Random::new(seed)), false),
            (Box::new(RoundRobin::new()), false),
            (Box::new(Greedy::new()), false),
            (Box::new(PowerOfTwo::new(seed)), false),
        ]
    }

    #[test]
    fn names_are_the_cli_spellings() {
        let names: Vec<String> = routers(0)
            .iter()
            .map(|(r, _)| r.name().to_owned())
            .collect();
        assert_eq!(
            names,
            [
                "ch-rlu",
                "ch-rlu",
                "ch-rlu-code",
                "ch-rlu-iluvatar",
                "ch-bl",
                "openwhisk",
                "least-loaded",
                "random",
                "round-robin",
                "greedy",
                "power-of-two"
            ]
        );
        let keep: [&dyn KeepAlive; 3] = [&GreedyDual::new(), &Ttl::new(), &Lru::new()];
        let names: Vec<&str> = keep.iter().map(|k| k.name()).collect();
        assert_eq!(names, ["greedy-dual", "ttl", "lru"]);
    }

    #[test]
    fn policies_are_send() {
        fn send<T: Send + 'static>() {}
        send::<ChRlu>();
        send::<ChBl>();
        send::<OpenWhisk>();
        send::<LeastLoaded>();
        send::<Random>();
        send::<RoundRobin>();
        send::<Greedy>();
        send::<PowerOfTwo>();
        send::<GreedyDual>();
        send::<Ttl>();
        send::<Lru>();
    }

    fn view() -> impl Strategy<Value = ServerView> {
        (
            0..64u32,
            any::<u32>(),
            prop_oneof![any::<f64>(), 0.0..8.0f64],
        )
            .prop_map(|(cores, memory_mb, load)| ServerView {
                cores,
                memory_mb,
                load,
                published: 0,
                running: 0,
            })
    }

    fn profile() -> impl Strategy<Value = FunctionProfile> {
        (0..6u32, any::<u32>(), any::<u64>(), any::<u64>()).prop_map(
            |(f, memory_mb, warm, cold)| FunctionProfile {
                function: FunctionId(f),
                memory_mb,
                warm,
                cold,
            },
        )
    }

    /// A keep-alive event: create a container of a function, finish,
    /// reuse, ask for a victim, or expire at a later time.
    #[derive(Clone, Debug)]
    enum Event {
        Create(u32),
        Idle(usize),
        Reuse(usize),
        Victim,
        Expire(u64),
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            (0..4u32).prop_map(Event::Create),
            any::<usize>().prop_map(Event::Idle),
            any::<usize>().prop_map(Event::Reuse),
            Just(Event::Victim),
            (0..1_200_000_000_000u64).prop_map(Event::Expire),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Any loads (NaN, infinite, negative), cores, memories and
        /// profiles: every router answers a server of the cluster, or a
        /// drop where it may drop, and none panics.
        #[test]
        fn routers_answer_a_server_of_the_cluster_whatever_the_data(
            views in prop::collection::vec(view(), 0..7),
            invs in prop::collection::vec((profile(), 0..5_000_000_000u64), 1..30),
            seed in any::<u64>(),
        ) {
            let mut servers = Servers::new(views);
            let n = servers.len();
            if n > 0 {
                servers.add_warm(ServerId(0), FunctionId(1));
            }
            for (mut r, may_drop) in routers(seed) {
                let mut now: Time = 0;
                for (i, &(p, gap)) in invs.iter().enumerate() {
                    now += gap;
                    let info = InvocationInfo { id: InvocationId(i as u64), arrival: now, profile: p };
                    r.on_loads(now, &servers);
                    let choice = r.route(now, &info, &servers);
                    match choice {
                        Choice::Server(s) => prop_assert!((s.0 as usize) < n, "{} chose {s:?}", r.name()),
                        Choice::Drop => prop_assert!(may_drop || n == 0, "{} dropped", r.name()),
                    }
                    let server = match choice {
                        Choice::Server(s) => Some(s),
                        Choice::Drop => None,
                    };
                    let finish = server.map(|_| now + 1);
                    let outcome = InvocationOutcome {
                        info,
                        work: p.warm,
                        server,
                        cold: true,
                        first_run: server.map(|_| now),
                        finish,
                        inside: None,
                    };
                    r.on_finish(now + 1, &outcome);
                }
            }
        }

        /// Random container lives: a victim or an expired container is
        /// always one that is idle now, and each goes once.
        #[test]
        fn keep_alives_only_ever_name_idle_containers(
            events in prop::collection::vec(event(), 1..80),
            costs in prop::collection::vec((1..2_000u32, 0..1_000u64, 0..5_000u64), 4),
        ) {
            let keeps: Vec<Box<dyn KeepAlive>> =
                vec![Box::new(GreedyDual::new()), Box::new(Ttl::new()), Box::new(Lru::new())];
            for mut k in keeps {
                let mut now: Time = 0;
                let mut made: Vec<Container> = Vec::new();
                let mut idle: BTreeSet<ContainerId> = BTreeSet::new();
                let mut gone: BTreeSet<ContainerId> = BTreeSet::new();
                for e in &events {
                    now += 1;
                    match *e {
                        Event::Create(f) => {
                            let (memory_mb, warm, cold) = costs[f as usize];
                            let profile = FunctionProfile { function: FunctionId(f), memory_mb, warm, cold };
                            let c = Container { id: ContainerId(made.len() as u64), profile, created: now, last_used: now };
                            k.on_created(now, &c);
                            made.push(c);
                        }
                        Event::Idle(i) | Event::Reuse(i) if made.is_empty() => { let _ = i; }
                        Event::Idle(i) => {
                            let len = made.len();
                            let c = &mut made[i % len];
                            if !gone.contains(&c.id) && idle.insert(c.id) {
                                c.last_used = now;
                                k.on_idle(now, c);
                            }
                        }
                        Event::Reuse(i) => {
                            let len = made.len();
                            let c = &mut made[i % len];
                            if idle.remove(&c.id) {
                                c.last_used = now;
                                k.on_reuse(now, c);
                            }
                        }
                        Event::Victim => {
                            if let Some(v) = k.victim(now) {
                                prop_assert!(idle.remove(&v), "{} evicted {v:?}, not idle", k.name());
                                gone.insert(v);
                            } else {
                                prop_assert!(idle.is_empty(), "{} refused with idle containers", k.name());
                            }
                        }
                        Event::Expire(later) => {
                            now += later;
                            let mut out = Vec::new();
                            if k.next_expiry().is_some_and(|t| t <= now) {
                                k.expired(now, &mut out);
                                prop_assert!(!out.is_empty());
                            }
                            for v in out {
                                prop_assert!(idle.remove(&v), "{} expired {v:?}, not idle", k.name());
                                gone.insert(v);
                            }
                        }
                    }
                }
            }
        }
    }
}
