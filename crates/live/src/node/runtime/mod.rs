//! The node runtime's scheduling: dispatcher threads, each with a group of
//! worker threads, running the node simulator's [`Dispatch`] policies
//! unchanged over whatever executes a request (an [`Executor`]: WebAssembly
//! sandboxes in `faasched node serve`, plain closures in tests).
//!
//! # Threads
//!
//! - A **dispatcher** per group takes requests from the ingress in arrival
//!   order, asks the policy where each goes, and wakes or interrupts the
//!   worker it names; with a quantum (Shinjuku's, or a local round-robin
//!   one) it also looks at its running workers every quantum.
//! - A **worker** takes the head of its queue in the policy's local order
//!   (EDF, FIFO, SRPT), runs it until it finishes or is interrupted, and
//!   sleeps when it has nothing to run (a futex wait through
//!   [`std::thread::park`]; with [`RuntimeConfig::poll`] it spins
//!   instead); an interrupted request goes back
//!   into the queue with its sandbox's state (a re-pick) or back to the
//!   policy (a take-back).
//!
//! Both share their group's state under one mutex ([`group`]): the
//! [`faasched_model::node::Workers`] the policy reads are the workers'
//! queues themselves. Time is ns since the runtime started.

pub(crate) mod group;
mod threads;

use super::invoke::{Answer, Backend, Failure, Invoke, Reply, Written};
use super::manifest::Settings;
use faasched_model::Nanos;
use faasched_model::node::{Dispatch, Estimate, MedianEstimator, PAPER_WINDOW};
use faasched_wasm::Deployment;
use faasched_workload::node::{DEFAULT_DEADLINE_FACTOR, Deadline, Deadlines};
use group::Estimator;
pub use threads::Runtime;
pub(crate) use threads::pin_to;

/// What a request that ran to its end returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    /// The function's value; a WASI command's exit status.
    pub value: i64,
    /// What a WASI command or a component answered.
    pub written: Option<Written>,
    /// The CPU time its sandbox ran.
    pub cpu: Nanos,
    /// Whether it started its container cold (see [`super::containers`]).
    pub cold: bool,
}

/// How a request's run on a worker ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Finished, or why it has no result.
    Done(Result<Finished, Failure>),
    /// Stopped at a check after [`Executor::preempt`]: resumable.
    Stopped,
}

/// What runs requests on the workers: a sandbox per request that can stop
/// at a check and resume later, possibly on another worker.
pub trait Executor: Send + Sync + 'static {
    /// One request's sandbox.
    type Job: Send + 'static;

    /// Prepares `invoke` to run on worker `worker` (numbered across the
    /// runtime); an error is the request's answer.
    fn start(&self, worker: usize, invoke: &Invoke) -> Result<Self::Job, Failure>;

    /// [`Backend::check`]: what of `invoke` can be refused before it is
    /// queued. By default nothing.
    fn check(&self, _invoke: &Invoke) -> Result<(), Failure> {
        Ok(())
    }

    /// Runs `job` on worker `worker` until it finishes or stops at a check
    /// after [`Executor::preempt`] asked `worker` to.
    fn resume(&self, worker: usize, job: &mut Self::Job) -> Step;

    /// Asks worker `worker`'s running job to stop at its next check; any
    /// thread may call it, at any time (a job that is not running any more
    /// ignores it, or stops once and is resumed).
    fn preempt(&self, worker: usize);

    /// The CPU `invoke` will need, where the executor knows it (a
    /// calibrated spin); the runtime's estimate otherwise.
    fn work(&self, invoke: &Invoke) -> Option<Nanos>;

    /// Registers a module under `name` with its own limits and
    /// environment.
    fn register(&self, name: &str, module: &[u8], deployment: Deployment) -> Result<(), Failure>;

    /// Removes the module registered under `name`.
    fn unregister(&self, name: &str) -> Result<(), Failure>;

    /// [`Backend::log`]: function `name`'s standard error, where the
    /// executor keeps it.
    fn log(&self, name: &str) -> Result<bytes::Bytes, Failure> {
        Err(Failure::UnknownFunction(name.to_owned()))
    }

    /// Appends the executor's own metrics, in Prometheus text format.
    fn write_metrics(&self, _out: &mut String) {}

    /// The executor's own state for `GET /status`, if it keeps any.
    fn status(&self) -> Option<serde_json::Value> {
        None
    }
}

/// How a runtime is laid out and what it assumes of requests.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeConfig {
    /// Dispatchers, each with its own group of workers; requests go to them
    /// in turn.
    pub dispatchers: usize,
    /// Workers per dispatcher.
    pub workers: usize,
    /// CPUs to pin the threads to, dispatchers first, then workers in
    /// order; empty leaves them unpinned. Fewer CPUs than threads wrap.
    pub cpus: Vec<usize>,
    /// The relative deadline of a request that names none (or whose
    /// client may not choose one), by its label: its override, else `*`'s,
    /// else [`DEFAULT_DEADLINE_FACTOR`] times its estimate, SledgeScale's
    /// "10x the execution time". A factor of the estimate, not one time
    /// for all, keeps a long function's requests preemptible: a fixed
    /// deadline shorter than a request's work leaves it no slack, and
    /// SledgeScale never preempts a request without slack.
    pub deadlines: Deadlines,
    /// The estimate of a request whose work the executor does not know and
    /// whose function has no finished run yet.
    pub estimate: Nanos,
    /// What policies are told of a request's work: the executor's
    /// knowledge where it has any, else the median of the function's last
    /// 256 CPU times (`Given`), or that median for every request
    /// ([`Estimate::PAPER_MEDIAN`]: SledgeScale's `perf_window` of 256).
    pub estimator: Estimate,
    /// Function labels known in advance, ids 0, 1, ... in this order (a
    /// workload's functions, so that a policy planned from the workload,
    /// DARC, reads the same ids); other labels get the next ids as they
    /// first arrive.
    pub functions: Vec<String>,
    /// Whether idle workers and dispatchers spin on their queues instead of
    /// sleeping (lower wake-up latency, a core each kept busy).
    pub poll: bool,
}

impl Default for RuntimeConfig {
    fn default() -> RuntimeConfig {
        RuntimeConfig {
            dispatchers: 1,
            workers: 1,
            cpus: Vec::new(),
            deadlines: Deadlines::default(),
            estimate: faasched_model::MS,
            estimator: Estimate::Given,
            functions: Vec::new(),
            poll: false,
        }
    }
}

impl RuntimeConfig {
    /// The relative deadline of a request labelled `label` that names
    /// none: see [`RuntimeConfig::deadlines`].
    pub fn deadline(&self, label: &str) -> Deadline {
        self.deadlines
            .for_function(label)
            .unwrap_or(Deadline::Factor(DEFAULT_DEADLINE_FACTOR))
    }

    fn estimator(&self) -> Estimator {
        let (window, always) = match self.estimator {
            Estimate::Given => (PAPER_WINDOW, false),
            Estimate::Median { window } => (window, true),
        };
        Estimator {
            recent: MedianEstimator::new(window),
            always,
            first: self.estimate,
        }
    }
}

/// A request's [`Reply`], answered exactly once: by the runtime, or, if
/// it is dropped unanswered (a dispatcher stopped with the request still in
/// its channel, a worker that panicked), with [`Failure::ShuttingDown`].
pub(crate) struct Ticket(Option<Reply>);

impl Ticket {
    pub(crate) fn new(reply: Reply) -> Ticket {
        Ticket(Some(reply))
    }

    pub(crate) fn answer(mut self, answer: Answer) {
        if let Some(reply) = self.0.take() {
            reply(answer);
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(reply) = self.0.take() {
            reply(Err(Failure::ShuttingDown));
        }
    }
}

/// Percentiles of a latency, ns (0 with no sample).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: Nanos,
    /// 99th percentile.
    pub p99: Nanos,
    /// Largest.
    pub max: Nanos,
}

/// A dispatch policy per dispatcher, built anew for each (a policy keeps
/// state of its own group).
pub type Policies = Vec<Box<dyn Dispatch + Send>>;

impl<E: Executor> Backend for Runtime<E> {
    fn invoke(&self, invoke: Invoke, reply: Reply) {
        self.submit(invoke, reply);
    }

    fn check(&self, invoke: &Invoke) -> Result<(), Failure> {
        self.executor().check(invoke)
    }

    fn log(&self, name: &str) -> Result<bytes::Bytes, Failure> {
        self.executor().log(name)
    }

    fn register(&self, name: &str, module: &[u8], settings: &Settings) -> Result<(), Failure> {
        self.register_function(name, module, settings)
    }

    fn unregister(&self, name: &str) -> Result<(), Failure> {
        self.unregister_function(name)
    }

    fn metrics(&self, out: &mut String) {
        self.write_metrics(out);
    }

    fn status(&self) -> serde_json::Value {
        self.status_json()
    }

    fn shutdown(&self) {
        self.stop_accepting();
    }
}

#[cfg(test)]
pub(crate) mod fake;
#[cfg(test)]
mod tests;
