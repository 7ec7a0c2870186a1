//! What the invocations would cost on a FaaS provider (docs/OUTPUTS.md, `cost_usd`).
//!
//! Priced like AWS Lambda's public on-demand x86 price: billed GB-seconds ×
//! [`USD_PER_GB_SECOND`] plus [`USD_PER_MILLION_REQUESTS`] per million requests.
//! The billed duration of an invocation is its **execution** (finish − first_run),
//! rounded up to a whole [`BILLING_GRANULARITY`] (1 ms); GB = memory_mb / 1024.
//!
//! Accumulation is exact (integer MB·ms in a `u128`); conversion to GB-seconds and
//! dollars happens once, when asked.

use faasched_model::{MS, Nanos};
use serde::{Deserialize, Serialize};

/// Price of one GB-second of duration: AWS Lambda, x86, first pricing tier
/// (public price list, <https://aws.amazon.com/lambda/pricing/>).
pub const USD_PER_GB_SECOND: f64 = 0.000_016_666_7;

/// Price of one million requests: AWS Lambda (public price list,
/// <https://aws.amazon.com/lambda/pricing/>).
pub const USD_PER_MILLION_REQUESTS: f64 = 0.20;

/// Billed durations are rounded up to a multiple of this (1 ms, as AWS Lambda).
pub const BILLING_GRANULARITY: Nanos = MS;

/// What the output files say the billed duration is.
pub const BILLED_DURATION: &str = "execution";

/// MB·ms in one GB-second.
const MB_MS_PER_GB_S: f64 = 1024.0 * 1000.0;

/// The billed duration of an execution, in whole ms (rounded up; 0 stays 0).
pub fn billed_ms(execution: Nanos) -> u64 {
    execution.div_ceil(BILLING_GRANULARITY)
}

/// Exact running total of requests and billed MB·ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cost {
    requests: u64,
    billed_mb_ms: u128,
}

impl Cost {
    /// Adds one request that executed for `execution` with `memory_mb` of memory.
    #[inline]
    pub fn add(&mut self, execution: Nanos, memory_mb: u32) {
        self.requests += 1;
        self.billed_mb_ms += u128::from(billed_ms(execution)) * u128::from(memory_mb);
    }

    /// Adds another total to this one.
    pub fn merge(&mut self, other: &Cost) {
        self.requests += other.requests;
        self.billed_mb_ms += other.billed_mb_ms;
    }

    /// Number of requests added.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Billed MB·ms (exact).
    pub fn billed_mb_ms(&self) -> u128 {
        self.billed_mb_ms
    }

    /// Billed GB-seconds.
    pub fn billed_gb_s(&self) -> f64 {
        self.billed_mb_ms as f64 / MB_MS_PER_GB_S
    }

    /// Total price in USD: duration plus requests.
    pub fn usd(&self) -> f64 {
        self.billed_gb_s() * USD_PER_GB_SECOND
            + self.requests as f64 * USD_PER_MILLION_REQUESTS / 1e6
    }
}

/// Dollars to four significant digits in fixed notation (at most 9
/// decimals), so small runs still show differences between policies.
pub(crate) fn usd(v: f64) -> String {
    let magnitude = if v > 0.0 { v.log10().floor() as i32 } else { 0 };
    let decimals = (3 - magnitude).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::US;

    #[test]
    fn duration_rounds_up_to_whole_ms() {
        assert_eq!(billed_ms(0), 0);
        assert_eq!(billed_ms(1), 1);
        assert_eq!(billed_ms(MS), 1);
        assert_eq!(billed_ms(MS + 1), 2);
        assert_eq!(billed_ms(1200 * US), 2);
    }

    #[test]
    fn price_by_hand() {
        let mut c = Cost::default();
        c.add(1200 * US, 128); // 2 ms × 128 MB
        c.add(999 * MS + 1, 1024); // 1000 ms × 1 GB = 1 GB-s
        assert_eq!(c.requests(), 2);
        assert_eq!(c.billed_mb_ms(), 2 * 128 + 1000 * 1024);
        let gb_s = 2.0 * 128.0 / 1024.0 / 1000.0 + 1.0;
        assert!((c.billed_gb_s() - gb_s).abs() < 1e-12);
        let usd = gb_s * 0.0000166667 + 2.0 * 0.20 / 1e6;
        assert!((c.usd() - usd).abs() < 1e-15, "{} vs {usd}", c.usd());

        let mut total = Cost::default();
        total.merge(&c);
        total.merge(&c);
        assert_eq!(total.requests(), 4);
        assert_eq!(total.billed_mb_ms(), 2 * c.billed_mb_ms());
    }
}
