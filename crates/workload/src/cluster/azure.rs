//! A function table and a replay from an Azure Functions 2019 day, through
//! the trace reader [`crate::traces::azure2019`] (which joins the day's three
//! files and places each minute's invocations inside it).
//!
//! The table ([`AzureTrace::read`]):
//! 1. The day's window is read once with a fixed seed ([`TABLE_SEED`]) and
//!    uniform placement, so the table does not change with the run's seed.
//! 2. Functions invoked fewer than twice in the window are left out (as
//!    Ilúvatar and FaasCache do: they hold no reuse); of the rest, `top: Some(n)`
//!    keeps the `n` most invoked. The table lists them most invoked first
//!    (ties in trace order): `FunctionId(0)` is the most popular.
//! 3. **Memory**: the reader's, ceil(app `AverageAllocatedMb` / the app's
//!    functions), as Ilúvatar and FaasCache compute it.
//! 4. **Warm time**: the `warm_quantile` (by default 0.25, Ilúvatar's
//!    `percentile_Average_25`) of the function's durations as the reader
//!    draws them, one per invocation, from the day's percentile curve: the
//!    draws follow that curve, so their quantile converges to the file's
//!    percentile as invocations grow (FaasCache's `Average` would be the
//!    draws' mean). The reader exposes the draws, not the file's columns, so
//!    a function invoked a handful of times gets a rough value.
//! 5. **Cold time**: warm + `cold_start` (by default [`DEFAULT_COLD_START`]).
//!    Ilúvatar and FaasCache take the durations file's `Maximum`, but the
//!    dataset's durations exclude cold starts, so `Maximum` is the slowest
//!    warm run, not a cold one.
//!
//! The replay ([`AzureTrace::replay`]) reads the window again with the run's
//! seed and [`Arrivals`] (uniform or Poisson within each minute: that choice
//! sets the burstiness a popularity detector sees), keeps the invocations of
//! the table's functions and gives each its function's warm time as work
//! (every invocation of a function needs the same CPU warm, as in CH-RLU's
//! and FaasCache's simulators). It holds the window's invocations in memory
//! (the reader does); narrow the window or the functions for a large day.

use super::table::{DEFAULT_COLD_START, FunctionTable};
use crate::traces::{Arrivals, DEFAULT_MAX_INVOCATIONS, azure2019};
use crate::{Error, Result};
use faasched_model::cluster::{Invocation, InvocationId};
use faasched_model::{FunctionId, Nanos, Phase, SEC};
use std::iter::FusedIterator;
use std::ops::RangeInclusive;
use std::path::PathBuf;

/// The seed the table's read uses, whatever the run's seed.
pub const TABLE_SEED: u64 = 0;

/// Ilúvatar's warm time: the 25th percentile of a function's durations.
pub const DEFAULT_WARM_QUANTILE: f64 = 0.25;

/// What to read from an Azure Functions 2019 day, and how.
#[derive(Clone, Debug, PartialEq)]
pub struct AzureOptions {
    /// Directory holding the day's files.
    pub dir: PathBuf,
    /// Day of the dataset, 1..=14.
    pub day: u32,
    /// 1-based minutes to read, inclusive. By default (`None`) every minute
    /// the invocations file has a column for.
    pub minutes: Option<RangeInclusive<u32>>,
    /// Keep the `n` most invoked functions. By default (`None`) every
    /// function invoked at least twice.
    pub top: Option<usize>,
    /// How the replay places each minute's invocations. By default
    /// [`Arrivals::Uniform`].
    pub arrivals: Arrivals,
    /// Seed of the replay. By default 0.
    pub seed: u64,
    /// The quantile of a function's durations taken as its warm time, in
    /// [0, 1]. By default [`DEFAULT_WARM_QUANTILE`].
    pub warm_quantile: f64,
    /// What a cold start adds. By default [`DEFAULT_COLD_START`].
    pub cold_start: Nanos,
    /// Refuse to read more invocations than this. By default
    /// [`DEFAULT_MAX_INVOCATIONS`].
    pub max_invocations: u64,
}

impl AzureOptions {
    /// Day `day` of `dir`, every other option at its default.
    pub fn new(dir: impl Into<PathBuf>, day: u32) -> AzureOptions {
        AzureOptions {
            dir: dir.into(),
            day,
            minutes: None,
            top: None,
            arrivals: Arrivals::Uniform,
            seed: 0,
            warm_quantile: DEFAULT_WARM_QUANTILE,
            cold_start: DEFAULT_COLD_START,
            max_invocations: DEFAULT_MAX_INVOCATIONS,
        }
    }

    /// The reader's options for a read with `seed` and `arrivals`.
    fn reader(
        &self,
        window: &RangeInclusive<u32>,
        seed: u64,
        arrivals: Arrivals,
    ) -> azure2019::Options {
        azure2019::Options {
            minutes: Some(window.clone()),
            functions: None,
            arrivals,
            seed,
            max_invocations: self.max_invocations,
            ..azure2019::Options::new(&self.dir, self.day)
        }
    }
}

/// An Azure day's function table, ready to replay.
#[derive(Clone, Debug)]
pub struct AzureTrace {
    options: AzureOptions,
    window: RangeInclusive<u32>,
    table: FunctionTable,
    counts: Vec<u64>,
    rare: usize,
    skipped: usize,
}

impl AzureTrace {
    /// Reads the day's table (module docs). Errors: the reader's (file, line,
    /// field), an option out of range, or no function invoked twice.
    pub fn read(options: &AzureOptions) -> Result<AzureTrace> {
        let q = options.warm_quantile;
        if !(0.0..=1.0).contains(&q) {
            return Err(Error::invalid(
                "warm quantile",
                format!("{q:?}: want a number in [0, 1]"),
            ));
        }
        if options.top == Some(0) {
            return Err(Error::invalid("functions", "0: keep at least one"));
        }
        let window = match &options.minutes {
            Some(w) => w.clone(),
            None => azure2019::header_minutes(&options.dir, options.day)?,
        };
        let trace = azure2019::read(&options.reader(&window, TABLE_SEED, Arrivals::Uniform))?;
        // Per trace function: invocations, memory, drawn durations.
        let mut seen: Vec<(u64, u32, Vec<Nanos>)> = vec![(0, 0, Vec::new()); trace.functions.len()];
        for inv in &trace.invocations {
            let entry = &mut seen[inv.function.id.0 as usize];
            entry.0 += 1;
            entry.1 = inv.memory_mb;
            entry.2.push(Phase::cpu_total(&inv.phases));
        }
        let mut order: Vec<usize> = (0..seen.len()).filter(|&i| seen[i].0 >= 2).collect();
        let rare = seen.iter().filter(|s| (1..2).contains(&s.0)).count();
        if order.is_empty() {
            return Err(Error::Unusable(format!(
                "{}: day {} minutes {}..={}: no function is invoked twice",
                options.dir.display(),
                options.day,
                window.start(),
                window.end()
            )));
        }
        // Most invoked first; the sort is stable, so ties keep trace order.
        order.sort_by_key(|&i| std::cmp::Reverse(seen[i].0));
        order.truncate(options.top.unwrap_or(usize::MAX));
        let mut table = FunctionTable::new();
        let mut counts = Vec::with_capacity(order.len());
        for i in order {
            let (count, memory_mb, draws) = &mut seen[i];
            let warm = quantile(draws, q).max(1);
            let name = trace
                .functions
                .get(FunctionId(i as u32))
                .map_or("", |f| &*f.name);
            table.push(
                name,
                *memory_mb,
                warm,
                warm.saturating_add(options.cold_start),
            )?;
            counts.push(*count);
        }
        Ok(AzureTrace {
            options: options.clone(),
            window,
            table,
            counts,
            rare,
            skipped: trace.skipped,
        })
    }

    /// The functions kept, most invoked first.
    pub fn table(&self) -> &FunctionTable {
        &self.table
    }

    /// Invocations of each function in the window, by id.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The minutes read.
    pub fn window(&self) -> &RangeInclusive<u32> {
        &self.window
    }

    /// How long the window lasts.
    pub fn span(&self) -> Nanos {
        u64::from(self.window.end() - self.window.start() + 1) * 60 * SEC
    }

    /// Mean invocations per second of each function over the window, by id.
    pub fn rates(&self) -> Vec<f64> {
        let secs = self.span() as f64 / SEC as f64;
        self.counts.iter().map(|&c| c as f64 / secs).collect()
    }

    /// Functions left out for being invoked once only in the window.
    pub fn rare(&self) -> usize {
        self.rare
    }

    /// Functions the reader left out for lack of durations.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// The table's invocations in the window, with the options' seed and
    /// arrivals (module docs).
    pub fn replay(&self) -> Result<Replay> {
        let o = &self.options;
        let trace = azure2019::read(&o.reader(&self.window, o.seed, o.arrivals))?;
        let ids: Vec<Option<&_>> = trace
            .functions
            .iter()
            .map(|f| self.table.find(&f.name))
            .collect();
        let invocations: Vec<Invocation> = trace
            .invocations
            .iter()
            .filter_map(|inv| ids[inv.function.id.0 as usize].map(|p| (inv.arrival, *p)))
            .zip(0..)
            .map(|((arrival, p), id)| Invocation {
                id: InvocationId(id),
                function: p.function,
                arrival,
                work: p.warm,
            })
            .collect();
        Ok(Replay {
            invocations: invocations.into_iter(),
        })
    }
}

/// The `q` quantile of `values` (nearest rank: the smallest value with at
/// least a share `q` of them at or below it); sorts them; 0 if empty.
fn quantile(values: &mut [Nanos], q: f64) -> Nanos {
    values.sort_unstable();
    let rank = (q * values.len() as f64).ceil() as usize;
    values
        .get(rank.clamp(1, values.len().max(1)) - 1)
        .copied()
        .unwrap_or(0)
}

/// An Azure day's invocations in arrival order, ids 0, 1, 2, ...
#[derive(Clone, Debug)]
pub struct Replay {
    invocations: std::vec::IntoIter<Invocation>,
}

impl Iterator for Replay {
    type Item = Invocation;

    fn next(&mut self) -> Option<Invocation> {
        self.invocations.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.invocations.size_hint()
    }
}

impl ExactSizeIterator for Replay {}

impl FusedIterator for Replay {}

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn quantiles_are_nearest_rank() {
        let mut v = [40, 10, 30, 20];
        assert_eq!(quantile(&mut v, 0.25), 10);
        assert_eq!(quantile(&mut v, 0.26), 20);
        assert_eq!(quantile(&mut v, 0.0), 10);
        assert_eq!(quantile(&mut v, 1.0), 40);
        assert_eq!(quantile(&mut [], 0.5), 0);
    }
}
