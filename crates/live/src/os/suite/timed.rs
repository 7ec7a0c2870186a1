//! One run of a function, timed: what `faasched fn NAME` does.

use super::{Kind, Plan, execute};
use faasched_model::fmt_ms;
use faasched_sys::clock::{monotonic, thread_cpu};
use serde::Serialize;

/// What a run does: the function at a parameter, or a plan.
#[derive(Serialize, Debug)]
#[serde(untagged)]
pub enum Job {
    /// The function once at parameter `n`.
    At {
        /// The parameter.
        n: u64,
    },
    /// A plan of work and waits.
    Plan {
        /// The plan, as `--plan` spells it.
        #[serde(serialize_with = "as_text")]
        plan: Plan,
    },
}

fn as_text<S: serde::Serializer>(plan: &Plan, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(plan)
}

/// One run, as `faasched fn --json` prints it.
#[derive(Serialize, Debug)]
pub struct Ran {
    /// The function.
    pub function: &'static str,
    /// What it did.
    #[serde(flatten)]
    pub job: Job,
    /// What it computed (so that the work cannot be optimised away).
    pub checksum: u64,
    /// This thread's CPU time over the run, ms.
    pub cpu_ms: f64,
    /// Wall time over the run, ms.
    pub wall_ms: f64,
}

/// Runs `job` of function `kind` on this thread, timed.
pub fn run(kind: Kind, job: Job) -> Ran {
    let (wall, cpu) = (monotonic(), thread_cpu());
    let checksum = match &job {
        Job::At { n } => kind.run(*n),
        Job::Plan { plan } => execute(kind, plan),
    };
    Ran {
        function: kind.name(),
        job,
        checksum,
        cpu_ms: fmt_ms(thread_cpu() - cpu),
        wall_ms: fmt_ms(monotonic() - wall),
    }
}
