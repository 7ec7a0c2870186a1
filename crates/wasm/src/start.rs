//! Starting a runtime: building it ([`Runtime`]'s engine, pool, suite and
//! ticker), then, unless the configuration says, measuring how fast
//! `spin` runs in a sandbox on it.

use crate::sandbox::{Sandbox, Step};
use crate::{Config, Result, Runtime};

/// `spin` steps one calibration run takes: a few ms of CPU, long enough
/// that the clock's resolution and the sandbox's fixed cost are noise.
const CALIBRATION_STEPS: i64 = 2_000_000;
/// Calibration runs; the fastest counts, as the least disturbed.
const CALIBRATION_RUNS: usize = 3;

impl Runtime {
    /// Builds the engine and its pool, compiles the built-in suite, starts
    /// the epoch ticker and, unless the configuration gives it, measures
    /// `spin`'s steps per ms on the calling thread.
    ///
    /// # Errors
    ///
    /// [`Fault::Config`](crate::Fault::Config) for a knob out of range or an engine wasmtime
    /// refuses (for example when the address space cannot hold the pool).
    pub fn new(config: &Config) -> Result<Self> {
        let mut runtime = Runtime::build(config)?;
        if runtime.limits.spin_steps_per_ms.is_none() {
            runtime.spin_steps_per_ms = runtime.calibrate_spin()?;
        }
        Ok(runtime)
    }

    /// Measures `spin`'s steps per ms of this thread's CPU time.
    fn calibrate_spin(&self) -> Result<u64> {
        let preempt = self.preempt();
        let mut best = 0;
        for _ in 0..CALIBRATION_RUNS {
            let mut sandbox = Sandbox::start(self, &preempt, "spin", CALIBRATION_STEPS)?;
            let output = loop {
                if let Step::Done(done) = sandbox.resume() {
                    break done?;
                }
            };
            let per_ms = CALIBRATION_STEPS as u64 * 1_000_000 / output.stats.cpu.max(1);
            best = best.max(per_ms);
        }
        Ok(best.max(1))
    }
}
