//! The runtime's integration tests: one binary, a module per area. No test
//! depends on timing to pass: preemption is requested before the guest's
//! next epoch check, so it always lands; CPU-limit tests only need the
//! ticker to tick eventually.

mod built;
mod c;
mod command;
mod faults;
mod go;
mod http;
mod image;
mod pool;
mod preempt;
mod suite;

use faasched_wasm::{Config, Output, Preempt, Result, Runtime, Sandbox, Step};

/// A runtime for tests: a small pool, and spin's speed fixed so that no
/// test pays for (or depends on) the calibration.
fn runtime(configure: impl FnOnce(&mut Config)) -> Result<Runtime> {
    let mut config = Config::new();
    config.max_sandboxes(8).spin_steps_per_ms(1000);
    configure(&mut config);
    Runtime::new(&config)
}

/// Resumes `sandbox` until it ends, whatever preempts it.
fn finish(sandbox: &mut Sandbox) -> Result<Output> {
    loop {
        if let Step::Done(done) = sandbox.resume() {
            return done;
        }
    }
}

/// Starts `function(arg)` and runs it to its end.
fn run(runtime: &Runtime, preempt: &Preempt, function: &str, arg: i64) -> Result<Output> {
    finish(&mut Sandbox::start(runtime, preempt, function, arg)?)
}

/// fib(n) mod 2^64, the reference for `fib`.
fn fib(n: i64) -> i64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a.wrapping_add(b));
    }
    a as i64
}

/// The reference for `spin`.
fn spin(steps: i64) -> i64 {
    let mut x = 0u64;
    for _ in 0..steps {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    x as i64
}
