//! Production trace readers: each turns a public trace into a [`Trace`] of
//! CPU-bound invocations.
//!
//! | module | trace | unit of the data |
//! |---|---|---|
//! | [`azure2019`] | Azure Functions 2019 (Shahrad et al., ATC'20) | per function per minute: invocation counts; per function per day: duration percentiles; per app per day: memory |
//! | [`azure2021`] | Azure Functions invocation trace 2021 | one row per invocation |
//! | [`huawei2023`] | Huawei private 2023 (SoCC'23) | per function per minute: request counts and mean execution time |
//!
//! What all readers share:
//!
//! - **Output.** Invocations sorted by arrival (ties keep the order the reader made
//!   them in, which is deterministic), then numbered `0..n`. Arrivals are measured
//!   from the start of the selected window. Each invocation is one
//!   [`Phase::Cpu`]: the traces give execution time only, and the readers take
//!   all of it as CPU (a simplification: real functions also wait). No deadline.
//! - **Durations** are clamped to at least 1 ms (as invitro and DSLab do): the
//!   traces record sub-millisecond and zero durations, which would be no work.
//! - **Function names** are short and readable: the first 8 characters of the
//!   trace's function id (the whole id if shorter), plus `-2`, `-3`, ... when that
//!   prefix is already taken by another function of the same trace, in the order
//!   functions are added (sampled functions in trace order).
//! - **Randomness** comes from one [`Pcg64Mcg`] seeded with the options' `seed`:
//!   the same files, options and seed give an identical trace.
//! - **Sampling** `functions: Some(n)` keeps `n` functions drawn uniformly without
//!   replacement among those that have at least one invocation in the window and
//!   the data to time them; the kept ones stay in trace order.
//! - **Size limit.** A reader refuses ([`Error::Invalid`]) to make more than
//!   `max_invocations` invocations (by default [`DEFAULT_MAX_INVOCATIONS`]): a
//!   whole production day is billions of invocations; narrow the window or sample
//!   functions instead. This also keeps a hostile count from exhausting memory.
//! - **Errors** name the file, 1-based line and column of the first bad cell;
//!   nothing in a file can make a reader panic.

pub mod azure2019;
pub mod azure2021;
pub mod huawei2023;
mod table;

use crate::{Error, Result};
use faasched_model::{Function, Functions, Invocation, MS, Nanos, Phase, Phases, SEC, Time};
use rand::seq::index;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::HashSet;

/// Memory given to an invocation when its trace says nothing usable about it, in
/// MB: AWS Lambda's smallest size, and Huawei's smallest pool (`300-128`).
pub const DEFAULT_MEMORY_MB: u32 = 128;

/// Default cap on the number of invocations a reader makes (20 million, a few GB
/// in memory).
pub const DEFAULT_MAX_INVOCATIONS: u64 = 20_000_000;

/// The smallest CPU demand a reader gives an invocation.
pub const MIN_DURATION: Nanos = MS;

/// One minute: the time bucket of the per-minute traces.
const MINUTE: Nanos = 60 * SEC;

/// A workload read from a production trace.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The invocations, sorted by arrival, with ids `0..n` in that order.
    pub invocations: Vec<Invocation>,
    /// The functions the invocations refer to, in order of first sight.
    pub functions: Functions,
    /// Functions invoked in the window that the reader had to leave out because the
    /// trace lacks their durations (see each reader for what that means).
    pub skipped: usize,
    /// Rows the reader ignored because an earlier row of the same file has
    /// their key (Azure 2019, whose files should hold one row per key: the
    /// first row counts, as other tools' `drop_duplicates` keeps it).
    pub duplicates: usize,
    /// Those of the [`duplicates`](Trace::duplicates) whose values (those
    /// the reader uses) differ from the earlier row's: the file says two
    /// things, and the first was taken. The others repeat it and change
    /// nothing.
    pub conflicts: usize,
    /// The functions sampling chose from: those with invocations in the
    /// window that the trace can time. Sampling more than this many
    /// (`functions: Some(n)`, `n > candidates`) keeps all of them.
    pub candidates: usize,
}

/// How a per-minute trace's `k` invocations of a function in one minute are placed
/// inside that minute. Every arrival falls in `[minute start, minute end)`.
///
/// No placement pins an arrival to the minute's start: there every function
/// invoked in that minute would arrive at once, a burst the trace does not
/// record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Arrivals {
    /// `k` independent uniform instants, sorted (DSLab's default). The default.
    #[default]
    Uniform,
    /// Evenly spaced, `60 s / k` apart, at offsets `(i + φ) × 60 s / k` for
    /// `i = 0..k`, where the phase `φ` in `[0, 1)` is drawn once per function
    /// from the seed (FaasCache and the hybrid scheduler's generator space
    /// them so with `φ = 0`). A function invoked as often each minute
    /// arrives strictly periodically, and functions do not line up.
    Equidistant,
    /// A Poisson process conditioned on `k` arrivals in the minute: `k + 1`
    /// exponential gaps scaled to sum to one minute, an arrival at the end of
    /// each of the first `k`. Given `k` this is the same law as
    /// [`Arrivals::Uniform`] (k sorted uniform instants), drawn another way.
    Poisson,
}

impl std::str::FromStr for Arrivals {
    type Err = String;

    fn from_str(s: &str) -> Result<Arrivals, String> {
        Arrivals::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Arrivals::ALL.map(Arrivals::name).into();
                format!("no placement `{s}`: expected one of {}", names.join(", "))
            })
    }
}

impl Arrivals {
    /// Every placement, in the order the commands list them.
    pub const ALL: [Arrivals; 3] = [Arrivals::Uniform, Arrivals::Equidistant, Arrivals::Poisson];

    /// Its name, as `--arrivals` and the Python package take it.
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Uniform => "uniform",
            Arrivals::Equidistant => "equidistant",
            Arrivals::Poisson => "poisson",
        }
    }

    /// What it does, in a sentence, for `--help`.
    pub fn about(self) -> &'static str {
        match self {
            Arrivals::Uniform => "k independent uniform instants in the minute",
            Arrivals::Equidistant => {
                "evenly spaced, 60 s / k apart, at (i + φ) × 60 s / k for i = 0..k; the \
                 phase φ in [0, 1) is drawn once per function with the seed"
            }
            Arrivals::Poisson => {
                "a Poisson process given its k arrivals: k + 1 exponential gaps scaled to \
                 fill the minute, an arrival at the end of each of the first k (the same \
                 law as uniform)"
            }
        }
    }

    /// Appends the offsets (from the minute's start) of `k` arrivals of a
    /// function whose equidistant phase is `phase` (in `[0, MINUTE)`, a
    /// fraction `phase / MINUTE` of the spacing) to `out`.
    fn place(self, k: u64, phase: Nanos, rng: &mut Pcg64Mcg, out: &mut Vec<Nanos>) {
        let start = out.len();
        match self {
            Arrivals::Uniform => {
                out.extend((0..k).map(|_| rng.random_range(0..MINUTE)));
                out[start..].sort_unstable();
            }
            Arrivals::Equidistant => out.extend((0..k).map(|i| {
                // (i + phase / MINUTE) × MINUTE / k, exact in u128; below one
                // minute since i ≤ k - 1 and phase < MINUTE.
                let at = u128::from(i) * u128::from(MINUTE) + u128::from(phase);
                (at / u128::from(k)) as Nanos
            })),
            Arrivals::Poisson if k > 0 => {
                let gaps: Vec<f64> = (0..=k).map(|_| rng.sample(rand_distr::Exp1)).collect();
                let total: f64 = gaps.iter().sum();
                let mut elapsed = 0.0;
                out.extend(gaps[..gaps.len() - 1].iter().map(|gap| {
                    elapsed += gap;
                    // Below one minute as the last gap is left out; `min`
                    // guards rounding.
                    ((elapsed / total * MINUTE as f64) as Nanos).min(MINUTE - 1)
                }));
            }
            Arrivals::Poisson => {}
        }
    }
}

/// A CPU demand from a duration in (possibly fractional) milliseconds, clamped to
/// at least [`MIN_DURATION`]; absurdly large values saturate at `u64::MAX` ns.
fn cpu_from_ms(ms: f64) -> Nanos {
    ((ms * MS as f64).round() as Nanos).max(MIN_DURATION)
}

/// Seconds to nanoseconds, rounded; negative values become 0, huge ones saturate.
fn ns_from_secs(secs: f64) -> Nanos {
    (secs * SEC as f64).round() as Nanos
}

/// Keeps `n` of `items` drawn uniformly without replacement (all if `n` is `None`
/// or at least `items.len()`), in their original order.
fn sample<T>(items: Vec<T>, n: Option<usize>, rng: &mut Pcg64Mcg) -> Vec<T> {
    let Some(n) = n.filter(|&n| n < items.len()) else {
        return items;
    };
    let mut keep = vec![false; items.len()];
    for i in index::sample(rng, items.len(), n) {
        keep[i] = true;
    }
    items
        .into_iter()
        .zip(keep)
        .filter_map(|(item, kept)| kept.then_some(item))
        .collect()
}

/// Refuses to make more than `max` invocations.
fn check_size(total: u64, max: u64) -> Result<()> {
    if total > max {
        return Err(Error::invalid(
            "selection",
            format!(
                "it has {total} invocations, more than the {max} an import may hold; \
                 narrow the window or sample fewer functions (--functions)"
            ),
        ));
    }
    Ok(())
}

/// Validates a 1-based inclusive minute range `first..=last`, at most `max`
/// when given.
fn check_minutes(first: u64, last: u64, max: Option<u64>) -> Result<()> {
    let top_ok = max.is_none_or(|max| last <= max);
    if first == 0 || first > last || !top_ok {
        let bound = max.map_or(String::new(), |m| format!(" and at most {m}"));
        return Err(Error::invalid(
            "minutes",
            format!("{first}..={last}: want 1 ≤ first ≤ last{bound}"),
        ));
    }
    Ok(())
}

/// Builds a [`Trace`]: names and interns functions, places arrivals, and at the end
/// sorts and numbers the invocations.
struct Builder {
    rng: Pcg64Mcg,
    arrivals: Arrivals,
    functions: Functions,
    names: HashSet<String>,
    invocations: Vec<Invocation>,
    offsets: Vec<Nanos>,
    /// The number of items [`Builder::sample`] chose from.
    candidates: usize,
    /// Each function's equidistant phase, by function id (drawn only for
    /// [`Arrivals::Equidistant`], so that the other placements draw as before).
    phases: Vec<Nanos>,
}

impl Builder {
    /// A builder whose randomness comes from `seed` and which places per-minute
    /// arrivals by `arrivals`.
    fn new(seed: u64, arrivals: Arrivals) -> Builder {
        Builder {
            rng: Pcg64Mcg::seed_from_u64(seed),
            arrivals,
            functions: Functions::new(),
            names: HashSet::new(),
            invocations: Vec::new(),
            offsets: Vec::new(),
            candidates: 0,
            phases: Vec::new(),
        }
    }

    /// [`sample`] with the builder's randomness; the trace reports how many
    /// `items` there were.
    fn sample<T>(&mut self, items: Vec<T>, n: Option<usize>) -> Vec<T> {
        self.candidates = items.len();
        sample(items, n, &mut self.rng)
    }

    /// A new function for the trace id `id`, under a short name no other function
    /// of this trace has.
    fn function(&mut self, id: &str) -> Function {
        let short: String = id.chars().take(8).collect();
        let mut name = short.clone();
        for n in 2.. {
            if !self.names.contains(&name) {
                break;
            }
            name = format!("{short}-{n}");
        }
        let function = self.functions.intern(&name);
        self.names.insert(name);
        if self.arrivals == Arrivals::Equidistant {
            self.phases.push(self.rng.random_range(0..MINUTE));
        }
        function
    }

    /// One invocation of `function` at `arrival` needing `cpu` of CPU.
    fn push(&mut self, function: &Function, arrival: Time, cpu: Nanos, memory_mb: u32) {
        self.invocations.push(Invocation {
            id: 0,
            function: function.clone(),
            arrival,
            phases: Phases::from_buf([Phase::Cpu(cpu)]),
            memory_mb,
            deadline: None,
        });
    }

    /// `k` invocations of `function` in the minute starting at `start`, placed by
    /// the builder's [`Arrivals`], each needing `cpu(rng)` of CPU.
    fn push_minute(
        &mut self,
        function: &Function,
        start: Time,
        k: u64,
        memory_mb: u32,
        mut cpu: impl FnMut(&mut Pcg64Mcg) -> Nanos,
    ) {
        let mut offsets = std::mem::take(&mut self.offsets);
        offsets.clear();
        let phase = self.phases.get(function.id.0 as usize).copied();
        self.arrivals
            .place(k, phase.unwrap_or(0), &mut self.rng, &mut offsets);
        for &offset in &offsets {
            let cpu = cpu(&mut self.rng);
            self.push(function, start.saturating_add(offset), cpu, memory_mb);
        }
        self.offsets = offsets;
    }

    fn finish(mut self, skipped: usize) -> Trace {
        // Stable: ties keep the (deterministic) order they were made in.
        self.invocations.sort_by_key(|inv| inv.arrival);
        for (id, inv) in (0..).zip(&mut self.invocations) {
            inv.id = id;
        }
        Trace {
            invocations: self.invocations,
            functions: self.functions,
            skipped,
            duplicates: 0,
            conflicts: 0,
            candidates: self.candidates,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placement_is_read_back_by_its_name_and_a_wrong_one_lists_them() {
        for a in Arrivals::ALL {
            assert_eq!(a.name().parse::<Arrivals>(), Ok(a));
        }
        assert_eq!(
            "even".parse::<Arrivals>(),
            Err("no placement `even`: expected one of uniform, equidistant, poisson".to_string())
        );
    }

    fn place(arrivals: Arrivals, k: u64, seed: u64) -> Vec<Nanos> {
        place_with_phase(arrivals, k, 0, seed)
    }

    fn place_with_phase(arrivals: Arrivals, k: u64, phase: Nanos, seed: u64) -> Vec<Nanos> {
        let mut out = vec![7];
        arrivals.place(k, phase, &mut Pcg64Mcg::seed_from_u64(seed), &mut out);
        out.remove(0);
        out
    }

    #[test]
    fn placements_fall_inside_the_minute_and_are_sorted() {
        for arrivals in [Arrivals::Uniform, Arrivals::Equidistant, Arrivals::Poisson] {
            for k in [0, 1, 2, 17, 1000] {
                for phase in [0, MINUTE / 3, MINUTE - 1] {
                    let offsets = place_with_phase(arrivals, k, phase, 3);
                    assert_eq!(offsets.len() as u64, k, "{arrivals:?}");
                    assert!(offsets.iter().all(|&o| o < MINUTE), "{arrivals:?}");
                    assert!(offsets.is_sorted(), "{arrivals:?}");
                }
            }
        }
    }

    #[test]
    fn equidistant_arrivals_are_shifted_by_the_phase() {
        assert_eq!(
            place_with_phase(Arrivals::Equidistant, 4, 0, 0),
            [0, 15 * SEC, 30 * SEC, 45 * SEC]
        );
        // A phase of 2/3 of the spacing: 10 s of 15 s.
        assert_eq!(
            place_with_phase(Arrivals::Equidistant, 4, 40 * SEC, 0),
            [10 * SEC, 25 * SEC, 40 * SEC, 55 * SEC]
        );
    }

    #[test]
    fn poisson_arrivals_do_not_start_at_the_minute() {
        // Conditioned on k arrivals, a Poisson process's are k sorted
        // uniform instants: the first of k lies at 60 s / (k + 1) on average,
        // not at 0.
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        for k in [1u64, 4] {
            let (runs, mut sum, mut at_zero) = (4000, 0.0, 0);
            for _ in 0..runs {
                let mut out = Vec::new();
                Arrivals::Poisson.place(k, 0, &mut rng, &mut out);
                sum += out[0] as f64;
                at_zero += usize::from(out[0] == 0);
            }
            let mean = sum / f64::from(runs) / MINUTE as f64;
            let want = 1.0 / (k + 1) as f64;
            assert!((mean - want).abs() < 0.02, "k = {k}: {mean} vs {want}");
            assert_eq!(at_zero, 0);
        }
        assert_ne!(
            place(Arrivals::Poisson, 5, 1),
            place(Arrivals::Poisson, 5, 2)
        );
    }

    #[test]
    fn each_function_keeps_its_own_equidistant_phase() {
        let mut b = Builder::new(0, Arrivals::Equidistant);
        let (f, g) = (b.function("f"), b.function("g"));
        for minute in 0..3 {
            b.push_minute(&f, minute * MINUTE, 2, 128, |_| MS);
            b.push_minute(&g, minute * MINUTE, 2, 128, |_| MS);
        }
        let arrivals = |name: &str| -> Vec<Nanos> {
            b.invocations
                .iter()
                .filter(|i| &*i.function.name == name)
                .map(|i| i.arrival)
                .collect()
        };
        let (af, ag) = (arrivals("f"), arrivals("g"));
        // Periodic at 30 s from a first arrival inside the first gap, not at 0.
        assert!((1..30 * SEC).contains(&af[0]), "{af:?}");
        assert!(af.windows(2).all(|w| w[1] - w[0] == 30 * SEC), "{af:?}");
        assert!(ag.windows(2).all(|w| w[1] - w[0] == 30 * SEC), "{ag:?}");
        assert_ne!(af[0], ag[0], "functions get their own phase");
        // Other placements draw no phase.
        let mut u = Builder::new(0, Arrivals::Uniform);
        u.function("f");
        assert!(u.phases.is_empty());
    }

    #[test]
    fn sampling_keeps_order_and_count() {
        let mut rng = Pcg64Mcg::seed_from_u64(9);
        let kept = sample((0..100).collect(), Some(10), &mut rng);
        assert_eq!(kept.len(), 10);
        assert!(kept.is_sorted());
        assert_eq!(sample(vec![1, 2], Some(5), &mut rng), vec![1, 2]);
        assert_eq!(sample(vec![1, 2], None, &mut rng), vec![1, 2]);
    }

    #[test]
    fn short_names_are_unique() {
        let mut b = Builder::new(0, Arrivals::default());
        let names: Vec<_> = ["0123456789", "01234567ff", "01234567-2", "ab"]
            .iter()
            .map(|id| b.function(id).name.to_string())
            .collect();
        assert_eq!(names, ["01234567", "01234567-2", "01234567-3", "ab"]);
    }

    #[test]
    fn durations_clamp_to_a_millisecond() {
        assert_eq!(cpu_from_ms(0.0), MS);
        assert_eq!(cpu_from_ms(-5.0), MS);
        assert_eq!(cpu_from_ms(2.5), 2_500_000);
        assert_eq!(cpu_from_ms(f64::MAX), u64::MAX);
    }
}
