//! Tick boundaries without a division per question.
//!
//! Every decision of the core model asks which tick comes at or after some
//! instant (the tick that ends a turn, whether an event fell on a tick), and
//! the instant is always close to the current time. A 64-bit division costs
//! tens of cycles, more than the rest of a decision's arithmetic, so the last
//! boundary found is remembered and the next answer is found from it with a
//! comparison; only a jump of more than a tick divides.

use faasched_model::{Nanos, Time};

/// The tick boundaries of one timer frequency.
#[derive(Clone, Copy, Debug)]
pub struct Ticks {
    /// The tick period, `1 s / HZ`.
    pub period: Nanos,
    /// The boundary last returned (a multiple of `period`).
    last: Time,
}

impl Ticks {
    /// Boundaries every `period` (positive) from time 0.
    pub fn new(period: Nanos) -> Ticks {
        Ticks { period, last: 0 }
    }

    /// The first boundary at or after `x`: `x.div_ceil(period) * period`.
    #[inline]
    pub fn ceil(&mut self, x: Time) -> Time {
        let (p, b) = (self.period, self.last);
        let r = if x <= b && b - x < p {
            b
        } else if x > b && x - b <= p {
            b + p
        } else {
            x.div_ceil(p) * p
        };
        self.last = r;
        r
    }

    /// The first boundary after `now` that is at or after `at`.
    #[inline]
    pub fn after(&mut self, at: Time, now: Time) -> Time {
        self.ceil(at.max(now + 1))
    }

    /// Whether `now` is a boundary.
    #[inline]
    pub fn is_tick(&mut self, now: Time) -> bool {
        self.ceil(now) == now
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against the division, over queries that mostly stay near each other
        /// and sometimes jump (either way).
        #[test]
        fn matches_division(
            period in 1u64..5_000,
            steps in prop::collection::vec((0u8..8, 0u64..20_000), 1..300),
        ) {
            let mut ticks = Ticks::new(period);
            let mut x: u64 = 0;
            for (kind, d) in steps {
                x = match kind {
                    0 => d * 1_000,
                    1 => x.saturating_sub(d % (2 * period)),
                    _ => x + d % (3 * period),
                };
                prop_assert_eq!(ticks.ceil(x), x.div_ceil(period) * period);
                prop_assert_eq!(ticks.is_tick(x), x.is_multiple_of(period));
                let at = x + d % (2 * period);
                prop_assert_eq!(ticks.after(at, x), at.max(x + 1).div_ceil(period) * period);
            }
        }
    }
}
