//! The Go functions of `functions/go` run in sandboxes: each answer
//! checked against what it must be (a standard's test vector, a decoder
//! that is not Go's, a property of the image), and a Go guest preempted
//! many times that still answers right.

use std::io::Write;
use std::process::{Command, Stdio};

use faasched_wasm::{Output, Result, Sandbox, Step};

use crate::built::{Grey, call, input, photo, response, shared};
use crate::finish;

/// The status a response's CGI header block names (200 if none).
fn status(out: &Output) -> u16 {
    let (head, _) = response(out);
    head.lines()
        .find_map(|l| l.strip_prefix("Status: "))
        .map_or(200, |s| s[..3].parse().unwrap())
}

fn content_type(out: &Output) -> String {
    let (head, _) = response(out);
    head.lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .unwrap()
        .to_owned()
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn hello_go_answers_as_the_c_hello_does() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    for (query, body) in [("name=faas&x=1", &[7; 5000][..]), ("", b"")] {
        let go = call(runtime, "hello-go", query, body)?;
        let c = call(runtime, "hello", query, body)?;
        assert_eq!(response(&go).1, response(&c).1);
        assert_eq!(content_type(&go), "text/plain");
    }
    Ok(())
}

#[test]
fn json_serialises_what_it_parsed() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    let doc = br#"{"b": [1, 2.50, 12345678901234567890, -0.125e3], "a": "x\u00e9\"",
                  "nested": {"z": null, "y": [true, false, {}, []]}}"#;
    let want: serde_json::Value = serde_json::from_slice(doc).unwrap();
    for n in [1, 7] {
        let out = call(runtime, "json", &format!("n={n}"), doc)?;
        assert_eq!(out.value, 0);
        assert_eq!(content_type(&out), "application/json");
        let got: serde_json::Value = serde_json::from_slice(response(&out).1).unwrap();
        assert_eq!(got, want);
        // Keys sorted, numbers as written.
        let text = std::str::from_utf8(response(&out).1).unwrap();
        assert!(text.starts_with(r#"{"a":"#), "{text}");
        assert!(text.contains("2.50,12345678901234567890"), "{text}");
    }
    for bad in [&b"{"[..], b"[1] [2]", b""] {
        assert_eq!(status(&call(runtime, "json", "", bad)?), 400);
    }
    assert_eq!(status(&call(runtime, "json", "n=0", b"1")?), 400);
    Ok(())
}

/// `bytes` decompressed by the system's gzip, not Go's.
fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut child = Command::new("gzip")
        .arg("-dc")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip(1)");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
}

#[test]
fn gzip_compresses_what_gzip_1_decompresses() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    let text = "the quick brown fox jumps over the lazy dog\n".repeat(200);
    for (body, level) in [(text.as_bytes().to_vec(), 9), (photo(), 1), (Vec::new(), 6)] {
        let out = call(runtime, "gzip", &format!("level={level}"), &body)?;
        assert_eq!(content_type(&out), "application/gzip");
        let compressed = response(&out).1;
        assert_eq!(compressed[..2], [0x1f, 0x8b]);
        assert_eq!(gunzip(compressed), body);
    }
    let repeated = call(runtime, "gzip", "", text.as_bytes())?;
    assert!(response(&repeated).1.len() < text.len() / 10);
    assert_eq!(status(&call(runtime, "gzip", "level=10", b"x")?), 400);
    Ok(())
}

#[test]
fn aes_ctr_matches_the_nist_test_vector() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    // NIST SP 800-38A, F.5.1 CTR-AES128.Encrypt.
    let query = "key=2b7e151628aed2a6abf7158809cf4f3c&iv=f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
    let plain = hex(concat!(
        "6bc1bee22e409f96e93d7e117393172a",
        "ae2d8a571e03ac9c9eb76fac45af8e51",
        "30c81c46a35ce411e5fbc1191a0a52ef",
        "f69f2445df4f9b17ad2b417be66c3710"
    ));
    let cipher = hex(concat!(
        "874d6191b620e3261bef6864990db6ce",
        "9806f66b7970fdff8617187bb9fffdff",
        "5ae4df3edbd5d35e5b4f09020db03eab",
        "1e031dda2fbe03d1792170a0f3009cee"
    ));
    let out = call(runtime, "aes", query, &plain)?;
    assert_eq!(response(&out).1, cipher);
    // Counter mode is its own inverse, and a partial block is kept whole.
    let back = call(runtime, "aes", query, &cipher[..37])?;
    assert_eq!(response(&back).1, &plain[..37]);
    for bad in [
        "key=00&iv=f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
        "key=2b7e151628aed2a6abf7158809cf4f3c",
    ] {
        assert_eq!(status(&call(runtime, "aes", bad, b"x")?), 400, "{bad}");
    }
    Ok(())
}

#[test]
fn template_renders_and_escapes_a_table() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    let out = call(
        runtime,
        "template",
        "",
        br#"{"title": "<b>t</b>", "rows": [["<script>alert(1)</script>", "a&b"], ["c"]]}"#,
    )?;
    assert_eq!(content_type(&out), "text/html; charset=utf-8");
    let html = std::str::from_utf8(response(&out).1).unwrap();
    assert!(
        html.contains("<title>&lt;b&gt;t&lt;/b&gt;</title>"),
        "{html}"
    );
    assert!(
        html.contains("<tr><td>&lt;script&gt;alert(1)&lt;/script&gt;</td><td>a&amp;b</td></tr>"),
        "{html}"
    );
    assert!(!html.contains("<script>"));
    let generated = call(runtime, "template", "rows=3&cols=4", b"")?;
    let html = std::str::from_utf8(response(&generated).1).unwrap();
    assert_eq!(html.matches("<td>").count(), 12);
    assert!(html.contains("<td>2,3</td></tr>"));
    assert_eq!(status(&call(runtime, "template", "rows=1001", b"")?), 400);
    assert_eq!(
        status(&call(runtime, "template", "", br#"{"rows": 1}"#)?),
        400
    );
    Ok(())
}

fn mean(pixels: &[u8]) -> f64 {
    pixels.iter().map(|&p| f64::from(p)).sum::<f64>() / pixels.len() as f64
}

#[test]
fn thumbnail_fits_the_box_keeps_the_aspect_and_the_brightness() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    let photo = photo();
    let out = call(runtime, "thumbnail", "", &photo)?;
    assert_eq!(content_type(&out), "image/png");
    let png = response(&out).1;
    assert_eq!(png[..8], *b"\x89PNG\r\n\x1a\n");
    // IHDR's width and height: 512 by 600 fit into 128 by 128.
    let size = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((size(16), size(20)), (109, 128));

    let full = call(runtime, "thumbnail", "w=4096&h=4096&format=pgm", &photo)?;
    let (full, _) = Grey::parse(response(&full).1);
    assert_eq!((full.w, full.h), (512, 600));
    let small = call(runtime, "thumbnail", "w=64&h=64&format=pgm", &photo)?;
    let (small, _) = Grey::parse(response(&small).1);
    assert_eq!((small.w, small.h), (54, 64));
    // A box filter keeps the mean; rounding each pixel moves it less
    // than half a level.
    let (full, small) = (mean(&full.pixels), mean(&small.pixels));
    assert!((full - small).abs() < 0.5, "{full} {small}");
    assert!(full > 20.0 && full < 235.0);

    assert_eq!(
        status(&call(runtime, "thumbnail", "", b"not an image")?),
        415
    );
    assert_eq!(
        status(&call(runtime, "thumbnail", "format=bmp", &photo)?),
        400
    );
    Ok(())
}

/// A Go request stopped at every one of its first epoch checks, with a
/// short Go request run to its end on the same thread while it waits,
/// finishes with the answer of a run never stopped.
#[test]
fn a_go_guest_is_preempted_again_and_again_and_finishes_right() -> Result<()> {
    let Some(runtime) = shared() else {
        return Ok(());
    };
    let query = "w=300&h=300&format=pgm";
    let photo = photo();
    let preempt = runtime.preempt();
    let mut long = Sandbox::start(runtime, &preempt, "thumbnail", input(query, &photo))?;
    let key = "key=000102030405060708090a0b0c0d0e0f&iv=00000000000000000000000000000000";
    let mut stops = 0;
    let stopped = loop {
        if stops < 50 {
            preempt.request();
        }
        match long.resume() {
            Step::Preempted => stops += 1,
            Step::Done(done) => break done?,
        }
        if stops == 1 {
            let mut short = Sandbox::start(runtime, &preempt, "aes", input(key, b"urgent"))?;
            assert_eq!(response(&finish(&mut short)?).1.len(), 6);
        }
    };
    assert!(stops >= 50, "{stops}");
    assert!(stopped.stats.preemptions >= 50);
    let unstopped = call(runtime, "thumbnail", query, &photo)?;
    assert_eq!(stopped.stdout, unstopped.stdout);
    Ok(())
}
