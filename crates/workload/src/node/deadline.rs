//! Relative deadlines: SledgeScale's "10x the execution time" by default,
//! with per-function overrides of the factor or an absolute deadline
//! (Fig. 13 gives SIFT 1.13 ms and the others 2×).
//!
//! A spec is `name=value` items separated by commas, where `value` is a
//! factor of the request's own work (`2x`, `0.5x`) or a time (`1.13ms`,
//! `500us`, `500µs` or `500μs`, `100ns`, `1s`); the name `*` sets the default for every
//! function not named. `sift=1.13ms,segmentation=2x,*=20x`. What a spec
//! leaves open the workload decides: a built-in's deadline factor, or a
//! file row's `deadline_us`.

use crate::synthetic::MAX_DURATION;
use crate::{Error, Result};
use faasched_model::{MS, Nanos, SEC, US};
use std::fmt;
use std::str::FromStr;

/// One function's relative deadline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Deadline {
    /// This many times the request's own work (finite, above 0).
    Factor(f64),
    /// This long after arrival, whatever the work (at least 1 ns).
    Absolute(Nanos),
}

impl Deadline {
    /// The relative deadline of a request needing `work`: a factor's
    /// product rounded to the nearest ns (saturating), at least 1 ns.
    pub fn of(self, work: Nanos) -> Nanos {
        match self {
            Deadline::Factor(f) => ((f * work as f64).round() as Nanos).max(1),
            Deadline::Absolute(d) => d,
        }
    }
}

impl fmt::Display for Deadline {
    /// As a spec spells it: `10x`, or a time in the largest unit that keeps
    /// it whole (`1130us`, `2ms`, `1s`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Deadline::Factor(x) => write!(f, "{x}x"),
            Deadline::Absolute(ns) => {
                let (div, unit) = [(SEC, "s"), (MS, "ms"), (US, "us")]
                    .into_iter()
                    .find(|&(d, _)| ns % d == 0)
                    .unwrap_or((1, "ns"));
                write!(f, "{}{unit}", ns / div)
            }
        }
    }
}

impl FromStr for Deadline {
    type Err = Error;

    /// `<number>x` or `<number><unit>` with unit `ns`, `us`, `µs`, `ms` or
    /// `s`; absolute deadlines are rounded to whole ns and must lie in
    /// [1 ns, 1 day].
    fn from_str(text: &str) -> Result<Deadline> {
        let bad = |why: &str| Error::invalid("deadline", format!("`{text}`: {why}"));
        // The unit is the trailing run of letters; the number, all before it.
        let split = text
            .char_indices()
            .rev()
            .take_while(|&(_, c)| c.is_alphabetic())
            .last()
            .map_or(text.len(), |(i, _)| i);
        let (number, unit) = text.split_at(split);
        let per = match unit {
            "x" => 0,
            "ns" => 1,
            "us" | "µs" | "μs" => US,
            "ms" => MS,
            "s" => SEC,
            _ => {
                return Err(bad(
                    "expected a factor like `2x` or a time like `1.13ms` (units ns, us, µs, ms, s)",
                ));
            }
        };
        let value: f64 = number
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| bad(&format!("`{number}` is not a finite number above 0")))?;
        if per == 0 {
            return Ok(Deadline::Factor(value));
        }
        let ns = (value * per as f64).round();
        if !(1.0..=MAX_DURATION as f64).contains(&ns) {
            return Err(bad("must be between 1 ns and 1 day"));
        }
        Ok(Deadline::Absolute(ns as Nanos))
    }
}

/// Relative deadlines as asked for: per-function overrides and an optional
/// default for the functions they do not name; where neither applies, the
/// workload decides (its deadline factor, or a file row's `deadline_us`).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Deadlines {
    /// `*`: every function no override names.
    default: Option<Deadline>,
    /// By function name, in the order the spec gave them.
    overrides: Vec<(String, Deadline)>,
}

impl Deadlines {
    /// `deadline` for every function.
    pub fn all(deadline: Deadline) -> Deadlines {
        Deadlines {
            default: Some(deadline),
            overrides: Vec::new(),
        }
    }

    /// Parses a spec (see the module docs); an empty spec asks for nothing.
    /// Errors name the bad item: no `=`, an empty name, a name given twice,
    /// or a value that is neither a factor nor a time.
    pub fn parse(spec: &str) -> Result<Deadlines> {
        let mut out = Deadlines::default();
        if spec.trim().is_empty() {
            return Ok(out);
        }
        for item in spec.split(',').map(str::trim) {
            let bad = |why: String| Error::invalid("deadline", format!("`{item}`: {why}"));
            let Some((name, value)) = item.split_once('=') else {
                return Err(bad(
                    "expected `function=value` (like `sift=1.13ms` or `segmentation=2x`)".into(),
                ));
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(bad("the function name is empty".into()));
            }
            let deadline: Deadline = value
                .trim()
                .parse()
                .map_err(|e: Error| bad(invalid_message(e)))?;
            if name == "*" {
                if out.default.is_some() {
                    return Err(bad("`*` is given twice".into()));
                }
                out.default = Some(deadline);
            } else if out.overrides.iter().any(|(n, _)| n == name) {
                return Err(bad(format!("`{name}` is given twice")));
            } else {
                out.overrides.push((name.to_string(), deadline));
            }
        }
        Ok(out)
    }

    /// The deadline `*` sets, if any.
    pub fn default_deadline(&self) -> Option<Deadline> {
        self.default
    }

    /// The overrides, by function name, in the spec's order.
    pub fn overrides(&self) -> &[(String, Deadline)] {
        &self.overrides
    }

    /// The override naming `function`, if any.
    pub fn override_for(&self, function: &str) -> Option<Deadline> {
        self.overrides
            .iter()
            .find(|(n, _)| n == function)
            .map(|&(_, d)| d)
    }

    /// The deadline asked for `function`: its override, else `*`'s.
    pub fn for_function(&self, function: &str) -> Option<Deadline> {
        self.override_for(function).or(self.default)
    }

    /// Checks that every override names one of `functions`; the error names
    /// the first that does not and lists those there are.
    pub fn check_names(&self, functions: &[&str]) -> Result<()> {
        for (name, _) in &self.overrides {
            if !functions.contains(&name.as_str()) {
                return Err(Error::invalid(
                    "deadline",
                    format!(
                        "`{name}` is not a function of the workload (it has {})",
                        functions.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl fmt::Display for Deadlines {
    /// As a spec that parses back to it: the overrides in order, then
    /// `*=<default>` if set; empty when nothing is asked.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        for (name, d) in &self.overrides {
            write!(f, "{sep}{name}={d}")?;
            sep = ",";
        }
        if let Some(d) = self.default {
            write!(f, "{sep}*={d}")?;
        }
        Ok(())
    }
}

impl FromStr for Deadlines {
    type Err = Error;

    fn from_str(spec: &str) -> Result<Deadlines> {
        Deadlines::parse(spec)
    }
}

/// The message of an [`Error::Invalid`], to nest it in another.
fn invalid_message(e: Error) -> String {
    match e {
        Error::Invalid { message, .. } => message,
        other => other.to_string(),
    }
}
