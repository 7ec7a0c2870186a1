//! A fake executor for the runtime's tests: jobs that say what happened to
//! them, and wait for a preemption where a test needs one.

use super::{Executor, Runtime, Step};
use crate::node::invoke::{Answer, Failure, Invoke};
use faasched_model::{Nanos, SEC, US};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a `gate` job waits to be preempted before it fails the test.
pub(crate) const GATE_CAP: Duration = Duration::from_secs(20);

/// Jobs by function name: `echo?x=N` returns 2N at once; `gate?x=N` runs
/// until it has been stopped once, then returns N; `trap` fails.
pub(crate) struct Fake {
    flags: Vec<AtomicBool>,
    /// Each job's name as it begins to run, and its worker.
    runs: Mutex<mpsc::Sender<(String, usize)>>,
}

pub(crate) struct FakeJob {
    name: String,
    arg: i64,
    stops: u32,
    since: Instant,
}

impl Fake {
    pub(crate) fn new(workers: usize) -> (Arc<Fake>, mpsc::Receiver<(String, usize)>) {
        let (tx, rx) = mpsc::channel();
        let fake = Fake {
            flags: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            runs: Mutex::new(tx),
        };
        (Arc::new(fake), rx)
    }
}

impl Executor for Fake {
    type Job = FakeJob;

    fn start(&self, _worker: usize, invoke: &Invoke) -> Result<FakeJob, Failure> {
        match invoke.function.as_str() {
            "echo" | "gate" => Ok(FakeJob {
                name: invoke.function.clone(),
                arg: invoke
                    .query
                    .as_deref()
                    .and_then(|q| q.strip_prefix("x="))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                stops: 0,
                since: Instant::now(),
            }),
            "trap" => Err(Failure::Trap("unreachable".into())),
            other => Err(Failure::UnknownFunction(other.into())),
        }
    }

    fn resume(&self, worker: usize, job: &mut FakeJob) -> Step {
        let _ = self.runs.lock().unwrap().send((job.name.clone(), worker));
        if job.name == "echo" {
            return Step::Done(Ok(done(2 * job.arg, US)));
        }
        loop {
            if self.flags[worker].swap(false, Ordering::AcqRel) {
                job.stops += 1;
                return Step::Stopped;
            }
            if job.stops > 0 {
                return Step::Done(Ok(done(job.arg, SEC)));
            }
            if job.since.elapsed() > GATE_CAP {
                return Step::Done(Err(Failure::Internal("never preempted".into())));
            }
            std::hint::spin_loop();
        }
    }

    fn preempt(&self, worker: usize) {
        self.flags[worker].store(true, Ordering::Release);
    }

    fn work(&self, invoke: &Invoke) -> Option<Nanos> {
        Some(if invoke.function == "gate" { SEC } else { US })
    }

    fn register(
        &self,
        _name: &str,
        _module: &[u8],
        _deployment: faasched_wasm::Deployment,
    ) -> Result<(), Failure> {
        Err(Failure::BadRequest("the fake runs built-ins only".into()))
    }

    fn unregister(&self, name: &str) -> Result<(), Failure> {
        Err(Failure::UnknownFunction(name.into()))
    }
}

pub(crate) fn invoke(function: &str, arg: i64, deadline: Nanos) -> Invoke {
    Invoke {
        function: function.into(),
        query: Some(format!("x={arg}")),
        headers: Default::default(),
        body: Default::default(),
        label: None,
        deadline: Some(deadline),
        received: Instant::now(),
        cancel: Default::default(),
    }
}

/// Submits `inv`; its answer arrives on `tx` with `tag`.
pub(crate) fn send<E: Executor>(
    rt: &Runtime<E>,
    inv: Invoke,
    tag: u64,
    tx: &mpsc::Sender<(u64, Answer)>,
) {
    let tx = tx.clone();
    rt.submit(inv, Box::new(move |a| tx.send((tag, a)).unwrap()));
}

/// Waits for the next job named `name` to begin running.
pub(crate) fn wait_run(runs: &mpsc::Receiver<(String, usize)>, name: &str) -> usize {
    loop {
        let (n, w) = runs.recv_timeout(GATE_CAP).expect("a job runs");
        if n == name {
            return w;
        }
    }
}

/// A warm run's result.
fn done(value: i64, cpu: faasched_model::Nanos) -> super::Finished {
    super::Finished {
        written: None,
        value,
        cpu,
        cold: false,
    }
}
