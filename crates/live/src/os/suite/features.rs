//! features: the ALPS suite's feature extraction, as histograms of oriented
//! gradients (HOG) of a synthetic image: a Sobel filter over every pixel, then
//! each pixel's gradient binned by orientation into its 8×8 cell's histogram,
//! each histogram normalised. Streaming image work with some trigonometry.

use super::{Spec, Unit};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::f32::consts::PI;
use std::hint::black_box;

pub(super) const SPEC: Spec = Spec {
    name: "features",
    description: "histograms of oriented gradients of a seeded synthetic image (Sobel, binning)",
    param: "side of the square image, pixels",
    default_n: 1_024,
    max_n: 8_192,
    unit: Unit::At(32),
    sweep: [128, 256, 512],
    run,
};

/// Seed of every image's noise.
const SEED: u64 = 0x6665_6174_7572_6573;
/// Side of a HOG cell, pixels.
const CELL: usize = 8;
/// Orientation bins over 0..π (unsigned gradients, as in Dalal & Triggs).
const BINS: usize = 9;

/// Extracts the features of the `side`×`side` image and returns the sum of
/// every normalised bin, in thousandths.
fn run(side: u64) -> u64 {
    let side = usize::try_from(black_box(side)).expect("side is at most max_n");
    let image = image(side);
    let cells = side.div_ceil(CELL);
    let mut histograms = vec![[0.0f32; BINS]; cells * cells];
    for y in 1..side.saturating_sub(1) {
        for x in 1..side - 1 {
            let p = |dx: usize, dy: usize| f32::from(image[(y + dy - 1) * side + x + dx - 1]);
            let gx = p(2, 0) + 2.0 * p(2, 1) + p(2, 2) - p(0, 0) - 2.0 * p(0, 1) - p(0, 2);
            let gy = p(0, 2) + 2.0 * p(1, 2) + p(2, 2) - p(0, 0) - 2.0 * p(1, 0) - p(2, 0);
            let angle = gy.atan2(gx).rem_euclid(PI);
            let bin = ((angle / PI * BINS as f32) as usize).min(BINS - 1);
            histograms[(y / CELL) * cells + x / CELL][bin] += gx.hypot(gy);
        }
    }
    histograms
        .iter()
        .map(|h| {
            let norm = h
                .iter()
                .map(|v| v * v)
                .sum::<f32>()
                .sqrt()
                .max(f32::EPSILON);
            h.iter().map(|v| (v / norm * 1e3) as u64).sum::<u64>()
        })
        .sum()
}

/// A grey image with structure to find: concentric rings and a diagonal ramp,
/// plus seeded noise.
fn image(side: usize) -> Vec<u8> {
    let mut rng = Pcg64Mcg::seed_from_u64(SEED);
    let mut pixels = Vec::with_capacity(side * side);
    for y in 0..side {
        for x in 0..side {
            let rings = ((x * x + y * y) / 64) % 128;
            let ramp = (x + y) % 64;
            pixels.push((rings + ramp) as u8 + rng.random_range(0..64));
        }
    }
    pixels
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_cell_has_features() {
        // Each of the 4×4 cells' normalised histograms sums to at least 1 (in
        // thousandths: ≥ 1,000 each, less rounding).
        let sum = super::run(32);
        assert!(sum > 16 * 990 && sum < 16 * 3 * 1_000, "{sum}");
        assert_eq!(super::run(1), 0);
        assert_eq!(super::run(0), 0);
    }
}
