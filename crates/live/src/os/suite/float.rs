//! float: FunctionBench's float_operation, a loop that takes the sine, cosine
//! and square root of each index: floating-point work in registers, no memory.

use super::{Spec, Unit};
use std::hint::black_box;

pub(super) const SPEC: Spec = Spec {
    name: "float",
    description: "sin, cos and sqrt of 0..n, as FunctionBench's float_operation (floating point)",
    param: "loop iterations, each a sin, a cos and a sqrt",
    default_n: 1_000_000,
    max_n: 100_000_000_000,
    unit: Unit::At(2_000),
    sweep: [10_000, 40_000, 160_000],
    run,
};

fn run(n: u64) -> u64 {
    let mut sum = 0.0f64;
    for i in 0..black_box(n) {
        let x = i as f64;
        sum += x.sin() + x.cos() + x.sqrt();
    }
    sum.to_bits()
}
