//! The built-in function suite (WAT sources compiled when a runtime starts)
//! and the `name?key=value` call strings that select a function and its
//! argument.

use crate::runtime::Kind;
use crate::{Fault, Result};

/// The built-in functions, in registration order.
pub const BUILTINS: [&str; 6] = ["noop", "fib", "spin", "hash", "matmul", "resize"];

/// Most bytes `hash` is asked to generate: addresses stay below 2^31.
const HASH_MAX: i64 = (1 << 31) - 1;
/// Largest `matmul` side: its three matrices (24 n^2 bytes) stay below 2^31.
const MATMUL_MAX: i64 = 8192;
/// Largest `resize` side: fixed-point coordinates (side * 256) fit in i32.
const RESIZE_SIDE_MAX: i64 = 65535;
/// Most `resize` source pixels: the source and the result stay below 2^31.
const RESIZE_PIXELS_MAX: i64 = 1 << 30;

/// One built-in function: its source and what it accepts.
pub(crate) struct Builtin {
    pub name: &'static str,
    pub wat: &'static str,
    /// The call-string keys, in the order [`Builtin::arg`] takes them.
    keys: &'static [&'static str],
}

/// The suite, in [`BUILTINS`] order.
pub(crate) const SUITE: [Builtin; 6] = [
    Builtin {
        name: "noop",
        wat: include_str!("../functions/noop.wat"),
        keys: &[],
    },
    Builtin {
        name: "fib",
        wat: include_str!("../functions/fib.wat"),
        keys: &["n"],
    },
    Builtin {
        name: "spin",
        wat: include_str!("../functions/spin.wat"),
        keys: &["us"],
    },
    Builtin {
        name: "hash",
        wat: include_str!("../functions/hash.wat"),
        keys: &["n"],
    },
    Builtin {
        name: "matmul",
        wat: include_str!("../functions/matmul.wat"),
        keys: &["n"],
    },
    Builtin {
        name: "resize",
        wat: include_str!("../functions/resize.wat"),
        keys: &["w", "h"],
    },
];

/// `resize`'s argument for a `width` x `height` source image:
/// `(width << 32) | height`.
pub fn resize_arg(width: u32, height: u32) -> i64 {
    (i64::from(width) << 32) | i64::from(height)
}

impl Builtin {
    /// Why `arg` is outside what this function accepts, if it is.
    pub(crate) fn check(&self, arg: i64) -> Result<(), String> {
        let within = |what: &str, v: i64, lo: i64, hi: i64| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(format!("{what} = {v} is outside {lo}..={hi}"))
            }
        };
        match self.name {
            "fib" => within("n", arg, 0, i64::MAX),
            "spin" => within("steps", arg, 0, i64::MAX),
            "hash" => within("n", arg, 0, HASH_MAX),
            "matmul" => within("n", arg, 1, MATMUL_MAX),
            "resize" => {
                let (w, h) = (arg >> 32, arg & 0xffff_ffff);
                within("w", w, 2, RESIZE_SIDE_MAX)?;
                within("h", h, 2, RESIZE_SIDE_MAX)?;
                within("w * h", w * h, 4, RESIZE_PIXELS_MAX)
            }
            _ => Ok(()),
        }
    }

    /// The argument a call string's values (in [`Builtin::keys`] order)
    /// stand for; `spin_steps_per_ms` turns `spin`'s µs into steps.
    fn arg(&self, values: &[i64], spin_steps_per_ms: u64) -> Result<i64, String> {
        match (self.name, values) {
            ("noop", []) => Ok(0),
            ("spin", &[us]) => {
                if us < 0 {
                    return Err(format!("us = {us} is negative"));
                }
                let steps = i128::from(us) * i128::from(spin_steps_per_ms) / 1000;
                i64::try_from(steps).map_err(|_| format!("us = {us} is too large"))
            }
            ("resize", &[w, h]) => {
                let side = |what: &str, v: i64| {
                    u32::try_from(v)
                        .ok()
                        .filter(|&v| i64::from(v) <= RESIZE_SIDE_MAX)
                        .ok_or_else(|| format!("{what} = {v} is outside 2..={RESIZE_SIDE_MAX}"))
                };
                Ok(resize_arg(side("w", w)?, side("h", h)?))
            }
            (_, &[v]) => Ok(v),
            _ => Err("wrong number of values".into()),
        }
    }
}

/// A function to run and its argument: what a worker passes to
/// [`Sandbox::start`](crate::Sandbox::start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The registered name.
    pub function: String,
    /// The value `run` receives (0 for a command).
    pub arg: i64,
    /// The function's ABI: a command takes its request's standard input
    /// and environment instead of `arg`.
    pub kind: Kind,
}

/// Parses `name` or `name?key=value&key=value` (see the crate docs for each
/// function's keys) into a [`Call`]. `builtin` is the function's entry when
/// it is built in; a user module takes one optional key, `arg` (default 0).
pub(crate) fn parse(
    name: &str,
    query: Option<&str>,
    builtin: Option<&Builtin>,
    spin_steps_per_ms: u64,
) -> Result<Call> {
    let bad = |reason: String| Fault::BadArgument {
        function: name.to_owned(),
        reason,
    };
    let keys: &[&str] = builtin.map_or(&["arg"], |b| b.keys);
    let mut values: Vec<Option<i64>> = vec![None; keys.len()];
    for pair in query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|pair| !pair.is_empty())
    {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("`{pair}` is not key=value")))?;
        let slot = keys
            .iter()
            .position(|k| *k == key)
            .ok_or_else(|| bad(format!("unknown key `{key}` (takes: {})", keys.join(", "))))?;
        if values[slot].is_some() {
            return Err(bad(format!("key `{key}` given twice")));
        }
        let parsed = value
            .parse::<i64>()
            .map_err(|_| bad(format!("{key} = `{value}` is not an integer")))?;
        values[slot] = Some(parsed);
    }
    let arg = match builtin {
        None => values[0].unwrap_or(0),
        Some(b) => {
            let given = keys
                .iter()
                .zip(&values)
                .map(|(k, v)| v.ok_or_else(|| bad(format!("missing key `{k}`"))))
                .collect::<Result<Vec<_>>>()?;
            let arg = b.arg(&given, spin_steps_per_ms).map_err(bad)?;
            b.check(arg).map_err(bad)?;
            arg
        }
    };
    Ok(Call {
        function: name.to_owned(),
        arg,
        kind: Kind::Run,
    })
}
