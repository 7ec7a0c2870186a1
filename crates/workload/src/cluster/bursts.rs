//! CH-RLU's two bursty workloads (§6.2.1).
//!
//! - **Fig 9** ([`Boosts`]): "every 30 seconds two of the top weighted
//!   functions are chosen to become bursty, and have their weights set much
//!   higher. At the end of a burst their weights are returned to normal and
//!   another two functions are chosen." The paper gives neither the factor
//!   nor which "top" functions: by default ([`BoostSpec::default`]) window
//!   `w` (`[w × 30 s, w × 30 s + 30 s)`) boosts 2 functions drawn from the 10
//!   of highest weight, their weights × 10, for the whole window (the next
//!   pair takes over at once, as the paper's wording reads). The closed loop
//!   applies it to its weights ([`super::ClosedLoop::with_boosts`]); an open
//!   stream gets it through [`Boosted`], which adds arrivals of the boosted
//!   functions at (factor − 1) × their rate.
//! - **Fig 10** ([`Ramp`]): "a 30 minute long-rising burst, starting with just
//!   a few invocations per second and reaching a sustained peak of roughly 18
//!   invocations per second at roughly 25 minutes", open loop. By default
//!   ([`RateProfile::fig10`]) the rate rises linearly from 2/s at 0 (our
//!   reading of "a few") to 18/s at 25 min and holds until 30 min; functions
//!   are drawn by weight.
//!
//! Both are deterministic in their seed; window `w`'s pair is drawn from
//! the seed and `w` alone, so any time can be asked in any order.

use super::stream::Weights;
use super::table::FunctionTable;
use crate::{Error, Result};
use faasched_model::cluster::{Invocation, InvocationId};
use faasched_model::{FunctionId, Nanos, SEC, TIME_LIMIT, Time};
use rand::seq::index;
use rand::{Rng, SeedableRng};
use rand_distr::Exp1;
use rand_pcg::Pcg64;
use std::iter::{FusedIterator, Peekable};

/// How Fig 9's bursts go.
#[derive(Clone, Debug, PartialEq)]
pub struct BoostSpec {
    /// A new pair every this long. By default 30 s (the paper).
    pub period: Nanos,
    /// How long a pair stays boosted from the start of its window, at most
    /// `period`. By default 30 s.
    pub length: Nanos,
    /// What a boosted function's weight (or rate) is multiplied by: finite,
    /// at least 1. By default 10 (the paper: "much higher").
    pub factor: f64,
    /// Functions boosted at once. By default 2 (the paper).
    pub functions: usize,
    /// They are drawn from this many of the highest weight. By default 10.
    pub among: usize,
}

impl Default for BoostSpec {
    fn default() -> BoostSpec {
        BoostSpec {
            period: 30 * SEC,
            length: 30 * SEC,
            factor: 10.0,
            functions: 2,
            among: 10,
        }
    }
}

/// Fig 9's burst schedule over a set of weights: which functions are
/// boosted when.
#[derive(Clone, Debug, PartialEq)]
pub struct Boosts {
    spec: BoostSpec,
    top: Vec<FunctionId>,
    seed: u64,
}

impl Boosts {
    /// The schedule `spec` makes over `weights`, drawn from `seed`. Errors
    /// name the field out of range.
    pub fn new(spec: BoostSpec, weights: &Weights, seed: u64) -> Result<Boosts> {
        if spec.period == 0 || spec.length == 0 || spec.length > spec.period {
            return Err(Error::invalid(
                "burst length",
                format!(
                    "{} ns every {} ns: want 0 < length ≤ period",
                    spec.length, spec.period
                ),
            ));
        }
        if !(spec.factor.is_finite() && spec.factor >= 1.0) {
            return Err(Error::invalid(
                "burst factor",
                format!("{:?}: want a finite number of at least 1", spec.factor),
            ));
        }
        let candidates = weights.weights().iter().filter(|&&w| w > 0.0).count();
        let among = spec.among.min(candidates);
        if spec.functions == 0 || spec.functions > among {
            return Err(Error::invalid(
                "burst functions",
                format!(
                    "{} at once among {among} with weight: want 1..={among}",
                    spec.functions
                ),
            ));
        }
        Ok(Boosts {
            top: weights.top(among),
            spec,
            seed,
        })
    }

    /// What it was made with.
    pub fn spec(&self) -> &BoostSpec {
        &self.spec
    }

    /// The window `t` is in.
    fn window(&self, t: Time) -> u64 {
        t / self.spec.period
    }

    /// The functions boosted in window `w` (whether or not its burst has
    /// ended), in draw order.
    pub fn pair(&self, w: u64) -> Vec<FunctionId> {
        let mut rng = Pcg64::seed_from_u64(self.seed ^ w.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        index::sample(&mut rng, self.top.len(), self.spec.functions)
            .into_iter()
            .map(|i| self.top[i])
            .collect()
    }

    /// The functions boosted at `t`: none after the burst of `t`'s window has
    /// ended.
    pub fn boosted_at(&self, t: Time) -> Vec<FunctionId> {
        if t % self.spec.period < self.spec.length {
            self.pair(self.window(t))
        } else {
            Vec::new()
        }
    }

    /// The extra weight of `f` while boosted: (factor − 1) × its weight.
    fn extra(&self, weight: f64) -> f64 {
        (self.spec.factor - 1.0) * weight
    }
}

/// A stream with Fig 9's bursts added: during each burst, each boosted
/// function also arrives as a Poisson process at (factor − 1) × its rate, so
/// that it runs at factor × its rate in all. Extra arrivals stop with the
/// base stream (none after its last arrival). Ids are renumbered 0, 1, 2, ...
/// in arrival order; at equal times the base's invocation comes first.
#[derive(Clone, Debug)]
pub struct Boosted<I: Iterator<Item = Invocation>> {
    base: Peekable<I>,
    boosts: Boosts,
    rates: Vec<f64>,
    warm: Vec<Nanos>,
    rng: Pcg64,
    /// The next extra arrival, drawn ahead.
    extra: Option<(Time, FunctionId)>,
    /// Where the extra process stands: the end of the last gap drawn.
    clock: Time,
    next_id: u64,
}

impl<I: Iterator<Item = Invocation>> Boosted<I> {
    /// `base`, whose functions are `table`'s arriving at `rates` per second
    /// (by id), with the bursts of `boosts` added, drawn from `seed`.
    pub fn new(
        base: I,
        table: &FunctionTable,
        rates: &[f64],
        boosts: Boosts,
        seed: u64,
    ) -> Result<Boosted<I>> {
        if rates.len() != table.len() {
            return Err(Error::invalid(
                "rates",
                format!(
                    "{} rates for a table of {} functions",
                    rates.len(),
                    table.len()
                ),
            ));
        }
        Weights::new(rates)?;
        if let Some(f) = boosts.top.iter().find(|f| f.0 as usize >= table.len()) {
            return Err(Error::invalid(
                "bursts",
                format!("function {} is not in the table", f.0),
            ));
        }
        let mut boosted = Boosted {
            base: base.peekable(),
            boosts,
            rates: rates.to_vec(),
            warm: table.profiles().iter().map(|p| p.warm).collect(),
            rng: Pcg64::seed_from_u64(seed),
            extra: None,
            clock: 0,
            next_id: 0,
        };
        boosted.extra = boosted.draw_extra();
        Ok(boosted)
    }

    /// The next extra arrival after `self.clock`: exponential gaps at the
    /// window's extra rate while its burst lasts, then the next window's.
    fn draw_extra(&mut self) -> Option<(Time, FunctionId)> {
        let spec = self.boosts.spec.clone();
        let rates = &self.rates;
        if (self.boosts.top.iter()).all(|f| self.boosts.extra(rates[f.0 as usize]) <= 0.0) {
            // No burst adds anything (factor 1, or rates of 0).
            return None;
        }
        loop {
            let w = self.boosts.window(self.clock);
            let start = w.checked_mul(spec.period)?;
            let end = start.checked_add(spec.length)?;
            if start > TIME_LIMIT {
                return None;
            }
            if self.clock >= end {
                self.clock = start.checked_add(spec.period)?;
                continue;
            }
            let pair = self.boosts.pair(w);
            let extra: Vec<f64> = pair
                .iter()
                .map(|f| self.boosts.extra(self.rates[f.0 as usize]))
                .collect();
            let total: f64 = extra.iter().sum();
            if total <= 0.0 {
                self.clock = start.checked_add(spec.period)?;
                continue;
            }
            let e: f64 = self.rng.sample(Exp1);
            let gap = (e / total * SEC as f64).round();
            let at = self
                .clock
                .saturating_add(gap.min(TIME_LIMIT as f64) as Nanos);
            if at >= end {
                // Memoryless: the rest of the gap is redrawn in the next burst.
                self.clock = start.checked_add(spec.period)?;
                continue;
            }
            self.clock = at;
            let mut x = self.rng.random::<f64>() * total;
            let f = pair
                .iter()
                .zip(&extra)
                .find(|&(_, &e)| {
                    x -= e;
                    x < 0.0
                })
                .map_or(pair[pair.len() - 1], |(&f, _)| f);
            return Some((at, f));
        }
    }
}

impl<I: Iterator<Item = Invocation>> Iterator for Boosted<I> {
    type Item = Invocation;

    fn next(&mut self) -> Option<Invocation> {
        let base_at = self.base.peek()?.arrival;
        let mut inv = match self.extra {
            Some((at, function)) if at < base_at => {
                self.extra = self.draw_extra();
                Invocation {
                    id: InvocationId(0),
                    function,
                    arrival: at,
                    work: self.warm[function.0 as usize],
                }
            }
            _ => self.base.next()?,
        };
        inv.id = InvocationId(self.next_id);
        self.next_id += 1;
        Some(inv)
    }
}

impl<I: Iterator<Item = Invocation>> FusedIterator for Boosted<I> {}

/// A rate that changes over time: linear between points `(time, rate per
/// s)`, the first at time 0; the stream ends at the last point.
#[derive(Clone, Debug, PartialEq)]
pub struct RateProfile {
    points: Vec<(Time, f64)>,
}

impl RateProfile {
    /// A profile through `points`. Errors: fewer than two, a first not at 0,
    /// times not increasing or past the clock, a rate not finite or below 0,
    /// or all rates 0.
    pub fn new(points: Vec<(Time, f64)>) -> Result<RateProfile> {
        let bad = |why: String| Error::invalid("rate profile", why);
        if points.len() < 2 || points[0].0 != 0 {
            return Err(bad("want two points or more, the first at time 0".into()));
        }
        if let Some(w) = points.windows(2).find(|w| w[1].0 <= w[0].0) {
            return Err(bad(format!(
                "time {} ns does not come after {} ns",
                w[1].0, w[0].0
            )));
        }
        if let Some(&(t, _)) = points.iter().find(|p| p.0 > TIME_LIMIT) {
            return Err(bad(format!("time {t} ns is past the clock's limit")));
        }
        if let Some(&(t, r)) = points.iter().find(|p| !(p.1.is_finite() && p.1 >= 0.0)) {
            return Err(bad(format!(
                "rate {r:?} at {t} ns is not finite and at least 0"
            )));
        }
        if points.iter().all(|p| p.1 == 0.0) {
            return Err(bad("every rate is 0".into()));
        }
        Ok(RateProfile { points })
    }

    /// Fig 10's rising burst: 2/s at 0, linear to 18/s at 25 min, held to
    /// 30 min (module docs).
    pub fn fig10() -> RateProfile {
        RateProfile {
            points: vec![(0, 2.0), (25 * 60 * SEC, 18.0), (30 * 60 * SEC, 18.0)],
        }
    }

    /// Its points.
    pub fn points(&self) -> &[(Time, f64)] {
        &self.points
    }

    /// When it ends.
    pub fn end(&self) -> Time {
        self.points[self.points.len() - 1].0
    }

    /// The rate at `t`, per s; 0 at and after the end.
    pub fn rate_at(&self, t: Time) -> f64 {
        let i = self.points.partition_point(|p| p.0 <= t);
        if i == 0 || i == self.points.len() {
            return 0.0;
        }
        segment_rate(&self.points[i - 1..=i], t)
    }

    /// Its highest rate.
    pub fn peak(&self) -> f64 {
        self.points.iter().map(|p| p.1).fold(0.0, f64::max)
    }

    /// Invocations expected over `[from, to)`: the integral of the rate.
    pub fn expected(&self, from: Time, to: Time) -> f64 {
        let (from, to) = (from.min(self.end()), to.min(self.end()));
        let mut sum = 0.0;
        for w in self.points.windows(2) {
            let (a, b) = (from.max(w[0].0), to.min(w[1].0));
            if a < b {
                let mean = (segment_rate(w, a) + segment_rate(w, b)) / 2.0;
                sum += mean * (b - a) as f64 / SEC as f64;
            }
        }
        sum
    }
}

/// The rate at `t` on the segment between the two points of `w`.
fn segment_rate(w: &[(Time, f64)], t: Time) -> f64 {
    let ((t0, r0), (t1, r1)) = (w[0], w[1]);
    r0 + (r1 - r0) * ((t.saturating_sub(t0)) as f64 / (t1 - t0) as f64)
}

/// Fig 10's open-loop rising burst: a Poisson process whose rate follows a
/// [`RateProfile`] (by thinning: candidates at the peak rate, each kept
/// with probability rate / peak), functions drawn by weight, work the
/// function's warm time. Ids 0, 1, 2, ... in arrival order; it ends with the
/// profile.
#[derive(Clone, Debug)]
pub struct Ramp {
    profile: RateProfile,
    weights: Weights,
    warm: Vec<Nanos>,
    rng: Pcg64,
    mean_gap_ns: f64,
    now: Time,
    next_id: u64,
    done: bool,
}

impl Ramp {
    /// `table`'s functions drawn by `weights` (one per function) at the
    /// rates of `profile`, from `seed`.
    pub fn new(
        table: &FunctionTable,
        weights: Weights,
        profile: RateProfile,
        seed: u64,
    ) -> Result<Ramp> {
        weights.check_covers(table)?;
        if profile.peak() > crate::node::MAX_RATE_PER_S {
            return Err(Error::invalid("rate profile", "a rate above 1e9/s"));
        }
        Ok(Ramp {
            mean_gap_ns: SEC as f64 / profile.peak(),
            profile,
            weights,
            warm: table.profiles().iter().map(|p| p.warm).collect(),
            rng: Pcg64::seed_from_u64(seed),
            now: 0,
            next_id: 0,
            done: false,
        })
    }

    /// The profile it follows.
    pub fn profile(&self) -> &RateProfile {
        &self.profile
    }
}

impl Iterator for Ramp {
    type Item = Invocation;

    fn next(&mut self) -> Option<Invocation> {
        let peak = self.profile.peak();
        while !self.done {
            let e: f64 = self.rng.sample(Exp1);
            // At least 1 ns, so that time moves on; an arrival past the end
            // ends the stream.
            let gap = ((e * self.mean_gap_ns).round() as Nanos).max(1);
            self.now = self.now.saturating_add(gap);
            if self.now >= self.profile.end() {
                self.done = true;
                break;
            }
            let keep = self.rng.random::<f64>() * peak < self.profile.rate_at(self.now);
            if keep {
                let function = self.weights.pick(&mut self.rng);
                let id = InvocationId(self.next_id);
                self.next_id += 1;
                return Some(Invocation {
                    id,
                    function,
                    arrival: self.now,
                    work: self.warm[function.0 as usize],
                });
            }
        }
        None
    }
}

impl FusedIterator for Ramp {}
