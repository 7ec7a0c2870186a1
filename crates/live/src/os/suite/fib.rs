//! fib: the n-th Fibonacci number by naive recursion, the ALPS suite's
//! CPU-bound classic. Its cost grows as φⁿ (×1.618 per step of n) and touches
//! no memory beyond the stack: pure, branchy integer work.

use super::{Spec, Unit};
use std::hint::black_box;

pub(super) const SPEC: Spec = Spec {
    name: "fib",
    description: "the n-th Fibonacci number by naive recursion (pure integer work)",
    param: "which Fibonacci number; cost grows 1.618× per step",
    default_n: 30,
    max_n: 50,
    unit: Unit::At(21),
    sweep: [21, 25, 29],
    run,
};

fn run(n: u64) -> u64 {
    fib(black_box(n))
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib(n - 1).wrapping_add(fib(n - 2))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn computes_fibonacci() {
        assert_eq!([0, 1, 2, 10, 30].map(super::run), [0, 1, 1, 55, 832_040]);
    }
}
