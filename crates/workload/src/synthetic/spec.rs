//! Naming a built-in workload: the [`Spec`] and its `--workload` string syntax,
//! `name[:key=value[,key=value]...]`.

use super::dist::ClampedLognormal;
use super::{alps, mixed_io};
use crate::{Error, Result};
use faasched_model::{MS, Nanos, SEC, US};
use std::fmt;

/// A built-in synthetic workload: what each invocation needs. Arrivals are
/// described separately, by [`super::Params`].
#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    /// The ALPS paper's 50 deployments (functions `fib-1` … `fo-8`, see
    /// [`alps::DEPLOYMENTS`]) with the Huawei group mix (ALPS Table 1).
    Huawei,
    /// The same deployments with the Azure group mix (ALPS Table 1).
    Azure,
    /// The Azure 2019 log-normal fit, LogNormal(−0.38, 2.36) seconds, clamped to
    /// [1 ms, 60 s] (invitro's bounds), every duration multiplied by `scale`.
    /// SledgeScale uses `scale = 0.001`. One function, `lognormal`.
    Lognormal {
        /// Time scale applied to the fit and its clamps, in
        /// [[`MIN_LOGNORMAL_SCALE`], [`MAX_LOGNORMAL_SCALE`]].
        scale: f64,
    },
    /// Exponentially distributed CPU demand. One function, `exponential`.
    Exponential {
        /// Mean demand, ns.
        mean: Nanos,
    },
    /// Two functions: `short` with probability `short_fraction`, else `long`, so
    /// per-function policies can tell them apart.
    Bimodal {
        /// Probability of a short invocation, in (0, 1).
        short_fraction: f64,
        /// Demand of a short invocation, ns.
        short: Nanos,
        /// Demand of a long invocation, ns; longer than `short`.
        long: Nanos,
    },
    /// Every invocation needs the same CPU time. One function, `fixed`.
    Fixed {
        /// Demand, ns.
        cpu: Nanos,
    },
    /// The ALPS I/O study's four classes, two of them I/O-bound: functions `io-1`,
    /// `io-2`, `cpu-3`, `cpu-4` (see [`mixed_io`]).
    MixedIo,
}

/// Default mean of `exponential`: 100 ms.
pub const DEFAULT_EXPONENTIAL_MEAN: Nanos = 100 * MS;
/// Default demand of `fixed`: 100 ms.
pub const DEFAULT_FIXED_CPU: Nanos = 100 * MS;
/// Longest duration a parameter may name: one day. Functions are capped far
/// lower by every provider (15 min on Lambda); this only keeps ns sums far from
/// `u64` overflow.
pub const MAX_DURATION: Nanos = 86_400 * SEC;
/// Largest log-normal scale: stretches the 60 s clamp to [`MAX_DURATION`].
pub const MAX_LOGNORMAL_SCALE: f64 = 1440.0;
/// Smallest log-normal scale: shrinks the 1 ms clamp to 1 µs, the resolution
/// of every workload (below it, draws rounded to whole µs would offer more
/// load than the arrival rate was computed for).
pub const MIN_LOGNORMAL_SCALE: f64 = 1e-3;

/// Short fraction of SledgeScale's "High bimodal" (SEC'25, Table 3): 50%.
const HIGH_P: f64 = 0.5;
/// Its short request, image resizing: 26 µs.
const HIGH_SHORT: Nanos = 26 * US;
/// Its long request, image classification: 2070 µs.
const HIGH_LONG: Nanos = 2070 * US;

/// SledgeScale's "High bimodal" (SEC'25, Table 3): image resizing 26 µs and image
/// classification 2070 µs, 50% each. Also the defaults of `bimodal`'s keys.
pub const BIMODAL_HIGH: Spec = Spec::Bimodal {
    short_fraction: HIGH_P,
    short: HIGH_SHORT,
    long: HIGH_LONG,
};

/// SledgeScale's "Extreme bimodal" (SEC'25, Table 3): 99.5% × 10 µs, 0.5% × 10 ms.
pub const BIMODAL_EXTREME: Spec = Spec::Bimodal {
    short_fraction: 0.995,
    short: 10 * US,
    long: 10 * MS,
};

/// The built-in names, for error messages.
const NAMES: &str = "huawei, azure, lognormal, exponential, fixed, bimodal, bimodal-high, \
                     bimodal-extreme, mixed-io";

const HELP: &str = "\
huawei                                  ALPS's 50 deployments (fib, bfs, mst, pr, fe, fo), Huawei group mix 69.8/23.2/6/1 %
azure                                   the same deployments, Azure group mix 42.9/17.2/16.7/23.2 %
lognormal[:scale=F]                     Azure 2019 fit LogNormal(-0.38, 2.36) s, clamped to [1 ms, 60 s], all times x F (default 1, at least 0.001)
exponential[:mean-ms=F]                 exponential CPU demand, mean F ms (default 100)
fixed[:cpu-ms=F]                        every invocation needs F ms of CPU (default 100), in whole us like every duration
bimodal[:p=F,short-us=F,long-us=F]      function `short` with probability p, else `long` (defaults: bimodal-high)
bimodal-high                            SledgeScale high bimodal: 50% x 26 us, 50% x 2070 us
bimodal-extreme                         SledgeScale extreme bimodal: 99.5% x 10 us, 0.5% x 10 ms
mixed-io                                ALPS I/O study: io-1, io-2 (cpu, io, cpu) and cpu-3, cpu-4 (cpu), 25% each";

impl Spec {
    /// Parses a `--workload` value such as `bimodal:p=0.9,short-us=10,long-us=1000`.
    ///
    /// Anything that is not a built-in name is an error (the CLI then treats the
    /// value as a file path), as are unknown or repeated keys and out-of-range
    /// values; messages name the key at fault.
    pub fn parse(s: &str) -> Result<Spec> {
        let (name, rest) = match s.split_once(':') {
            Some((name, rest)) => (name, Some(rest)),
            None => (s, None),
        };
        let keys: &[&str] = match name {
            "huawei" | "azure" | "bimodal-high" | "bimodal-extreme" | "mixed-io" => &[],
            "lognormal" => &["scale"],
            "exponential" => &["mean-ms"],
            "fixed" => &["cpu-ms"],
            "bimodal" => &["p", "short-us", "long-us"],
            _ => {
                return Err(Error::invalid(
                    "workload",
                    format!("`{name}` is not a built-in workload (built-ins: {NAMES})"),
                ));
            }
        };
        let args = Args::parse(name, rest, keys)?;
        Ok(match name {
            "huawei" => Spec::Huawei,
            "azure" => Spec::Azure,
            "bimodal-high" => BIMODAL_HIGH,
            "bimodal-extreme" => BIMODAL_EXTREME,
            "mixed-io" => Spec::MixedIo,
            "lognormal" => Spec::Lognormal {
                scale: args.scale("scale")?.unwrap_or(1.0),
            },
            "exponential" => Spec::Exponential {
                mean: args
                    .duration("mean-ms", MS)?
                    .unwrap_or(DEFAULT_EXPONENTIAL_MEAN),
            },
            "fixed" => Spec::Fixed {
                cpu: args.duration("cpu-ms", MS)?.unwrap_or(DEFAULT_FIXED_CPU),
            },
            "bimodal" => {
                let short_fraction = args.fraction("p")?.unwrap_or(HIGH_P);
                let short = args.duration("short-us", US)?.unwrap_or(HIGH_SHORT);
                let long = args.duration("long-us", US)?.unwrap_or(HIGH_LONG);
                if short >= long {
                    return Err(args.error(
                        "short-us",
                        format!(
                            "must be below long-us ({} µs), got {} µs",
                            fmt_units(long, US),
                            fmt_units(short, US)
                        ),
                    ));
                }
                Spec::Bimodal {
                    short_fraction,
                    short,
                    long,
                }
            }
            _ => unreachable!("names were checked above"),
        })
    }

    /// Checks a spec built in code against the ranges [`Spec::parse`] enforces.
    pub(crate) fn validate(&self) -> Result<()> {
        fn key_error(name: &'static str, key: &'static str) -> impl Fn(String) -> Error {
            move |m| Error::invalid(&format!("workload `{name}` key `{key}`"), m)
        }
        match *self {
            Spec::Lognormal { scale } => {
                check_scale(scale).map_err(key_error("lognormal", "scale"))
            }
            Spec::Exponential { mean } => {
                check_duration(mean).map_err(key_error("exponential", "mean-ms"))
            }
            Spec::Fixed { cpu } => check_duration(cpu).map_err(key_error("fixed", "cpu-ms")),
            Spec::Bimodal {
                short_fraction,
                short,
                long,
            } => {
                check_fraction(short_fraction).map_err(key_error("bimodal", "p"))?;
                check_duration(short).map_err(key_error("bimodal", "short-us"))?;
                check_duration(long).map_err(key_error("bimodal", "long-us"))?;
                if short < long {
                    Ok(())
                } else {
                    Err(key_error("bimodal", "short-us")(format!(
                        "must be below long-us ({long} ns), got {short} ns"
                    )))
                }
            }
            Spec::Huawei | Spec::Azure | Spec::MixedIo => Ok(()),
        }
    }

    /// One line per built-in workload and its syntax, for `--help`.
    pub fn help() -> &'static str {
        HELP
    }

    /// Expected CPU demand per invocation, ns, rounded: what arrival rates are
    /// derived from (load = offered CPU demand / core-time).
    ///
    /// The mean of the demands as emitted, whole µs: analytic for the
    /// distributions (the exponential's after rounding to whole µs, at least
    /// 1 µs, which matters when the mean is a few µs; the log-normal's is the
    /// mean of the *clamped* distribution it samples, whose rounding is
    /// unbiased to within 1e-4 once its 1 ms clamp is scaled to at least
    /// 1 µs), from the deployment table and group mix for `huawei` and
    /// `azure`, CPU phases only for `mixed-io`. The durations `fixed` and
    /// `bimodal` name are whole µs already.
    pub fn mean_cpu(&self) -> Nanos {
        self.mean_cpu_exact().round() as Nanos
    }

    /// [`Spec::mean_cpu`] before rounding to whole ns.
    pub(crate) fn mean_cpu_exact(&self) -> f64 {
        match self {
            Spec::Huawei => alps::mean_cpu(&alps::HUAWEI_MIX),
            Spec::Azure => alps::mean_cpu(&alps::AZURE_MIX),
            Spec::Lognormal { scale } => ClampedLognormal::azure(*scale).mean(),
            Spec::Exponential { mean } => emitted_exponential_mean(*mean),
            Spec::Bimodal {
                short_fraction: p,
                short,
                long,
            } => p * *short as f64 + (1.0 - p) * *long as f64,
            Spec::Fixed { cpu } => *cpu as f64,
            Spec::MixedIo => mixed_io::mean_cpu(),
        }
    }
}

/// Writes the spec in the syntax [`Spec::parse`] reads back (presets as plain
/// `bimodal:...`).
impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spec::Huawei => f.write_str("huawei"),
            Spec::Azure => f.write_str("azure"),
            Spec::Lognormal { scale } => write!(f, "lognormal:scale={scale}"),
            Spec::Exponential { mean } => write!(f, "exponential:mean-ms={}", fmt_units(*mean, MS)),
            Spec::Bimodal {
                short_fraction,
                short,
                long,
            } => write!(
                f,
                "bimodal:p={short_fraction},short-us={},long-us={}",
                fmt_units(*short, US),
                fmt_units(*long, US)
            ),
            Spec::Fixed { cpu } => write!(f, "fixed:cpu-ms={}", fmt_units(*cpu, MS)),
            Spec::MixedIo => f.write_str("mixed-io"),
        }
    }
}

/// `ns` in `unit`s; its `Display` is the shortest decimal that parses back to `ns`.
fn fmt_units(ns: Nanos, unit: Nanos) -> f64 {
    ns as f64 / unit as f64
}

/// The `key=value` list after a workload name, checked for syntax, unknown and
/// repeated keys up front.
struct Args<'a> {
    name: &'a str,
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Args<'a> {
    fn parse(name: &'a str, rest: Option<&'a str>, keys: &[&str]) -> Result<Args<'a>> {
        let what = || format!("workload `{name}`");
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        let Some(rest) = rest else {
            return Ok(Args { name, pairs });
        };
        if keys.is_empty() {
            return Err(Error::invalid(
                &what(),
                format!("takes no parameters, got `{rest}`"),
            ));
        }
        let valid = keys.join(", ");
        for item in rest.split(',') {
            let Some((key, value)) = item.split_once('=') else {
                return Err(Error::invalid(
                    &what(),
                    format!("expected key=value, got `{item}` (keys: {valid})"),
                ));
            };
            let (key, value) = (key.trim(), value.trim());
            if !keys.contains(&key) {
                return Err(Error::invalid(
                    &what(),
                    format!("unknown key `{key}` (keys: {valid})"),
                ));
            }
            if pairs.iter().any(|&(k, _)| k == key) {
                return Err(Error::invalid(&what(), format!("key `{key}` given twice")));
            }
            pairs.push((key, value));
        }
        Ok(Args { name, pairs })
    }

    fn error(&self, key: &str, message: impl Into<String>) -> Error {
        Error::invalid(&format!("workload `{}` key `{key}`", self.name), message)
    }

    /// The value of `key` as a finite number, if given.
    fn number(&self, key: &str) -> Result<Option<f64>> {
        let Some(&(_, raw)) = self.pairs.iter().find(|&&(k, _)| k == key) else {
            return Ok(None);
        };
        match raw.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(self.error(key, format!("expected a finite number, got `{raw}`"))),
        }
    }

    /// A probability strictly between 0 and 1.
    fn fraction(&self, key: &str) -> Result<Option<f64>> {
        let v = self.number(key)?;
        v.map(check_fraction)
            .transpose()
            .map_err(|m| self.error(key, m))?;
        Ok(v)
    }

    /// A log-normal time scale.
    fn scale(&self, key: &str) -> Result<Option<f64>> {
        let v = self.number(key)?;
        v.map(check_scale)
            .transpose()
            .map_err(|m| self.error(key, m))?;
        Ok(v)
    }

    /// A positive duration given in `unit`s, rounded to whole µs, the
    /// resolution of every workload (at least 1 µs, at most [`MAX_DURATION`]):
    /// the demand a spec names is then the demand its invocations carry, and
    /// the load they offer is the load asked for.
    fn duration(&self, key: &str, unit: Nanos) -> Result<Option<Nanos>> {
        let Some(v) = self.number(key)? else {
            return Ok(None);
        };
        if v <= 0.0 {
            return Err(self.error(key, format!("must be positive, got {v}")));
        }
        let us = (v * (unit as f64 / US as f64)).round();
        if us < 1.0 {
            return Err(self.error(
                key,
                format!("{v} is below 1 µs, the resolution of workloads"),
            ));
        }
        if us > (MAX_DURATION / US) as f64 {
            return Err(self.error(key, format!("{v} is longer than one day")));
        }
        Ok(Some(us as Nanos * US))
    }
}

fn check_fraction(p: f64) -> Result<(), String> {
    if p > 0.0 && p < 1.0 {
        Ok(())
    } else {
        Err(format!("must be strictly between 0 and 1, got {p}"))
    }
}

fn check_scale(scale: f64) -> Result<(), String> {
    if (MIN_LOGNORMAL_SCALE..=MAX_LOGNORMAL_SCALE).contains(&scale) {
        Ok(())
    } else {
        Err(format!(
            "must be in [{MIN_LOGNORMAL_SCALE}, {MAX_LOGNORMAL_SCALE}] (keeps the 1 ms and 60 s \
             clamps within 1 µs and one day), got {scale}"
        ))
    }
}

fn check_duration(ns: Nanos) -> Result<(), String> {
    if (US..=MAX_DURATION).contains(&ns) && ns.is_multiple_of(US) {
        Ok(())
    } else {
        Err(format!(
            "must be whole µs between 1 µs and one day, got {ns} ns"
        ))
    }
}

/// The mean of an exponential demand of mean `mean` ns as the generator
/// emits it: drawn to the ns (`round`), then to the µs (half up), and at
/// least 1 µs. In µs, Y ≥ k for k ≥ 2 exactly when X ≥ 1000k − 500.5 ns, so
/// E[Y] = 1 + Σ_{k≥2} e^{−(1000k − 500.5)/mean}, a geometric series. It is
/// `mean` to within 1e-9 relative once the mean is a few ms; at a mean of
/// 1 µs it is 1.35 µs.
fn emitted_exponential_mean(mean: Nanos) -> f64 {
    let (m, us) = (mean as f64, US as f64);
    us * (1.0 + (-(1.5 * us - 0.5) / m).exp() / -(-us / m).exp_m1())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> String {
        Spec::parse(s).expect_err(s).to_string()
    }

    #[test]
    fn parses_every_built_in() {
        let ok = |s: &str| Spec::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(ok("huawei"), Spec::Huawei);
        assert_eq!(ok("azure"), Spec::Azure);
        assert_eq!(ok("mixed-io"), Spec::MixedIo);
        assert_eq!(ok("lognormal"), Spec::Lognormal { scale: 1.0 });
        assert_eq!(ok("lognormal:scale=0.1"), Spec::Lognormal { scale: 0.1 });
        assert_eq!(ok("exponential"), Spec::Exponential { mean: 100 * MS });
        assert_eq!(
            ok("exponential:mean-ms=10"),
            Spec::Exponential { mean: 10 * MS }
        );
        assert_eq!(
            ok("exponential:mean-ms=0.5"),
            Spec::Exponential { mean: 500 * US }
        );
        assert_eq!(ok("fixed"), Spec::Fixed { cpu: 100 * MS });
        assert_eq!(ok("fixed:cpu-ms=5"), Spec::Fixed { cpu: 5 * MS });
        // Durations are whole µs, the workloads' resolution.
        assert_eq!(ok("fixed:cpu-ms=0.0015"), Spec::Fixed { cpu: 2 * US });
        assert_eq!(ok("bimodal:p=0.5,short-us=26,long-us=2070"), BIMODAL_HIGH);
        assert_eq!(ok("bimodal"), BIMODAL_HIGH);
        assert_eq!(
            ok("bimodal:long-us=5000, p=0.9"),
            Spec::Bimodal {
                short_fraction: 0.9,
                short: 26 * US,
                long: 5 * MS
            }
        );
        assert_eq!(ok("bimodal-high"), BIMODAL_HIGH);
        assert_eq!(
            ok("bimodal-extreme"),
            Spec::Bimodal {
                short_fraction: 0.995,
                short: 10 * US,
                long: 10 * MS
            }
        );
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "huawei",
            "azure",
            "mixed-io",
            "lognormal:scale=0.001",
            "exponential:mean-ms=12.345",
            "fixed:cpu-ms=0.001",
            "bimodal:p=0.995,short-us=10,long-us=10000",
        ] {
            let spec = Spec::parse(s).unwrap();
            assert_eq!(spec.to_string(), s);
            assert_eq!(Spec::parse(&spec.to_string()).unwrap(), spec);
        }
    }

    #[test]
    fn rejects_unknown_names_listing_the_built_ins() {
        for s in [
            "traces/azure.csv",
            "Huawei",
            "",
            "bimodal-medium",
            "lognormal-x:scale=1",
        ] {
            let e = err(s);
            assert!(
                e.contains("not a built-in") && e.contains("mixed-io"),
                "{s}: {e}"
            );
        }
    }

    #[test]
    fn rejects_bad_keys_and_values_naming_the_key() {
        let cases = [
            ("bimodal:q=0.5", "unknown key `q`"),
            ("bimodal:p=0.5,p=0.6", "`p` given twice"),
            ("bimodal:p", "expected key=value"),
            ("bimodal:p=0", "key `p`: must be strictly between 0 and 1"),
            ("bimodal:p=1", "key `p`"),
            ("bimodal:p=-0.1", "key `p`"),
            ("bimodal:p=NaN", "key `p`: expected a finite number"),
            ("bimodal:p=", "key `p`: expected a finite number"),
            (
                "bimodal:short-us=3000",
                "key `short-us`: must be below long-us",
            ),
            ("bimodal:short-us=0", "key `short-us`: must be positive"),
            ("exponential:mean-ms=-1", "key `mean-ms`: must be positive"),
            (
                "exponential:mean-ms=inf",
                "key `mean-ms`: expected a finite number",
            ),
            (
                "exponential:mean-ms=1e-9",
                "key `mean-ms`: 0.000000001 is below 1 µs",
            ),
            ("fixed:cpu-ms=0.0004", "key `cpu-ms`: 0.0004 is below 1 µs"),
            ("bimodal:short-us=0.4", "key `short-us`: 0.4 is below 1 µs"),
            ("exponential:mean-ms=1e12", "key `mean-ms`"),
            ("exponential:mean=10", "unknown key `mean`"),
            ("fixed:cpu-ms=abc", "key `cpu-ms`"),
            ("fixed:cpu-us=5", "unknown key `cpu-us`"),
            ("lognormal:scale=0", "key `scale`"),
            ("lognormal:scale=NaN", "key `scale`"),
            ("lognormal:scale=1e4", "key `scale`"),
            ("huawei:scale=1", "takes no parameters"),
            ("bimodal-high:p=0.4", "takes no parameters"),
            ("mixed-io:", "takes no parameters"),
        ];
        for (s, want) in cases {
            let e = err(s);
            assert!(e.contains(want), "{s}: got `{e}`, want `{want}`");
        }
    }

    #[test]
    fn help_has_a_line_per_built_in() {
        let help = Spec::help();
        for name in NAMES.split(", ") {
            assert!(
                help.lines()
                    .any(|l| l.split(['[', ' ']).next() == Some(name)),
                "{name}"
            );
        }
        assert_eq!(help.lines().count(), NAMES.split(", ").count());
    }

    #[test]
    fn mean_cpu_is_analytic() {
        assert_eq!(Spec::Fixed { cpu: 5 * MS }.mean_cpu(), 5 * MS);
        // Drawn to whole µs (at least 1): a mean of a few µs offers more.
        assert_eq!(Spec::Exponential { mean: US }.mean_cpu(), 1353);
        let e = Spec::Exponential { mean: 100 * MS }.mean_cpu();
        assert!(e.abs_diff(100 * MS) <= 1, "{e}");
        assert_eq!(BIMODAL_HIGH.mean_cpu(), 1048 * US);
        assert_eq!(BIMODAL_EXTREME.mean_cpu(), 59_950);
        assert_eq!(Spec::MixedIo.mean_cpu(), 339 * MS);
        assert_eq!(
            Spec::Huawei.mean_cpu(),
            alps::mean_cpu(&alps::HUAWEI_MIX).round() as Nanos
        );
        let ln = Spec::Lognormal { scale: 0.001 }.mean_cpu() as f64;
        let ln1 = Spec::Lognormal { scale: 1.0 }.mean_cpu() as f64;
        assert!(
            (ln / ln1 - 0.001).abs() < 1e-9,
            "scale is a pure time scale"
        );
    }
}
