//! Hand-made outcomes shared by the integration tests.

use faasched_model::{Function, FunctionId, Group, MS, Nanos, Outcome, US};
use std::sync::Arc;

/// One outcome; times in ns.
fn outcome(
    id: u64,
    group: Group,
    (arrival, first_run, finish): (Nanos, Nanos, Nanos),
    (cpu, io): (Nanos, Nanos),
    (voluntary_switches, involuntary_switches): (u64, u64),
    memory_mb: u32,
) -> Outcome {
    let name = if id.is_multiple_of(2) {
        "fn-even"
    } else {
        "fn-odd"
    };
    Outcome {
        id,
        function: Function {
            id: FunctionId(id as u32 % 2),
            name: Arc::from(name),
        },
        group,
        arrival,
        first_run,
        finish,
        cpu,
        io,
        voluntary_switches,
        involuntary_switches,
        memory_mb,
    }
}

/// Five outcomes, three in G1 and two in G2 (per-metric values in the tests).
pub fn five() -> Vec<Outcome> {
    vec![
        // turnaround 11, response 1, execution 10, waiting 1, slowdown 1.1
        outcome(1, Group::G1, (0, MS, 11 * MS), (10 * MS, 0), (1, 0), 128),
        // turnaround 22, response 2, execution 20, waiting 7, slowdown 22/15
        outcome(
            2,
            Group::G1,
            (0, 2 * MS, 22 * MS),
            (10 * MS, 5 * MS),
            (3, 2),
            256,
        ),
        // turnaround 1.2, response 0, execution 1.2 (billed 2), waiting 0, slowdown 1
        outcome(
            3,
            Group::G1,
            (10 * MS, 10 * MS, 11_200 * US),
            (1_200 * US, 0),
            (1, 0),
            128,
        ),
        // turnaround 100, response 0, execution 100, waiting 40, slowdown 100/60
        outcome(4, Group::G2, (0, 0, 100 * MS), (60 * MS, 0), (1, 5), 512),
        // turnaround 200, response 20, execution 180, waiting 60, slowdown 200/140
        outcome(
            5,
            Group::G2,
            (50 * MS, 70 * MS, 250 * MS),
            (120 * MS, 20 * MS),
            (4, 3),
            1024,
        ),
    ]
}
