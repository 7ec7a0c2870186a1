//! The pool: a bounded number of sandboxes at once, and every slot back
//! after a sandbox ends or is dropped mid-run.

use faasched_wasm::{Fault, Result, Sandbox, Step};

use crate::{finish, runtime, spin};

const SLOTS: u32 = 4;

#[test]
fn sandboxes_dropped_mid_run_give_their_slots_back() -> Result<()> {
    let runtime = runtime(|c| {
        c.max_sandboxes(SLOTS);
    })?;
    let preempt = runtime.preempt();
    for _ in 0..3 {
        // Fill the pool with requests stopped mid-run.
        let mut running = Vec::new();
        for _ in 0..SLOTS {
            let mut sandbox = Sandbox::start(&runtime, &preempt, "spin", 50_000_000)?;
            preempt.request();
            assert_eq!(sandbox.resume(), Step::Preempted);
            running.push(sandbox);
        }
        match Sandbox::start(&runtime, &preempt, "noop", 0) {
            Err(Fault::Capacity { function, slots }) => {
                assert_eq!((function.as_str(), slots), ("noop", SLOTS));
            }
            other => panic!("{other:?}"),
        }
        // Their clients went away.
        drop(running);
        // Sandboxes started and never resumed go back too.
        let never_run: Vec<_> = (0..SLOTS)
            .map(|_| Sandbox::start(&runtime, &preempt, "hash", 100))
            .collect::<Result<_>>()?;
        drop(never_run);
        // More requests than slots, one after another, all run.
        for i in 0..2 * i64::from(SLOTS) {
            let mut sandbox = Sandbox::start(&runtime, &preempt, "spin", 1000 + i)?;
            assert_eq!(finish(&mut sandbox)?.value, spin(1000 + i));
        }
    }
    Ok(())
}

#[test]
fn finished_sandboxes_give_their_slots_back_while_held() -> Result<()> {
    let runtime = runtime(|c| {
        c.max_sandboxes(SLOTS);
    })?;
    let preempt = runtime.preempt();
    // Finished sandboxes still held by the worker hold no slot.
    let mut done = Vec::new();
    for _ in 0..3 * SLOTS {
        let mut sandbox = Sandbox::start(&runtime, &preempt, "noop", 0)?;
        assert_eq!(finish(&mut sandbox)?.value, 0);
        done.push(sandbox);
    }
    Ok(())
}
