//! The C functions of `functions/c` run in sandboxes: their answers
//! against Rust references, and a C guest preempted mid-loop that still
//! answers right.

use faasched_wasm::{Output, Result, Sandbox, Step};

use crate::built::{Grey, call, grey_photo, input, response, shared, with};
use crate::finish;

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

/// cgi.h's generator: a 64-bit LCG, the top 53 bits of each draw.
fn draws(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / 9007199254740992.0
    }
}

/// `matrix`'s answer in Rust, in its order of operations (wasm has no
/// fused multiply-add, so the sums are bit for bit the same).
fn matrix_reference(n: usize, seed: u64) -> (f64, f64) {
    let mut draw = draws(seed);
    let a: Vec<f64> = (0..n * n).map(|_| draw()).collect();
    let b: Vec<f64> = (0..n * n).map(|_| draw()).collect();
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            for j in 0..n {
                c[i * n + j] += a[i * n + k] * b[k * n + j];
            }
        }
    }
    let sum = c.iter().sum();
    let trace = (0..n).map(|i| c[i * n + i]).sum();
    (sum, trace)
}

fn text(out: &Output) -> &str {
    std::str::from_utf8(response(out).1).unwrap()
}

#[test]
fn matrix_matches_the_reference_bit_for_bit() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    for (n, seed) in [(1, 1), (7, 3), (64, 1)] {
        let out = call(runtime, "matrix", &format!("n={n}&seed={seed}"), b"")?;
        let got: Vec<f64> = text(&out)
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        let (sum, trace) = matrix_reference(n, seed);
        assert_eq!(got, [sum, trace], "n={n}");
    }
    for bad in ["n=0", "n=1025", "seed=-1"] {
        assert!(
            call(runtime, "matrix", bad, b"")?
                .stdout
                .starts_with(b"Status: 400")
        );
    }
    Ok(())
}

#[test]
fn linpack_solves_for_the_ones_it_was_built_from() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    for n in [1, 10, 200] {
        let out = call(runtime, "linpack", &format!("n={n}&seed=5"), b"")?;
        let json: serde_json::Value = serde_json::from_str(text(&out)).unwrap();
        assert_eq!(json["n"], n);
        assert!(json["residual"].as_f64().unwrap() < 1e-10, "{json}");
        assert!(json["error"].as_f64().unwrap() < 1e-9, "{json}");
        let n = n as f64;
        assert_eq!(
            json["flops"].as_f64().unwrap(),
            (2.0 / 3.0 * n * n * n + 2.0 * n * n).round()
        );
    }
    assert!(
        call(runtime, "linpack", "n=1001", b"")?
            .stdout
            .starts_with(b"Status: 400")
    );
    Ok(())
}

/// A right view of `left` seen `shift` pixels over: right(x) = left(x + shift).
fn shifted(left: &Grey, shift: usize) -> Grey {
    let mut right = left.clone();
    for y in 0..left.h {
        for x in 0..left.w {
            right.pixels[y * left.w + x] = left.at((x + shift).min(left.w - 1), y);
        }
    }
    right
}

#[test]
fn disparity_finds_the_shift_between_two_views_of_the_photo() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    let left = grey_photo(runtime, 160)?;
    let range = 16;
    let mut pair = left.pgm();
    pair.extend(shifted(&left, 6).pgm());
    let out = call(
        runtime,
        "disparity",
        &format!("window=9&range={range}"),
        &pair,
    )?;
    let (map, maxval) = Grey::parse(response(&out).1);
    assert_eq!((map.w, map.h, maxval), (left.w, left.h, range));
    // Away from the left edge (where the right view has no match), the
    // shift is found almost everywhere; the photo's flat background is
    // where it may not be.
    let (mut right, mut all) = (0, 0);
    for y in 0..map.h {
        for x in range as usize..map.w {
            all += 1;
            right += usize::from(map.at(x, y) == 6);
        }
    }
    assert!(right * 10 >= all * 9, "{right} of {all}");

    let one = left.pgm();
    assert!(
        call(runtime, "disparity", "", &one)?
            .stdout
            .starts_with(b"Status: 415")
    );
    let mut unequal = left.pgm();
    unequal.extend(grey_photo(runtime, 80)?.pgm());
    assert!(
        call(runtime, "disparity", "", &unequal)?
            .stdout
            .starts_with(b"Status: 400")
    );
    assert!(
        call(runtime, "disparity", "window=4", &pair)?
            .stdout
            .starts_with(b"Status: 400")
    );
    Ok(())
}

/// The features' (x, y, response) lines.
fn features(out: &Output) -> Vec<(f64, f64, f64)> {
    text(out)
        .lines()
        .map(|l| {
            let v: Vec<f64> = l.split(' ').map(|v| v.parse().unwrap()).collect();
            (v[0], v[1], v[2])
        })
        .collect()
}

#[test]
fn features_are_a_squares_corners_and_strongest_first() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    let mut square = Grey {
        w: 64,
        h: 64,
        pixels: vec![0; 64 * 64],
    };
    for y in 16..48 {
        for x in 16..48 {
            square.pixels[y * 64 + x] = 255;
        }
    }
    let found = features(&call(runtime, "features", "n=4", &square.pgm())?);
    assert_eq!(found.len(), 4);
    for corner in [(15.5, 15.5), (47.5, 15.5), (15.5, 47.5), (47.5, 47.5)] {
        let near = found
            .iter()
            .filter(|f| (f.0 - corner.0).hypot(f.1 - corner.1) <= 2.5)
            .count();
        assert_eq!(near, 1, "{corner:?} in {found:?}");
    }
    let photo = grey_photo(runtime, 256)?;
    let found = features(&call(runtime, "features", "n=50", &photo.pgm())?);
    assert_eq!(found.len(), 50);
    assert!(found.windows(2).all(|w| w[0].2 >= w[1].2));
    assert!(
        call(runtime, "features", "", b"P6 1 1 255\n...")?
            .stdout
            .starts_with(b"Status: 415")
    );
    Ok(())
}

#[test]
fn segment_splits_three_bands_and_every_class_of_the_photo_is_used() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    // Three bands of grey, each with a deterministic ripple of up to 10.
    let (w, h) = (90, 40);
    let band = |x: usize| x / 30;
    let mut bands = Grey {
        w,
        h,
        pixels: vec![0; w * h],
    };
    for y in 0..h {
        for x in 0..w {
            let ripple = ((x * 7 + y * 13) % 21) as u8;
            bands.pixels[y * w + x] = [30, 128, 220][band(x)] + ripple - 10;
        }
    }
    let out = call(runtime, "segment", "k=3", &bands.pgm())?;
    let (classes, maxval) = Grey::parse(response(&out).1);
    assert_eq!(maxval, 2);
    for y in 0..h {
        for x in 0..w {
            assert_eq!(usize::from(classes.at(x, y)), band(x), "({x}, {y})");
        }
    }
    let photo = grey_photo(runtime, 128)?;
    let (classes, maxval) = Grey::parse(response(&call(runtime, "segment", "", &photo.pgm())?).1);
    assert_eq!(maxval, 3);
    for class in 0..4 {
        assert!(classes.pixels.contains(&class), "class {class} unused");
    }
    assert!(
        call(runtime, "segment", "k=1", &photo.pgm())?
            .stdout
            .starts_with(b"Status: 400")
    );
    Ok(())
}
