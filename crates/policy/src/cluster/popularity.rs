//! Which functions are popular: the SHARDS-style sampler of CH-RLU's Alg. 1
//! (§4.6.1), with the paper's flaws fixed.
//!
//! As printed, Alg. 1 hashes a function into one of P = 100 buckets,
//! tracks it if its bucket is ≤ T = 20, pushes every sampled IAT divided by
//! R = T/P into an ever-growing heap, pushes `t/R` on a first access, and
//! calls popular the functions at or below the p = 20th percentile of the
//! heap. What this sampler does instead, and why:
//!
//! 1. **Sampling**: a function is tracked iff `hash(f) mod P < T` (T of P
//!    buckets, exactly the rate R; the printed `≤` takes T + 1), with a
//!    hash salted apart from the ring's so that whether a function is
//!    sampled says nothing about where its home is. [`Sampling::All`] tracks every function (what the
//!    OpenWhisk code does by accident: its `T = 100.0 // 20.0` is a comment).
//! 2. **No ÷R**: SHARDS rescales reuse *distances*, which count sampled
//!    objects; a sampled function's wall-clock IAT is not thinned by
//!    sampling, so dividing by R would only inflate every IAT 5× (and λ,
//!    the noise mean, would shrink 5×).
//! 3. **One entry per function, not per invocation**: each tracked
//!    function keeps an EWMA of its IATs (the prose's "estimated moving
//!    average of the current IAT and now – last_access"), so the
//!    percentile ranks functions, not invocations, and memory stays bounded
//!    by the tracked functions.
//! 4. **First access**: the first arrival only records the time; a
//!    function becomes a candidate once it has one real IAT.
//! 5. **Recomputed per load publication**: [`Popularity::refresh`] ranks
//!    the candidates when the router's `on_loads` runs, as the OpenWhisk
//!    code's `updatePopularity` does on each Redis refresh, not per call.
//!    A function that has gone quiet ranks by the larger of its EWMA and
//!    the time since its last arrival, so it stops being popular without
//!    arriving again; one quiet for longer than `forget_after_ms` is dropped
//!    from the table ("have-been popular functions are naturally evicted
//!    from the tracking list", §4.6.1, which gives no rule).
//! 6. **Popular** = the ⌈p·k⌉ candidates with the lowest IAT estimates out
//!    of k, ties to the lower function id.

use std::collections::{BTreeMap, BTreeSet};

use faasched_model::{FunctionId, MS, Nanos, Time};
use serde::{Deserialize, Serialize};

use super::ring::hash64;
use crate::BadParam;

/// Alg. 1's P: the number of hash buckets.
pub const SHARDS_P: u32 = 100;

/// Alg. 1's T ("Effective sampling rate"): buckets sampled out of
/// [`SHARDS_P`], so R = T/P = 20% of functions are tracked.
pub const SHARDS_T: u32 = 20;

/// The paper's p: the fraction of tracked functions, lowest IAT first, that
/// are popular (§4.6.1; 20% in §5, §6.1).
pub const POPULAR_P: f64 = 0.2;

/// The weight of the newest IAT in a function's EWMA. Ours (the paper
/// gives none; the OpenWhisk code uses 0.9): 0.25 halves an old sample's
/// say within about 2.4 arrivals, fast enough to see a 30 s burst of a
/// function arriving every second, while the estimate of a Poisson
/// stream's IAT varies by about 38% (√(w/(2 − w))) rather than the raw
/// sample's 100%.
pub const IAT_WEIGHT: f64 = 0.25;

/// How long a tracked function may stay quiet before it is forgotten, in
/// ms: 10 minutes, OpenWhisk's keep-alive TTL (§6.1), after which no server
/// of an OW+TTL cluster holds its container anyway.
pub const FORGET_AFTER_MS: u64 = 600_000;

/// The longest `forget_after_ms`: a day (and far from the ns clock's range).
const MAX_FORGET_AFTER_MS: u64 = 86_400_000;

/// Which functions the sampler tracks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sampling {
    /// SHARDS spatial sampling (Alg. 1): `f` is tracked iff `hash(f) mod
    /// shards_p < shards_t`.
    #[default]
    Shards,
    /// Every function (cheap at cluster scale, and nothing is invisible).
    All,
}

/// The sampler's knobs, as a TOML table reads them.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PopularityParams {
    /// Which functions are tracked. By default the paper's SHARDS sample.
    pub sampling: Sampling,
    /// P, the hash buckets of [`Sampling::Shards`], ≥ 1. By default
    /// [`SHARDS_P`].
    pub shards_p: u32,
    /// T, the buckets tracked, ≤ P. By default [`SHARDS_T`].
    pub shards_t: u32,
    /// The popular fraction p, in (0, 1]. By default [`POPULAR_P`].
    pub popular: f64,
    /// The newest IAT's weight in the EWMA, in (0, 1]. By default
    /// [`IAT_WEIGHT`].
    pub iat_weight: f64,
    /// Quiet time after which a function is forgotten, in ms, from 1 ms to
    /// a day. By default [`FORGET_AFTER_MS`].
    pub forget_after_ms: u64,
}

impl Default for PopularityParams {
    fn default() -> PopularityParams {
        PopularityParams {
            sampling: Sampling::Shards,
            shards_p: SHARDS_P,
            shards_t: SHARDS_T,
            popular: POPULAR_P,
            iat_weight: IAT_WEIGHT,
            forget_after_ms: FORGET_AFTER_MS,
        }
    }
}

impl PopularityParams {
    /// `Ok` if every knob is in range, else the first one that is not
    /// (`table` names the TOML table they sit in).
    pub fn validate(&self, table: &'static str) -> Result<(), BadParam> {
        let (p, t) = (self.shards_p, self.shards_t);
        BadParam::require(p > 0, table, "shards_p", p, "at least 1")?;
        BadParam::require(t <= p, table, "shards_t", t, "at most shards_p")?;
        let p = self.popular;
        BadParam::require(p > 0.0 && p <= 1.0, table, "popular", p, "in (0, 1]")?;
        let w = self.iat_weight;
        BadParam::require(w > 0.0 && w <= 1.0, table, "iat_weight", w, "in (0, 1]")?;
        let ms = self.forget_after_ms;
        BadParam::require(
            (1..=MAX_FORGET_AFTER_MS).contains(&ms),
            table,
            "forget_after_ms",
            ms,
            "from 1 ms to a day (86400000)",
        )
    }
}

/// Salt for the sampling hash, apart from the ring's function keys.
const SAMPLE_DOMAIN: u64 = 0x5348_4152_4453_0000; // "SHARDS"

/// What the sampler knows of one tracked function.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Track {
    /// Its latest arrival.
    last: Time,
    /// Its EWMA IAT in ns; `None` until a second arrival.
    iat: Option<f64>,
}

/// The popularity tracker of CH-RLU (module docs: what it fixes in Alg. 1).
#[derive(Clone, Debug, PartialEq)]
pub struct Popularity {
    params: PopularityParams,
    tracked: BTreeMap<FunctionId, Track>,
    popular: BTreeSet<FunctionId>,
}

impl Popularity {
    /// A tracker with `params`, or the knob out of range (reported under
    /// the parameter table `table`).
    pub fn new(params: PopularityParams, table: &'static str) -> Result<Popularity, BadParam> {
        params.validate(table)?;
        Ok(Popularity {
            params,
            tracked: BTreeMap::new(),
            popular: BTreeSet::new(),
        })
    }

    /// Its knobs.
    pub fn params(&self) -> &PopularityParams {
        &self.params
    }

    /// Whether `f` falls in the sample.
    pub fn sampled(&self, f: FunctionId) -> bool {
        match self.params.sampling {
            Sampling::All => true,
            Sampling::Shards => {
                let bucket =
                    hash64(SAMPLE_DOMAIN ^ u64::from(f.0)) % u64::from(self.params.shards_p);
                bucket < u64::from(self.params.shards_t)
            }
        }
    }

    /// An invocation of `f` arrived at `now` (Alg. 1's UPDATE): a sampled
    /// function's EWMA takes the new IAT. Returns whether `f` is sampled.
    pub fn record(&mut self, f: FunctionId, now: Time) -> bool {
        if !self.sampled(f) {
            return false;
        }
        let w = self.params.iat_weight;
        self.tracked
            .entry(f)
            .and_modify(|t| {
                let sample = now.saturating_sub(t.last) as f64;
                t.iat = Some(t.iat.map_or(sample, |m| m + w * (sample - m)));
                t.last = t.last.max(now);
            })
            .or_insert(Track {
                last: now,
                iat: None,
            });
        true
    }

    /// Recomputes the popular set at `now` (each load publication):
    /// forgets the functions quiet for longer than `forget_after_ms`, then
    /// makes popular the ⌈p·k⌉ of the k candidates with the lowest
    /// max(EWMA IAT, time since the last arrival).
    pub fn refresh(&mut self, now: Time) {
        let forget: Nanos = self.params.forget_after_ms * MS;
        self.tracked
            .retain(|_, t| now.saturating_sub(t.last) <= forget);
        let mut ranked: Vec<(f64, FunctionId)> = self
            .tracked
            .iter()
            .filter_map(|(&f, t)| t.iat.map(|m| (m.max(now.saturating_sub(t.last) as f64), f)))
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let k = (self.params.popular * ranked.len() as f64).ceil() as usize;
        self.popular = ranked.into_iter().take(k).map(|(_, f)| f).collect();
    }

    /// Whether `f` was popular at the last [`Popularity::refresh`].
    pub fn is_popular(&self, f: FunctionId) -> bool {
        self.popular.contains(&f)
    }

    /// The popular functions, by id.
    pub fn popular(&self) -> impl Iterator<Item = FunctionId> + '_ {
        self.popular.iter().copied()
    }

    /// `f`'s EWMA IAT in ns, if it is tracked and has arrived twice.
    pub fn mean_iat(&self, f: FunctionId) -> Option<f64> {
        self.tracked.get(&f).and_then(|t| t.iat)
    }

    /// How many functions are tracked now.
    pub fn tracked(&self) -> usize {
        self.tracked.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::SEC;

    fn all() -> Popularity {
        let params = PopularityParams {
            sampling: Sampling::All,
            ..PopularityParams::default()
        };
        Popularity::new(params, "ch-rlu.popularity").unwrap()
    }

    #[test]
    fn the_ewma_starts_at_the_first_real_iat_and_moves_by_a_quarter() {
        let mut p = all();
        let f = FunctionId(1);
        p.record(f, 10 * SEC);
        assert_eq!(p.mean_iat(f), None, "a first access is no IAT");
        p.record(f, 12 * SEC);
        assert_eq!(p.mean_iat(f), Some(2e9));
        p.record(f, 18 * SEC);
        // 2 s + 0.25 × (6 s − 2 s) = 3 s.
        assert_eq!(p.mean_iat(f), Some(3e9));
    }

    #[test]
    fn the_lowest_fifth_of_iats_is_popular_and_quiet_ones_drop_out() {
        let mut p = all();
        // Functions 0..10, function i arriving every (i + 1) s, twice.
        for i in 0..10u32 {
            p.record(FunctionId(i), 0);
            p.record(FunctionId(i), u64::from(i + 1) * SEC);
        }
        p.refresh(10 * SEC);
        // Since their last arrivals: 9, 8, ..., 0 s; estimates
        // max(iat, quiet) = 9, 8, 7, 6, 5, 6, 7, 8, 9, 10 s: the two lowest
        // are functions 4 (5 s) and then 3 and 5 (6 s), tie to the lower id.
        assert_eq!(
            p.popular().collect::<Vec<_>>(),
            [FunctionId(3), FunctionId(4)]
        );
        // Ten minutes and a second later all are forgotten.
        p.refresh(10 * SEC + FORGET_AFTER_MS * MS + 1);
        assert_eq!((p.tracked(), p.popular().count()), (0, 0));
    }

    #[test]
    fn one_function_is_popular_once_it_has_an_iat() {
        let mut p = all();
        p.record(FunctionId(5), 0);
        p.refresh(0);
        assert!(!p.is_popular(FunctionId(5)));
        p.record(FunctionId(5), SEC);
        p.refresh(SEC);
        assert!(p.is_popular(FunctionId(5)));
    }

    #[test]
    fn shards_samples_about_a_fifth_and_ignores_the_rest() {
        let mut p = Popularity::new(PopularityParams::default(), "ch-rlu.popularity").unwrap();
        let sampled = (0..10_000).filter(|&f| p.sampled(FunctionId(f))).count();
        assert!((1_800..2_200).contains(&sampled), "{sampled}");
        let out = (0..).map(FunctionId).find(|&f| !p.sampled(f)).unwrap();
        assert!(!p.record(out, 0));
        assert!(!p.record(out, 1));
        p.refresh(1);
        assert_eq!((p.tracked(), p.is_popular(out)), (0, false));
    }

    #[test]
    fn bad_knobs_are_named() {
        let bad = PopularityParams {
            popular: 0.0,
            ..PopularityParams::default()
        };
        let e = Popularity::new(bad, "ch-rlu").unwrap_err();
        assert_eq!(
            e.to_string(),
            "parameter `ch-rlu.popular` is 0, but must be in (0, 1]"
        );
        let bad = PopularityParams {
            shards_p: 10,
            shards_t: 11,
            ..PopularityParams::default()
        };
        assert_eq!(Popularity::new(bad, "t").unwrap_err().name, "shards_t");
        let bad = PopularityParams {
            forget_after_ms: 0,
            ..PopularityParams::default()
        };
        assert_eq!(
            Popularity::new(bad, "t").unwrap_err().name,
            "forget_after_ms"
        );
    }
}
