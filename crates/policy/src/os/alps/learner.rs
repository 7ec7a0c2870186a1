//! The ALPS learner (alps-atc24 §5.2): simulate SRPT over the invocations of the
//! last window, then learn from what SRPT did a rank and a time slice per
//! function.
//!
//! The SRPT simulation is this project's simulator (the `srpt` discipline on the
//! same number of cores, no context-switch cost as in the paper's frontend), not
//! a second one; it reports every turn a task had on a core, which is the
//! paper's "time slice vector".

use super::params::{Params, Trainer};
use crate::os::baseline::Uniform;
use faasched_model::{Function, FunctionId, Invocation, Nanos, Outcome, Phases, SEC, TaskId, Time};
use faasched_sim::os::{Config, Discipline, Prediction, Sink};
use std::convert::Infallible;
use std::sync::Arc;

/// One finished invocation, as the learner replays it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The function it invoked.
    pub function: FunctionId,
    /// When it arrived.
    pub arrival: Time,
    /// What the SRPT simulation runs: for ALPS, one CPU burst of the measured
    /// CPU time (the paper's "ideal CPU time").
    pub phases: Phases,
}

/// What the learner decided for one function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Learned {
    /// Rank among the functions of the window, 1 = first (shortest mean wait
    /// under SRPT).
    pub rank: u32,
    /// Fine-tuned time slice; 0 means "the kernel's default" (Eq. 2's floor).
    pub slice: Nanos,
    /// Mean waiting time under SRPT, the rank's key.
    pub mean_wait: Nanos,
    /// The trained slice before fine-tuning (Eq. 1).
    pub trained: Nanos,
    /// Invocations of the function in the window.
    pub invocations: u32,
}

/// Per function: what the SRPT simulation did to its invocations.
struct Observed {
    function: FunctionId,
    /// Sum of the waits, added in the order the invocations finished (so the
    /// mean is the one a list of the waits would give, to the bit).
    wait_sum: f64,
    /// Its records in the window (every one finishes in the simulation).
    invocations: u32,
    /// Every turn on a core, in the order the turns ended (as `f64`, what the
    /// trainers take; exact below 2^53 ns).
    slices: Vec<f64>,
}

/// Collects the SRPT simulation's outcomes and turns by function. Task ids are
/// record indices, so a task's function is one index away, no map lookup per
/// notice.
struct Observer<'a> {
    /// Index into `observed` of each record's function.
    slot: &'a [u32],
    observed: &'a mut [Observed],
}

impl Sink for Observer<'_> {
    fn outcome(&mut self, o: Outcome) {
        let f = &mut self.observed[self.slot[o.id as usize] as usize];
        f.wait_sum += o.waiting() as f64;
    }
    fn turn(&mut self, task: TaskId, cpu: Nanos) {
        let f = &mut self.observed[self.slot[task.0 as usize] as usize];
        f.slices.push(cpu as f64);
    }
}

/// The longest slice learned: an hour, far past any function's turn. A
/// large α (Eq. 2 multiplies the trained slice by it) or a steep regression
/// could otherwise learn one near the ns clock's end, which alps-kernel's
/// hold would carry past it.
pub const MAX_SLICE: Nanos = 3_600 * SEC;

/// Learns a rank and a slice for every function in `records` (finished in the
/// last window), for a machine of `cores` whose measured utilisation over the
/// window was `utilisation` (0..=1). Functions come back in rank order.
pub fn learn(
    records: &[Record],
    cores: usize,
    utilisation: f64,
    params: &Params,
) -> Vec<(FunctionId, Learned)> {
    let observed = simulate_srpt(records, cores);
    let penalty = params.penalty(utilisation);
    let mut learned: Vec<(FunctionId, Learned)> = observed
        .iter()
        .map(|o| {
            let mean_wait = o.wait_sum / o.invocations as f64;
            let trained = train(params, &o.slices);
            let tuned = if params.unpredictability {
                (params.alpha * trained - params.beta * stdev(&o.slices)).max(0.0)
            } else {
                trained
            };
            let slice = (penalty * tuned).min(tuned).min(MAX_SLICE as f64);
            let learned = Learned {
                rank: 0,
                slice: slice.round() as Nanos,
                mean_wait: mean_wait.round() as Nanos,
                trained: trained.round() as Nanos,
                invocations: o.invocations,
            };
            (o.function, learned)
        })
        .collect();
    learned.sort_by_key(|(f, l)| (l.mean_wait, *f));
    for (i, (_, l)) in learned.iter_mut().enumerate() {
        l.rank = i as u32 + 1;
    }
    learned
}

/// Runs the window's invocations under SRPT on `cores` and groups what happened
/// by function, in order of first sight (`learn` sorts by rank).
fn simulate_srpt(records: &[Record], cores: usize) -> Vec<Observed> {
    // Function ids are dense (interned in order of first sight), so a table
    // indexed by id finds each record's entry without hashing or sorting.
    let ids = records.iter().map(|r| r.function.0 as usize + 1).max();
    let mut index = vec![u32::MAX; ids.unwrap_or(0)];
    let mut observed: Vec<Observed> = Vec::new();
    let slot: Vec<u32> = records
        .iter()
        .map(|r| {
            let s = &mut index[r.function.0 as usize];
            if *s == u32::MAX {
                *s = observed.len() as u32;
                observed.push(Observed {
                    function: r.function,
                    wait_sum: 0.0,
                    invocations: 0,
                    slices: Vec::new(),
                });
            }
            observed[*s as usize].invocations += 1;
            *s
        })
        .collect();
    // Every invocation has at least one turn: room for that many up front.
    for o in &mut observed {
        o.slices.reserve_exact(o.invocations as usize);
    }
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by_key(|&i| (records[i].arrival, i));
    let no_name: Arc<str> = Arc::from("");
    let stream = order.iter().map(|&i| {
        let r = &records[i];
        Ok::<_, Infallible>(Invocation {
            id: i as u64,
            function: Function {
                id: r.function,
                name: no_name.clone(),
            },
            arrival: r.arrival,
            phases: r.phases.clone(),
            memory_mb: 0,
            deadline: None,
        })
    });
    let mut config = Config::new(cores.max(1));
    config.discipline = Discipline::Srpt(Prediction::Exact);
    config.context_switch = 0;
    config.report_turns = true;
    let observer = Observer {
        slot: &slot,
        observed: &mut observed,
    };
    // Phases are validated where records are made (every phase positive) and
    // the configuration is the stock one, so the run cannot fail.
    let run = faasched_sim::os::run(&config, &mut Uniform::passive("srpt"), stream, observer);
    debug_assert!(run.is_ok(), "the learner's SRPT run failed");
    observed
}

/// Eq. 1: one slice from a function's slices in time order.
fn train(params: &Params, slices: &[f64]) -> f64 {
    let Some(&first) = slices.first() else {
        return 0.0;
    };
    match params.trainer {
        Trainer::Average => mean(slices.iter().copied()).unwrap_or(0.0),
        Trainer::LinearRegression => {
            let n = slices.len() as f64;
            let x_mean = (n - 1.0) / 2.0;
            let y_mean = mean(slices.iter().copied()).unwrap_or(0.0);
            let (mut sxy, mut sxx) = (0.0, 0.0);
            for (x, y) in slices.iter().enumerate() {
                let dx = x as f64 - x_mean;
                sxy += dx * (y - y_mean);
                sxx += dx * dx;
            }
            let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
            (y_mean + slope * (n - x_mean)).max(0.0)
        }
        Trainer::Ewma => slices[1..].iter().fold(first, |acc, &s| {
            params.ewma_weight * s + (1.0 - params.ewma_weight) * acc
        }),
    }
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Population standard deviation.
fn stdev(xs: &[f64]) -> f64 {
    let Some(m) = mean(xs.iter().copied()) else {
        return 0.0;
    };
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::{MS, Phase};
    use std::collections::BTreeMap;

    fn rec(f: u32, arrival_ms: u64, cpu_ms: u64) -> Record {
        Record {
            function: FunctionId(f),
            arrival: arrival_ms * MS,
            phases: Phases::from_buf([Phase::Cpu(cpu_ms * MS)]),
        }
    }

    fn plain() -> Params {
        Params {
            unpredictability: false,
            overload: false,
            ..Params::default()
        }
    }

    /// One core. f0 (100 ms) arrives at 0; f1 (10 ms) at 20 ms preempts it and
    /// runs to 30; f0 resumes. f2 (30 ms) arrives at 50, when f0 has 60 left, so
    /// f2 preempts and runs 50–80; f0 runs 80–140.
    /// SRPT waits: f1 0, f2 0, f0 40. Slices: f0 [20, 20, 60], f1 [10], f2 [30].
    #[test]
    fn hand_computed_window() {
        let records = [rec(0, 0, 100), rec(1, 20, 10), rec(2, 50, 30)];
        let learned = learn(&records, 1, 0.0, &plain());
        let by: BTreeMap<u32, Learned> = learned.iter().map(|(f, l)| (f.0, *l)).collect();
        assert_eq!(by[&1].mean_wait, 0);
        assert_eq!(by[&2].mean_wait, 0);
        assert_eq!(by[&0].mean_wait, 40 * MS);
        // Ties in mean wait break by function id.
        let order: Vec<u32> = learned.iter().map(|(f, _)| f.0).collect();
        assert_eq!(order, [1, 2, 0]);
        assert_eq!(
            learned.iter().map(|(_, l)| l.rank).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(by[&0].slice, 100 * MS / 3); // mean of 20, 20, 60, rounded
        assert_eq!(by[&1].slice, 10 * MS);
        assert_eq!(by[&2].slice, 30 * MS);
    }

    #[test]
    fn fine_tuning_follows_equations_2_and_3() {
        let records = [rec(0, 0, 100), rec(1, 20, 10), rec(2, 50, 30)];
        let params = Params::default(); // α 2, β 1, θ 50, γ 1
        let learned = learn(&records, 1, 0.9, &params);
        let f0 = learned.iter().find(|(f, _)| f.0 == 0).unwrap().1;
        // slices 20, 20, 60 ms: mean 33.33, population stdev 18.86;
        // 2·33.33 − 18.86 = 47.81 ms, times p = 0.6: 28.69 ms.
        let sd = ((2.0 * (40.0f64 / 3.0).powi(2) + (80.0f64 / 3.0).powi(2)) / 3.0).sqrt();
        let expect = 0.6 * (2.0 * 100.0 / 3.0 - sd) * MS as f64;
        assert!((f0.slice as f64 - expect).abs() < 0.01 * MS as f64);
        // A function with one slice has no spread: 2 × 10 ms × 0.6.
        let f1 = learned.iter().find(|(f, _)| f.0 == 1).unwrap().1;
        assert_eq!(f1.slice, 12 * MS);
        // A large β floors the slice at 0, "the kernel's default".
        let harsh = Params {
            beta: 10.0,
            ..params
        };
        let f0 = learn(&records, 1, 0.9, &harsh)[2].1;
        assert_eq!(f0.slice, 0);
        // A huge α learns an hour at most.
        let huge = Params {
            alpha: 1e11,
            ..params
        };
        assert!(
            learn(&records, 1, 0.9, &huge)
                .iter()
                .all(|(_, l)| l.slice == MAX_SLICE)
        );
    }

    #[test]
    fn trainers() {
        let p = |trainer| Params { trainer, ..plain() };
        let rising = [1.0, 2.0, 3.0];
        assert_eq!(train(&p(Trainer::Average), &rising), 2.0);
        assert!((train(&p(Trainer::LinearRegression), &rising) - 4.0).abs() < 1e-9);
        // 1, then 0.5·2 + 0.5·1 = 1.5, then 0.5·3 + 0.5·1.5 = 2.25
        assert_eq!(train(&p(Trainer::Ewma), &rising), 2.25);
        assert_eq!(train(&p(Trainer::LinearRegression), &[5.0]), 5.0);
        assert_eq!(train(&p(Trainer::LinearRegression), &[9.0, 1.0]), 0.0);
        assert_eq!(train(&p(Trainer::Average), &[]), 0.0);
    }

    #[test]
    fn two_cores_share_the_window() {
        // Two 10 ms invocations at once on 2 cores: neither waits, one slice each.
        let records = [rec(0, 0, 10), rec(1, 0, 10)];
        let learned = learn(&records, 2, 0.0, &plain());
        for (_, l) in &learned {
            assert_eq!((l.mean_wait, l.slice, l.invocations), (0, 10 * MS, 1));
        }
        assert!(learn(&[], 2, 0.0, &plain()).is_empty());
    }
}
