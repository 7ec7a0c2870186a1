//! Against queueing theory: one core, Poisson arrivals at 70% load, log-normal
//! service. The non-preemptive FIFO must match Pollaczek–Khinchine, processor
//! sharing E[S]/(1−ρ), and SRPT must have the lowest mean of all.

use super::*;
use faasched_model::US;
use faasched_sim::os::{FairClass, Prediction};
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, LogNormal};
use rand_pcg::Pcg64Mcg;

const RHO: f64 = 0.7;
/// Service ~ LogNormal(μ, σ) in ms. σ = 1 keeps E[S²] finite and estimable
/// from a few hundred thousand samples (the Azure fit's σ = 2.36 would need
/// far more for a few percent).
const MU: f64 = 1.0;
const SIGMA: f64 = 1.0;
const N: usize = 300_000;

fn mean_service_ms() -> f64 {
    (MU + SIGMA * SIGMA / 2.0).exp()
}

fn workload(seed: u64) -> Vec<Invocation> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let service = LogNormal::new(MU, SIGMA).unwrap();
    let gaps = Exp::new(RHO / mean_service_ms()).unwrap();
    let mut at = 0.0;
    (0..N as u64)
        .map(|id| {
            at += gaps.sample(&mut rng);
            let s = (service.sample(&mut rng) * 1000.0).max(1.0) as u64;
            inv(id, 0, (at * 1000.0) as u64 * US, &[Phase::Cpu(s * US)])
        })
        .collect()
}

fn mean_turnaround_ms(cfg: &Config, policy: &mut dyn Steer, invs: &[Invocation]) -> f64 {
    let mut sum = 0u128;
    let mut n = 0u128;
    run(
        cfg,
        policy,
        invs.iter().cloned().map(Ok::<_, Infallible>),
        |o: Outcome| {
            sum += o.turnaround() as u128;
            n += 1;
        },
    )
    .unwrap();
    sum as f64 / n as f64 / MS as f64
}

#[test]
fn one_core_queues_match_theory() {
    let invs = workload(42);
    let es = mean_service_ms();
    let es2 = (2.0 * MU + 2.0 * SIGMA * SIGMA).exp();
    let lambda = RHO / es;
    let pk = es + lambda * es2 / (2.0 * (1.0 - RHO));
    let ps_theory = es / (1.0 - RHO);

    let fifo_np = mean_turnaround_ms(
        &ideal(1, Discipline::FifoNp),
        &mut all(Class::Normal),
        &invs,
    );
    let ps = mean_turnaround_ms(&ideal(1, Discipline::Ps), &mut all(Class::Normal), &invs);
    let srpt = mean_turnaround_ms(
        &ideal(1, Discipline::Srpt(Prediction::Exact)),
        &mut all(Class::Normal),
        &invs,
    );
    let within = |got: f64, want: f64, tol: f64| (got - want).abs() / want < tol;
    assert!(
        within(fifo_np, pk, 0.05),
        "fifo-np {fifo_np:.3} ms vs P-K {pk:.3} ms"
    );
    assert!(
        within(ps, ps_theory, 0.05),
        "ps {ps:.3} ms vs E[S]/(1-ρ) {ps_theory:.3} ms"
    );

    let mut others = vec![("fifo-np", fifo_np), ("ps", ps)];
    for (name, class, fair) in [
        ("eevdf", Class::Normal, FairClass::Eevdf),
        ("cfs", Class::Normal, FairClass::Cfs),
        ("fifo", Class::Fifo(50), FairClass::Eevdf),
        ("rr", Class::Rr(50), FairClass::Eevdf),
    ] {
        let mut cfg = ideal(1, Discipline::Linux);
        cfg.fair = fair;
        others.push((name, mean_turnaround_ms(&cfg, &mut all(class), &invs)));
    }
    for (name, m) in others {
        assert!(srpt < m, "srpt {srpt:.3} ms is not below {name} {m:.3} ms");
    }
}
