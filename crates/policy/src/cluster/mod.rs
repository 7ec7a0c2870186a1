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
