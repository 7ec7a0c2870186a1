//! What `alps-io` adds to ALPS: it learns from what an invocation did, not
//! only from its CPU time, and keeps I/O-bound functions in a lane of their
//! own. docs/ALPS-IO.md gives the design and its reasons.
//!
//! The ALPS I/O study (alps-io-study §8.2) found two faults, both from
//! learning on CPU time alone: an I/O-bound function looks like a short job,
//! so it takes the first rank; and since it wakes again and again, that rank
//! lets it preempt CPU-bound work in storms. So:
//!
//! 1. **The replay sees the waits.** Each finished invocation is replayed in
//!    its real shape, its CPU split into bursts around its I/O waits (from
//!    the outcome's CPU time, I/O time and voluntary switches, all of which a
//!    live system reads from the kernel), so the SRPT simulation the ranks and
//!    slices come from has the right competition on its cores.
//! 2. **The I/O lane.** A function whose invocations spent at least
//!    [`IO_SHARE`] of their demand blocked is I/O-bound. Its rank is not
//!    used: it runs at the default weight (nice 0), so EEVDF's lag bound caps what
//!    its wakeups can take from anyone at a fair share, however often it
//!    wakes. Its latency comes instead from a short custom slice, its learned
//!    burst: a short request has an early virtual deadline, which is how
//!    EEVDF serves latency-sensitive tasks without giving them weight. The
//!    CPU-bound functions keep the ranks the lesson gives them among all
//!    functions (re-ranking them among themselves was tried and dropped:
//!    docs/ALPS-IO.md).

use super::learner::Record;
use faasched_model::{FunctionId, Nanos, Outcome, Phase, Phases};
use std::collections::{BTreeMap, BTreeSet};

/// Share of demand spent blocked (I/O over CPU plus I/O) from which a
/// function is I/O-bound. One half: more of its life waits than computes.
pub const IO_SHARE: f64 = 0.5;

/// A finished invocation as the replay runs it: `bursts` CPU bursts of equal
/// length with equal I/O waits between them, where `bursts` is the number of
/// times it gave up the core of its own accord (each block, and the exit).
/// Without I/O it is one burst, as ALPS records it.
pub fn shaped(outcome: &Outcome) -> Phases {
    let bursts = outcome.voluntary_switches.max(1);
    if outcome.io == 0 || bursts < 2 {
        return Phases::from_buf([Phase::Cpu(outcome.cpu)]);
    }
    let waits = bursts - 1;
    let mut phases = Phases::with_capacity((bursts + waits) as usize);
    for i in 0..bursts {
        if i > 0 {
            phases.push(Phase::Io(share(outcome.io, waits, i - 1)));
        }
        phases.push(Phase::Cpu(share(outcome.cpu, bursts, i)));
    }
    phases.retain(|p| !matches!(p, Phase::Cpu(0) | Phase::Io(0)));
    phases
}

/// Part `i` of `total` cut into `n` parts that differ by at most 1 ns and sum
/// to `total` exactly.
fn share(total: Nanos, n: u64, i: u64) -> Nanos {
    total / n + u64::from(i < total % n)
}

/// The functions of a window's records that are I/O-bound: blocked for at
/// least [`IO_SHARE`] of their demand, summed over the window.
pub fn io_bound(records: &[Record]) -> BTreeSet<FunctionId> {
    let mut demand: BTreeMap<FunctionId, (u128, u128)> = BTreeMap::new();
    for r in records {
        let (cpu, io) = demand.entry(r.function).or_default();
        *cpu += u128::from(Phase::cpu_total(&r.phases));
        *io += u128::from(Phase::io_total(&r.phases));
    }
    demand
        .into_iter()
        .filter(|&(_, (cpu, io))| io > 0 && io as f64 >= IO_SHARE * (cpu + io) as f64)
        .map(|(f, _)| f)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::testkit::outcome;
    use faasched_model::{FunctionId, MS};

    #[test]
    fn an_invocation_is_replayed_in_its_shape() {
        let mut o = outcome(0, 0, 5 * MS);
        // Without I/O: one burst, as ALPS records it.
        assert_eq!(shaped(&o)[..], [Phase::Cpu(5 * MS)]);
        // Blocked twice, then exited: three bursts, two waits; the ns left
        // over goes to the first burst, so the parts sum to the measured time.
        o.cpu = 5 * MS + 2;
        o.io = 100 * MS;
        o.voluntary_switches = 3;
        let phases = shaped(&o);
        assert_eq!(
            phases[..],
            [
                Phase::Cpu(1_666_668),
                Phase::Io(50 * MS),
                Phase::Cpu(1_666_667),
                Phase::Io(50 * MS),
                Phase::Cpu(1_666_667),
            ]
        );
        assert_eq!(Phase::cpu_total(&phases), o.cpu);
    }

    #[test]
    fn a_function_is_io_bound_when_it_waits_at_least_half_its_demand() {
        let rec = |f, cpu, io| Record {
            function: FunctionId(f),
            arrival: 0,
            phases: Phases::from_slice(&[Phase::Cpu(cpu), Phase::Io(io), Phase::Cpu(cpu)]),
        };
        let ids = |records: &[Record]| io_bound(records).iter().map(|f| f.0).collect::<Vec<_>>();
        assert_eq!(ids(&[rec(0, MS, 100 * MS)]), [0]);
        assert_eq!(ids(&[rec(0, MS, 2 * MS)]), [0], "exactly half");
        assert!(ids(&[rec(0, MS, 2 * MS - 1)]).is_empty());
        // Judged per function over the window, not per invocation.
        let window = [
            rec(0, MS, 100 * MS),
            rec(0, 200 * MS, 0),
            rec(1, MS, 100 * MS),
        ];
        assert_eq!(ids(&window), [1]);
        assert!(ids(&[]).is_empty());
    }
}
