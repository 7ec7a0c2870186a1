//! The node engine against queueing theory: one worker, FIFO, free
//! mechanisms, Poisson arrivals; the mean latency within 3% of M/M/1 and of
//! M/G/1 (Pollaczek–Khinchine).

use crate::node::{ToWorker, node, request};
use faasched_model::node::{Order, Request};
use faasched_model::{Nanos, US};
use faasched_sim::node::{Costs, run};
use rand::{Rng, SeedableRng};
use rand_distr::Exp;
use rand_pcg::Pcg64;
use std::convert::Infallible;

/// Requests enough for the mean's standard error to be well under 1% at
/// 50% load (the slowest case, M/M/1, has a relative variance of the
/// sojourn time of 1 and a correlation time of a few dozen requests).
const N: u64 = 200_000;

/// Poisson arrivals at `rate` per µs with service times drawn by `work`.
fn poisson(
    seed: u64,
    rate: f64,
    mut work: impl FnMut(&mut Pcg64) -> Nanos,
) -> impl Iterator<Item = Request> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let gap = Exp::new(rate).unwrap();
    let mut t = 0.0f64;
    (0..N).map(move |i| {
        t += rng.sample(gap);
        let w = work(&mut rng);
        request(i, 0, (t * US as f64) as u64, w, 10 * w)
    })
}

/// The mean latency in µs of one FIFO worker serving `reqs` for free.
fn mean_latency_us(reqs: impl Iterator<Item = Request>) -> f64 {
    let mut policies = vec![Box::new(ToWorker::zero(Order::Fifo))];
    let (mut sum, mut n) = (0u128, 0u64);
    run(
        &node(1, Costs::zero()),
        &mut policies,
        reqs.map(Ok::<_, Infallible>),
        |o: faasched_model::node::RequestOutcome| {
            sum += o.latency().unwrap() as u128;
            n += 1;
        },
    )
    .unwrap();
    assert_eq!(n, N);
    sum as f64 / n as f64 / US as f64
}

fn assert_within_3pct(measured: f64, theory: f64) {
    let err = (measured - theory).abs() / theory;
    assert!(
        err < 0.03,
        "mean latency {measured:.2} µs vs theory {theory:.2} µs ({:.1}% off)",
        err * 100.0
    );
}

#[test]
fn mm1_mean_latency_is_one_over_mu_minus_lambda() {
    // Service mean 10 µs (μ = 0.1/µs), λ = 0.05/µs: 1/(μ − λ) = 20 µs.
    let exp = Exp::new(0.1).unwrap();
    let reqs = poisson(1, 0.05, |rng| (rng.sample(exp) * US as f64) as Nanos);
    assert_within_3pct(mean_latency_us(reqs), 20.0);
}

/// Pollaczek–Khinchine: E[T] = E[S] + λ E[S²] / (2 (1 − ρ)).
fn pk(rate: f64, mean: f64, second: f64) -> f64 {
    let rho = rate * mean;
    mean + rate * second / (2.0 * (1.0 - rho))
}

#[test]
fn md1_mean_latency_follows_pollaczek_khinchine() {
    // 10 µs each at 60% load: 10 + 0.06 × 100 / 0.8 = 17.5 µs.
    let reqs = poisson(2, 0.06, |_| 10 * US);
    assert_within_3pct(mean_latency_us(reqs), pk(0.06, 10.0, 100.0));
}

#[test]
fn bimodal_mean_latency_follows_pollaczek_khinchine() {
    // 20 µs with probability 0.8, 200 µs otherwise: E[S] = 56 µs,
    // E[S²] = 8,320 µs²; at 50% load E[T] = 56 + 74.3 µs.
    let rate = 0.5 / 56.0;
    let reqs = poisson(3, rate, |rng| {
        if rng.random_bool(0.8) {
            20 * US
        } else {
            200 * US
        }
    });
    assert_within_3pct(mean_latency_us(reqs), pk(rate, 56.0, 8_320.0));
}
