//! Images: a function compiled again on its own, as a container holds it
//! after a cold start, runs as the runtime's own copy does.

use faasched_wasm::{Fault, Result, Sandbox};

use crate::{fib, finish, runtime, spin};

#[test]
fn a_sandbox_from_an_image_runs_as_one_from_the_runtime() -> Result<()> {
    let mut runtime = runtime(|_| {})?;
    let preempt = runtime.preempt();
    let fib_image = runtime.image("fib")?;
    assert_eq!(fib_image.name(), "fib");
    for n in [0, 1, 25, 90] {
        let mut sandbox = Sandbox::start_image(&runtime, &preempt, &fib_image, n)?;
        assert_eq!(finish(&mut sandbox)?.value, fib(n));
    }
    // An image keeps its builtin's argument checks.
    assert!(matches!(
        Sandbox::start_image(&runtime, &preempt, &fib_image, -1),
        Err(Fault::BadArgument { .. })
    ));
    // A registered module compiles into an image too, and a preempted
    // sandbox of an image resumes with its state.
    runtime.register("double", br#"(module (func (export "run") (param i64) (result i64) local.get 0 i64.const 2 i64.mul))"#)?;
    let double = runtime.image("double")?;
    let mut sandbox = Sandbox::start_image(&runtime, &preempt, &double, 21)?;
    assert_eq!(finish(&mut sandbox)?.value, 42);
    let spin_image = runtime.image("spin")?;
    let mut sandbox = Sandbox::start_image(&runtime, &preempt, &spin_image, 3_000_000)?;
    preempt.request();
    assert_eq!(sandbox.resume(), faasched_wasm::Step::Preempted);
    assert_eq!(finish(&mut sandbox)?.value, spin(3_000_000));
    assert!(matches!(
        runtime.image("nothing"),
        Err(Fault::UnknownFunction(name)) if name == "nothing"
    ));
    Ok(())
}
