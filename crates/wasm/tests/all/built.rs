//! The real function suite, built by `scripts/build-functions` into WASI
//! commands: how its tests find the modules and call them.
//!
//! The modules are read from `$FAASCHED_FUNCTIONS` or the repository's
//! `target/functions`. Without them each test says it skipped, unless
//! `FAASCHED_REQUIRE_FUNCTIONS` is set (CI sets it), when it fails.

use std::path::PathBuf;
use std::sync::OnceLock;

use bytes::Bytes;
use faasched_wasm::{Input, Output, Result, Runtime, Sandbox};

use crate::{finish, runtime};

/// The built module `name`, or `None` (having said so) if it is not built.
pub fn module(name: &str) -> Option<Vec<u8>> {
    let dir = std::env::var_os("FAASCHED_FUNCTIONS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/functions"),
        PathBuf::from,
    );
    let path = dir.join(format!("{name}.wasm"));
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if std::env::var_os("FAASCHED_REQUIRE_FUNCTIONS").is_some() => panic!(
            "{}: {e}; build the functions with scripts/build-functions (it needs clang, lld, \
             wasi-libc, libclang-rt-dev-wasm32 and Go); FAASCHED_REQUIRE_FUNCTIONS is set",
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
pub fn with(names: &[&str]) -> Result<Option<Runtime>> {
    let mut runtime = runtime(|_| ())?;
    for name in names {
        let Some(bytes) = module(name) else {
            return Ok(None);
        };
        runtime.register(name, &bytes)?;
    }
    Ok(Some(runtime))
}

/// The built suite: C and Go functions.
pub const SUITE: [&str; 13] = [
    "hello",
    "hello-go",
    "float",
    "matrix",
    "linpack",
    "disparity",
    "features",
    "segment",
    "json",
    "gzip",
    "aes",
    "template",
    "thumbnail",
];

/// One runtime for the whole test binary with the [`SUITE`] registered, or
/// `None`: a Go module takes seconds to compile, so it is compiled once
/// here, and kept compiled in a disk cache under the target directory for
/// the next run.
pub fn shared() -> Option<&'static Runtime> {
    static SHARED: OnceLock<Option<Runtime>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("module-cache");
            let mut runtime = runtime(|c| {
                c.cache(&cache).max_sandboxes(16);
            })
            .unwrap();
            for name in SUITE {
                runtime.register(name, &module(name)?).unwrap();
            }
            Some(runtime)
        })
        .as_ref()
}

/// A command's output split at the end of its CGI header block.
pub fn response(out: &Output) -> (&str, &[u8]) {
    let stdout = &out.stdout[..];
    let (end, gap) = [&b"\r\n\r\n"[..], b"\n\n"]
        .iter()
        .filter_map(|gap| {
            stdout
                .windows(gap.len())
                .position(|w| w == *gap)
                .map(|at| (at, gap.len()))
        })
        .min()
        .expect("no header block");
    (
        std::str::from_utf8(&stdout[..end]).expect("headers not UTF-8"),
        &stdout[end + gap..],
    )
}

/// A greyscale image: width, height, pixels row by row.
#[derive(Debug, Clone, PartialEq)]
pub struct Grey {
    pub w: usize,
    pub h: usize,
    pub pixels: Vec<u8>,
}

impl Grey {
    /// Reads a binary PGM: four fields, one whitespace byte, the pixels.
    pub fn parse(bytes: &[u8]) -> (Grey, u32) {
        let mut fields = Vec::new();
        let mut at = 0;
        while fields.len() < 4 {
            let start = at
                + bytes[at..]
                    .iter()
                    .position(|b| !b.is_ascii_whitespace())
                    .unwrap();
            let len = bytes[start..]
                .iter()
                .position(u8::is_ascii_whitespace)
                .unwrap();
            fields.push(std::str::from_utf8(&bytes[start..start + len]).unwrap());
            at = start + len + 1;
        }
        assert_eq!(fields[0], "P5");
        let (w, h) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
        assert_eq!(bytes.len() - at, w * h);
        let maxval = fields[3].parse().unwrap();
        (
            Grey {
                w,
                h,
                pixels: bytes[at..].to_vec(),
            },
            maxval,
        )
    }

    /// Writes it as a binary PGM.
    pub fn pgm(&self) -> Vec<u8> {
        let mut out = format!("P5\n{} {}\n255\n", self.w, self.h).into_bytes();
        out.extend_from_slice(&self.pixels);
        out
    }

    pub fn at(&self, x: usize, y: usize) -> u8 {
        self.pixels[y * self.w + x]
    }
}

/// The photograph in grey, scaled to fit `size` by `size` by the Go
/// `thumbnail` function.
pub fn grey_photo(runtime: &Runtime, size: u32) -> Result<Grey> {
    let query = format!("w={size}&h={size}&format=pgm");
    let out = call(runtime, "thumbnail", &query, &photo())?;
    Ok(Grey::parse(response(&out).1).0)
}

/// The real photograph the image functions' tests send.
pub fn photo() -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../functions/inputs/grace-hopper.jpg"),
    )
    .unwrap()
}

pub fn input(query: &str, body: &[u8]) -> Input {
    Input::Command {
        stdin: Bytes::copy_from_slice(body),
        env: vec![("QUERY_STRING".into(), query.into())],
    }
}

pub fn call(runtime: &Runtime, function: &str, query: &str, body: &[u8]) -> Result<Output> {
    let preempt = runtime.preempt();
    finish(&mut Sandbox::start(
        runtime,
        &preempt,
        function,
        input(query, body),
    )?)
}
