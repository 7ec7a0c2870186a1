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

/// With a disk cache, a module compiled by one runtime loads compiled in
/// the next (same engine settings), at registration and for every image,
/// and runs the same.
#[test]
fn a_cached_module_loads_compiled_in_a_later_runtime() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Fault::Config(e.to_string()))?;
    let cache = dir.path().join("modules");
    let double = br#"(module (func (export "run") (param i64) (result i64) local.get 0 i64.const 2 i64.mul))"#;
    let first = runtime(|c| {
        c.cache(&cache);
    })?;
    let built_in = first.cache_stats().unwrap();
    // The suite is compiled at start, through the cache too.
    assert_eq!((built_in.hits, built_in.rejected), (0, 0));
    assert!(built_in.misses >= 1);
    let mut first = first;
    first.register("double", double)?;
    assert_eq!(first.cache_stats().unwrap().misses, built_in.misses + 1);
    drop(first);

    let mut second = runtime(|c| {
        c.cache(&cache);
    })?;
    second.register("double", double)?;
    let image = second.image("double")?;
    let stats = second.cache_stats().unwrap();
    assert_eq!(
        (stats.misses, stats.rejected, stats.write_errors),
        (0, 0, 0)
    );
    assert_eq!(stats.hits, built_in.misses + 2);
    let preempt = second.preempt();
    let mut sandbox = Sandbox::start_image(&second, &preempt, &image, 21)?;
    assert_eq!(finish(&mut sandbox)?.value, 42);

    assert!(runtime(|_| {})?.cache_stats().is_none());
    Ok(())
}
