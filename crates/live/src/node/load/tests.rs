//! The load generator against an in-test HTTP server on its own thread,
//! which answers `/invoke/...` at once, after the asked work as a sleep,
//! or after a hold, fails some requests on purpose, and keeps what it was
//! sent. Every assertion is a count or a bound that holds however slow the
//! machine is.

use super::*;

/// [`run`] of `requests` with every one sent as `spin` of its work.
fn spin_run(
    target: &str,
    config: &LoadConfig,
    requests: impl IntoIterator<Item = Request, IntoIter: Send + 'static>,
    stop: &dyn Fn() -> bool,
) -> Result<LoadRun, LoadError> {
    run(target, config, requests, &Calls::default(), stop)
}
use crate::wire::{
    DEADLINE_HEADER, ERROR_HEADER, FUNCTION_HEADER, MAX_NAME, PREEMPTIONS_HEADER,
    RUNTIME_CPU_HEADER, RUNTIME_HEADER,
};
use faasched_model::node::Request;
use faasched_model::{MS, SEC};
use faasched_workload::node::{Deadlines, Estimate, Length, Params, Workload};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// How the server answers.
#[derive(Clone, Copy, Debug)]
struct Behaviour {
    /// Sleep the request's `us` before answering.
    sleep_work: bool,
    /// Hold every request this long first.
    hold: Duration,
    /// Every n-th request (from 1) is a 503 `overloaded`.
    fail_every: Option<u64>,
    /// Every n-th request closes its connection without an answer.
    drop_every: Option<u64>,
    /// Every answer says `connection: close`.
    close: bool,
}

impl Behaviour {
    const AT_ONCE: Behaviour = Behaviour {
        sleep_work: false,
        hold: Duration::ZERO,
        fail_every: None,
        drop_every: None,
        close: false,
    };
}

/// One request as the server received it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    /// Its path and query.
    uri: String,
    /// Its `x-faasched-function`.
    label: String,
    /// Its `x-faasched-deadline-us`.
    deadline: String,
    body: Bytes,
}

/// What the server saw and did, for exact comparison with the client.
#[derive(Default)]
struct Counts {
    /// Every request, in the order it came.
    seen: Mutex<Vec<Seen>>,
    received: AtomicU64,
    ok: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
    in_flight: AtomicU64,
    most_in_flight: AtomicU64,
}

struct Server {
    addr: SocketAddr,
    counts: Arc<Counts>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(behaviour: Behaviour) -> Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(Counts::default());
        let (shutdown, mut down) = oneshot::channel();
        let c = counts.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let stream = tokio::select! {
                        accepted = listener.accept() => accepted.unwrap().0,
                        _ = &mut down => break,
                    };
                    let c = c.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |req| answer(req, behaviour, c.clone()));
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
            // Dropping the runtime cancels the connections still held.
        });
        Server {
            addr,
            counts,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    fn target(&self) -> String {
        self.addr.to_string()
    }

    fn count(&self, f: impl Fn(&Counts) -> &AtomicU64) -> u64 {
        f(&self.counts).load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.shutdown.take().unwrap().send(());
        let _ = self.thread.take().unwrap().join();
    }
}

#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("dropped on purpose")
    }
}

impl std::error::Error for Dropped {}

async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
    b: Behaviour,
    c: Arc<Counts>,
) -> Result<Response<Full<Bytes>>, Dropped> {
    let n = c.received.fetch_add(1, Ordering::SeqCst) + 1;
    let now = c.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    c.most_in_flight.fetch_max(now, Ordering::SeqCst);
    let us: u64 = req
        .uri()
        .query()
        .and_then(|q| q.strip_prefix("us="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let header = |name| {
        let value = req.headers().get(name).expect("every request carries it");
        value.to_str().unwrap().to_string()
    };
    let (label, deadline) = (header(FUNCTION_HEADER), header(DEADLINE_HEADER));
    let uri = req.uri().to_string();
    let body = match req.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => Bytes::new(),
    };
    c.seen.lock().unwrap().push(Seen {
        uri,
        label,
        deadline,
        body,
    });
    tokio::time::sleep(b.hold).await;
    if b.sleep_work {
        tokio::time::sleep(Duration::from_micros(us)).await;
    }
    c.in_flight.fetch_sub(1, Ordering::SeqCst);
    if b.drop_every.is_some_and(|k| n.is_multiple_of(k)) {
        c.dropped.fetch_add(1, Ordering::SeqCst);
        return Err(Dropped);
    }
    if b.fail_every.is_some_and(|k| n.is_multiple_of(k)) {
        c.failed.fetch_add(1, Ordering::SeqCst);
        return Ok(Response::builder()
            .status(StatusCode::SERVICE_UNAVAILABLE)
            .header(ERROR_HEADER, "overloaded")
            .body(Full::new(Bytes::from("overloaded")))
            .unwrap());
    }
    c.ok.fetch_add(1, Ordering::SeqCst);
    let close = if b.close { "close" } else { "keep-alive" };
    Ok(Response::builder()
        .header(hyper::header::CONNECTION, close)
        .header(RUNTIME_HEADER, us.to_string())
        .header(RUNTIME_CPU_HEADER, us.to_string())
        .header(PREEMPTIONS_HEADER, "0")
        .body(Full::new(Bytes::from("done")))
        .unwrap())
}

fn stream(workload: &str, rate: f64, duration: u64, seed: u64) -> Vec<Request> {
    let params = Params {
        rate_per_s: rate,
        length: Length::Duration(duration),
        seed,
        deadlines: Deadlines::default(),
        estimate: Estimate::Exact,
    };
    Workload::builtin(workload)
        .unwrap()
        .requests(&params)
        .unwrap()
        .collect()
}

fn never() -> bool {
    false
}

/// Answered + every error = requests, as the summary and per record.
fn check_accounting(run: &LoadRun) -> LoadSummary {
    let s = run.summary();
    let errors: u64 = s.all.errors.values().sum();
    assert_eq!(s.all.answered + errors, s.all.requests, "{s:?}");
    for r in &run.records {
        assert!(r.answered() != r.failure.is_some(), "{r:?}");
    }
    s
}

#[test]
fn results_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<LoadConfig>();
    send_sync::<LoadRun>();
    send_sync::<LoadSummary>();
    send_sync::<LoadError>();
    send_sync::<Calls>();
    send_sync::<CallsError>();
}

#[test]
fn every_request_is_answered_or_counted_once_and_follows_the_stream() {
    let server = Server::start(Behaviour {
        sleep_work: true,
        fail_every: Some(7),
        drop_every: Some(11),
        ..Behaviour::AT_ONCE
    });
    let duration = 300 * MS;
    let requests = stream("bimodal-high", 1_000.0, duration, 3);
    let config = LoadConfig::new(Mode::Open { connections: 8 }, duration);
    let run = spin_run(&server.target(), &config, requests.clone(), &never).unwrap();
    assert_eq!(run.end, End::Completed);
    let s = check_accounting(&run);
    // One record per request of the stream, in its order, at its arrival.
    assert_eq!(run.records.len(), requests.len());
    for (r, q) in run.records.iter().zip(&requests) {
        assert_eq!((r.id, r.call.request.id), (q.id.0, q.id));
        assert_eq!(r.intended, q.arrival);
        assert_eq!(&r.call.request, q);
        assert!(r.sent.unwrap() >= r.intended, "{r:?}");
    }
    // What the server did, exactly as the client counted it.
    assert_eq!(s.sent, s.all.requests);
    assert_eq!(server.count(|c| &c.received), s.all.requests);
    assert_eq!(server.count(|c| &c.ok), s.all.answered);
    assert_eq!(s.all.errors["overloaded"], server.count(|c| &c.failed));
    assert_eq!(
        s.all.errors["connection-lost"],
        server.count(|c| &c.dropped)
    );
    assert_eq!(s.all.errors.len(), 2, "{:?}", s.all.errors);
    for r in run.records.iter().filter(|r| r.answered()) {
        assert_eq!(r.status, Some(200));
        // The server slept the work: the latency is at least that.
        assert!(
            r.latency().unwrap() >= r.call.request.work / 1_000 * 1_000,
            "{r:?}"
        );
        assert!(r.runtime_us.is_some() && r.cpu_us.is_some());
    }
    // Per function: the two of the workload, adding up to all.
    let names: Vec<&str> = s.functions.keys().map(String::as_str).collect();
    assert_eq!(names, ["image-classify", "image-resize"]);
    let per_function: u64 = s.functions.values().map(|f| f.answered).sum();
    assert_eq!(per_function, s.all.answered);
    let latency = s.all.latency_us.unwrap();
    assert!(latency.p50 <= latency.p99 && latency.p99 <= latency.max);
    assert!(s.all.slowdown.unwrap().p50 >= 0.99);
    // The server reports the work as its own latency: never above the
    // client's, which adds the network and the client.
    let runtime = s.all.runtime_us.unwrap();
    assert!(runtime.max <= latency.max, "{runtime:?} {latency:?}");
    // requests.csv: a header and one row per request.
    let mut csv = Vec::new();
    run.write_csv(&mut csv).unwrap();
    let text = String::from_utf8(csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(REQUESTS_CSV_HEADER));
    assert_eq!(lines.count(), requests.len());
    // workload.csv: the same requests as a workload the simulator reads,
    // each at its intended time with the CPU time the server reported.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("workload.csv");
    run.write_workload_csv(std::fs::File::create(&path).unwrap())
        .unwrap();
    let file = faasched_workload::node::RequestFile::open(&path).unwrap();
    let read: Vec<_> = file
        .requests(&Default::default(), Default::default(), 1)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(read.len(), requests.len());
    let mut by_time: Vec<&Record> = run.records.iter().collect();
    by_time.sort_by_key(|r| r.intended);
    // Both kinds of row: measured, and failed (the work asked).
    assert!(
        by_time
            .iter()
            .any(|r| r.failure.is_none() && r.cpu_us.is_some())
    );
    assert!(by_time.iter().any(|r| r.failure.is_some()));
    for (got, r) in read.iter().zip(by_time) {
        assert_eq!(got.function.name, r.call.request.function.name);
        assert_eq!(got.arrival, r.intended / US * US);
        // The CPU time the server said, else the work asked.
        let work_us = match r.cpu_us {
            Some(us) if r.failure.is_none() => us,
            _ => r.call.request.work / US,
        };
        assert_eq!(got.work, work_us.max(1) * US, "{r:?}");
        assert_eq!(got.deadline, r.call.request.deadline / US * US);
    }
}

#[test]
fn a_connection_the_server_closes_after_answering_is_opened_again() {
    let server = Server::start(Behaviour {
        close: true,
        ..Behaviour::AT_ONCE
    });
    let duration = 100 * MS;
    let requests = stream("fixed", 500.0, duration, 6);
    let config = LoadConfig::new(Mode::Open { connections: 2 }, duration);
    let run = spin_run(&server.target(), &config, requests.clone(), &never).unwrap();
    let s = check_accounting(&run);
    assert!(s.all.errors.is_empty(), "{:?}", s.all.errors);
    assert_eq!(s.all.answered, requests.len() as u64);
}

#[test]
fn latency_counts_from_the_intended_time_when_the_server_stalls() {
    // One connection to a server that holds every request 50 ms: the k-th
    // request (from 0) cannot be done before (k + 1) × 50 ms, so its
    // latency is at least that minus its intended time, however late it
    // was sent.
    let hold = 50 * MS;
    let server = Server::start(Behaviour {
        hold: Duration::from_nanos(hold),
        ..Behaviour::AT_ONCE
    });
    let duration = 100 * MS;
    let requests = stream("fixed", 200.0, duration, 5);
    assert!(requests.len() >= 5, "{} requests", requests.len());
    let mut config = LoadConfig::new(Mode::Open { connections: 1 }, duration);
    config.drain = 60 * SEC;
    let run = spin_run(&server.target(), &config, requests.clone(), &never).unwrap();
    let s = check_accounting(&run);
    assert_eq!(s.all.answered, requests.len() as u64);
    for (k, r) in run.records.iter().enumerate() {
        let bound = (k as u64 + 1) * hold - r.intended;
        assert!(r.latency().unwrap() >= bound, "request {k}: {r:?}");
        // Sent only once the one before it was done.
        if k > 0 {
            assert!(r.sent.unwrap() >= run.records[k - 1].done.unwrap());
        }
    }
    assert!(s.late_sends >= 1);
    assert_eq!(server.count(|c| &c.most_in_flight), 1);
}

#[test]
fn a_dead_target_is_an_error_naming_it() {
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let config = LoadConfig::new(Mode::Open { connections: 2 }, SEC);
    let e = spin_run(
        &addr.to_string(),
        &config,
        stream("fixed", 100.0, SEC, 1),
        &never,
    )
    .unwrap_err();
    assert!(matches!(e, LoadError::Connect { .. }), "{e:?}");
    assert!(e.to_string().contains(&addr.to_string()), "{e}");
}

#[test]
fn closed_loop_keeps_one_request_per_client_in_flight() {
    let server = Server::start(Behaviour::AT_ONCE);
    let duration = 100 * MS;
    // Endless in practice: the run ends at its duration, not the stream's.
    let requests = Workload::builtin("sd-vbs")
        .unwrap()
        .requests(&Params {
            rate_per_s: 1.0,
            length: Length::Duration(3_600 * SEC),
            seed: 9,
            deadlines: Deadlines::default(),
            estimate: Estimate::Exact,
        })
        .unwrap();
    let config = LoadConfig::new(Mode::Closed { clients: 2 }, duration);
    let run = spin_run(&server.target(), &config, requests, &never).unwrap();
    let s = check_accounting(&run);
    assert_eq!(run.end, End::Completed);
    assert!(s.all.answered >= 1 && s.all.errors.is_empty(), "{s:?}");
    assert!(server.count(|c| &c.most_in_flight) <= 2);
    for (k, r) in run.records.iter().enumerate() {
        assert_eq!((r.id, r.sent), (k as u64, Some(r.intended)));
        assert!(r.intended < duration);
    }
}

#[test]
fn a_stop_ends_the_run_with_every_due_request_accounted() {
    // The server raises the stop flag at its 20th request.
    let stop = Arc::new(AtomicBool::new(false));
    let server = Server::start(Behaviour::AT_ONCE);
    let duration = 10 * SEC;
    let requests = stream("exponential", 500.0, duration, 2);
    let config = LoadConfig::new(Mode::Open { connections: 4 }, duration);
    let flag = stop.clone();
    let counts = server.counts.clone();
    let stop_fn = move || {
        if counts.received.load(Ordering::SeqCst) >= 20 {
            flag.store(true, Ordering::SeqCst);
        }
        flag.load(Ordering::SeqCst)
    };
    let run = spin_run(&server.target(), &config, requests.clone(), &stop_fn).unwrap();
    assert_eq!(run.end, End::Interrupted);
    let s = check_accounting(&run);
    assert!(
        s.all.requests >= 20 && (s.all.requests as usize) < requests.len(),
        "{s:?}"
    );
    let kinds: Vec<&String> = s.all.errors.keys().collect();
    assert!(
        kinds
            .iter()
            .all(|k| ["interrupted", "unsent"].contains(&k.as_str())),
        "{kinds:?}"
    );
}

#[test]
fn a_response_too_slow_times_out_and_the_drain_bounds_the_run() {
    let server = Server::start(Behaviour {
        hold: Duration::from_secs(30),
        ..Behaviour::AT_ONCE
    });
    let duration = 50 * MS;
    let requests = stream("fixed", 1_000.0, duration, 4);
    // Timeouts first: every request sent times out, none is left.
    let mut config = LoadConfig::new(Mode::Open { connections: 64 }, duration);
    config.timeout = 20 * MS;
    config.drain = 30 * SEC;
    let run1 = spin_run(&server.target(), &config, requests.clone(), &never).unwrap();
    let s = check_accounting(&run1);
    assert_eq!(run1.end, End::Completed);
    assert_eq!(
        s.all.errors,
        BTreeMap::from([("response-timeout".to_string(), requests.len() as u64)])
    );
    // The drain next: the requests in flight when it runs out are
    // unfinished, and those still queued for the one connection unsent.
    let mut config = LoadConfig::new(Mode::Open { connections: 1 }, duration);
    config.drain = 100 * MS;
    let run2 = spin_run(&server.target(), &config, requests.clone(), &never).unwrap();
    let s = check_accounting(&run2);
    assert_eq!(run2.end, End::DrainTimeout);
    assert_eq!(s.all.requests, requests.len() as u64);
    // The first request holds the one connection (unless the machine
    // stalled the client past the drain before it went out): the rest wait.
    let unfinished = s.all.errors.get("unfinished").copied().unwrap_or(0);
    assert!(unfinished <= 1, "{:?}", s.all.errors);
    assert_eq!(s.all.errors["unsent"] + unfinished, requests.len() as u64);
}

#[test]
fn a_request_carries_its_work_and_deadline_rounded_to_the_us() {
    use crate::load::{HttpCall, LocalCall};
    use crate::node::invoke::Cancel;
    let call = |work, deadline| NodeCall {
        request: Request {
            id: faasched_model::node::RequestId(0),
            function: faasched_model::Function {
                id: faasched_model::FunctionId(0),
                name: "image-resize".into(),
            },
            arrival: 0,
            work,
            deadline,
            estimate: work,
        },
        send: 0,
        call: None,
    };
    let http = call(26_499, 264_990).request("127.0.0.1:9");
    assert_eq!(http.uri(), "/invoke/spin?us=26");
    assert_eq!(http.headers()[FUNCTION_HEADER], "image-resize");
    assert_eq!(http.headers()[DEADLINE_HEADER], "265");
    assert_eq!(call(500, 5_000).request("x:1").uri(), "/invoke/spin?us=1");
    // A deadline under half a µs is sent as 1 µs: a node refuses 0.
    let tiny = call(30, 300).request("x:1");
    assert_eq!(tiny.headers()[DEADLINE_HEADER], "1");
    // In process: the work rounded as well but never to 0, the deadline
    // in ns.
    let local = |work| call(work, 264_990).invoke(std::time::Instant::now(), Cancel::new());
    let i = local(26_500);
    assert_eq!(
        (i.call(), i.label()),
        ("spin?us=27".to_string(), "image-resize")
    );
    assert_eq!(i.deadline, Some(264_990));
    assert_eq!(local(26_499).call(), "spin?us=26");
    assert_eq!(local(1).call(), "spin?us=1");
}

#[test]
fn a_record_becomes_the_simulators_outcome() {
    use crate::load::Failure;
    use crate::node::invoke::Completed;
    let request = Request {
        id: faasched_model::node::RequestId(4),
        function: faasched_model::Function {
            id: faasched_model::FunctionId(1),
            name: "sift".into(),
        },
        arrival: 1_000,
        work: 300,
        deadline: 3_000,
        estimate: 300,
    };
    let record = Record {
        call: NodeCall {
            request,
            send: 1_000,
            call: None,
        },
        id: 0,
        client: 0,
        intended: 1_000,
        sent: Some(1_010),
        done: Some(2_500),
        status: Some(200),
        runtime_us: Some(1),
        cpu_us: None,
        preemptions: Some(2),
        node: None,
        cold: None,
        failure: None,
        completed: None,
    };
    // Over HTTP: finished when the answer came, first run and worker unseen.
    let o = record.outcome();
    assert_eq!((o.info.id.0, o.info.arrival, o.work), (4, 1_000, 300));
    assert_eq!((o.finish, o.first_run, o.worker), (Some(2_500), None, None));
    assert_eq!(
        (o.preemptions, o.latency(), o.missed()),
        (2, Some(1_500), false)
    );
    // In process: the runtime's own times, from when it was due.
    let done = Completed {
        written: None,
        value: 0,
        cpu: 300,
        preemptions: 1,
        runtime: 900,
        started: 200,
        dispatcher: 1,
        worker: 3,
        cold: false,
    };
    let o = Record {
        completed: Some(done),
        ..record.clone()
    }
    .outcome();
    assert_eq!((o.first_run, o.finish), (Some(1_200), Some(1_900)));
    assert_eq!(
        (o.dispatcher, o.worker.map(|w| w.0), o.preemptions),
        (1, Some(3), 1)
    );
    // Anything but a 2xx drops it.
    let refused = Record {
        status: Some(503),
        failure: Some(Failure::Server {
            kind: "overloaded".into(),
        }),
        ..record
    }
    .outcome();
    assert!(refused.dropped() && refused.missed());
    assert_eq!((refused.first_run, refused.preemptions), (None, 0));
}

/// `bimodal-high`'s functions, by id.
fn bimodal_functions() -> faasched_model::Functions {
    Workload::builtin("bimodal-high").unwrap().function_table()
}

fn mapping(given: &str) -> Mapping {
    given.parse().unwrap()
}

/// `image-resize` sent as `hello-http?x=1` with a body; `image-classify`
/// left as `spin`.
fn resize_to_hello() -> Calls {
    let mut calls = Calls::new(
        &bimodal_functions(),
        [mapping("image-resize=hello-http?x=1")],
    )
    .unwrap();
    calls
        .with_body("image-resize", Bytes::from_static(b"the input"))
        .unwrap();
    calls
}

#[test]
fn a_mapped_function_goes_to_its_call_with_its_body_and_the_rest_to_spin() {
    let server = Server::start(Behaviour::AT_ONCE);
    let duration = 100 * MS;
    let requests = stream("bimodal-high", 500.0, duration, 8);
    // One connection: the server sees the requests in the stream's order.
    let config = LoadConfig::new(Mode::Open { connections: 1 }, duration);
    let calls = resize_to_hello();
    let run = run(&server.target(), &config, requests.clone(), &calls, &never).unwrap();
    let s = check_accounting(&run);
    assert_eq!(s.all.answered, requests.len() as u64, "{s:?}");
    let seen = server.counts.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), requests.len());
    let mut mapped = 0;
    for (r, q) in seen.iter().zip(&requests) {
        let deadline = round_us(q.deadline).max(1).to_string();
        let name = &*q.function.name;
        let expect = match name {
            "image-resize" => {
                mapped += 1;
                Seen {
                    uri: "/invoke/hello-http?x=1".into(),
                    label: name.into(),
                    deadline,
                    body: Bytes::from_static(b"the input"),
                }
            }
            _ => Seen {
                uri: format!("/invoke/spin?us={}", round_us(q.work)),
                label: name.into(),
                deadline,
                body: Bytes::new(),
            },
        };
        assert_eq!(r, &expect);
    }
    // Both kinds were sent; the records keep which was which.
    assert!(mapped > 0 && mapped < requests.len(), "{mapped}");
    for r in &run.records {
        let name = &*r.call.request.function.name;
        assert_eq!(r.call.call.is_some(), name == "image-resize", "{r:?}");
    }
    // The summary is per workload function, as without calls.
    let names: Vec<&str> = s.functions.keys().map(String::as_str).collect();
    assert_eq!(names, ["image-classify", "image-resize"]);
}

#[test]
fn the_closed_loop_sends_mapped_functions_to_their_calls_too() {
    let server = Server::start(Behaviour::AT_ONCE);
    let requests = stream("bimodal-high", 1_000.0, 3_600 * SEC, 2);
    let config = LoadConfig::new(Mode::Closed { clients: 1 }, 50 * MS);
    let run = run(
        &server.target(),
        &config,
        requests,
        &resize_to_hello(),
        &never,
    )
    .unwrap();
    check_accounting(&run);
    let seen = server.counts.seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    for r in &seen {
        match r.label.as_str() {
            "image-resize" => assert_eq!(
                (r.uri.as_str(), &r.body[..]),
                ("/invoke/hello-http?x=1", &b"the input"[..])
            ),
            _ => assert!(r.uri.starts_with("/invoke/spin?us=") && r.body.is_empty()),
        }
    }
}

#[test]
fn a_mapped_request_is_its_call_over_http_and_in_process() {
    use crate::load::{HttpCall, LocalCall};
    use crate::node::invoke::Cancel;
    let functions = bimodal_functions();
    let request = |name: &str| Request {
        id: faasched_model::node::RequestId(0),
        function: functions.find(name).unwrap().clone(),
        arrival: 0,
        work: 26_499,
        deadline: 264_990,
        estimate: 26_499,
    };
    let calls = resize_to_hello();
    let mapped = NodeCall::new(request("image-resize"), 7, &calls);
    let spun = NodeCall::new(request("image-classify"), 7, &calls);
    assert_eq!((mapped.send, spun.call.as_ref()), (7, None));
    // The call is shared, not copied, by every request of its function.
    let again = NodeCall::new(request("image-resize"), 8, &calls);
    assert!(Arc::ptr_eq(
        mapped.call.as_ref().unwrap(),
        again.call.as_ref().unwrap()
    ));
    // Over HTTP: the call's path and body, the label and the deadline.
    let body = |http: hyper::Request<Full<Bytes>>| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(http.into_body().collect())
            .unwrap()
            .to_bytes()
    };
    let http = mapped.request("127.0.0.1:9");
    assert_eq!(http.method(), hyper::Method::POST);
    assert_eq!(http.uri(), "/invoke/hello-http?x=1");
    assert_eq!(http.headers()[FUNCTION_HEADER], "image-resize");
    assert_eq!(http.headers()[DEADLINE_HEADER], "265");
    assert_eq!(body(http), "the input");
    let http = spun.request("127.0.0.1:9");
    assert_eq!(http.uri(), "/invoke/spin?us=26");
    assert_eq!(http.headers()[FUNCTION_HEADER], "image-classify");
    assert_eq!(http.headers()[DEADLINE_HEADER], "265");
    assert!(body(http).is_empty());
    // In process: the call's function, query and body, the label, the
    // deadline in ns.
    let i = mapped.invoke(std::time::Instant::now(), Cancel::new());
    assert_eq!(
        (i.function.as_str(), i.query.as_deref(), i.label()),
        ("hello-http", Some("x=1"), "image-resize")
    );
    assert_eq!(
        (&i.body[..], i.deadline),
        (&b"the input"[..], Some(264_990))
    );
    let i = spun.invoke(std::time::Instant::now(), Cancel::new());
    assert_eq!(
        (i.call(), i.label(), i.body.is_empty()),
        ("spin?us=26".to_string(), "image-classify", true)
    );
    // A call without a query has none, and no body by default.
    let bare = Calls::new(&functions, [mapping("image-classify=noop")]).unwrap();
    let i = NodeCall::new(request("image-classify"), 0, &bare)
        .invoke(std::time::Instant::now(), Cancel::new());
    assert_eq!((i.call(), i.body.is_empty()), ("noop".to_string(), true));
    assert_eq!(
        NodeCall::new(request("image-classify"), 0, &bare)
            .request("h:1")
            .uri(),
        "/invoke/noop"
    );
}

#[test]
fn a_call_parses_and_a_bad_one_says_why() {
    let call = |s: &str| s.parse::<FunctionCall>();
    let c = call("primes-http?n=300000").unwrap();
    assert_eq!((c.function(), c.query()), ("primes-http", Some("n=300000")));
    assert_eq!(
        (c.uri().to_string(), c.to_string()),
        (
            "/invoke/primes-http?n=300000".into(),
            "primes-http?n=300000".into()
        )
    );
    let c = call("hello.v2_x-y").unwrap();
    assert_eq!((c.query(), c.uri().path()), (None, "/invoke/hello.v2_x-y"));
    assert!(c.body().is_empty());
    assert!(call(&"f".repeat(MAX_NAME)).is_ok());
    for (bad, why) in [
        ("", "NAME or NAME?QUERY"),
        ("?n=1", "NAME or NAME?QUERY"),
        ("has space", "' '"),
        ("a/b", "'/'"),
        ("..", "only dots"),
        (&"f".repeat(MAX_NAME + 1), "longer than 128"),
        ("fib?", "empty"),
        ("fib?n=1 2", "' '"),
        ("fib?n=1#x", "'#'"),
        ("fib?n=\u{e9}", "visible ASCII"),
    ] {
        let e = call(bad).unwrap_err();
        assert!(matches!(e, CallsError::Call { .. }), "{bad}: {e:?}");
        let e = e.to_string();
        assert!(e.contains(why) && e.contains(bad), "{bad}: {e}");
    }
    // LABEL=CALL and LABEL=FILE.
    let m = mapping("long=primes-http?n=3=4");
    assert_eq!((m.label.as_str(), m.call.query()), ("long", Some("n=3=4")));
    for bad in ["long", "=fib", "long=", ""] {
        let e = bad.parse::<Mapping>().unwrap_err();
        assert!(e.to_string().contains("LABEL=CALL"), "{bad}: {e}");
    }
    assert!(matches!(
        "long=a b".parse::<Mapping>(),
        Err(CallsError::Call { .. })
    ));
    let b: BodyFile = "short=dir/in=put.json".parse().unwrap();
    assert_eq!(
        (b.label.as_str(), b.path.to_str()),
        ("short", Some("dir/in=put.json"))
    );
    assert_eq!(b.to_string(), "short=dir/in=put.json");
    for bad in ["short", "=f", "short="] {
        let e = bad.parse::<BodyFile>().unwrap_err();
        assert!(e.to_string().contains("LABEL=FILE"), "{bad}: {e}");
    }
}

#[test]
fn calls_take_only_the_workloads_functions_once_each() {
    let functions = bimodal_functions();
    let e = Calls::new(&functions, [mapping("resize=fib")]).unwrap_err();
    assert!(matches!(e, CallsError::UnknownLabel { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains("`resize`") && e.contains("image-resize, image-classify"),
        "{e}"
    );
    let e = Calls::new(
        &functions,
        [mapping("image-resize=fib"), mapping("image-resize=noop")],
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("`image-resize` is given twice"),
        "{e}"
    );
    let none = Calls::new(&functions, []).unwrap();
    assert!(none.is_empty() && none == Calls::default());
    let mut calls = Calls::new(
        &functions,
        [
            mapping("image-resize=fib?n=10"),
            mapping("image-classify=noop"),
        ],
    )
    .unwrap();
    let listed: Vec<(&str, String)> = calls.iter().map(|(l, c)| (l, c.to_string())).collect();
    assert_eq!(
        listed,
        [
            ("image-classify", "noop".to_string()),
            ("image-resize", "fib?n=10".to_string())
        ]
    );
    // A body: only for a mapped label, once.
    let e = Calls::new(&functions, [mapping("image-resize=fib")])
        .unwrap()
        .with_body("image-classify", Bytes::new())
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(e, CallsError::Unmapped { .. }), "{e:?}");
    assert!(e.to_string().contains("`image-classify`"), "{e}");
    calls
        .with_body("image-resize", Bytes::from_static(b"x"))
        .unwrap();
    let e = calls
        .with_body("image-resize", Bytes::from_static(b"y"))
        .map(|_| ())
        .unwrap_err();
    assert!(e.to_string().contains("given twice"), "{e}");
    assert_eq!(&calls.of("image-resize").unwrap().body()[..], b"x");
    assert!(calls.of("image-classify").unwrap().body().is_empty());
}

/// A label that names no function but the copies of one maps them all to
/// one call, its body given once; a copy mapped again is refused, and a
/// name that only starts like a function's is no copy of it.
#[test]
fn a_label_of_copies_maps_every_copy() {
    let mut functions = faasched_model::Functions::default();
    for name in ["aes-0", "aes-1", "aes-extra", "aes"] {
        functions.intern(name);
    }
    let mut calls = Calls::new(&functions, [mapping("aes-extra=noop")]).unwrap();
    assert!(calls.of("aes-0").is_none());
    // `aes` is itself a function: it maps that one alone.
    calls = Calls::new(&functions, [mapping("aes=fib")]).unwrap();
    assert!(calls.of("aes").is_some() && calls.of("aes-0").is_none());
    let mut functions = faasched_model::Functions::default();
    for name in ["aes-0", "aes-1", "aes-x"] {
        functions.intern(name);
    }
    let mut calls = Calls::new(&functions, [mapping("aes=fib?n=3")]).unwrap();
    calls.with_body("aes", Bytes::from_static(b"k")).unwrap();
    for copy in ["aes-0", "aes-1"] {
        assert_eq!(calls.of(copy).unwrap().to_string(), "fib?n=3");
        assert_eq!(&calls.of(copy).unwrap().body()[..], b"k");
    }
    assert!(calls.of("aes-x").is_none());
    assert_eq!(calls.iter().count(), 1);
    for (one, other) in [("aes=fib", "aes-1=noop"), ("aes-1=noop", "aes=fib")] {
        let e = Calls::new(&functions, [mapping(one), mapping(other)]).unwrap_err();
        assert!(matches!(e, CallsError::Overlap { .. }), "{e:?}");
        assert!(e.to_string().contains("`aes-1` is mapped by both"), "{e}");
    }
    let e = Calls::new(&functions, [mapping("ae=fib")]).unwrap_err();
    assert!(matches!(e, CallsError::UnknownLabel { .. }), "{e:?}");
}

#[test]
fn a_body_is_a_regular_file_of_a_mib_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, len: usize| {
        let path = dir.path().join(name);
        std::fs::write(&path, vec![b'a'; len]).unwrap();
        path
    };
    assert_eq!(read_body(&file("full", MAX_BODY)).unwrap().len(), MAX_BODY);
    assert!(read_body(&file("empty", 0)).unwrap().is_empty());
    let over = file("over", MAX_BODY + 1);
    let missing = dir.path().join("missing");
    for (path, why) in [
        (over.as_path(), "longer than 1048576 bytes"),
        (dir.path(), "not a regular file"),
        (missing.as_path(), "No such file"),
    ] {
        let e = read_body(path).unwrap_err();
        assert!(matches!(e, CallsError::Body { .. }), "{e:?}");
        let e = e.to_string();
        assert!(
            e.contains(why) && e.contains(&path.display().to_string()),
            "{e}"
        );
    }
}
