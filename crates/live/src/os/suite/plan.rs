//! Plans: what one invocation's process does, as a short string on its command
//! line (`u123;i40000;u45`), so the launcher can hand any workload's phases to
//! `faasched fn NAME --plan PLAN` without files or pipes.

use faasched_model::{Nanos, US};
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// One step of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// This many units of the function's work (see [`super::Kind::unit`]).
    Work(u64),
    /// A real blocking wait this long: the process leaves the CPU.
    Wait(Nanos),
}

/// The steps of one invocation, in order.
///
/// Its text form is the steps joined by `;`: `u<units>` for work and `i<µs>`
/// for a wait ("i" for I/O). The empty string is the empty plan. Text carries
/// waits in whole µs, so a wait that is not one prints rounded to the nearest
/// µs; every plan parsed from text, and every plan
/// [`Calibration::plan`](crate::os::unit_cpu::Calibration::plan) makes, prints
/// back to the same text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan(pub Vec<Step>);

/// Nanoseconds to the nearest whole µs.
pub(crate) fn round_to_us(ns: Nanos) -> Nanos {
    ns / US + u64::from(ns % US >= US / 2)
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            match *step {
                Step::Work(units) => write!(f, "u{units}")?,
                Step::Wait(ns) => write!(f, "i{}", round_to_us(ns))?,
            }
        }
        Ok(())
    }
}

/// A plan's text that does not parse: which step, and why.
#[derive(Debug, Error, PartialEq, Eq)]
#[error(
    "bad step {index} {step:?} in plan {plan:?}: {reason} \
     (a plan is steps like u123;i40000;u45: u = units of work, i = blocking wait in µs)"
)]
pub struct PlanError {
    /// The whole text.
    pub plan: String,
    /// The bad step's position, from 1.
    pub index: usize,
    /// The bad step's text.
    pub step: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl FromStr for Plan {
    type Err = PlanError;

    fn from_str(text: &str) -> Result<Plan, PlanError> {
        if text.is_empty() {
            return Ok(Plan::default());
        }
        text.split(';')
            .enumerate()
            .map(|(i, step)| {
                parse_step(step).map_err(|reason| PlanError {
                    plan: text.to_owned(),
                    index: i + 1,
                    step: step.to_owned(),
                    reason,
                })
            })
            .collect::<Result<_, _>>()
            .map(Plan)
    }
}

/// One step's text; strict: a letter then digits, nothing else (no sign, no
/// spaces), so a mangled command line fails instead of running something else.
fn parse_step(step: &str) -> Result<Step, &'static str> {
    let mut chars = step.chars();
    let kind = chars.next().ok_or("the step is empty")?;
    let digits = chars.as_str();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("a step's letter must be followed by a whole number");
    }
    let number: u64 = digits.parse().map_err(|_| "the number is too large")?;
    match kind {
        'u' => Ok(Step::Work(number)),
        'i' => number
            .checked_mul(US)
            .map(Step::Wait)
            .ok_or("the wait is too long"),
        _ => Err("a step starts with u (work) or i (wait)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::MS;

    fn plan(text: &str) -> Plan {
        text.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn text_round_trips() {
        for text in [
            "",
            "u0",
            "u123;i40000;u45",
            "i1",
            "u18446744073709551615;u1;i0",
        ] {
            assert_eq!(plan(text).to_string(), text);
        }
        assert_eq!(
            plan("u3;i1000;u2"),
            Plan(vec![Step::Work(3), Step::Wait(MS), Step::Work(2)])
        );
    }

    #[test]
    fn waits_print_to_the_nearest_us() {
        let p = Plan(vec![
            Step::Wait(1_499),
            Step::Wait(1_500),
            Step::Wait(u64::MAX),
        ]);
        assert_eq!(p.to_string(), "i1;i2;i18446744073709552");
    }

    #[test]
    fn bad_steps_are_named() {
        for (text, index, step) in [
            ("u3;x5", 2, "x5"),
            ("u3;", 2, ""),
            (";u3", 1, ""),
            ("u", 1, "u"),
            ("u+3", 1, "u+3"),
            ("u 3", 1, "u 3"),
            ("u3;i-1", 2, "i-1"),
            ("U3", 1, "U3"),
            ("u99999999999999999999", 1, "u99999999999999999999"),
            ("i18446744073709552", 1, "i18446744073709552"),
            ("ü3", 1, "ü3"),
        ] {
            let e = text.parse::<Plan>().unwrap_err();
            assert_eq!((e.index, e.step.as_str()), (index, step), "{text}: {e}");
            assert!(e.to_string().contains(&format!("{step:?}")), "{e}");
        }
    }
}
