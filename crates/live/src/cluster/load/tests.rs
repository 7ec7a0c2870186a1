//! The clients against an in-test gateway on its own thread that answers
//! at once: `x-faasched-node` alternating between two nodes,
//! `x-faasched-cold: 1` for each function's first call, and a 503
//! `overloaded` for every call of the function `drop-me`. Every assertion
//! is exact and holds however slow the machine is.

use super::*;
use crate::http;
use crate::load::{End, Failure, Mode};
use crate::wire::{COLD_HEADER, ERROR_HEADER, FUNCTION_HEADER, NODE_HEADER, RUNTIME_HEADER};
use faasched_model::{MS, SEC};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Response, StatusCode};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

const TABLE: [&str; 4] = ["aes-0", "chameleon-0", "drop-me", "video-0"];

/// What the gateway answered, one per call, in the order it answered.
type Answered = Arc<Mutex<Vec<(String, u16, Option<String>, Option<bool>)>>>;

struct Gateway {
    addr: SocketAddr,
    answered: Answered,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Gateway {
    fn start() -> Gateway {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let answered = Answered::default();
        let (shutdown, down) = oneshot::channel();
        let log = answered.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                http::serve(
                    listener,
                    Arc::new(Log(log)),
                    None,
                    async move {
                        let _ = down.await;
                    },
                    http::Limits::new(Duration::ZERO),
                )
                .await;
            });
        });
        Gateway {
            addr,
            answered,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.shutdown.take().unwrap().send(());
        let _ = self.thread.take().unwrap().join();
    }
}

/// The gateway's answers, logged.
struct Log(Answered);

impl http::Service for Log {
    async fn handle(
        &self,
        request: hyper::Request<hyper::body::Incoming>,
    ) -> Response<Full<Bytes>> {
        answer(&request, &self.0)
    }
}

fn answer(req: &hyper::Request<hyper::body::Incoming>, log: &Answered) -> Response<Full<Bytes>> {
    let name = req.headers()[FUNCTION_HEADER].to_str().unwrap().to_string();
    assert!(req.uri().path() == "/invoke/spin" && req.uri().query().unwrap().starts_with("us="));
    let mut log = log.lock().unwrap();
    let builder = Response::builder();
    let (response, entry) = if name == "drop-me" {
        let r = builder
            .status(StatusCode::SERVICE_UNAVAILABLE)
            .header(ERROR_HEADER, "overloaded");
        (r, (name, 503, None, None))
    } else {
        let node = format!("127.0.0.1:{}", 1 + log.len() % 2);
        let cold = !log.iter().any(|(n, ..)| *n == name);
        let r = builder
            .header(NODE_HEADER, &node)
            .header(COLD_HEADER, if cold { "1" } else { "0" })
            .header(RUNTIME_HEADER, "7");
        (r, (name, 200, Some(node), Some(cold)))
    };
    log.push(entry);
    response.body(Full::new(Bytes::from_static(b"ok"))).unwrap()
}

/// Each client calls the table's functions in turn, as soon as its last
/// answer came.
struct RoundRobin {
    calls: u64,
}

impl Sampler<Call> for RoundRobin {
    fn next(&mut self, client: u32, finish: Time) -> Option<Call> {
        let function = ((self.calls + u64::from(client)) % TABLE.len() as u64) as u32;
        self.calls += 1;
        Some(Call {
            function,
            name: TABLE[function as usize].into(),
            send: finish,
            work_us: 5,
            call: None,
        })
    }
}

fn config(clients: usize) -> LoadConfig {
    LoadConfig {
        drain: 60 * SEC,
        timeout: 60 * SEC,
        ..LoadConfig::new(Mode::Closed { clients }, 300 * MS)
    }
}

#[test]
fn every_call_is_recorded_once_with_its_node_cold_start_and_drop() {
    let gateway = Gateway::start();
    let run = run_clients(
        &gateway.addr.to_string(),
        &config(3),
        RoundRobin { calls: 0 },
        &|| false,
    )
    .unwrap();
    assert_eq!(run.end, End::Completed);
    let answered = gateway.answered.lock().unwrap().clone();
    // Each client's first call is due at 0, so is sent.
    assert!(run.records.len() >= 3);
    assert_eq!(run.records.len(), answered.len());
    let ids: Vec<u64> = run.records.iter().map(|r| r.id).collect();
    assert_eq!(ids, (0..answered.len() as u64).collect::<Vec<_>>());
    let mut seen = Vec::new();
    for r in &run.records {
        assert!(r.client < 3, "{r:?}");
        assert_eq!(&*r.call.name, TABLE[r.call.function as usize]);
        assert!(r.done.is_some_and(|d| Some(d) >= r.sent), "{r:?}");
        if &*r.call.name == "drop-me" {
            assert_eq!(r.status, Some(503));
            assert_eq!(
                r.failure,
                Some(Failure::Server {
                    kind: "overloaded".into()
                })
            );
            assert!(!r.answered());
        } else {
            assert_eq!(
                (r.status, r.runtime_us, &r.failure),
                (Some(200), Some(7), &None)
            );
            assert!(r.answered());
        }
        seen.push((
            r.call.name.to_string(),
            r.status.unwrap(),
            r.node.clone(),
            r.cold,
        ));
    }
    // What the gateway said is what was recorded, call for call.
    let mut said = answered;
    said.sort();
    seen.sort();
    assert_eq!(seen, said);
    let names: BTreeSet<_> = run.records.iter().map(|r| &*r.call.name).collect();
    let colds = run.records.iter().filter(|r| r.cold == Some(true)).count();
    assert_eq!(colds, names.iter().filter(|n| **n != "drop-me").count());
}

#[test]
fn stop_ends_the_run_and_keeps_what_was_measured() {
    let gateway = Gateway::start();
    let run = run_clients(
        &gateway.addr.to_string(),
        &LoadConfig {
            duration: 3_600 * SEC,
            ..config(2)
        },
        RoundRobin { calls: 0 },
        &|| true,
    )
    .unwrap();
    assert_eq!(run.end, End::Interrupted);
    for r in &run.records {
        assert!(
            r.done.is_some() || r.failure == Some(Failure::Interrupted),
            "{r:?}"
        );
    }
}

#[test]
fn a_target_that_refuses_or_is_no_address_is_an_error_naming_it() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap();
    drop(free);
    let e = run_clients(
        &addr.to_string(),
        &config(1),
        RoundRobin { calls: 0 },
        &|| false,
    )
    .unwrap_err();
    assert!(matches!(e, LoadError::Connect { .. }), "{e}");
    assert!(e.to_string().contains(&addr.to_string()), "{e}");
    let e = run_clients("nowhere", &config(1), RoundRobin { calls: 0 }, &|| false).unwrap_err();
    assert!(
        e.to_string().contains("target") && e.to_string().contains("nowhere"),
        "{e}"
    );
}

/// `n` calls of the table's functions in turn, the i-th due at `i * gap`.
fn schedule(n: u64, gap: Time) -> Vec<Call> {
    (0..n)
        .map(|i| {
            let function = (i % TABLE.len() as u64) as u32;
            Call {
                function,
                name: TABLE[function as usize].into(),
                send: i * gap,
                work_us: 5,
                call: None,
            }
        })
        .collect()
}

fn open(connections: usize, duration: Time) -> LoadConfig {
    LoadConfig {
        drain: 60 * SEC,
        timeout: 60 * SEC,
        ..LoadConfig::new(Mode::Open { connections }, duration)
    }
}

#[test]
fn the_open_loop_sends_every_call_of_the_schedule_at_or_after_its_time() {
    let gateway = Gateway::start();
    // Twelve calls all due at once over two connections: most queue for
    // a connection, and still each is sent and counted from its time.
    let calls = schedule(12, 0)
        .into_iter()
        .chain(schedule(8, MS).into_iter().map(|c| Call {
            send: c.send + MS,
            ..c
        }))
        .collect::<Vec<_>>();
    let run = run_schedule(
        &gateway.addr.to_string(),
        &open(2, SEC),
        calls.clone(),
        &|| false,
    )
    .unwrap();
    assert_eq!(run.end, End::Completed);
    assert_eq!(run.records.len(), calls.len());
    let answered = gateway.answered.lock().unwrap().clone();
    assert_eq!(answered.len(), calls.len());
    for (r, (i, call)) in run.records.iter().zip(calls.iter().enumerate()) {
        assert_eq!(r.id, i as u64);
        assert!(r.client < 2, "{r:?}");
        assert_eq!(&r.call, call);
        assert_eq!(r.intended, call.send);
        assert!(r.sent.is_some_and(|s| s >= r.intended), "{r:?}");
        assert!(r.done.is_some_and(|d| Some(d) >= r.sent), "{r:?}");
        let dropped = &*r.call.name == "drop-me";
        assert_eq!(r.answered(), !dropped, "{r:?}");
        assert_eq!(r.status, Some(if dropped { 503 } else { 200 }));
    }
}

#[test]
fn the_open_loop_leaves_out_the_calls_due_after_the_duration() {
    let gateway = Gateway::start();
    // Due at 0, 100 ms, ..., 900 ms: the five before 500 ms are the run.
    let run = run_schedule(
        &gateway.addr.to_string(),
        &open(1, 500 * MS),
        schedule(10, 100 * MS),
        &|| false,
    )
    .unwrap();
    assert_eq!(run.end, End::Completed);
    let due: Vec<Time> = run.records.iter().map(|r| r.intended).collect();
    assert_eq!(due, [0, 100 * MS, 200 * MS, 300 * MS, 400 * MS]);
    assert_eq!(gateway.answered.lock().unwrap().len(), 5);
}

#[test]
fn stop_ends_the_open_loop_and_counts_every_call_due() {
    let gateway = Gateway::start();
    let run = run_schedule(
        &gateway.addr.to_string(),
        &open(1, 3_600 * SEC),
        schedule(1_000, 0),
        &|| true,
    )
    .unwrap();
    assert_eq!(run.end, End::Interrupted);
    // Every call was due at once: each is sent and answered, in flight
    // when stopped, or never sent; none is lost.
    assert_eq!(run.records.len(), 1_000);
    for r in &run.records {
        assert!(
            r.done.is_some() || matches!(r.failure, Some(Failure::Interrupted | Failure::Unsent)),
            "{r:?}"
        );
    }
}
