//! CH-RLU (§4, Alg. 2) and the paper's CH-BL baseline (§4.5, §6.1): walk
//! the function's ring successors from its home and take the first server
//! whose stale load is under a bound.
//!
//! CH-RLU, as [`Variant::Paper`] runs it for an invocation of `f`:
//!
//! 1. [`Popularity::record`] sees the arrival (Alg. 1).
//! 2. For the home and then up to `max_chain_len` successors (distinct
//!    servers, [`Ring::walk`]): L = the server's stale load, plus a draw of
//!    N(λ, σ) if `f` was popular at the last refresh; accept the server if
//!    L < min(c·b/w, b_max), c/w being `f`'s cold over warm time (at least
//!    1: a cold start never makes a server less acceptable).
//! 3. Past the chain: the least-loaded server, or drop if even its load is
//!    ≥ b_max (§4.7: "If the least loaded server is also overloaded, we
//!    drop the function").
//! 4. Each `on_loads` recomputes popularity ([`Popularity::refresh`]).
//!
//! λ, the noise mean, is "extra anticipated load on the server based on
//! the staleness and function arrival rate on the server" (§4.6.2); Alg. 2
//! prints λ = 1/avg_iat, an arrival rate added to a load per core. Ours,
//! after the authors' OpenWhisk code (note on the code at 12fdb807): the
//! function's arrival rate per second (1 / its EWMA IAT) spread over the
//! n servers and over the accepting server's cores, λ = (1/IAT) / n /
//! cores. The noise only perturbs the comparison; the load is not written
//! back. A popular function arriving at more than about b_max·n·cores
//! per second thus has λ above every bound and is forwarded past its whole
//! chain to the least-loaded server.

use faasched_model::cluster::{Choice, FunctionProfile, InvocationInfo, Route, ServerId, Servers};
use faasched_model::{SEC, Time};
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};

use super::least_loaded;
use super::popularity::{Popularity, PopularityParams};
use super::ring::{DEFAULT_VNODES, Ring};
use crate::BadParam;

/// The paper's b: the load bound, "the load upperbound or the capacity of
/// the server" (§4.2), 1.2 in its deployment (§5).
pub const B: f64 = 1.2;

/// The paper's b_max: the "final load upper-bound" (§4.7), 6 (§5, §6.1).
pub const B_MAX: f64 = 6.0;

/// The paper's max_chain_len: forwards past the home before falling back
/// to the least-loaded server (§4.7), 3 (§6.1); so at most 4 servers are
/// tried.
pub const MAX_CHAIN_LEN: u32 = 3;

/// The paper's σ of the load noise N(λ, σ) (§4.6.2): 0.1.
pub const NOISE_SIGMA: f64 = 0.1;

/// Whose reading of CH-RLU a [`ChRlu`] runs (note section 3: no canonical
/// CH-RLU exists; paper, code and Ilúvatar disagree).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Alg. 2 as printed (module docs). Name `ch-rlu`; TOML `paper`.
    #[default]
    Paper,
    /// The authors' OpenWhisk code (RandomLoadUpdateBalancer.scala): a
    /// popular function takes a server if load + noise ≤ b (no c/w, no
    /// b_max); an unpopular one if load ≤ min(c/w, 1.2·(b + 1)) − 1. The
    /// walk goes over every server (the code's positions 0..=#nodes, here
    /// in ring order, not its list order) and then to a random server;
    /// it never drops. Name `ch-rlu-code`; TOML `code`.
    #[serde(rename = "code")]
    OpenWhiskCode,
    /// Ilúvatar's (ch_rlu.rs): an unpopular function always runs at home;
    /// a popular one walks home and `max_chain_len` successors taking a
    /// server if load + noise ≤ b, else runs at home. Ilúvatar's own
    /// default chain is 4 with possible duplicates and it writes the noise
    /// into its cached load; here the chain is distinct servers and the
    /// noise is not kept. Name `ch-rlu-iluvatar`; TOML `iluvatar`.
    Iluvatar,
}

impl Variant {
    /// Its router's name, as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Paper => "ch-rlu",
            Variant::OpenWhiskCode => "ch-rlu-code",
            Variant::Iluvatar => "ch-rlu-iluvatar",
        }
    }
}

/// CH-RLU's knobs, as the TOML table `[ch-rlu]` reads them (the sampler's
/// in `[ch-rlu.popularity]`).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChRluParams {
    /// Whose rule. By default [`Variant::Paper`].
    pub variant: Variant,
    /// b, > 0. By default [`B`].
    pub b: f64,
    /// b_max, ≥ b. By default [`B_MAX`]. Only [`Variant::Paper`] uses it.
    pub b_max: f64,
    /// Forwards past the home. By default [`MAX_CHAIN_LEN`]. Unused by
    /// [`Variant::OpenWhiskCode`], which walks every server.
    pub max_chain_len: u32,
    /// σ of the noise, ≥ 0. By default [`NOISE_SIGMA`].
    pub noise_sigma: f64,
    /// Ring points per server, ≥ 1. By default [`DEFAULT_VNODES`].
    pub vnodes: u32,
    /// The popularity sampler's. By default the paper's SHARDS sample.
    pub popularity: PopularityParams,
}

impl Default for ChRluParams {
    fn default() -> ChRluParams {
        ChRluParams {
            variant: Variant::Paper,
            b: B,
            b_max: B_MAX,
            max_chain_len: MAX_CHAIN_LEN,
            noise_sigma: NOISE_SIGMA,
            vnodes: DEFAULT_VNODES,
            popularity: PopularityParams::default(),
        }
    }
}

impl ChRluParams {
    /// `Ok` if every knob is in range, else the first one that is not.
    pub fn validate(&self) -> Result<(), BadParam> {
        const T: &str = "ch-rlu";
        check_bounds(T, self.b, self.b_max, self.vnodes)?;
        let sigma = self.noise_sigma;
        BadParam::require(
            sigma.is_finite() && sigma >= 0.0,
            T,
            "noise_sigma",
            sigma,
            "a number at least 0",
        )?;
        self.popularity.validate("ch-rlu.popularity")
    }
}

/// Checks b and b_max, shared by CH-RLU and CH-BL.
fn check_bounds(table: &'static str, b: f64, b_max: f64, vnodes: u32) -> Result<(), BadParam> {
    BadParam::require(b.is_finite() && b > 0.0, table, "b", b, "a number above 0")?;
    BadParam::require(
        b_max.is_finite() && b_max >= b,
        table,
        "b_max",
        b_max,
        "a number at least b",
    )?;
    BadParam::require(vnodes > 0, table, "vnodes", vnodes, "at least 1")
}

/// c/w of a profile, at least 1 (a zero warm time counts as 1 ns).
fn cold_over_warm(p: &FunctionProfile) -> f64 {
    (p.cold as f64 / p.warm.max(1) as f64).max(1.0)
}

/// A ring over `n` servers with `vnodes` points each, rebuilt only when the
/// cluster's size changed.
fn sync_ring(ring: &mut Ring, n: usize, vnodes: u32) {
    if ring.servers() as usize != n {
        *ring = Ring::new(n as u32, vnodes);
    }
}

/// The CH-RLU router (module docs).
#[derive(Clone, Debug)]
pub struct ChRlu {
    params: ChRluParams,
    popularity: Popularity,
    ring: Ring,
    rng: Pcg64,
    /// The name it answers to, when not its variant's.
    name: Option<&'static str>,
}

impl ChRlu {
    /// The paper's CH-RLU with its defaults ([`ChRluParams::default`]),
    /// its noise drawn from a Pcg64 seeded with `seed`.
    pub fn new(seed: u64) -> ChRlu {
        ChRlu::with_params(ChRluParams::default(), seed).expect("the defaults are in range")
    }

    /// CH-RLU with `params`, or the knob out of range (table `ch-rlu`).
    pub fn with_params(params: ChRluParams, seed: u64) -> Result<ChRlu, BadParam> {
        params.validate()?;
        Ok(ChRlu {
            popularity: Popularity::new(params.popularity, "ch-rlu.popularity")?,
            params,
            ring: Ring::new(0, params.vnodes),
            rng: Pcg64::seed_from_u64(seed),
            name: None,
        })
    }

    /// The same, answering to `name` (an ablation's: `ch-rlu-no-noise`)
    /// instead of its variant's.
    pub fn named(mut self, name: &'static str) -> ChRlu {
        self.name = Some(name);
        self
    }

    /// Its knobs.
    pub fn params(&self) -> &ChRluParams {
        &self.params
    }

    /// Its popularity tracker, as of the last refresh.
    pub fn popularity(&self) -> &Popularity {
        &self.popularity
    }
}

impl Route for ChRlu {
    fn name(&self) -> &str {
        self.name.unwrap_or(self.params.variant.name())
    }

    fn route(&mut self, now: Time, inv: &InvocationInfo, servers: &Servers) -> Choice {
        let n = servers.len();
        if n == 0 {
            return Choice::Drop;
        }
        let ChRlu {
            params,
            popularity,
            ring,
            rng,
            ..
        } = self;
        sync_ring(ring, n, params.vnodes);
        let f = inv.profile.function;
        popularity.record(f, now);
        // Arrivals per second of a popular function; None if unpopular.
        let rate = popularity
            .is_popular(f)
            .then(|| popularity.mean_iat(f))
            .flatten()
            .map(|iat| SEC as f64 / iat.max(1.0));
        let sigma = params.noise_sigma;
        // The stale load of `s`, plus the noise if `f` is popular.
        let mut noisy = |s: ServerId| {
            let v = servers.get(s);
            v.load
                + rate.map_or(0.0, |r| {
                    let lambda = r / n as f64 / f64::from(v.cores.max(1));
                    lambda + sigma * rng.sample::<f64, _>(StandardNormal)
                })
        };
        let chain = params.max_chain_len as usize + 1;
        let b = params.b;
        match params.variant {
            Variant::Paper => {
                let bound = (cold_over_warm(&inv.profile) * b).min(params.b_max);
                if let Some(s) = ring.walk(f).take(chain).find(|&s| noisy(s) < bound) {
                    return Choice::Server(s);
                }
                match least_loaded(servers) {
                    Some((s, load)) if load < params.b_max => Choice::Server(s),
                    _ => Choice::Drop,
                }
            }
            Variant::OpenWhiskCode => {
                let popular = rate.is_some();
                let bound = cold_over_warm(&inv.profile).min(1.2 * (b + 1.0)) - 1.0;
                let found = ring.walk(f).find(|&s| {
                    if popular {
                        noisy(s) <= b
                    } else {
                        servers.get(s).load <= bound
                    }
                });
                let s = found.unwrap_or_else(|| ServerId(rng.random_range(0..n as u32)));
                Choice::Server(s)
            }
            Variant::Iluvatar => {
                let mut walk = ring.walk(f);
                let Some(home) = walk.next() else {
                    return Choice::Drop;
                };
                if rate.is_none() {
                    return Choice::Server(home);
                }
                let found = std::iter::once(home)
                    .chain(walk)
                    .take(chain)
                    .find(|&s| noisy(s) <= b);
                Choice::Server(found.unwrap_or(home))
            }
        }
    }

    fn on_loads(&mut self, now: Time, _servers: &Servers) {
        self.popularity.refresh(now);
    }
}

/// CH-BL's knobs, as the TOML table `[ch-bl]` reads them.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChBlParams {
    /// The function-agnostic load bound b, > 0. By default [`B`], the same
    /// b as CH-RLU's, so that the two differ only by CH-RLU's extensions.
    pub b: f64,
    /// b_max, ≥ b: the bound is min(b, b_max) and the fallback drops at
    /// b_max. By default [`B_MAX`] (§6.1 runs CH-BL with b_max 6).
    pub b_max: f64,
    /// Forwards past the home. By default [`MAX_CHAIN_LEN`] (§6.1).
    pub max_chain_len: u32,
    /// Ring points per server, ≥ 1. By default [`DEFAULT_VNODES`].
    pub vnodes: u32,
}

impl Default for ChBlParams {
    fn default() -> ChBlParams {
        ChBlParams {
            b: B,
            b_max: B_MAX,
            max_chain_len: MAX_CHAIN_LEN,
            vnodes: DEFAULT_VNODES,
        }
    }
}

impl ChBlParams {
    /// `Ok` if every knob is in range, else the first one that is not.
    pub fn validate(&self) -> Result<(), BadParam> {
        check_bounds("ch-bl", self.b, self.b_max, self.vnodes)
    }
}

/// The paper's CH-BL: "consistent hashing with bounded loads using stale
/// load-averages" (§6.1) with a "function-agnostic constant load-bound"
/// (§4.5), i.e. Alg. 2 with c = w and no noise: walk home and
/// `max_chain_len` successors, take the first with stale load < min(b,
/// b_max), else the least-loaded server, or drop if its load is ≥ b_max.
/// Unlike Mirrokni et al.'s CH-BL it never counts its own placements, so a
/// burst lands on the home until the published load catches up.
#[derive(Clone, Debug)]
pub struct ChBl {
    params: ChBlParams,
    ring: Ring,
}

impl ChBl {
    /// CH-BL with the defaults ([`ChBlParams::default`]).
    pub fn new() -> ChBl {
        ChBl::with_params(ChBlParams::default()).expect("the defaults are in range")
    }

    /// CH-BL with `params`, or the knob out of range (table `ch-bl`).
    pub fn with_params(params: ChBlParams) -> Result<ChBl, BadParam> {
        params.validate()?;
        Ok(ChBl {
            params,
            ring: Ring::new(0, params.vnodes),
        })
    }
}

impl Default for ChBl {
    fn default() -> ChBl {
        ChBl::new()
    }
}

impl Route for ChBl {
    fn name(&self) -> &str {
        "ch-bl"
    }

    fn route(&mut self, _now: Time, inv: &InvocationInfo, servers: &Servers) -> Choice {
        let p = self.params;
        sync_ring(&mut self.ring, servers.len(), p.vnodes);
        let bound = p.b.min(p.b_max);
        let chain = p.max_chain_len as usize + 1;
        if let Some(s) = self
            .ring
            .walk(inv.profile.function)
            .take(chain)
            .find(|&s| servers.get(s).load < bound)
        {
            return Choice::Server(s);
        }
        match least_loaded(servers) {
            Some((s, load)) if load < p.b_max => Choice::Server(s),
            _ => Choice::Drop,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::popularity::Sampling;
    use crate::cluster::testkit::{inv, profile, servers};
    use faasched_model::FunctionId;
    use faasched_model::cluster::ServerView;

    /// Function 7's walk over 4 servers with the default ring.
    fn walk7(n: u32) -> Vec<ServerId> {
        Ring::new(n, DEFAULT_VNODES).walk(FunctionId(7)).collect()
    }

    /// Loads indexed by the walk's order: `by_walk[i]` is the load of the
    /// i-th server function 7's walk meets.
    fn cluster(by_walk: &[f64]) -> Servers {
        let walk = walk7(by_walk.len() as u32);
        let mut loads = vec![0.0; by_walk.len()];
        for (i, s) in walk.iter().enumerate() {
            loads[s.0 as usize] = by_walk[i];
        }
        servers(16, &loads)
    }

    fn all_sampled(variant: Variant) -> ChRluParams {
        ChRluParams {
            variant,
            popularity: PopularityParams {
                sampling: Sampling::All,
                ..PopularityParams::default()
            },
            ..ChRluParams::default()
        }
    }

    #[test]
    fn paper_bound_is_cold_over_warm_times_b_capped_at_b_max() {
        let w = walk7(5);
        // c/w = 3: bound 3.6. Home at 3.7, first successor at 3.5.
        let fast = profile(7, 128, 100, 300);
        let s = cluster(&[3.7, 3.5, 0.0, 0.0, 0.0]);
        let mut r = ChRlu::new(1);
        assert_eq!(r.route(0, &inv(0, 0, fast), &s), Choice::Server(w[1]));
        // c/w = 1 (CH-BL's bound, 1.2): both are over it, as are the next
        // two (chain 3): the least-loaded server, the fifth on the walk.
        let flat = profile(7, 128, 100, 100);
        let s = cluster(&[1.3, 1.2, 5.0, 2.0, 0.5]);
        assert_eq!(r.route(0, &inv(1, 0, flat), &s), Choice::Server(w[4]));
        // c/w = 100 caps at b_max: 5.9 passes at home.
        let slow_start = profile(7, 128, 1, 100);
        let s = cluster(&[5.9, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(r.route(0, &inv(2, 0, slow_start), &s), Choice::Server(w[0]));
        // Everything at b_max or more: drop.
        let s = cluster(&[6.0, 7.0, 8.0, 9.0, 6.0]);
        assert_eq!(r.route(0, &inv(3, 0, slow_start), &s), Choice::Drop);
        assert_eq!(r.name(), "ch-rlu");
    }

    #[test]
    fn a_popular_function_draws_noise_around_its_per_core_rate() {
        let mut r = ChRlu::with_params(all_sampled(Variant::Paper), 3).unwrap();
        let f = profile(7, 128, 100, 100);
        let s = cluster(&[1.0, 0.0, 0.0, 0.0]);
        // Two arrivals a millisecond apart: 1,000/s over 4 servers × 16
        // cores: λ = 15.6 > b, so once popular the home (load 1.0 < 1.2)
        // is never taken any more.
        assert_eq!(r.route(0, &inv(0, 0, f), &s), Choice::Server(walk7(4)[0]));
        assert_eq!(
            r.route(1_000_000, &inv(1, 1_000_000, f), &s),
            Choice::Server(walk7(4)[0])
        );
        r.on_loads(1_000_000, &s);
        assert!(r.popularity().is_popular(FunctionId(7)));
        let least = least_loaded(&s).unwrap().0;
        assert_eq!(
            r.route(2_000_000, &inv(2, 2_000_000, f), &s),
            Choice::Server(least)
        );
    }

    #[test]
    fn the_noise_is_seeded() {
        let run = |seed| {
            let mut r = ChRlu::with_params(all_sampled(Variant::Paper), seed).unwrap();
            let f = profile(7, 128, 100, 100);
            // 1 arrival per 4 s over 4 × 16 cores: λ ≈ 0.004; loads near
            // the bound make the σ = 0.1 draw decide.
            let s = cluster(&[1.15, 1.15, 1.15, 1.15]);
            (0..200u64)
                .map(|i| {
                    let now = i * 4 * SEC;
                    r.on_loads(now, &s);
                    r.route(now, &inv(i, now, f), &s)
                })
                .collect::<Vec<_>>()
        };
        let a = run(5);
        assert_eq!(a, run(5));
        let home = Choice::Server(walk7(4)[0]);
        let at_home = a.iter().filter(|&&c| c == home).count();
        // P(1.15 + N(0.004, 0.1) < 1.2) ≈ 0.67.
        assert!((100..170).contains(&at_home), "{at_home}");
    }

    #[test]
    fn openwhisk_code_tests_unpopular_functions_against_c_over_w_minus_one() {
        let mut r = ChRlu::with_params(all_sampled(Variant::OpenWhiskCode), 1).unwrap();
        assert_eq!(r.name(), "ch-rlu-code");
        let w = walk7(4);
        // c/w = 2: bound min(2, 2.64) − 1 = 1. Home at 1.0 passes (≤).
        let f = profile(7, 128, 100, 200);
        assert_eq!(
            r.route(0, &inv(0, 0, f), &cluster(&[1.0, 0.0, 0.0, 0.0])),
            Choice::Server(w[0])
        );
        // The whole walk is tried: the last server passes.
        let s = cluster(&[1.1, 1.1, 1.1, 0.9]);
        assert_eq!(r.route(0, &inv(1, 0, f), &s), Choice::Server(w[3]));
        // None passes: a random server, never a drop.
        let s = cluster(&[9.0, 9.0, 9.0, 9.0]);
        assert!(matches!(r.route(0, &inv(2, 0, f), &s), Choice::Server(_)));
    }

    #[test]
    fn iluvatar_keeps_unpopular_functions_home_whatever_the_load() {
        let mut r = ChRlu::with_params(all_sampled(Variant::Iluvatar), 1).unwrap();
        assert_eq!(r.name(), "ch-rlu-iluvatar");
        let f = profile(7, 128, 100, 200);
        let s = cluster(&[50.0, 0.0, 0.0, 0.0]);
        assert_eq!(r.route(0, &inv(0, 0, f), &s), Choice::Server(walk7(4)[0]));
        // Popular (1 per 10 s: λ ≈ 0.0016) and home overloaded: walk on.
        r.route(10 * SEC, &inv(1, 10 * SEC, f), &s);
        r.on_loads(10 * SEC, &s);
        let c = r.route(11 * SEC, &inv(2, 11 * SEC, f), &s);
        assert_ne!(c, Choice::Server(walk7(4)[0]));
        // Popular and everything overloaded: home.
        let s = cluster(&[50.0, 50.0, 50.0, 50.0]);
        assert_eq!(
            r.route(12 * SEC, &inv(3, 12 * SEC, f), &s),
            Choice::Server(walk7(4)[0])
        );
    }

    #[test]
    fn ch_bl_ignores_cold_costs_and_drops_like_ch_rlu() {
        let w = walk7(5);
        let mut r = ChBl::new();
        assert_eq!(r.name(), "ch-bl");
        // c/w = 10 would let CH-RLU stay home at 3.0; CH-BL's bound is 1.2.
        let f = profile(7, 128, 100, 1_000);
        let s = cluster(&[3.0, 1.19, 0.0, 0.0, 0.0]);
        assert_eq!(r.route(0, &inv(0, 0, f), &s), Choice::Server(w[1]));
        let s = cluster(&[3.0, 3.0, 3.0, 3.0, 2.0]);
        assert_eq!(r.route(0, &inv(1, 0, f), &s), Choice::Server(w[4]));
        let s = cluster(&[6.0, 6.0, 6.0, 6.0, 6.0]);
        assert_eq!(r.route(0, &inv(2, 0, f), &s), Choice::Drop);
    }

    #[test]
    fn no_servers_drop_and_the_ring_follows_the_cluster_size() {
        let f = profile(7, 128, 100, 100);
        let empty = Servers::new(Vec::<ServerView>::new());
        assert_eq!(ChRlu::new(0).route(0, &inv(0, 0, f), &empty), Choice::Drop);
        assert_eq!(ChBl::new().route(0, &inv(0, 0, f), &empty), Choice::Drop);
        for v in [Variant::OpenWhiskCode, Variant::Iluvatar] {
            let mut r = ChRlu::with_params(all_sampled(v), 0).unwrap();
            assert_eq!(r.route(0, &inv(0, 0, f), &empty), Choice::Drop);
        }
        let mut r = ChBl::new();
        assert_eq!(
            r.route(0, &inv(0, 0, f), &cluster(&[0.0; 3])),
            Choice::Server(walk7(3)[0])
        );
        assert_eq!(
            r.route(0, &inv(1, 0, f), &cluster(&[0.0; 6])),
            Choice::Server(walk7(6)[0])
        );
    }

    #[test]
    fn params_read_from_toml_and_refuse_unknown_keys() {
        let p: ChRluParams = toml::from_str(
            "variant = \"code\"\nb = 1.4\n[popularity]\nsampling = \"all\"\nforget_after_ms = 60000\n",
        )
        .unwrap();
        assert_eq!(p.variant, Variant::OpenWhiskCode);
        assert_eq!((p.b, p.b_max, p.max_chain_len), (1.4, B_MAX, MAX_CHAIN_LEN));
        assert_eq!(p.popularity.sampling, Sampling::All);
        assert_eq!(p.popularity.forget_after_ms, 60_000);
        assert_eq!(p.popularity.shards_t, 20);
        assert!(toml::from_str::<ChRluParams>("chain = 2").is_err());
        assert!(toml::from_str::<ChRluParams>("variant = \"other\"").is_err());
        let bl: ChBlParams = toml::from_str("b = 2.0").unwrap();
        assert_eq!((bl.b, bl.max_chain_len), (2.0, MAX_CHAIN_LEN));
    }

    #[test]
    fn bad_bounds_are_named() {
        let p = ChRluParams {
            b_max: 1.0,
            ..ChRluParams::default()
        };
        let e = ChRlu::with_params(p, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "parameter `ch-rlu.b_max` is 1, but must be a number at least b"
        );
        let p = ChBlParams {
            b: f64::NAN,
            ..ChBlParams::default()
        };
        assert_eq!(ChBl::with_params(p).unwrap_err().name, "b");
        let p = ChRluParams {
            noise_sigma: -0.1,
            ..ChRluParams::default()
        };
        assert_eq!(ChRlu::with_params(p, 0).unwrap_err().name, "noise_sigma");
        let p = ChRluParams {
            popularity: PopularityParams {
                iat_weight: 0.0,
                ..PopularityParams::default()
            },
            ..ChRluParams::default()
        };
        let e = ChRlu::with_params(p, 0).unwrap_err();
        assert_eq!((e.table, e.name), ("ch-rlu.popularity", "iat_weight"));
    }
}
