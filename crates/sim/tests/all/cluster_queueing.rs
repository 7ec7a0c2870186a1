//! The cluster engine against queueing theory: one server of one core is
//! an M/G/1 processor-sharing queue, whose mean latency is E[S] / (1 − ρ)
//! whatever the distribution of the work (exponential or constant here),
//! within 3%.

use crate::cluster::{Lru, profile, simulate, to_zero};
use faasched_model::cluster::{Invocation, InvocationId, KeepAlive};
use faasched_model::{FunctionId, Nanos, US};
use faasched_sim::cluster::ClusterConfig;
use rand::{Rng, SeedableRng};
use rand_distr::Exp;
use rand_pcg::Pcg64;

/// Invocations enough for the mean's standard error to be about 1% at 50%
/// load.
const N: u64 = 200_000;

/// The mean latency in µs of Poisson arrivals at `rate` per µs with work
/// drawn by `work`, on one core, every container kept (warm = cold, so
/// cold starts cost nothing).
fn mean_latency_us(seed: u64, rate: f64, mut work: impl FnMut(&mut Pcg64) -> Nanos) -> f64 {
    let mut rng = Pcg64::seed_from_u64(seed);
    let gap = Exp::new(rate).unwrap();
    let mut t = 0.0f64;
    let invs = (0..N)
        .map(|i| {
            t += rng.sample(gap);
            Invocation {
                id: InvocationId(i),
                function: FunctionId(0),
                arrival: (t * US as f64) as u64,
                work: work(&mut rng),
            }
        })
        .collect();
    let keep = |_| -> Box<dyn KeepAlive> { Box::new(Lru::default()) };
    let p = [profile(0, 1, 1, 1)];
    let config = ClusterConfig::new(1, 1, u32::MAX);
    let (out, stats) = simulate(&config, &mut to_zero(), keep, &p, invs).unwrap();
    assert_eq!(stats.finished, N);
    out.iter().map(|o| o.latency().unwrap() as f64).sum::<f64>() / N as f64 / US as f64
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
fn m_m_1_ps_mean_latency() {
    // E[S] = 100 µs at ρ = 0.5: 200 µs.
    let s = Exp::new(1.0 / 100.0).unwrap();
    let m = mean_latency_us(1, 0.005, |r| (r.sample(s) * US as f64) as u64);
    assert_within_3pct(m, 200.0);
}

#[test]
fn m_d_1_ps_mean_latency_is_insensitive_to_the_work_s_distribution() {
    // Constant 100 µs at ρ = 0.5: 200 µs as well (FIFO would give 150).
    let m = mean_latency_us(2, 0.005, |_| 100 * US);
    assert_within_3pct(m, 200.0);
}
