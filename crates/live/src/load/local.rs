//! Calls handed to a node runtime in this process: the transport of a
//! run that measures the node without a network (`node replay`; the
//! HTTP ingress's cost is measured apart, in `faasched bench runtime`).
//!
//! A call is submitted at its paced instant, received (its latency
//! counting from) when it was due, so a driver that wakes late delays the
//! call's latency, never its schedule. Every call goes at once: a runtime
//! takes them as they come, and its dispatchers' queues (bounded, an
//! overloaded one refusing) are the only wait. The runtime's answer keeps
//! its own account of the call in ns ([`Answer::completed`]).

use super::LocalCall;
use super::config::LoadConfig;
use super::outcome::{Answer, Failure, LoadError};
use super::transport::{Came, Transport};
use crate::node::invoke::{self, Cancel};
use crate::node::runtime::{Executor, Runtime};
use faasched_model::US;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::time::{Instant, timeout_at};

/// A node runtime in this process, with what to tell of each answer as it
/// comes.
pub struct InProcess<'a, E: Executor, H> {
    runtime: &'a Runtime<E>,
    each: Arc<H>,
}

impl<'a, E: Executor, H> InProcess<'a, E, H> {
    /// Calls to `runtime`; `each` is told every call's answer on the
    /// runtime's thread the moment it is given (a progress bar, or a flag
    /// that ends the run at its first failure through the loop's `stop`).
    pub fn new(runtime: &'a Runtime<E>, each: H) -> InProcess<'a, E, H> {
        InProcess {
            runtime,
            each: Arc::new(each),
        }
    }
}

/// Withdraws a call whose answer is no longer awaited (timed out, or its
/// run over); harmless once it was answered.
struct Withdraw(Cancel);

impl Drop for Withdraw {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl<E, C, H> Transport<C> for InProcess<'_, E, H>
where
    E: Executor,
    C: LocalCall + Clone,
    H: Fn(&C, &invoke::Answer) + Send + Sync + 'static,
{
    type Lane = ();

    async fn start(&mut self, _config: &LoadConfig) -> Result<(), LoadError> {
        Ok(())
    }

    async fn free(&mut self) -> (u32, ()) {
        (0, ())
    }

    fn unused(&self, _number: u32, _lane: ()) {}

    fn send(
        &self,
        _number: u32,
        _lane: (),
        call: &C,
        due: Instant,
        by: Instant,
    ) -> impl Future<Output = Came> + Send + 'static {
        let cancel = Cancel::new();
        let (tx, rx) = oneshot::channel();
        let (each, told) = (self.each.clone(), call.clone());
        self.runtime.submit(
            call.invoke(due.into_std(), cancel.clone()),
            Box::new(move |answer| {
                each(&told, &answer);
                let _ = tx.send((answer, Instant::now()));
            }),
        );
        let withdraw = Withdraw(cancel);
        async move {
            let _withdraw = withdraw;
            match timeout_at(by, rx).await {
                Ok(Ok((answer, came))) => (Ok(answer_of(answer)), came),
                // The runtime answers every call exactly once, and this
                // end is dropped only with its run.
                Ok(Err(_)) => (Err(Failure::Unfinished), Instant::now()),
                Err(_) => (Err(Failure::ResponseTimeout), Instant::now()),
            }
        }
    }
}

/// The runtime's answer as the node's ingress would have sent it: a
/// completion is a 200 with its headers' µs, a failure its status and
/// kind.
fn answer_of(answer: invoke::Answer) -> Answer {
    match answer {
        Ok(done) => Answer {
            status: 200,
            runtime_us: Some(done.runtime / US),
            cpu_us: Some(done.cpu / US),
            preemptions: Some(done.preemptions.into()),
            node: None,
            cold: Some(done.cold),
            failure: None,
            completed: Some(done),
        },
        Err(failure) => Answer {
            status: failure.status(),
            failure: Some(Failure::Server {
                kind: failure.kind().to_string(),
            }),
            ..Answer::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{Call, End, Mode, Pacing, open};
    use crate::node::invoke::Invoke;
    use crate::node::runtime::RuntimeConfig;
    use crate::node::runtime::fake::Fake;
    use faasched_model::{MS, SEC, Time};
    use faasched_policy::node::RoundRobin;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// `function?x=21` due at `send`.
    #[derive(Clone, Debug)]
    struct Local {
        send: Time,
        function: &'static str,
    }

    impl Call for Local {
        fn send(&self) -> Time {
            self.send
        }
    }

    impl LocalCall for Local {
        fn invoke(&self, received: std::time::Instant, cancel: Cancel) -> Invoke {
            Invoke {
                function: self.function.into(),
                query: Some("x=21".into()),
                headers: Default::default(),
                body: Default::default(),
                label: None,
                deadline: Some(SEC),
                received,
                cancel,
            }
        }
    }

    fn runtime() -> Runtime<Fake> {
        let config = RuntimeConfig {
            dispatchers: 1,
            workers: 1,
            ..RuntimeConfig::default()
        };
        Runtime::start(config, vec![Box::new(RoundRobin::new())], Fake::new(1).0).unwrap()
    }

    #[test]
    fn every_call_reaches_the_runtime_once_at_its_time_with_its_answer() {
        let rt = runtime();
        let calls: Vec<Local> = (0..6)
            .map(|i| Local {
                send: i * MS,
                function: if i == 3 { "trap" } else { "echo" },
            })
            .collect();
        let told = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = told.clone();
        let transport = InProcess::new(&rt, move |_: &Local, _: &invoke::Answer| {
            counted.fetch_add(1, Ordering::Relaxed);
        });
        let config = LoadConfig::new(Mode::Open { connections: 1 }, SEC);
        let run = open(&config, transport, calls.clone(), Pacing::Sleep, &|| false).unwrap();
        rt.stop();
        assert_eq!(run.end, End::Completed);
        assert_eq!(told.load(Ordering::Relaxed), calls.len());
        assert_eq!(run.records.len(), calls.len());
        for (i, r) in run.records.iter().enumerate() {
            assert_eq!((r.id, r.client, r.intended), (i as u64, 0, calls[i].send));
            assert!(r.sent.is_some_and(|s| s >= r.intended), "{r:?}");
            assert!(r.done >= r.sent, "{r:?}");
            if i == 3 {
                assert_eq!(r.status, Some(500), "{r:?}");
                let trap = Failure::Server {
                    kind: "trap".into(),
                };
                assert_eq!((&r.failure, &r.completed), (&Some(trap), &None));
            } else {
                let done = r.completed.as_ref().expect("the runtime's account");
                assert_eq!((r.status, done.value, &r.failure), (Some(200), 42, &None));
                assert_eq!(r.cpu_us, Some(done.cpu / US));
            }
        }
    }

    #[test]
    fn stop_ends_an_in_process_run_before_its_calls_are_due() {
        let rt = runtime();
        let calls = (1..=3).map(|i| Local {
            send: i * 3_600 * SEC,
            function: "echo",
        });
        let transport = InProcess::new(&rt, |_: &Local, _: &invoke::Answer| {});
        let config = LoadConfig::new(Mode::Open { connections: 1 }, 4 * 3_600 * SEC);
        let run = open(&config, transport, calls, Pacing::Sleep, &|| true).unwrap();
        rt.stop();
        assert_eq!(run.end, End::Interrupted);
        assert!(run.records.is_empty(), "{:?}", run.records);
    }
}
