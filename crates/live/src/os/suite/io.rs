//! io: the ALPS I/O study's I/O-bound function: "a short CPU burst (simulating
//! request parsing), sleep for a configurable duration (simulating I/O wait),
//! and then another short CPU burst (processing the response)". Its unit is
//! one parse of a request, so a plan's work steps are bursts of parsing.

use super::{Kind, Plan, Spec, Step, Unit, execute};
use faasched_model::MS;
use std::fmt::Write;
use std::hint::black_box;
use std::sync::OnceLock;

pub(super) const SPEC: Spec = Spec {
    name: "io",
    description: "a CPU burst (parsing), a real blocking wait, a CPU burst (the ALPS I/O study's function)",
    param: "milliseconds of blocking wait between the bursts",
    default_n: 100,
    max_n: 3_600_000,
    unit: Unit::Own {
        about: "parse a request of 6,000 numbers",
        work: parse,
    },
    sweep: [0, 2, 8],
    run,
};

/// Units in each burst of a run at `n` (about 1 ms of CPU, the mixed-io
/// workload's bursts).
const BURST_UNITS: u64 = 25;
/// Numbers in the request a unit parses.
const REQUEST_NUMBERS: u64 = 6_000;

fn run(ms: u64) -> u64 {
    let burst = Step::Work(BURST_UNITS);
    execute(
        Kind::Io,
        &Plan(vec![burst, Step::Wait(ms.saturating_mul(MS)), burst]),
    )
}

/// Parses the request, comma-separated decimal numbers, and returns their sum.
fn parse() -> u64 {
    let mut sum = 0u64;
    let mut number = 0u64;
    for &b in black_box(request().as_bytes()) {
        if b == b',' {
            sum = sum.wrapping_add(number);
            number = 0;
        } else {
            number = number.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
        }
    }
    sum.wrapping_add(number)
}

/// The request: the same text for every unit, made once per process.
fn request() -> &'static str {
    static REQUEST: OnceLock<String> = OnceLock::new();
    REQUEST.get_or_init(|| {
        let mut text = String::new();
        for i in 0..REQUEST_NUMBERS {
            let sep = if i == 0 { "" } else { "," };
            write!(text, "{sep}{}", i * i * 7919 % 1_000_003).expect("writing to a String");
        }
        text
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_every_number() {
        let expected: u64 = (0..super::REQUEST_NUMBERS)
            .map(|i| i * i * 7919 % 1_000_003)
            .sum();
        assert_eq!(super::parse(), expected);
        assert_eq!(super::run(0), 2 * super::BURST_UNITS * expected);
    }
}
