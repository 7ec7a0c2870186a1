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
}

/// How a per-minute trace's `k` invocations of a function in one minute are placed
/// inside that minute. Every arrival falls in `[minute start, minute end)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Arrivals {
    /// `k` independent uniform instants, sorted (DSLab's default). The default.
    #[default]
    Uniform,
    /// Evenly spaced, `60 s / k` apart, the first at the minute's start (FaasCache,
    /// the hybrid scheduler's generator).
    Equidistant,
    /// `k` exponential gaps normalised to sum to one minute, the first invocation
    /// at the minute's start (invitro's default): bursty within the minute, exactly
    /// `k` arrivals.
    Poisson,
}

impl Arrivals {
    /// Appends the offsets (from the minute's start) of `k` arrivals to `out`.
    fn place(self, k: u64, rng: &mut Pcg64Mcg, out: &mut Vec<Nanos>) {
        let start = out.len();
        match self {
            Arrivals::Uniform => {
                out.extend((0..k).map(|_| rng.random_range(0..MINUTE)));
                out[start..].sort_unstable();
            }
            Arrivals::Equidistant => out.extend((0..k).map(|i| {
                // i < k, so the offset is below one minute; u128 keeps i × MINUTE exact.
                (u128::from(i) * u128::from(MINUTE) / u128::from(k)) as Nanos
            })),
            Arrivals::Poisson => {
                let gaps: Vec<f64> = (0..k).map(|_| rng.sample(rand_distr::Exp1)).collect();
                let total: f64 = gaps.iter().sum();
                let mut elapsed = 0.0;
                out.extend(gaps.iter().map(|gap| {
                    let offset = elapsed / total * MINUTE as f64;
                    elapsed += gap;
                    // Below one minute as elapsed < total; `min` guards rounding.
                    (offset as Nanos).min(MINUTE - 1)
                }));
            }
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
        }
    }

    fn rng(&mut self) -> &mut Pcg64Mcg {
        &mut self.rng
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
        self.arrivals.place(k, &mut self.rng, &mut offsets);
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(arrivals: Arrivals, k: u64, seed: u64) -> Vec<Nanos> {
        let mut out = vec![7];
        arrivals.place(k, &mut Pcg64Mcg::seed_from_u64(seed), &mut out);
        out.remove(0);
        out
    }

    #[test]
    fn placements_fall_inside_the_minute_and_are_sorted() {
        for arrivals in [Arrivals::Uniform, Arrivals::Equidistant, Arrivals::Poisson] {
            for k in [0, 1, 2, 17, 1000] {
                let offsets = place(arrivals, k, 3);
                assert_eq!(offsets.len() as u64, k, "{arrivals:?}");
                assert!(offsets.iter().all(|&o| o < MINUTE), "{arrivals:?}");
                assert!(offsets.is_sorted(), "{arrivals:?}");
            }
        }
    }

    #[test]
    fn equidistant_and_poisson_start_at_the_minute() {
        assert_eq!(
            place(Arrivals::Equidistant, 4, 0),
            vec![0, 15 * SEC, 30 * SEC, 45 * SEC]
        );
        assert_eq!(place(Arrivals::Poisson, 5, 1)[0], 0);
        assert_ne!(
            place(Arrivals::Poisson, 5, 1),
            place(Arrivals::Poisson, 5, 2)
        );
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
