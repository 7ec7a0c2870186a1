//! Faults: each ends its request with the right variant, and the next
//! request on the same thread runs normally.

use faasched_wasm::{Fault, Result, Sandbox, Step};

use crate::{fib, finish, run, runtime};

/// After a fault, the same thread still runs requests.
fn still_works(runtime: &faasched_wasm::Runtime) -> Result<()> {
    let preempt = runtime.preempt();
    assert_eq!(run(runtime, &preempt, "fib", 90)?.value, fib(90));
    Ok(())
}

#[test]
fn unreachable_is_a_trap_and_the_next_request_works() -> Result<()> {
    let mut runtime = runtime(|_| ())?;
    runtime.register(
        "crash",
        br#"(module (func (export "run") (param i64) (result i64) unreachable))"#,
    )?;
    let preempt = runtime.preempt();
    for _ in 0..3 {
        match run(&runtime, &preempt, "crash", 0) {
            Err(Fault::Trap { function, message }) => {
                assert_eq!(function, "crash");
                assert!(message.contains("unreachable"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        still_works(&runtime)?;
    }
    Ok(())
}

#[test]
fn guest_errors_are_traps() -> Result<()> {
    let mut runtime = runtime(|_| ())?;
    runtime.register(
        "divide",
        br#"(module (func (export "run") (param i64) (result i64)
              (i64.div_s (i64.const 1) (local.get 0))))"#,
    )?;
    runtime.register(
        "recurse",
        br#"(module (func $run (export "run") (param i64) (result i64)
              (i64.add (call $run (local.get 0)) (i64.const 1))))"#,
    )?;
    runtime.register(
        "out-of-bounds",
        br#"(module (memory 1) (func (export "run") (param i64) (result i64)
              (i64.load (i32.const 65536))))"#,
    )?;
    let preempt = runtime.preempt();
    assert_eq!(run(&runtime, &preempt, "divide", 2)?.value, 0);
    for (function, trap) in [
        ("divide", "integer divide by zero"),
        ("recurse", "call stack exhausted"),
        ("out-of-bounds", "out of bounds memory access"),
    ] {
        match run(&runtime, &preempt, function, 0) {
            Err(Fault::Trap { message, .. }) => assert!(message.contains(trap), "{message}"),
            other => panic!("{function}: {other:?}"),
        }
        still_works(&runtime)?;
    }
    Ok(())
}

#[test]
fn an_endless_loop_is_stopped_by_the_cpu_limit() -> Result<()> {
    let limit = 20_000_000;
    let mut runtime = runtime(|c| {
        c.cpu_limit(limit);
    })?;
    runtime.register(
        "forever",
        br#"(module (func (export "run") (param i64) (result i64)
              (loop $again (br $again)) (i64.const 0)))"#,
    )?;
    let preempt = runtime.preempt();
    let mut sandbox = Sandbox::start(&runtime, &preempt, "forever", 0)?;
    match finish(&mut sandbox) {
        Err(Fault::Timeout { function, limit: l }) => {
            assert_eq!((function.as_str(), l), ("forever", limit));
        }
        other => panic!("{other:?}"),
    }
    assert!(sandbox.stats().cpu >= limit);
    still_works(&runtime)
}

#[test]
fn the_cpu_limit_counts_across_preemptions() -> Result<()> {
    let limit = 20_000_000;
    let mut runtime = runtime(|c| {
        c.cpu_limit(limit);
    })?;
    runtime.register(
        "forever",
        br#"(module (func (export "run") (param i64) (result i64)
              (loop $again (br $again)) (i64.const 0)))"#,
    )?;
    let preempt = runtime.preempt();
    let mut sandbox = Sandbox::start(&runtime, &preempt, "forever", 0)?;
    // Preempt it at every step: each run is short, yet their sum hits the
    // limit.
    let fault = loop {
        preempt.request();
        match sandbox.resume() {
            Step::Preempted => {}
            Step::Done(done) => break done,
        }
    };
    assert!(matches!(fault, Err(Fault::Timeout { .. })), "{fault:?}");
    assert!(sandbox.stats().preemptions > 0);
    still_works(&runtime)
}

#[test]
fn growing_memory_without_bound_hits_the_limit() -> Result<()> {
    let limit = 1 << 20;
    let mut runtime = runtime(|c| {
        c.memory_limit(limit);
    })?;
    runtime.register(
        "hog",
        br#"(module (memory 1) (func (export "run") (param i64) (result i64)
              (loop $grow (br_if $grow (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))
              (i64.const 0)))"#,
    )?;
    let preempt = runtime.preempt();
    for _ in 0..3 {
        match run(&runtime, &preempt, "hog", 0) {
            Err(Fault::MemoryLimit {
                function,
                asked,
                limit: l,
            }) => {
                assert_eq!(
                    (function.as_str(), asked, l),
                    ("hog", limit + (64 << 10), limit)
                );
            }
            other => panic!("{other:?}"),
        }
        still_works(&runtime)?;
    }
    // A built-in asked for more data than fits.
    match run(&runtime, &preempt, "hash", 2 << 20) {
        Err(Fault::MemoryLimit { function, .. }) => assert_eq!(function, "hash"),
        other => panic!("{other:?}"),
    }
    assert!(run(&runtime, &preempt, "hash", 512 << 10).is_ok());
    still_works(&runtime)
}

#[test]
fn an_initial_memory_over_the_limit_is_refused() -> Result<()> {
    let mut runtime = runtime(|c| {
        c.memory_limit(1 << 20);
    })?;
    let big =
        br#"(module (memory 17) (func (export "run") (param i64) (result i64) (i64.const 0)))"#;
    match runtime.register("big", big) {
        Err(Fault::Malformed { reason, .. }) => assert!(reason.contains("memory"), "{reason}"),
        other => panic!("{other:?}"),
    }
    still_works(&runtime)
}

#[test]
fn a_finished_sandbox_says_so() -> Result<()> {
    let runtime = runtime(|_| ())?;
    let preempt = runtime.preempt();
    let mut sandbox = Sandbox::start(&runtime, &preempt, "fib", 10)?;
    assert!(!sandbox.is_finished());
    assert_eq!(finish(&mut sandbox)?.value, 55);
    assert!(sandbox.is_finished());
    assert_eq!(
        sandbox.resume(),
        Step::Done(Err(Fault::Finished("fib".into())))
    );
    Ok(())
}

#[test]
fn unknown_functions_are_refused() -> Result<()> {
    let runtime = runtime(|_| ())?;
    let preempt = runtime.preempt();
    assert_eq!(
        Sandbox::start(&runtime, &preempt, "nope", 0).map(|_| ()),
        Err(Fault::UnknownFunction("nope".into()))
    );
    Ok(())
}

#[test]
fn an_aborted_request_stops_at_its_next_check_and_frees_its_slot() -> Result<()> {
    let mut runtime = runtime(|c| {
        c.max_sandboxes(1);
    })?;
    runtime.register(
        "forever",
        br#"(module (func (export "run") (param i64) (result i64)
              (loop $again (br $again)) (i64.const 0)))"#,
    )?;
    let preempt = runtime.preempt();
    let abort = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut sandbox = Sandbox::start(&runtime, &preempt, "forever", 0)?;
    sandbox.abort_on(abort.clone());
    // Nobody wants it any more; the ticker's next tick makes it look.
    abort.store(true, std::sync::atomic::Ordering::Release);
    let fault = loop {
        match sandbox.resume() {
            Step::Preempted => {}
            Step::Done(done) => break done,
        }
    };
    assert_eq!(fault, Err(Fault::Aborted("forever".into())));
    // Its one slot is free again.
    still_works(&runtime)
}
