//! What the policies' unit tests feed them: a task arriving, an invocation
//! finishing.

use faasched_model::{Function, FunctionId, Group, Nanos, Outcome, TaskId, TaskInfo, Time};

/// Task `task` of function `function`, arriving at `arrival`.
pub fn info(task: u64, function: u32, arrival: Time) -> TaskInfo {
    TaskInfo {
        task: TaskId(task),
        function: FunctionId(function),
        arrival,
        memory_mb: 128,
        deadline: None,
    }
}

/// An invocation of `function` that arrived at `arrival` and ran `cpu` at once,
/// without waiting.
pub fn outcome(function: u32, arrival: Time, cpu: Nanos) -> Outcome {
    Outcome {
        id: 0,
        function: Function {
            id: FunctionId(function),
            name: "f".into(),
        },
        group: Group::of(cpu),
        arrival,
        first_run: arrival,
        finish: arrival + cpu,
        cpu,
        io: 0,
        voluntary_switches: 1,
        involuntary_switches: 0,
        memory_mb: 128,
    }
}
