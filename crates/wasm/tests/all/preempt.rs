//! Preemption: a request yields to the worker's flag, keeps its state
//! while others run on the same thread, and resumes to the right result.

use std::thread;

use faasched_wasm::{Preempt, Result, Runtime, Sandbox, Step};

use crate::{fib, finish, runtime, spin};

/// Steps of the long request: far more than one epoch check apart.
const LONG: i64 = 20_000_000;

#[test]
fn a_long_request_yields_to_a_short_one_and_resumes() -> Result<()> {
    let runtime = runtime(|_| ())?;
    let preempt = runtime.preempt();
    let mut long = Sandbox::start(&runtime, &preempt, "spin", LONG)?;
    // The dispatcher, on another thread.
    let dispatcher = preempt.clone();
    thread::spawn(move || dispatcher.request())
        .join()
        .expect("the dispatcher thread does not panic");
    assert_eq!(long.resume(), Step::Preempted);
    assert!(!preempt.is_requested(), "the guest took the flag");

    let mut short = Sandbox::start(&runtime, &preempt, "fib", 80)?;
    assert_eq!(finish(&mut short)?.value, fib(80));

    let output = finish(&mut long)?;
    assert_eq!(output.value, spin(LONG));
    assert_eq!(output.stats.preemptions, 1);
    Ok(())
}

#[test]
fn a_request_preempted_many_times_keeps_its_state() -> Result<()> {
    let runtime = runtime(|_| ())?;
    let preempt = runtime.preempt();
    let mut long = Sandbox::start(&runtime, &preempt, "spin", LONG)?;
    for _ in 0..5 {
        preempt.request();
        assert_eq!(long.resume(), Step::Preempted);
        // Something else on the same thread in between.
        let mut other = Sandbox::start(&runtime, &preempt, "hash", 1000)?;
        assert!(finish(&mut other).is_ok());
    }
    let output = finish(&mut long)?;
    assert_eq!(output.value, spin(LONG));
    assert!(output.stats.preemptions >= 5);
    Ok(())
}

#[test]
fn a_request_made_while_preempted_stops_the_guest_at_its_first_check() -> Result<()> {
    // No tick within the test: only the request's own epoch bump can stop
    // the guest, or it runs to its end.
    let runtime = runtime(|c| {
        c.tick(3_600_000_000_000);
    })?;
    let preempt = runtime.preempt();
    let mut long = Sandbox::start(&runtime, &preempt, "spin", LONG)?;
    preempt.request();
    assert_eq!(long.resume(), Step::Preempted);
    // While it waits preempted, the worker is asked again.
    preempt.request();
    assert_eq!(long.resume(), Step::Preempted);
    assert_eq!(finish(&mut long)?.value, spin(LONG));
    Ok(())
}

#[test]
fn sandboxes_interleave_on_one_thread() -> Result<()> {
    let runtime = runtime(|_| ())?;
    let preempt = runtime.preempt();
    let args = [LONG, LONG / 2, LONG / 3];
    let mut sandboxes = args
        .iter()
        .map(|&arg| Sandbox::start(&runtime, &preempt, "spin", arg))
        .collect::<Result<Vec<_>>>()?;
    for _ in 0..3 {
        for sandbox in &mut sandboxes {
            preempt.request();
            assert_eq!(sandbox.resume(), Step::Preempted);
        }
    }
    for (sandbox, arg) in sandboxes.iter_mut().zip(args) {
        assert_eq!(finish(sandbox)?.value, spin(arg));
    }
    Ok(())
}

#[test]
fn each_worker_has_its_own_flag() -> Result<()> {
    let runtime = runtime(|_| ())?;
    let (mine, other) = (runtime.preempt(), runtime.preempt());
    other.request();
    let mut sandbox = Sandbox::start(&runtime, &mine, "fib", 1_000_000)?;
    // The epoch advanced, but only the other worker's flag is set.
    assert!(matches!(sandbox.resume(), Step::Done(Ok(_))));
    assert!(other.take());
    assert!(!other.take());
    Ok(())
}

#[test]
fn a_sandbox_moved_to_another_worker_answers_that_workers_flag() -> Result<()> {
    let runtime = runtime(|_| ())?;
    let (first, second) = (runtime.preempt(), runtime.preempt());
    let mut long = Sandbox::start(&runtime, &first, "spin", LONG)?;
    first.request();
    assert_eq!(long.resume(), Step::Preempted);
    // Resumed by the second worker, on a thread of its own.
    long.rebind(&second);
    first.request();
    second.request();
    let mut long = thread::spawn(move || {
        assert_eq!(long.resume(), Step::Preempted);
        long
    })
    .join()
    .expect("the second worker does not panic");
    assert!(!second.is_requested(), "it took the second worker's flag");
    assert!(first.take(), "the first worker's flag is no longer its own");
    let output = finish(&mut long)?;
    assert_eq!(output.value, spin(LONG));
    assert_eq!(output.stats.preemptions, 2);
    Ok(())
}

#[test]
fn a_request_made_before_a_run_begins_takes_effect_at_once() -> Result<()> {
    // A tick far away: only the request itself can stop the guest.
    let runtime = runtime(|c| {
        c.tick(3_600_000_000_000);
    })?;
    let preempt = runtime.preempt();
    let mut long = Sandbox::start(&runtime, &preempt, "spin", LONG)?;
    preempt.request();
    assert_eq!(long.resume(), Step::Preempted);
    preempt.request();
    let mut fresh = Sandbox::start(&runtime, &preempt, "fib", 10)?;
    assert_eq!(fresh.resume(), Step::Preempted);
    assert_eq!(finish(&mut fresh)?.value, fib(10));
    assert_eq!(finish(&mut long)?.value, spin(LONG));
    Ok(())
}

#[test]
fn public_types_can_cross_threads() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Runtime>();
    sync::<Runtime>();
    send::<Preempt>();
    sync::<Preempt>();
    send::<Sandbox>();
    send::<faasched_wasm::Fault>();
    sync::<faasched_wasm::Fault>();
}
