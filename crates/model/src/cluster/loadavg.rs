//! The Linux load average, in the kernel's own fixed-point arithmetic
//! (include/linux/sched/loadavg.h, kernel/sched/loadavg.c), so that a
//! router reads the number a live invoker would publish.

use crate::{Nanos, SEC};

/// Bits of fraction of the kernel's fixed point (`FSHIFT`).
pub const FSHIFT: u32 = 11;

/// 1.0 in the kernel's fixed point (`FIXED_1`).
pub const FIXED_1: u64 = 1 << FSHIFT;

/// e^(−5 s / 1 min) in fixed point (`EXP_1`): the 1-minute average's decay
/// per sample.
pub const EXP_1: u64 = 1884;

/// How often the kernel samples the active tasks (`LOAD_FREQ`). The
/// kernel's is 5 s plus one tick (5.004 s at HZ = 250); the tick is left
/// out so that samples line up with the 5 s publications, which changes
/// the average's time constant by 0.08%.
pub const LOAD_FREQ: Nanos = 5 * SEC;

/// One step of the kernel's exponential average (`calc_load`): `load` and
/// `active` in fixed point, `exp` the decay. Rounds up while the average
/// rises, so that it reaches a constant count of tasks instead of stopping
/// one unit short.
pub fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut new = load * exp + active * (FIXED_1 - exp);
    if active >= load {
        new += FIXED_1 - 1;
    }
    new / FIXED_1
}

/// A server's 1-minute load average (`avenrun[0]`), fed a sample of its
/// active tasks every [`LOAD_FREQ`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadAvg {
    avenrun: u64,
}

impl LoadAvg {
    /// The average after a sample of `active` tasks (running, runnable or
    /// in uninterruptible sleep: the kernel's `nr_running +
    /// nr_uninterruptible`).
    pub fn sample(&mut self, active: u64) {
        self.avenrun = calc_load(self.avenrun, EXP_1, active.saturating_mul(FIXED_1));
    }

    /// The average in fixed point, as the kernel keeps it.
    pub fn fixed(&self) -> u64 {
        self.avenrun
    }

    /// The average as `/proc/loadavg` and `uptime` print it, with two
    /// decimals (`LOAD_INT`, `LOAD_FRAC` after adding `FIXED_1 / 200`):
    /// what an invoker reads and publishes.
    pub fn shown(&self) -> f64 {
        let x = self.avenrun + FIXED_1 / 200;
        let int = x >> FSHIFT;
        let frac = ((x & (FIXED_1 - 1)) * 100) >> FSHIFT;
        // Hundredths in one division: the double nearest the printed
        // number.
        (int * 100 + frac) as f64 / 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_count_is_reached_not_undershot() {
        let mut l = LoadAvg::default();
        for _ in 0..1_000 {
            l.sample(3);
        }
        assert_eq!(l.fixed(), 3 * FIXED_1);
        assert_eq!(l.shown(), 3.0);
        for _ in 0..1_000 {
            l.sample(0);
        }
        assert_eq!(l.shown(), 0.0);
    }
}
