//! `azure-functions`: a synthetic population shaped like the Azure Functions
//! 2019 trace (Shahrad et al., ATC'20), open loop, scaled to a target
//! cluster load.
//!
//! How a population of `n` functions is made, one function at a time from
//! the seed (warm time, then memory, then rate):
//! 1. **Warm time**: log-normal, ln(seconds) ~ N([`DURATION_MU`],
//!    [`DURATION_SIGMA`]), ATC'20's fit to per-function average execution
//!    times, clamped to [[`MIN_WARM`], [`MAX_WARM`]] (invitro's bounds; the
//!    fit puts about 4% of functions above 60 s).
//! 2. **Cold time**: warm + [`DEFAULT_COLD_START`] (the trace has none; the
//!    median cold start of CH-RLU Table 1).
//! 3. **Memory**: Burr XII ([`BURR_C`], [`BURR_K`], [`BURR_LAMBDA`] MB),
//!    ATC'20's fit to per-app average allocated memory, taken per function
//!    (54% of apps have one function), rounded up and clamped to
//!    [[`MIN_MEMORY_MB`], [`MAX_MEMORY_MB`]].
//! 4. **Popularity**: log10(invocations per minute) ~ N([`RATE_LOG10_MEAN`],
//!    [`RATE_LOG10_SD`]), the normal fitted to two of ATC'20's app-level
//!    facts taken per function: 18.6% are invoked at least once a minute,
//!    45% at most once an hour. The fit also gives those at least once a
//!    minute 99.9% of the invocations (ATC'20: 99.6%). Rates are floored at
//!    one invocation a day ([`MIN_FITTED_PER_MINUTE`]): the trace lists a
//!    function only if it is invoked that day, and its invocations per day
//!    span over eight orders of magnitude from there; the fit puts about 18%
//!    of functions on the floor (all of them among the 45% at most hourly).
//!    Popularity and warm time are independent (the trace states no
//!    correlation).
//! 5. **Scaling**: every rate is multiplied by one factor
//!    ([`Summary::rate_scale`]) so that the offered CPU, Σ rate × warm, equals
//!    servers × cores × load: the shape of the population stays the trace's,
//!    the absolute rates are the cluster's.
//!
//! The stream is open loop: each function is a Poisson process at its rate,
//! so the whole is one Poisson stream at the total rate whose functions are
//! drawn by rate ([`OpenLoop`]); every invocation's work is its function's
//! warm time. Per-function arrivals are Poisson (CV 1): the trace's burstier
//! apps (40% have an IAT CV above 1) are not modelled here; the burst
//! wrappers add bursts.

use super::stream::{OpenLoop, Weights};
use super::table::{DEFAULT_COLD_START, FunctionTable};
use crate::node::Length;
use crate::{Error, Result};
use faasched_model::{MS, Nanos, SEC};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use rand_pcg::Pcg64;

/// Functions in the population unless asked otherwise (CH-RLU §6.3: "1000
/// randomly chosen functions").
pub const DEFAULT_FUNCTIONS: u32 = 1000;
/// The most functions a population may have.
pub const MAX_FUNCTIONS: u32 = 1_000_000;
/// Mean of ln(warm time in s): ATC'20's log-normal fit.
pub const DURATION_MU: f64 = -0.38;
/// Standard deviation of ln(warm time in s): ATC'20's log-normal fit.
pub const DURATION_SIGMA: f64 = 2.36;
/// Shortest warm time (the readers' 1 ms floor).
pub const MIN_WARM: Nanos = MS;
/// Longest warm time: invitro's `MaxExecTimeMilli`, 60 s ("avg. p96 from
/// Wild").
pub const MAX_WARM: Nanos = 60 * SEC;
/// Burr XII `c` of per-app allocated memory (ATC'20).
pub const BURR_C: f64 = 11.652;
/// Burr XII `k` of per-app allocated memory (ATC'20).
pub const BURR_K: f64 = 0.221;
/// Burr XII scale λ of per-app allocated memory, MB (ATC'20).
pub const BURR_LAMBDA: f64 = 107.083;
/// Smallest container memory, MB.
pub const MIN_MEMORY_MB: u32 = 1;
/// Largest container memory, MB: AWS Lambda's and invitro's 10,240 MB cap.
pub const MAX_MEMORY_MB: u32 = 10_240;
/// Mean of log10(invocations per minute), fitted (see the module docs).
pub const RATE_LOG10_MEAN: f64 = -1.5588;
/// Standard deviation of log10(invocations per minute), fitted.
pub const RATE_LOG10_SD: f64 = 1.7461;

/// The least popular function's fitted rate, invocations per minute: once
/// a day.
pub const MIN_FITTED_PER_MINUTE: f64 = 1.0 / 1440.0;

/// Seed offset of the arrivals, so that the population and the arrivals
/// draw from streams of their own.
const ARRIVALS_SALT: u64 = 0x6172_7269_7661_6c73;

/// What fixes an `azure-functions` workload.
#[derive(Clone, Debug, PartialEq)]
pub struct AzureParams {
    /// Functions in the population, 1..=[`MAX_FUNCTIONS`]. By default
    /// [`DEFAULT_FUNCTIONS`].
    pub functions: u32,
    /// Servers in the cluster the load is scaled to (at least 1).
    pub servers: u32,
    /// Cores per server (at least 1).
    pub cores: u32,
    /// Offered CPU over the cluster's cores: finite, above 0.
    pub load: f64,
    /// Seed of the population and of the arrivals.
    pub seed: u64,
}

impl AzureParams {
    /// [`DEFAULT_FUNCTIONS`] functions on `servers` × `cores` at `load`,
    /// seed 0.
    pub fn new(servers: u32, cores: u32, load: f64) -> AzureParams {
        AzureParams {
            functions: DEFAULT_FUNCTIONS,
            servers,
            cores,
            load,
            seed: 0,
        }
    }
}

/// The numbers that describe a population, for a run to print.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Functions.
    pub functions: usize,
    /// Invocations per second, all functions.
    pub rate_per_s: f64,
    /// Mean warm time of an invocation (invocation-weighted), s.
    pub mean_work_s: f64,
    /// Offered cores: rate × mean work (= servers × cores × load).
    pub offered_cores: f64,
    /// The factor the fitted rates were multiplied by to offer that load.
    pub rate_scale: f64,
    /// Median warm time over functions, s.
    pub median_warm_s: f64,
    /// The shortest and the longest mean inter-arrival time of a function, s.
    pub mean_iat_s: (f64, f64),
    /// Share of invocations of the most invoked 20% of functions.
    pub top20_invocation_share: f64,
    /// Share of the offered CPU of the 20% of functions with the most
    /// induced load (rate × warm).
    pub heavy20_load_share: f64,
    /// Their mean induced load over the median function's (CH-RLU §3.1:
    /// "the 'heavy' top 20% functions consume 2 orders of magnitude more
    /// resources than the average", read against the median function: over
    /// the mean it could be 5 at most).
    pub heavy20_over_median: f64,
    /// Share of functions the fit invokes at least once a minute, before
    /// scaling (ATC'20: 18.6% of apps).
    pub fit_per_minute_functions: f64,
    /// Their share of the invocations (ATC'20: 99.6%).
    pub fit_per_minute_share: f64,
}

/// An `azure-functions` population: its table, per-function rates and
/// summary; [`AzureFunctions::invocations`] streams it.
#[derive(Clone, Debug)]
pub struct AzureFunctions {
    params: AzureParams,
    table: FunctionTable,
    rates: Vec<f64>,
    summary: Summary,
}

impl AzureFunctions {
    /// Draws the population `params` asks for (module docs). Errors name the
    /// parameter out of range.
    pub fn new(params: &AzureParams) -> Result<AzureFunctions> {
        let n = params.functions;
        if !(1..=MAX_FUNCTIONS).contains(&n) {
            return Err(Error::invalid(
                "functions",
                format!("{n}: want 1..={MAX_FUNCTIONS}"),
            ));
        }
        if params.servers == 0 || params.cores == 0 {
            return Err(Error::invalid(
                "cluster",
                format!(
                    "{} servers × {} cores: want at least one of each",
                    params.servers, params.cores
                ),
            ));
        }
        if !(params.load.is_finite() && params.load > 0.0) {
            return Err(Error::invalid(
                "load",
                format!("{:?}: want a finite number above 0", params.load),
            ));
        }
        let mut rng = Pcg64::seed_from_u64(params.seed);
        let duration = LogNormal::new(DURATION_MU, DURATION_SIGMA)
            .map_err(|e| Error::invalid("duration", e.to_string()))?;
        let popularity = popularity();
        let width = (n - 1).to_string().len();
        let mut table = FunctionTable::new();
        let mut base = Vec::with_capacity(n as usize);
        for i in 0..n {
            let secs: f64 = duration.sample(&mut rng);
            let warm = ((secs * SEC as f64).round() as Nanos).clamp(MIN_WARM, MAX_WARM);
            let memory_mb = burr_mb(rng.random());
            table.push(
                &format!("f{i:0width$}"),
                memory_mb,
                warm,
                warm + DEFAULT_COLD_START,
            )?;
            base.push(fitted(&popularity, &mut rng) / 60.0);
        }
        let offered: f64 = base
            .iter()
            .zip(table.profiles())
            .map(|(r, p)| r * p.warm as f64 / SEC as f64)
            .sum();
        let target = f64::from(params.servers) * f64::from(params.cores) * params.load;
        let rate_scale = target / offered;
        let rates: Vec<f64> = base.iter().map(|r| r * rate_scale).collect();
        let summary = summarize(&table, &base, &rates, rate_scale);
        Ok(AzureFunctions {
            params: params.clone(),
            table,
            rates,
            summary,
        })
    }

    /// The parameters it was made from.
    pub fn params(&self) -> &AzureParams {
        &self.params
    }

    /// Its functions.
    pub fn table(&self) -> &FunctionTable {
        &self.table
    }

    /// Invocations per second of each function, by id, after scaling.
    pub fn rates(&self) -> &[f64] {
        &self.rates
    }

    /// Its print-worthy numbers.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Its invocations until `length`, open loop (module docs), drawn from
    /// the params' seed. Errors: an empty length, or one past the clock.
    pub fn invocations(&self, length: Length) -> Result<OpenLoop> {
        OpenLoop::new(
            &self.table,
            Weights::new(&self.rates)?,
            self.rates.iter().sum(),
            length,
            self.params.seed ^ ARRIVALS_SALT,
        )
    }
}

/// `n` invocation rates per minute drawn from the population's fitted
/// popularity (module docs, step 4, with its floor) from `seed`: weights
/// that mimic the trace's frequencies, as CH-RLU's live runs turn them into
/// Locust weights (§6.1).
pub fn fitted_rates_per_minute(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let popularity = popularity();
    (0..n).map(|_| fitted(&popularity, &mut rng)).collect()
}

/// The fitted distribution of invocations per minute (before the floor).
fn popularity() -> LogNormal<f64> {
    let (mu, sigma) = (
        RATE_LOG10_MEAN * std::f64::consts::LN_10,
        RATE_LOG10_SD * std::f64::consts::LN_10,
    );
    // Finite, and σ > 0: the constants are valid.
    LogNormal::new(mu, sigma).unwrap_or_else(|e| unreachable!("valid constants: {e}"))
}

/// One function's fitted invocations per minute, floored.
fn fitted(popularity: &LogNormal<f64>, rng: &mut Pcg64) -> f64 {
    popularity.sample(rng).max(MIN_FITTED_PER_MINUTE)
}

/// Burr XII's quantile at `u` in [0, 1), MB, rounded up and clamped to
/// [[`MIN_MEMORY_MB`], [`MAX_MEMORY_MB`]].
fn burr_mb(u: f64) -> u32 {
    let x = BURR_LAMBDA * ((1.0 - u).powf(-1.0 / BURR_K) - 1.0).powf(1.0 / BURR_C);
    // NaN or beyond u32 saturate in the cast; the clamp bounds the rest.
    (x.ceil() as u32).clamp(MIN_MEMORY_MB, MAX_MEMORY_MB)
}

fn summarize(table: &FunctionTable, fitted: &[f64], rates: &[f64], rate_scale: f64) -> Summary {
    let n = rates.len();
    let warm_s: Vec<f64> = table
        .profiles()
        .iter()
        .map(|p| p.warm as f64 / SEC as f64)
        .collect();
    let total: f64 = rates.iter().sum();
    let offered: f64 = rates.iter().zip(&warm_s).map(|(r, w)| r * w).sum();
    let top = n.div_ceil(5);
    let mut by_rate = rates.to_vec();
    by_rate.sort_by(|a, b| b.total_cmp(a));
    let mut induced: Vec<f64> = rates.iter().zip(&warm_s).map(|(r, w)| r * w).collect();
    induced.sort_by(|a, b| b.total_cmp(a));
    let per_minute = 1.0 / 60.0;
    let fitted_total: f64 = fitted.iter().sum();
    let frequent = fitted.iter().filter(|&&r| r >= per_minute);
    Summary {
        functions: n,
        rate_per_s: total,
        mean_work_s: offered / total,
        offered_cores: offered,
        rate_scale,
        median_warm_s: median(&warm_s),
        mean_iat_s: (1.0 / by_rate[0], 1.0 / by_rate[n - 1]),
        top20_invocation_share: by_rate[..top].iter().sum::<f64>() / total,
        heavy20_load_share: induced[..top].iter().sum::<f64>() / offered,
        heavy20_over_median: (induced[..top].iter().sum::<f64>() / top as f64) / median(&induced),
        fit_per_minute_functions: frequent.clone().count() as f64 / n as f64,
        fit_per_minute_share: frequent.sum::<f64>() / fitted_total,
    }
}

/// The median of `values` (the mean of the middle two for an even count).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burr_quantiles_match_the_atc20_fit() {
        // Median ≈ 139.7 MB: ATC'20 says 50% of apps allocate at most 170 MB
        // at their maximum, so less on average.
        assert_eq!(burr_mb(0.5), 140);
        assert_eq!(burr_mb(0.0), MIN_MEMORY_MB);
        assert_eq!(burr_mb(1.0 - 1e-16), MAX_MEMORY_MB);
        assert!(burr_mb(0.9) < 400, "{}", burr_mb(0.9));
    }
}
