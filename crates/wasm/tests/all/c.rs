//! The C functions of `functions/c`, built by `scripts/build-functions`
//! into WASI commands, run in sandboxes: their answers against Rust
//! references, and a C guest preempted mid-loop that still answers right.
//!
//! The modules are read from `$FAASCHED_FUNCTIONS` or the repository's
//! `target/functions`. Without them each test says it skipped, unless
//! `FAASCHED_REQUIRE_FUNCTIONS` is set (CI sets it), when it fails.

use std::path::PathBuf;

use bytes::Bytes;
use faasched_wasm::{Input, Output, Result, Runtime, Sandbox, Step};

use crate::{finish, runtime};

/// The built module `name`, or `None` (having said so) if it is not built.
fn module(name: &str) -> Option<Vec<u8>> {
    let dir = std::env::var_os("FAASCHED_FUNCTIONS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/functions"),
        PathBuf::from,
    );
    let path = dir.join(format!("{name}.wasm"));
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if std::env::var_os("FAASCHED_REQUIRE_FUNCTIONS").is_some() => panic!(
            "{}: {e}; build the functions with scripts/build-functions (it needs clang, lld, \
             wasi-libc and libclang-rt-dev-wasm32); FAASCHED_REQUIRE_FUNCTIONS is set",
            path.display()
        ),
        Err(e) => {
            eprintln!(
                "skipped: {}: {e} (build it with scripts/build-functions)",
                path.display()
            );
            None
        }
    }
}

/// A runtime with the built modules `names` registered, or `None`.
fn with(names: &[&str]) -> Result<Option<Runtime>> {
    let mut runtime = runtime(|_| ())?;
    for name in names {
        let Some(bytes) = module(name) else {
            return Ok(None);
        };
        runtime.register(name, &bytes)?;
    }
    Ok(Some(runtime))
}

fn input(query: &str, body: &[u8]) -> Input {
    Input::Command {
        stdin: Bytes::copy_from_slice(body),
        env: vec![("QUERY_STRING".into(), query.into())],
    }
}

fn call(runtime: &Runtime, function: &str, query: &str, body: &[u8]) -> Result<Output> {
    let preempt = runtime.preempt();
    finish(&mut Sandbox::start(
        runtime,
        &preempt,
        function,
        input(query, body),
    )?)
}

/// `float`'s answer: the sum after its header block.
fn float_sum(out: &Output) -> f64 {
    let text = std::str::from_utf8(&out.stdout).unwrap();
    let (head, sum) = text.split_once("\n\n").unwrap();
    assert_eq!(head, "Content-Type: text/plain");
    sum.trim().parse().unwrap()
}

/// FunctionBench's float_operation in Rust.
fn float_reference(n: u32) -> f64 {
    (0..n)
        .map(f64::from)
        .map(|x| x.sin() + x.cos() + x.sqrt())
        .sum()
}

#[test]
fn hello_greets_by_query_and_counts_its_body() -> Result<()> {
    let Some(runtime) = with(&["hello"])? else {
        return Ok(());
    };
    let out = call(&runtime, "hello", "name=faas&x=1", &[7; 5000])?;
    assert_eq!(out.value, 0);
    assert_eq!(
        &out.stdout[..],
        b"Content-Type: text/plain\r\n\r\nhello, faas (5000 bytes)\n"
    );
    let plain = call(&runtime, "hello", "", b"")?;
    assert!(plain.stdout.ends_with(b"hello, world (0 bytes)\n"));
    Ok(())
}

#[test]
fn float_matches_the_reference_and_refuses_a_bad_n() -> Result<()> {
    let Some(runtime) = with(&["float"])? else {
        return Ok(());
    };
    for n in [0, 1, 1000, 100_000] {
        let (got, want) = (
            float_sum(&call(&runtime, "float", &format!("n={n}"), b"")?),
            float_reference(n),
        );
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1.0),
            "n={n}: {got} against {want}"
        );
    }
    for bad in ["n=x", "n=-1", "n=2000000000", "n=5z"] {
        let out = call(&runtime, "float", bad, b"")?;
        assert!(out.stdout.starts_with(b"Status: 400"), "{bad}");
    }
    Ok(())
}

/// A long C request yields to a preemption, a short one runs to its end
/// on the same thread meanwhile, and the long one then finishes with the
/// same answer as a run that was never stopped.
#[test]
fn a_c_guest_is_preempted_and_finishes_with_its_right_answer() -> Result<()> {
    let Some(runtime) = with(&["float", "hello"])? else {
        return Ok(());
    };
    let preempt = runtime.preempt();
    let query = "n=2000000";
    let mut long = Sandbox::start(&runtime, &preempt, "float", input(query, b""))?;
    preempt.request();
    assert_eq!(long.resume(), Step::Preempted);
    let mut short = Sandbox::start(&runtime, &preempt, "hello", input("", b""))?;
    assert!(
        finish(&mut short)?
            .stdout
            .ends_with(b"hello, world (0 bytes)\n")
    );
    let stopped = finish(&mut long)?;
    assert!(stopped.stats.preemptions >= 1);
    let unstopped = call(&runtime, "float", query, b"")?;
    assert_eq!(stopped.stdout, unstopped.stdout);
    Ok(())
}
