//! The built-in functions against Rust references, call strings, and user
//! modules.

use faasched_wasm::{
    BUILTINS, Call, Config, Fault, Kind, Result, Runtime, Sandbox, Step, resize_arg,
};

use crate::{fib, run, runtime, spin};

const FNV_OFFSET: u64 = 0xcbf29ce484222325;
const FNV_PRIME: u64 = 0x100000001b3;

fn hash(n: i64) -> i64 {
    (0..n as u32)
        .map(|i| i.wrapping_mul(131).wrapping_add(7) as u8)
        .fold(FNV_OFFSET, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
        }) as i64
}

fn matmul(n: usize) -> i64 {
    let a: Vec<f64> = (0..n * n).map(|i| (i % 13) as f64 * 0.5).collect();
    let b: Vec<f64> = (0..n * n)
        .map(|idx| ((idx / n + 2 * (idx % n)) % 11) as f64 - 5.0)
        .collect();
    let mut h = 0u64;
    for i in 0..n {
        for j in 0..n {
            let mut sum = 0.0;
            for k in 0..n {
                sum += a[i * n + k] * b[k * n + j];
            }
            h = h.wrapping_mul(31).wrapping_add(sum.to_bits());
        }
    }
    h as i64
}

/// The fixed-point source coordinate of `resize.wat`.
fn coord(d: u64, n: u64, m: u64) -> u64 {
    let s = ((2 * d + 1) * n * 256 / (2 * m)).saturating_sub(128);
    if s >> 8 >= n - 1 { (n - 1) << 8 } else { s }
}

fn resize(w: u32, h: u32) -> i64 {
    let (w, h) = (w as usize, h as usize);
    let src: Vec<u8> = (0..h)
        .flat_map(|y| {
            (0..w).map(move |x| {
                let (x, y) = (x as u32, y as u32);
                x.wrapping_mul(x)
                    .wrapping_add(3 * y)
                    .wrapping_add(x.wrapping_mul(y)) as u8
            })
        })
        .collect();
    let p = |x: usize, y: usize| u32::from(src[y * w + x]);
    let (dw, dh) = (w / 2, h / 2);
    let mut hash = FNV_OFFSET;
    for dy in 0..dh {
        let sy = coord(dy as u64, h as u64, dh as u64) as usize;
        let (y0, fy) = (sy >> 8, (sy & 255) as u32);
        let y1 = (y0 + 1).min(h - 1);
        for dx in 0..dw {
            let sx = coord(dx as u64, w as u64, dw as u64) as usize;
            let (x0, fx) = (sx >> 8, (sx & 255) as u32);
            let x1 = (x0 + 1).min(w - 1);
            let top = p(x0, y0) * (256 - fx) + p(x1, y0) * fx;
            let bottom = p(x0, y1) * (256 - fx) + p(x1, y1) * fx;
            let pixel = (top * (256 - fy) + bottom * fy + 32768) >> 16;
            hash = (hash ^ u64::from(pixel)).wrapping_mul(FNV_PRIME);
        }
    }
    hash as i64
}

/// Runs `function` on each argument and compares with `reference`.
fn check(function: &str, args: &[i64], reference: impl Fn(i64) -> i64) -> Result<()> {
    let runtime = runtime(|_| ())?;
    let preempt = runtime.preempt();
    for &arg in args {
        let output = run(&runtime, &preempt, function, arg)?;
        assert_eq!(output.value, reference(arg), "{function}({arg})");
    }
    Ok(())
}

#[test]
fn noop_returns_zero() -> Result<()> {
    check("noop", &[0, 1, -7, i64::MAX], |_| 0)
}

#[test]
fn fib_matches_reference() -> Result<()> {
    check("fib", &[0, 1, 2, 3, 10, 50, 92, 93, 94, 200, 10_000], fib)
}

#[test]
fn spin_matches_reference() -> Result<()> {
    check("spin", &[0, 1, 2, 1000, 123_457], spin)
}

#[test]
fn hash_matches_reference() -> Result<()> {
    check(
        "hash",
        &[0, 1, 255, 256, 65_535, 65_536, 65_537, 300_001],
        hash,
    )
}

#[test]
fn matmul_matches_reference() -> Result<()> {
    check("matmul", &[1, 2, 3, 17, 64], |n| matmul(n as usize))
}

#[test]
fn resize_matches_reference() -> Result<()> {
    let sizes = [(2, 2), (3, 5), (16, 9), (101, 57), (640, 480), (2, 1001)];
    let runtime = runtime(|_| ())?;
    let preempt = runtime.preempt();
    for (w, h) in sizes {
        let output = run(&runtime, &preempt, "resize", resize_arg(w, h))?;
        assert_eq!(output.value, resize(w, h), "resize({w}, {h})");
    }
    Ok(())
}

#[test]
fn builtins_are_registered() -> Result<()> {
    let runtime = runtime(|_| ())?;
    let mut names: Vec<_> = runtime.functions().collect();
    let mut builtins = BUILTINS.to_vec();
    names.sort_unstable();
    builtins.sort_unstable();
    assert_eq!(names, builtins);
    Ok(())
}

#[test]
fn calibration_measures_spin() -> Result<()> {
    let runtime = Runtime::new(Config::new().max_sandboxes(2))?;
    assert!(runtime.spin_steps_per_ms() > 0);
    Ok(())
}

#[test]
fn call_strings_parse() -> Result<()> {
    let runtime = runtime(|c| {
        c.spin_steps_per_ms(2500);
    })?;
    let call = |function: &str, arg| Call {
        function: function.into(),
        arg,
        kind: Kind::Run,
    };
    assert_eq!(runtime.call("noop")?, call("noop", 0));
    assert_eq!(runtime.call("fib?n=30")?, call("fib", 30));
    assert_eq!(runtime.call("spin?us=100")?, call("spin", 250));
    assert_eq!(runtime.call("hash?n=4096")?, call("hash", 4096));
    assert_eq!(runtime.call("matmul?n=64")?, call("matmul", 64));
    assert_eq!(
        runtime.call("resize?h=480&w=640")?,
        call("resize", resize_arg(640, 480))
    );
    Ok(())
}

#[test]
fn bad_call_strings_are_refused() -> Result<()> {
    let runtime = runtime(|c| {
        c.spin_steps_per_ms(2500);
    })?;
    for text in [
        "fib",
        "fib?",
        "fib?n",
        "fib?m=3",
        "fib?n=x",
        "fib?n=1&n=2",
        "fib?n=-1",
        "noop?n=1",
        "spin?us=-5",
        "spin?us=9223372036854775807",
        "hash?n=2147483648",
        "matmul?n=0",
        "matmul?n=8193",
        "resize?w=640",
        "resize?w=1&h=480",
        "resize?w=65536&h=2",
        "resize?w=65535&h=65535",
    ] {
        match runtime.call(text) {
            Err(Fault::BadArgument { .. }) => {}
            other => panic!("{text}: {other:?}"),
        }
    }
    assert_eq!(
        runtime.call("nope?n=1"),
        Err(Fault::UnknownFunction("nope".into()))
    );
    Ok(())
}

#[test]
fn bad_arguments_are_refused_at_start() -> Result<()> {
    let runtime = runtime(|_| ())?;
    let preempt = runtime.preempt();
    for (function, arg) in [
        ("fib", -1),
        ("hash", 1 << 31),
        ("matmul", 0),
        ("resize", resize_arg(1, 1)),
        ("resize", -1),
    ] {
        match faasched_wasm::Sandbox::start(&runtime, &preempt, function, arg) {
            Err(Fault::BadArgument { .. }) => {}
            other => panic!("{function}({arg}): {other:?}"),
        }
    }
    Ok(())
}

/// `(module (func (export "run") (param i64) (result i64) local.get 0 i64.const 1 i64.add))`
/// in the binary format.
const ADD_ONE_WASM: &[u8] = &[
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
    0x01, 0x06, 0x01, 0x60, 0x01, 0x7e, 0x01, 0x7e, // type: (i64) -> i64
    0x03, 0x02, 0x01, 0x00, // function 0 has type 0
    0x07, 0x07, 0x01, 0x03, b'r', b'u', b'n', 0x00, 0x00, // export "run"
    0x0a, 0x09, 0x01, 0x07, 0x00, 0x20, 0x00, 0x42, 0x01, 0x7c, 0x0b, // code
];

#[test]
fn user_modules_register_as_wasm_or_wat() -> Result<()> {
    let mut runtime = runtime(|_| ())?;
    runtime.register("add-one", ADD_ONE_WASM)?;
    runtime.register(
        "double",
        br#"(module (func (export "run") (param i64) (result i64)
              (i64.mul (local.get 0) (i64.const 2))))"#,
    )?;
    let preempt = runtime.preempt();
    assert_eq!(run(&runtime, &preempt, "add-one", 41)?.value, 42);
    assert_eq!(run(&runtime, &preempt, "double", 21)?.value, 42);
    assert_eq!(
        runtime.call("double?arg=-4")?,
        Call {
            function: "double".into(),
            arg: -4,
            kind: Kind::Run,
        }
    );
    assert_eq!(runtime.call("double")?.arg, 0);
    Ok(())
}

/// At most `max_modules` user modules at once (the built-ins aside); a
/// removed one frees its place, and a running sandbox of it runs on.
/// A module whose compile takes longer than the limit is refused, saying
/// how long it took; the built-ins, compiled at start, are not held to it.
#[test]
fn a_module_slower_to_compile_than_the_limit_is_refused() -> Result<()> {
    let mut runtime = runtime(|c| {
        c.max_compile(1);
    })?;
    match runtime.register("a", ADD_ONE_WASM) {
        Err(e @ Fault::SlowCompile { limit_ms: 0, .. }) => {
            assert!(
                e.to_string().contains("to compile, more than the 0 ms"),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(runtime.call("a"), Err(Fault::UnknownFunction("a".into())));
    assert!(runtime.functions().any(|f| f == "fib"));
    Ok(())
}

#[test]
fn user_modules_are_bounded_and_removed() -> Result<()> {
    let mut runtime = runtime(|c| {
        c.max_modules(2);
    })?;
    runtime.register("a", ADD_ONE_WASM)?;
    runtime.register("b", ADD_ONE_WASM)?;
    match runtime.register("c", ADD_ONE_WASM) {
        Err(e @ Fault::Full { limit: 2, .. }) => {
            assert!(e.to_string().contains("holds 2 registered modules"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    let preempt = runtime.preempt();
    let call = runtime.call("a?arg=1")?;
    let mut started = Sandbox::start(&runtime, &preempt, &call.function, call.arg)?;
    runtime.remove("a")?;
    assert_eq!(runtime.call("a"), Err(Fault::UnknownFunction("a".into())));
    match started.resume() {
        Step::Done(Ok(out)) => assert_eq!(out.value, 2),
        other => panic!("{other:?}"),
    }
    runtime.register("c", ADD_ONE_WASM)?;
    assert_eq!(run(&runtime, &preempt, "c", 1)?.value, 2);
    assert_eq!(runtime.remove("a"), Err(Fault::UnknownFunction("a".into())));
    assert_eq!(runtime.remove("fib"), Err(Fault::Builtin("fib".into())));
    assert!(runtime.functions().any(|f| f == "fib"));
    Ok(())
}

#[test]
fn malformed_modules_are_refused() -> Result<()> {
    let mut runtime = runtime(|_| ())?;
    let cases: [(&str, &[u8]); 6] = [
        ("garbage", b"\x00asm\x01\x00\x00\x00\xff\xff"),
        ("text", b"(module (func (export \"run\")"),
        ("empty", b""),
        (
            "imports",
            br#"(module (import "env" "f" (func)) (func (export "run") (param i64) (result i64) local.get 0))"#,
        ),
        (
            "wrong-type",
            br#"(module (func (export "run") (param i32) (result i32) local.get 0))"#,
        ),
        ("no-run", br#"(module (func (export "main")))"#),
    ];
    for (name, bytes) in cases {
        match runtime.register(name, bytes) {
            Err(Fault::Malformed { name: refused, .. }) => assert_eq!(refused, name),
            other => panic!("{name}: {other:?}"),
        }
        assert!(runtime.functions().all(|f| f != name), "{name} registered");
    }
    Ok(())
}

#[test]
fn bad_names_are_refused() -> Result<()> {
    let mut runtime = runtime(|_| ())?;
    let long = "x".repeat(65);
    for name in ["fib", "", "a b", "a/b", "a?b", long.as_str()] {
        match runtime.register(name, ADD_ONE_WASM) {
            Err(Fault::BadName { .. }) => {}
            other => panic!("{name:?}: {other:?}"),
        }
    }
    runtime.register("mine", ADD_ONE_WASM)?;
    assert!(matches!(
        runtime.register("mine", ADD_ONE_WASM),
        Err(Fault::BadName { .. })
    ));
    Ok(())
}

#[test]
fn bad_configurations_are_refused() {
    let refused = |configure: fn(&mut Config)| {
        let mut config = Config::new();
        configure(&mut config);
        matches!(Runtime::new(&config), Err(Fault::Config(_)))
    };
    assert!(refused(|c| {
        c.max_sandboxes(0);
    }));
    assert!(refused(|c| {
        c.memory_limit(1000);
    }));
    assert!(refused(|c| {
        c.memory_limit(0);
    }));
    assert!(refused(|c| {
        c.memory_limit((1 << 32) + (64 << 10));
    }));
    assert!(refused(|c| {
        c.cpu_limit(0);
    }));
    assert!(refused(|c| {
        c.tick(999);
    }));
    assert!(refused(|c| {
        c.spin_steps_per_ms(0);
    }));
}
