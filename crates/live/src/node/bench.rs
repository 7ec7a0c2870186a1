//! Measurements of a running node runtime from inside its process, with no
//! transport: what `faasched bench runtime` reports.
//!
//! Each drives a [`Runtime`] through [`Runtime::submit`] from the calling
//! thread and times on the wall clock from the submit to the answer's
//! arrival back on that thread: the dispatcher's decision, the worker's
//! wake-up, the sandbox's set-up and run, the answer's hand-back.

use super::invoke::{Answer, Failure, Invoke};
use super::runtime::{Executor, Runtime};
use faasched_model::Nanos;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long any one answer may take before a measurement gives up.
const ANSWER_CAP: Duration = Duration::from_secs(30);

/// Why a measurement stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A request failed; the measurement needs every one to succeed.
    #[error("request {index} failed: {failure}")]
    Failed {
        /// Its index in the run.
        index: u64,
        /// Why.
        failure: Failure,
    },
    /// No answer came within the cap.
    #[error("no answer within {0:?}")]
    Stalled(Duration),
}

fn wait(rx: &mpsc::Receiver<(u64, Answer, Instant)>) -> Result<(u64, Instant), BenchError> {
    let (index, answer, at) = rx
        .recv_timeout(ANSWER_CAP)
        .map_err(|_| BenchError::Stalled(ANSWER_CAP))?;
    answer.map_err(|failure| BenchError::Failed { index, failure })?;
    Ok((index, at))
}

fn submit<E: Executor>(
    rt: &Runtime<E>,
    invoke: Invoke,
    index: u64,
    tx: &mpsc::Sender<(u64, Answer, Instant)>,
) {
    let tx = tx.clone();
    rt.submit(
        invoke,
        Box::new(move |a| {
            let _ = tx.send((index, a, Instant::now()));
        }),
    );
}

/// `n` requests one at a time (each sent when the last is answered): each
/// one's round trip, ns, in order.
pub fn round_trips<E: Executor>(
    rt: &Runtime<E>,
    n: u64,
    mut invoke: impl FnMut() -> Invoke,
) -> Result<Vec<Nanos>, BenchError> {
    let (tx, rx) = mpsc::channel();
    let mut times = Vec::with_capacity(n as usize);
    for i in 0..n {
        let sent = Instant::now();
        submit(rt, invoke(), i, &tx);
        let (_, at) = wait(&rx)?;
        times.push(at.duration_since(sent).as_nanos() as Nanos);
    }
    Ok(times)
}

/// `n` requests kept `window` in flight (a closed loop): requests answered
/// per second of wall time.
pub fn throughput<E: Executor>(
    rt: &Runtime<E>,
    n: u64,
    window: u64,
    mut invoke: impl FnMut() -> Invoke,
) -> Result<f64, BenchError> {
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    let mut sent = 0;
    while sent < n.min(window.max(1)) {
        submit(rt, invoke(), sent, &tx);
        sent += 1;
    }
    for _ in 0..n {
        wait(&rx)?;
        if sent < n {
            submit(rt, invoke(), sent, &tx);
            sent += 1;
        }
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

/// `n` times: starts `long`, waits until a worker runs it and `settle`
/// more, sends `urgent`, and times the urgent request's round trip, ns;
/// the long one's answer is awaited before the next round. Under a
/// preempting policy the time is what preempting costs on top of the
/// urgent request's own run. With no `settle`, the urgent request often
/// comes while the worker still sets up the long one's sandbox (a worker
/// runs a request from the moment it takes it off its queue); a `settle`
/// shorter than the long request makes it preempt a running guest.
pub fn preemptions<E: Executor>(
    rt: &Runtime<E>,
    n: u64,
    settle: Duration,
    mut long: impl FnMut() -> Invoke,
    mut urgent: impl FnMut() -> Invoke,
) -> Result<Vec<Nanos>, BenchError> {
    let (tx, rx) = mpsc::channel();
    let mut times = Vec::with_capacity(n as usize);
    for i in 0..n {
        submit(rt, long(), 2 * i, &tx);
        let asked = Instant::now();
        while rt.busy_workers() == 0 {
            if asked.elapsed() > ANSWER_CAP {
                return Err(BenchError::Stalled(ANSWER_CAP));
            }
            std::thread::yield_now();
        }
        std::thread::sleep(settle);
        let sent = Instant::now();
        submit(rt, urgent(), 2 * i + 1, &tx);
        let mut urgent_at = None;
        for _ in 0..2 {
            let (index, at) = wait(&rx)?;
            if index == 2 * i + 1 {
                urgent_at = Some(at);
            }
        }
        let at = urgent_at.expect("both answers arrived");
        times.push(at.duration_since(sent).as_nanos() as Nanos);
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::runtime::RuntimeConfig;
    use crate::node::runtime::fake::{Fake, invoke};
    use faasched_model::{MS, SEC};
    use faasched_policy::node::{PreemptTest, RoundRobin, Scan, SledgeScale};

    #[test]
    fn each_measurement_gets_its_answers_and_stops_at_a_failure() {
        let (fake, _runs) = Fake::new(1);
        let rt = Runtime::start(
            RuntimeConfig::default(),
            vec![Box::new(RoundRobin::new())],
            fake,
        )
        .unwrap();
        let times = round_trips(&rt, 50, || invoke("echo", 1, MS)).unwrap();
        assert_eq!(times.len(), 50);
        assert!(throughput(&rt, 200, 16, || invoke("echo", 1, MS)).unwrap() > 0.0);
        let err = round_trips(&rt, 3, || invoke("trap", 1, MS)).unwrap_err();
        assert!(matches!(err, BenchError::Failed { index: 0, .. }), "{err}");
    }

    #[test]
    fn a_preemption_is_timed_from_the_urgent_request_to_its_answer() {
        let (fake, _runs) = Fake::new(1);
        let policy = SledgeScale::new(Scan::Paper, PreemptTest::Paper);
        let rt = Runtime::start(RuntimeConfig::default(), vec![Box::new(policy)], fake).unwrap();
        let times = preemptions(
            &rt,
            3,
            Duration::ZERO,
            || invoke("gate", 1, 10 * SEC),
            || invoke("echo", 1, MS),
        )
        .unwrap();
        assert_eq!(times.len(), 3);
        assert_eq!(rt.status_json()["preemptions"], 3);
    }
}
