//! The node runtime's HTTP ingress over real TCP on 127.0.0.1, against a
//! fake backend: what reaches the backend, what every answer looks like,
//! and that every accepted invocation is answered exactly once, through
//! malformed floods, clients that leave, and shutdown.
//!
//! No outcome depends on timing: the fake backend holds its answers behind
//! a gate the test opens, and the test waits for events (the backend saw a
//! call, a counter moved), bounded only so that a bug fails instead of
//! hanging.

use faasched_live::auth::Token;
use faasched_live::http::{BodyPace, Cut, FrontConfig};
use faasched_live::node::ingress::{self, Drained, Ingress, StopSignal};
use faasched_live::node::invoke::{Backend, Completed, Failure, Invoke, Reply};
use faasched_live::wire::LoadReport;
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long a test waits for an event before it calls it a bug.
const PATIENCE: Duration = Duration::from_secs(60);

#[derive(Default)]
struct State {
    /// What `invoke` received, in order.
    invokes: Vec<Invoke>,
    /// Whether `double` answers (closed: it waits).
    open: bool,
    shut: bool,
    /// Answers given on the fake's threads, the reply having returned.
    replied: usize,
    registered: Vec<(String, usize)>,
    /// Registrations in the backend now.
    compiling: usize,
}

/// A backend whose functions answer on their own threads: `double`
/// (its argument times two, once the gate is open), one function per
/// failure, and `drop`, which drops its reply uncalled.
struct Fake(Arc<Books>);

/// The fake's state, shared with its answering threads.
struct Books {
    state: Mutex<State>,
    changed: Condvar,
}

impl std::ops::Deref for Fake {
    type Target = Books;

    fn deref(&self) -> &Books {
        &self.0
    }
}

impl Fake {
    fn new(open: bool) -> Arc<Fake> {
        Arc::new(Fake(Arc::new(Books {
            state: Mutex::new(State {
                open,
                ..State::default()
            }),
            changed: Condvar::new(),
        })))
    }
}

impl Books {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        change(&mut self.lock());
        self.changed.notify_all();
    }

    /// Waits until `done` holds of the state.
    fn wait(&self, what: &str, done: impl Fn(&State) -> bool) -> MutexGuard<'_, State> {
        let (state, timeout) = self
            .changed
            .wait_timeout_while(self.lock(), PATIENCE, |state| !done(state))
            .unwrap_or_else(|p| p.into_inner());
        assert!(!timeout.timed_out(), "waited {PATIENCE:?} for {what}");
        state
    }

    fn calls(&self) -> usize {
        self.lock().invokes.len()
    }

    fn open(&self) {
        self.update(|state| state.open = true);
    }
}

impl Backend for Fake {
    /// As a node's `run` functions: integer arguments, no body.
    fn check(&self, invoke: &Invoke) -> Result<(), Failure> {
        faasched_live::wire::arguments(invoke.query.as_deref())
            .map_err(|malformed| Failure::BadRequest(malformed.what))?;
        match invoke.body.is_empty() {
            true => Ok(()),
            false => Err(Failure::BadRequest("takes no body".into())),
        }
    }

    fn invoke(&self, invoke: Invoke, reply: Reply) {
        let shut = self.lock().shut;
        let function = invoke.function.clone();
        let arg: i64 = invoke
            .query
            .as_deref()
            .and_then(|q| q.split_once('=').map(|(_, v)| v))
            .map_or(0, |v| v.parse().unwrap());
        self.update(|state| state.invokes.push(invoke));
        if shut {
            return reply(Err(Failure::ShuttingDown));
        }
        let answer = match function.as_str() {
            "double" => None,
            "trap" => Some(Err(Failure::Trap("unreachable executed".into()))),
            "timeout" => Some(Err(Failure::Timeout { limit: 5_000_000 })),
            "memory" => Some(Err(Failure::Memory)),
            "overloaded" => Some(Err(Failure::Overloaded)),
            "internal" => Some(Err(Failure::Internal("boom".into()))),
            "bad" => Some(Err(Failure::BadRequest("n must be positive".into()))),
            "drop" => {
                thread::spawn(move || drop(reply));
                return;
            }
            // Refused at once, on the caller's thread.
            _ => return reply(Err(Failure::UnknownFunction(function))),
        };
        let fake = Arc::clone(&self.0);
        thread::spawn(move || {
            let answer = answer.unwrap_or_else(|| {
                drop(fake.wait("the gate", |state| state.open));
                Ok(Completed {
                    value: arg * 2,
                    written: None,
                    cpu: 1_500_000,
                    preemptions: 2,
                    runtime: 3_250_000,
                    started: 250_000,
                    dispatcher: 0,
                    worker: 0,
                    cold: false,
                })
            });
            reply(answer);
            fake.update(|state| state.replied += 1);
        });
    }

    /// A module named `slow` compiles until the gate opens.
    fn register(
        &self,
        name: &str,
        module: &[u8],
        _settings: &faasched_live::node::manifest::Settings,
    ) -> Result<(), Failure> {
        if !module.starts_with(b"\0asm") {
            return Err(Failure::BadRequest("not a WebAssembly module".into()));
        }
        self.update(|state| state.compiling += 1);
        if name == "slow" {
            drop(self.wait("the gate", |state| state.open));
        }
        self.update(|state| {
            state.compiling -= 1;
            state.registered.push((name.to_owned(), module.len()));
        });
        Ok(())
    }

    fn unregister(&self, name: &str) -> Result<(), Failure> {
        let mut state = self.lock();
        match state.registered.iter().position(|(n, _)| n == name) {
            Some(i) => {
                state.registered.remove(i);
                Ok(())
            }
            None => Err(Failure::UnknownFunction(name.to_owned())),
        }
    }

    fn metrics(&self, out: &mut String) {
        out.push_str("# HELP fake_calls_total Invocations the fake saw.\n");
        out.push_str("# TYPE fake_calls_total counter\n");
        out.push_str(&format!("fake_calls_total {}\n", self.calls()));
    }

    fn status(&self) -> serde_json::Value {
        serde_json::json!({ "workers": 2 })
    }

    fn shutdown(&self) {
        self.update(|state| state.shut = true);
    }
}

/// A fake whose `double` answers at once.
fn fake() -> Arc<Fake> {
    Fake::new(true)
}

/// A fake whose `double` waits for [`Books::open`].
fn gated() -> Arc<Fake> {
    Fake::new(false)
}

/// An ingress serving on its own thread and runtime.
struct Server {
    addr: SocketAddr,
    backend: Arc<Fake>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<io::Result<Drained>>>,
}

impl Server {
    fn start(backend: &Arc<Fake>) -> Server {
        Server::with(backend, |_| {})
    }

    fn with(backend: &Arc<Fake>, configure: impl FnOnce(&mut Ingress)) -> Server {
        let mut ingress = Ingress::new(Arc::clone(backend) as Arc<dyn Backend>);
        configure(&mut ingress);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, addr) = std::sync::mpsc::channel();
        let thread = thread::spawn(move || {
            ingress::runtime()?.block_on(async {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                let _ = bound.send(listener.local_addr()?);
                ingress
                    .serve(listener, async {
                        let _ = stopped.await;
                    })
                    .await
            })
        });
        let addr = addr.recv().expect("the server bound its listener");
        Server {
            addr,
            backend: Arc::clone(backend),
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn connect(&self) -> Client {
        Client::connect(self.addr).expect("connect to the ingress")
    }

    /// Resolves the shutdown future, without waiting for `serve`.
    fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Shuts down and waits for `serve` to return.
    fn stop(mut self) -> Drained {
        self.shut_down();
        let thread = self.thread.take().expect("serving");
        thread
            .join()
            .expect("the server thread")
            .expect("serve returned")
    }

    /// One scrape of `/metrics`, by series (`name{labels}`).
    fn metrics(&self) -> BTreeMap<String, String> {
        let response = self.connect().request(&get("/metrics")).expect("scrape");
        assert_eq!(response.status, 200);
        series(&response.body)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Never leave a test hanging on a closed gate.
        self.backend.open();
        self.shut_down();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One HTTP/1.1 connection, written and read by hand.
struct Client {
    reader: BufReader<TcpStream>,
}

#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn error(&self) -> Option<&str> {
        self.header("x-faasched-error")
    }
}

impl Client {
    fn connect(addr: SocketAddr) -> io::Result<Client> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(PATIENCE))?;
        Ok(Client {
            reader: BufReader::new(stream),
        })
    }

    fn send(&mut self, request: &[u8]) -> io::Result<()> {
        self.reader.get_mut().write_all(request)
    }

    fn receive(&mut self) -> io::Result<Response> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| io::Error::other(format!("status line {line:?}")))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header
                .split_once(':')
                .ok_or_else(|| io::Error::other(format!("header {header:?}")))?;
            headers.push((name.to_owned(), value.trim().to_owned()));
        }
        let length: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map_or(Ok(0), |(_, v)| v.parse())
            .map_err(io::Error::other)?;
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body)?;
        Ok(Response {
            status,
            headers,
            body: String::from_utf8(body).map_err(io::Error::other)?,
        })
    }

    fn request(&mut self, request: &[u8]) -> io::Result<Response> {
        self.send(request)?;
        self.receive()
    }

    /// Whether the server closed the connection (reads end of file).
    fn closed(&mut self) -> bool {
        let mut byte = [0];
        matches!(self.reader.read(&mut byte), Ok(0) | Err(_))
    }
}

fn post(path: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut request = format!("POST {path} HTTP/1.1\r\nhost: test\r\ncontent-length: 0\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.into_bytes()
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n").into_bytes()
}

fn post_body(path: &str, body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nhost: test\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// Prometheus text, checked line by line, as a map from series to value.
fn series(text: &str) -> BTreeMap<String, String> {
    let mut all = BTreeMap::new();
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix("# ") {
            let mut words = comment.splitn(3, ' ');
            let keyword = words.next().unwrap_or("");
            assert!(
                matches!(keyword, "HELP" | "TYPE"),
                "comment {line:?} is no HELP or TYPE"
            );
            assert!(words.next().is_some_and(metric_name), "{line:?}");
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("line {line:?} is not `name{{labels}} value`"));
        assert!(
            value == "+Inf" || value.parse::<f64>().is_ok(),
            "value of {line:?}"
        );
        let name = match series.split_once('{') {
            Some((name, labels)) => {
                let labels = labels
                    .strip_suffix('}')
                    .unwrap_or_else(|| panic!("labels of {line:?}"));
                for label in labels.split(',') {
                    let (key, quoted) = label
                        .split_once('=')
                        .unwrap_or_else(|| panic!("label {label:?} in {line:?}"));
                    assert!(metric_name(key), "label name in {line:?}");
                    assert!(
                        quoted.len() >= 2 && quoted.starts_with('"') && quoted.ends_with('"'),
                        "label value in {line:?}"
                    );
                }
                name
            }
            None => series,
        };
        assert!(metric_name(name), "metric name in {line:?}");
        assert!(
            all.insert(series.to_owned(), value.to_owned()).is_none(),
            "{series} twice"
        );
    }
    all
}

fn metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// The value of one series as an integer.
fn count(metrics: &BTreeMap<String, String>, series: &str) -> u64 {
    metrics
        .get(series)
        .unwrap_or_else(|| panic!("no {series} in {metrics:#?}"))
        .parse()
        .unwrap_or_else(|_| panic!("{series} is not an integer"))
}

/// Scrapes until `done` holds of the metrics.
fn scrape_until(server: &Server, what: &str, done: impl Fn(&BTreeMap<String, String>) -> bool) {
    let start = Instant::now();
    while !done(&server.metrics()) {
        assert!(start.elapsed() < PATIENCE, "waited {PATIENCE:?} for {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn an_invocation_reaches_the_backend_and_its_answer_the_client() {
    let backend = fake();
    let server = Server::start(&backend);
    let mut client = server.connect();

    let answered = client
        .request(&post(
            "/invoke/double?n=21",
            &[
                ("x-faasched-function", "resize"),
                ("x-faasched-deadline-us", "2500"),
            ],
        ))
        .unwrap();
    assert_eq!(answered.status, 200, "{answered:?}");
    assert_eq!(answered.body, "42\n");
    assert_eq!(answered.header("x-faasched-runtime-us"), Some("3250"));
    assert_eq!(answered.header("x-faasched-cpu-us"), Some("1500"));
    assert_eq!(answered.header("x-faasched-preemptions"), Some("2"));
    assert_eq!(answered.error(), None);

    // Same connection: keep-alive.
    let bare = client.request(&post("/invoke/double", &[])).unwrap();
    assert_eq!((bare.status, bare.body.as_str()), (200, "0\n"));

    {
        let state = backend.lock();
        let [first, second] = &state.invokes[..] else {
            panic!("{:?}", state.invokes);
        };
        assert_eq!(first.function, "double");
        assert_eq!(first.query.as_deref(), Some("n=21"));
        assert_eq!(first.label.as_deref(), Some("resize"));
        assert_eq!(first.deadline, Some(2_500_000));
        assert_eq!(
            (
                second.query.as_ref(),
                second.label.as_ref(),
                second.deadline
            ),
            (None, None, None)
        );
    }

    let status = client.request(&get("/status")).unwrap();
    assert_eq!(status.status, 200);
    assert_eq!(status.header("content-type"), Some("application/json"));
    let status: serde_json::Value = serde_json::from_str(&status.body).unwrap();
    assert_eq!(status["ingress"]["listen"], server.addr.to_string());
    assert!(status["ingress"]["uptime_ms"].is_u64(), "{status}");
    assert_eq!(status["backend"]["workers"], 2);
}

#[test]
fn every_failure_has_its_status_kind_and_message() {
    let backend = fake();
    let server = Server::start(&backend);
    let mut client = server.connect();
    let cases = [
        ("trap", Failure::Trap("unreachable executed".into())),
        ("timeout", Failure::Timeout { limit: 5_000_000 }),
        ("memory", Failure::Memory),
        ("overloaded", Failure::Overloaded),
        ("internal", Failure::Internal("boom".into())),
        ("bad", Failure::BadRequest("n must be positive".into())),
        ("nothing", Failure::UnknownFunction("nothing".into())),
    ];
    for (function, failure) in &cases {
        let response = client
            .request(&post(&format!("/invoke/{function}?n=1"), &[]))
            .unwrap();
        assert_eq!(response.status, failure.status(), "{function}");
        assert_eq!(response.error(), Some(failure.kind()), "{function}");
        assert_eq!(response.body, format!("{failure}\n"), "{function}");
    }

    // A backend that drops the reply uncalled: the client still hears.
    let dropped = client.request(&post("/invoke/drop", &[])).unwrap();
    assert_eq!((dropped.status, dropped.error()), (500, Some("internal")));
    assert!(
        dropped.body.contains("without answering"),
        "{}",
        dropped.body
    );

    // Shut down: the backend's refusal travels the same way.
    backend.shutdown();
    let refused = client.request(&post("/invoke/double", &[])).unwrap();
    assert_eq!(
        (refused.status, refused.error()),
        (503, Some("shutting-down"))
    );

    let metrics = server.metrics();
    let calls = cases.len() as u64 + 2;
    assert_eq!(
        count(&metrics, "faasched_ingress_invocations_accepted_total"),
        calls
    );
    assert_eq!(
        count(&metrics, "faasched_ingress_invocations_answered_total"),
        calls
    );
    assert_eq!(count(&metrics, "faasched_ingress_invocations_in_flight"), 0);
    assert_eq!(
        count(
            &metrics,
            "faasched_ingress_responses_total{code=\"500\",kind=\"internal\"}"
        ),
        2
    );
    assert_eq!(
        count(
            &metrics,
            "faasched_ingress_responses_total{code=\"404\",kind=\"unknown-function\"}"
        ),
        1
    );
}

/// The malformed requests of the flood, with the status each gets.
fn malformed_kinds() -> Vec<(Vec<u8>, u16)> {
    vec![
        (get("/invoke/double?n=1"), 405),
        (post("/invoke/double?n=abc", &[]), 400),
        (post("/invoke/double?n=1&n=2", &[]), 400),
        (post("/invoke/double?=1", &[]), 400),
        (post("/invoke/double?n", &[]), 400),
        (post("/invoke/double?n=99999999999999999999", &[]), 400),
        (post("/invoke/", &[]), 400),
        (post("/invoke/a/b", &[]), 400),
        (post("/invoke/%2e%2e", &[]), 400),
        (get("/nowhere"), 404),
        (post("/", &[]), 404),
        (
            post("/invoke/double", &[("x-faasched-deadline-us", "soon")]),
            400,
        ),
        (
            post("/invoke/double", &[("x-faasched-deadline-us", "0")]),
            400,
        ),
        (
            post(
                "/invoke/double",
                &[
                    ("x-faasched-deadline-us", "1"),
                    ("x-faasched-deadline-us", "2"),
                ],
            ),
            400,
        ),
        (
            post("/invoke/double", &[("x-faasched-function", "a b")]),
            400,
        ),
        (post("/metrics", &[]), 405),
        (get("/register/m"), 405),
        (post("/register/m?x=1", &[]), 400),
    ]
}

#[test]
fn ten_thousand_malformed_requests_are_refused_before_the_backend() {
    let backend = fake();
    let server = Server::with(&backend, |ingress| {
        ingress.max_module_bytes(1024).max_body_bytes(4);
    });
    let kinds = malformed_kinds();

    // 9,000 on one keep-alive connection.
    let mut client = server.connect();
    for i in 0..9_000 {
        let (request, status) = &kinds[i % kinds.len()];
        let response = client.request(request).unwrap();
        assert_eq!(
            response.status,
            *status,
            "{}: {response:?}",
            String::from_utf8_lossy(request)
        );
        assert_eq!(response.error(), Some("bad-request"));
        assert!(
            response.body.starts_with("bad request: "),
            "{}",
            response.body
        );
        if *status == 405 {
            assert!(response.header("allow").is_some());
        }
    }
    // The connection still serves.
    let served = client.request(&post("/invoke/double?n=2", &[])).unwrap();
    assert_eq!((served.status, served.body.as_str()), (200, "4\n"));

    // 1,000 on fresh connections, with bodies past their limits and bytes
    // that are no HTTP at all.
    let mut fresh = kinds.clone();
    fresh.extend([
        (post_body("/invoke/double", b"hello"), 413),
        // Within the limit, but a `run` function takes no body.
        (post_body("/invoke/double", b"hi"), 400),
        (post_body("/register/m", &[0; 1025]), 413),
        (
            // Declares more than the limit and sends none of it.
            b"POST /register/m HTTP/1.1\r\nhost: test\r\ncontent-length: 1000000\r\n\r\n".to_vec(),
            413,
        ),
        (
            // Chunked past the limit: no length declared up front.
            [
                &b"POST /register/m HTTP/1.1\r\nhost: test\r\ntransfer-encoding: chunked\r\n\r\n"[..],
                b"258\r\n",
                &[0; 600],
                b"\r\n258\r\n",
                &[0; 600],
                b"\r\n0\r\n\r\n",
            ]
            .concat(),
            413,
        ),
        (b"NOT HTTP AT ALL\r\n\r\n".to_vec(), 400),
    ]);
    let mut garbage = 0;
    for i in 0..1_000 {
        let (request, status) = &fresh[i % fresh.len()];
        let response = server.connect().request(request).unwrap();
        assert_eq!(
            response.status,
            *status,
            "{}: {response:?}",
            String::from_utf8_lossy(request)
        );
        if request.starts_with(b"NOT HTTP") {
            // The HTTP layer refuses it before the ingress sees a request.
            garbage += 1;
        } else {
            assert_eq!(response.error(), Some("bad-request"), "{response:?}");
        }
    }

    assert_eq!(backend.calls(), 1, "only the one good invocation");
    assert!(backend.lock().registered.is_empty());
    let metrics = server.metrics();
    assert_eq!(
        count(&metrics, "faasched_ingress_malformed_requests_total"),
        10_000 - garbage
    );
    assert!(count(&metrics, "faasched_ingress_connection_errors_total") >= garbage);
    assert_eq!(
        count(&metrics, "faasched_ingress_invocations_accepted_total"),
        1
    );
    assert_eq!(
        count(&metrics, "faasched_ingress_invocations_answered_total"),
        1
    );
}

#[test]
fn a_client_that_leaves_before_its_answer_is_counted_and_the_answer_dropped() {
    let backend = gated();
    let server = Server::start(&backend);

    let mut leaving = server.connect();
    leaving.send(&post("/invoke/double?n=1", &[])).unwrap();
    drop(backend.wait("the invocation", |state| state.invokes.len() == 1));
    drop(leaving);
    scrape_until(&server, "the disconnect", |metrics| {
        count(metrics, "faasched_ingress_client_disconnects_total") == 1
    });
    let metrics = server.metrics();
    assert_eq!(count(&metrics, "faasched_ingress_invocations_in_flight"), 1);

    // Its answer arrives afterwards, is counted, and goes nowhere.
    backend.open();
    drop(backend.wait("the answer", |state| state.replied == 1));
    let metrics = server.metrics();
    assert_eq!(
        count(&metrics, "faasched_ingress_invocations_accepted_total"),
        1
    );
    assert_eq!(
        count(&metrics, "faasched_ingress_invocations_answered_total"),
        1
    );
    assert_eq!(count(&metrics, "faasched_ingress_invocations_in_flight"), 0);
    assert_eq!(
        count(&metrics, "faasched_ingress_client_disconnects_total"),
        1
    );

    // And the ingress serves on.
    let served = server
        .connect()
        .request(&post("/invoke/double?n=2", &[]))
        .unwrap();
    assert_eq!((served.status, served.body.as_str()), (200, "4\n"));
}

#[test]
fn shutdown_answers_what_it_accepted_and_refuses_the_rest() {
    let backend = gated();
    let mut server = Server::start(&backend);

    let mut idle = server.connect();
    assert_eq!(idle.request(&get("/status")).unwrap().status, 200);
    let mut waiting: Vec<Client> = (0..8)
        .map(|i| {
            let mut client = server.connect();
            client
                .send(&post(&format!("/invoke/double?n={i}"), &[]))
                .unwrap();
            client
        })
        .collect();
    drop(backend.wait("eight invocations", |state| state.invokes.len() == 8));

    server.shut_down();
    drop(backend.wait("the backend's shutdown", |state| state.shut));
    // The listener is closed before the backend hears of the shutdown.
    let refused = TcpStream::connect(server.addr).unwrap_err();
    assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
    assert!(idle.closed(), "an idle connection is closed at once");

    backend.open();
    for (i, client) in waiting.iter_mut().enumerate() {
        let response = client.receive().unwrap();
        assert_eq!(response.status, 200, "{response:?}");
        assert_eq!(response.body, format!("{}\n", 2 * i));
        assert!(client.closed(), "its connection closes after the answer");
    }
    assert_eq!(
        server.stop(),
        Drained {
            accepted: 8,
            unanswered: 0,
            connections_cut: Cut::default()
        }
    );
}

#[test]
fn the_drain_timeout_cuts_what_is_still_unanswered() {
    let backend = gated();
    let mut server = Server::with(&backend, |ingress| {
        ingress.drain_timeout(Duration::from_millis(50));
    });
    let mut client = server.connect();
    client.send(&post("/invoke/double?n=1", &[])).unwrap();
    drop(backend.wait("the invocation", |state| state.invokes.len() == 1));

    server.shut_down();
    let drained = server.thread.take().unwrap().join().unwrap().unwrap();
    assert_eq!(
        drained,
        Drained {
            accepted: 1,
            unanswered: 1,
            connections_cut: Cut {
                answering: 1,
                other: 0
            }
        }
    );
    assert!(client.receive().is_err(), "cut without an answer");

    // The late answer goes nowhere, quietly.
    backend.open();
    drop(backend.wait("the late answer", |state| state.replied == 1));
}

#[test]
fn register_takes_a_module_up_to_its_limit() {
    let backend = fake();
    let server = Server::with(&backend, |ingress| {
        ingress.max_module_bytes(1024);
    });
    let mut client = server.connect();
    let mut module = b"\0asm".to_vec();
    module.resize(1024, 0);
    let created = client.request(&post_body("/register/m", &module)).unwrap();
    assert_eq!(
        (created.status, created.body.as_str()),
        (201, "registered m\n")
    );

    let refused = client.request(&post_body("/register/m", b"hello")).unwrap();
    assert_eq!(
        (refused.status, refused.error()),
        (400, Some("bad-request"))
    );
    assert_eq!(refused.body, "bad request: not a WebAssembly module\n");

    module.push(0);
    let too_long = server
        .connect()
        .request(&post_body("/register/big", &module))
        .unwrap();
    assert_eq!(
        (too_long.status, too_long.error()),
        (413, Some("bad-request"))
    );
    assert_eq!(
        too_long.body,
        "bad request: the module is longer than 1024 bytes\n"
    );
    assert_eq!(backend.lock().registered, [("m".to_owned(), 1024)]);
}

/// With a token, `POST /register` takes a module only from a client that
/// presents it, and refuses the others before reading their body.
#[test]
fn register_needs_the_token_when_the_node_has_one() {
    const TOKEN: &str = "a-token-of-32-characters-or-more";
    let backend = fake();
    let server = Server::with(&backend, |ingress| {
        ingress.front(FrontConfig {
            token: Some(Token::new(TOKEN).unwrap()),
            ..FrontConfig::default()
        });
    });
    let with = |authorization: Option<&str>| {
        let mut request =
            b"POST /register/m HTTP/1.1\r\nhost: test\r\ncontent-length: 8\r\n".to_vec();
        if let Some(value) = authorization {
            request.extend_from_slice(format!("authorization: {value}\r\n").as_bytes());
        }
        request.extend_from_slice(b"\r\n\0asm\x01\0\0\0");
        server.connect().request(&request).unwrap()
    };
    for wrong in [None, Some("Bearer nope"), Some(&*format!("Basic {TOKEN}"))] {
        let refused = with(wrong);
        assert_eq!(
            (refused.status, refused.error()),
            (401, Some("unauthorized")),
            "{wrong:?}"
        );
        assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
        assert!(
            refused.body.contains("needs the service's token"),
            "{}",
            refused.body
        );
    }
    assert!(backend.lock().registered.is_empty(), "nothing registered");
    let created = with(Some(&format!("Bearer {TOKEN}")));
    let removal = |authorization: &str| {
        let request = format!(
            "DELETE /functions/m HTTP/1.1\r\nhost: test\r\nauthorization: {authorization}\r\n\r\n"
        );
        server.connect().request(request.as_bytes()).unwrap()
    };
    assert_eq!(removal("Bearer nope").status, 401);
    assert_eq!(
        (created.status, created.body.as_str()),
        (201, "registered m\n")
    );
    assert_eq!(backend.lock().registered, [("m".to_owned(), 8)]);
    assert_eq!(removal(&format!("Bearer {TOKEN}")).status, 200);
    assert!(backend.lock().registered.is_empty(), "removed");
    // Invocations need no token.
    let mut client = server.connect();
    assert_eq!(
        client
            .request(&post("/invoke/double?n=2", &[]))
            .unwrap()
            .status,
        200
    );
}

/// The last connections are kept for the control plane: with 8 at most,
/// the 8th takes a registration but no other request.
#[test]
fn the_last_connection_is_kept_for_the_control_plane() {
    let backend = fake();
    let server = Server::with(&backend, |ingress| {
        ingress.front(FrontConfig {
            max_connections: 8,
            ..FrontConfig::default()
        });
    });
    let mut open: Vec<Client> = (0..7).map(|_| server.connect()).collect();
    for client in &mut open {
        assert_eq!(client.request(&get("/status")).unwrap().status, 200);
    }
    let mut last = server.connect();
    let kept = last.request(&get("/status")).unwrap();
    assert_eq!((kept.status, kept.error()), (503, Some("overloaded")));
    assert!(
        kept.body.contains("kept for the control plane"),
        "{}",
        kept.body
    );
    assert!(last.closed(), "closed after its 503");
    let start = Instant::now();
    let module = b"\0asm\x01\0\0\0";
    loop {
        let answer = server
            .connect()
            .request(&post_body("/register/m", module))
            .unwrap();
        if answer.status == 201 {
            break;
        }
        // The closed connection's place may not be free yet.
        assert!(start.elapsed() < PATIENCE, "{answer:?}");
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(backend.lock().registered, [("m".to_owned(), 8)]);
}

/// With an invocation token, an invocation without it is refused 401 and
/// never reaches the backend; the control routes keep their own token.
#[test]
fn invocations_need_the_invoke_token_when_the_node_has_one() {
    const TOKEN: &str = "an-invocation-token-of-32-chars+";
    let backend = fake();
    let server = Server::with(&backend, |ingress| {
        ingress.front(FrontConfig {
            invoke_token: Some(Token::new(TOKEN).unwrap()),
            ..FrontConfig::default()
        });
    });
    let mut client = server.connect();
    let refused = client.request(&post("/invoke/double?n=2", &[])).unwrap();
    assert_eq!(
        (refused.status, refused.error()),
        (401, Some("unauthorized"))
    );
    let bearer = format!("Bearer {TOKEN}");
    let done = client
        .request(&post("/invoke/double?n=2", &[("authorization", &bearer)]))
        .unwrap();
    assert_eq!((done.status, done.body.as_str()), (200, "4\n"));
    assert_eq!(backend.calls(), 1, "only the one with the token");
    // Its load report and metrics stay open: a gateway polls them.
    assert_eq!(client.request(&get("/load")).unwrap().status, 200);
}

/// A client may invoke with the invocation token, but only the control
/// token's holder chooses a request's deadline: from a client the node
/// drops `x-faasched-deadline-us` (its own deadline applies) and counts
/// it. The control token invokes too.
#[test]
fn only_the_control_token_chooses_a_deadline() {
    const CONTROL: &str = "the-control-token-of-32-chars-++";
    const INVOKE: &str = "an-invocation-token-of-32-chars+";
    let backend = fake();
    let server = Server::with(&backend, |ingress| {
        ingress.front(FrontConfig {
            token: Some(Token::new(CONTROL).unwrap()),
            invoke_token: Some(Token::new(INVOKE).unwrap()),
            ..FrontConfig::default()
        });
    });
    let dated = |token: &str| {
        let bearer = format!("Bearer {token}");
        let answer = server
            .connect()
            .request(&post(
                "/invoke/nothing",
                &[("authorization", &bearer), ("x-faasched-deadline-us", "5")],
            ))
            .unwrap();
        assert_eq!(answer.error(), Some("unknown-function"), "{answer:?}");
    };
    dated(INVOKE);
    dated(CONTROL);
    let refused = server
        .connect()
        .request(&post("/invoke/nothing", &[("x-faasched-deadline-us", "5")]))
        .unwrap();
    assert_eq!(refused.status, 401);
    let deadlines: Vec<_> = backend.lock().invokes.iter().map(|i| i.deadline).collect();
    assert_eq!(deadlines, [None, Some(5_000)]);
    let metrics = server.connect().request(&get("/metrics")).unwrap().body;
    assert!(
        metrics.contains("faasched_ingress_deadlines_ignored_total 1\n"),
        "{metrics}"
    );
}

/// At most four modules are read at once: a fifth registration while four
/// bodies are still coming is told to come back (503, `Retry-After`), so
/// that what registrations hold is bounded.
#[test]
fn at_most_four_modules_are_read_at_once() {
    let backend = fake();
    let server = Server::start(&backend);
    let mut coming: Vec<Client> = (0..4)
        .map(|i| {
            let mut c = server.connect();
            c.send(
                format!("POST /register/m{i} HTTP/1.1\r\nhost: test\r\ncontent-length: 1000\r\n\r\n\0asm")
                    .as_bytes(),
            )
            .unwrap();
            c
        })
        .collect();
    // The four are being read once a fifth is refused; wait for that.
    let start = Instant::now();
    let busy = loop {
        let answer = server
            .connect()
            .request(&post_body("/register/fifth", b"\0asm\x01\0\0\0"))
            .unwrap();
        if answer.status == 503 || start.elapsed() > PATIENCE {
            break answer;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(
        (busy.status, busy.error()),
        (503, Some("overloaded")),
        "{busy:?}"
    );
    assert_eq!(busy.header("retry-after"), Some("1"));
    assert!(
        busy.body.contains("other modules are being sent"),
        "{}",
        busy.body
    );
    drop(coming.drain(..));
}

/// One module compiles at a time: a second registration meanwhile is
/// told to come back (503, `Retry-After`); `DELETE /functions/NAME`
/// removes a module.
#[test]
fn one_module_compiles_at_a_time_and_a_module_can_be_removed() {
    let backend = gated();
    let server = Server::start(&backend);
    let module = b"\0asm\x01\0\0\0";
    let mut slow = server.connect();
    slow.send(&post_body("/register/slow", module)).unwrap();
    drop(backend.wait("the slow compile", |state| state.compiling == 1));
    let busy = server
        .connect()
        .request(&post_body("/register/other", module))
        .unwrap();
    assert_eq!((busy.status, busy.error()), (503, Some("overloaded")));
    assert_eq!(busy.header("retry-after"), Some("1"));
    assert!(
        busy.body.contains("another module is compiling"),
        "{}",
        busy.body
    );
    backend.open();
    assert_eq!(slow.receive().unwrap().status, 201);
    let mut client = server.connect();
    let other = client
        .request(&post_body("/register/other", module))
        .unwrap();
    assert_eq!(other.status, 201, "{}", other.body);

    let delete = |path: &str| format!("DELETE {path} HTTP/1.1\r\nhost: test\r\n\r\n").into_bytes();
    let removed = client.request(&delete("/functions/other")).unwrap();
    assert_eq!(
        (removed.status, removed.body.as_str()),
        (200, "removed other\n")
    );
    let gone = client.request(&delete("/functions/other")).unwrap();
    assert_eq!((gone.status, gone.error()), (404, Some("unknown-function")));
    let wrong = client.request(&post("/functions/slow", &[])).unwrap();
    assert_eq!((wrong.status, wrong.header("allow")), (405, Some("DELETE")));
    assert_eq!(backend.lock().registered, [("slow".to_owned(), 8)]);
}

/// A body that comes slower than the pace is answered 408 and its
/// connection closed, instead of holding it for ever.
#[test]
fn a_slow_body_is_refused_408() {
    let backend = fake();
    let server = Server::with(&backend, |ingress| {
        ingress.front(FrontConfig {
            body_pace: BodyPace {
                grace: Duration::from_millis(100),
                min_rate: 1000,
            },
            ..FrontConfig::default()
        });
    });
    let mut slow = server.connect();
    // 10 of the 1,000 bytes it declares, then nothing.
    slow.send(b"POST /register/m HTTP/1.1\r\nhost: test\r\ncontent-length: 1000\r\n\r\n\0asm\x01\0\0\0\0\0")
        .unwrap();
    let refused = slow.receive().unwrap();
    assert_eq!(refused.status, 408, "{refused:?}");
    assert!(
        refused.body.contains("came too slowly: 10 bytes"),
        "{}",
        refused.body
    );
    assert!(slow.closed(), "its connection is closed");
    assert!(backend.lock().registered.is_empty());
}

/// Chunked bodies are bounded too: a chunk line that drips (its
/// extension one byte at a time, no data) is answered 408 once the pace's
/// grace is spent, and a chunk extension past hyper's 16 KiB or a chunk
/// size of more hex digits than 64 bits hold is answered 400 before the
/// body is read on.
#[test]
fn chunk_lines_are_bounded_in_time_and_length() {
    let backend = fake();
    let server = Server::with(&backend, |ingress| {
        ingress.front(FrontConfig {
            body_pace: BodyPace {
                grace: Duration::from_millis(100),
                min_rate: 1000,
            },
            ..FrontConfig::default()
        });
    });
    let head = b"POST /register/m HTTP/1.1\r\nhost: test\r\ntransfer-encoding: chunked\r\n\r\n";
    let mut dripping = server.connect();
    dripping.send(head).unwrap();
    dripping.send(b"1;").unwrap();
    // One byte of extension every 20 ms, at most 500 of them (10 s), until
    // the connection is closed.
    let mut writer = dripping.reader.get_ref().try_clone().unwrap();
    let drip = std::thread::spawn(move || {
        for _ in 0..500 {
            if writer.write_all(b"a").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let refused = dripping.receive().unwrap();
    assert_eq!(refused.status, 408, "{refused:?}");
    assert!(dripping.closed(), "its connection is closed");
    drip.join().unwrap();
    for (line, what) in [
        (
            format!("1;{}\r\nx\r\n0\r\n\r\n", "a".repeat(70_000)),
            "long extension",
        ),
        (
            "0000000000000000000001\r\nx\r\n0\r\n\r\n".to_string(),
            "long size",
        ),
    ] {
        let mut client = server.connect();
        client.send(head).unwrap();
        client.send(line.as_bytes()).unwrap();
        let answer = client.receive().unwrap();
        assert_eq!(answer.status, 400, "{what}: {answer:?}");
    }
    assert!(backend.lock().registered.is_empty());
}

/// Past `max_connections` open at once, a connection is answered 503 and
/// closed, and counted; once one closes, the next is served.
#[test]
fn connections_past_the_limit_are_refused_503() {
    let backend = fake();
    let server = Server::with(&backend, |ingress| {
        ingress.front(FrontConfig {
            max_connections: 2,
            ..FrontConfig::default()
        });
    });
    let mut open: Vec<Client> = (0..2).map(|_| server.connect()).collect();
    for client in &mut open {
        assert_eq!(client.request(&get("/status")).unwrap().status, 200);
    }
    let mut third = server.connect();
    let refused = third.receive().unwrap();
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(refused.error(), Some("overloaded"));
    drop(open.pop());
    let start = Instant::now();
    let mut refusals = 1;
    let mut next = loop {
        let mut next = server.connect();
        match next.request(&get("/status")) {
            Ok(answer) if answer.status == 200 => break next,
            Ok(answer) if answer.status == 503 => refusals += 1,
            _ => {}
        }
        assert!(start.elapsed() < PATIENCE, "no room came back");
        thread::sleep(Duration::from_millis(5));
    };
    let metrics = next.request(&get("/metrics")).unwrap().body;
    let line = format!("faasched_ingress_connections_refused_total {refusals}");
    assert!(
        metrics.lines().any(|l| l == line),
        "no {line:?} in {metrics}"
    );
}

#[test]
fn metrics_are_prometheus_text_and_the_books_balance() {
    let backend = fake();
    let server = Server::start(&backend);
    let mut client = server.connect();
    for n in 0..5 {
        let response = client
            .request(&post(&format!("/invoke/double?n={n}"), &[]))
            .unwrap();
        assert_eq!(response.status, 200);
    }
    for _ in 0..2 {
        assert_eq!(
            client.request(&post("/invoke/trap", &[])).unwrap().status,
            500
        );
    }
    for _ in 0..3 {
        assert_eq!(client.request(&get("/invoke/double")).unwrap().status, 405);
    }
    assert_eq!(client.request(&get("/elsewhere")).unwrap().status, 404);

    let response = client.request(&get("/metrics")).unwrap();
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let metrics = series(&response.body);
    let ingress_end = response.body.find("fake_calls_total").unwrap();
    assert!(
        response.body[..ingress_end].contains("faasched_ingress_accept_errors_total"),
        "the ingress's counters come first"
    );
    for (series, value) in [
        ("faasched_ingress_requests_total{route=\"invoke\"}", 10),
        ("faasched_ingress_requests_total{route=\"other\"}", 1),
        ("faasched_ingress_requests_total{route=\"metrics\"}", 1),
        ("faasched_ingress_requests_total{route=\"register\"}", 0),
        (
            "faasched_ingress_responses_total{code=\"200\",kind=\"ok\"}",
            5,
        ),
        (
            "faasched_ingress_responses_total{code=\"500\",kind=\"trap\"}",
            2,
        ),
        (
            "faasched_ingress_responses_total{code=\"405\",kind=\"bad-request\"}",
            3,
        ),
        (
            "faasched_ingress_responses_total{code=\"404\",kind=\"bad-request\"}",
            1,
        ),
        ("faasched_ingress_invocations_accepted_total", 7),
        ("faasched_ingress_invocations_answered_total", 7),
        ("faasched_ingress_invocations_in_flight", 0),
        ("faasched_ingress_invocation_latency_seconds_count", 7),
        (
            "faasched_ingress_invocation_latency_seconds_bucket{le=\"+Inf\"}",
            7,
        ),
        ("faasched_ingress_malformed_requests_total", 4),
        ("faasched_ingress_client_disconnects_total", 0),
        ("faasched_ingress_connections_total", 1),
        ("fake_calls_total", 7),
    ] {
        assert_eq!(count(&metrics, series), value, "{series}");
    }
}

#[test]
fn sigterm_resolves_the_shutdown_signal_and_serve_returns() {
    assert!(
        ingress::shutdown_signal().is_err(),
        "no runtime, no signal handler"
    );
    let backend = fake();
    let drained = ingress::runtime()
        .unwrap()
        .block_on(async {
            // Installed before the signal is sent: it cannot kill the test.
            let signal = ingress::shutdown_signal()?;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let me = faasched_sys::process::pidfd_open(std::process::id() as libc::pid_t)?;
            faasched_sys::process::signal(&me, libc::SIGTERM)?;
            let backend = Arc::clone(&backend) as Arc<dyn Backend>;
            ingress::serve(listener, backend, async {
                assert_eq!(signal.await, StopSignal::Terminate);
            })
            .await
        })
        .unwrap();
    assert_eq!(drained.accepted, 0);
    assert!(backend.lock().shut);
}

#[test]
fn the_ingress_and_its_serve_future_are_send() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}
    send_sync::<Ingress>();
    send_sync::<Drained>();
    send_sync::<StopSignal>();
    let ingress = Ingress::new(fake() as Arc<dyn Backend>);
    ingress::runtime().unwrap().block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        // A multi-thread runtime could spawn it.
        let serving = ingress.serve(listener, async {});
        send(&serving);
    });
}

#[test]
fn load_reports_the_sampled_average_over_the_configured_cores() {
    let backend = gated();
    let server = Server::with(&backend, |ingress| {
        let mut load = ingress::LoadConfig::new();
        load.cores(4)
            .memory_mb(512)
            .period(Duration::from_millis(1));
        ingress.load_report(load);
    });
    let mut client = server.connect();
    // Two invocations held open are the node's active ones.
    let mut held: Vec<Client> = (0..2).map(|_| server.connect()).collect();
    for c in &mut held {
        c.send(&post("/invoke/double?n=21", &[])).unwrap();
    }
    let start = Instant::now();
    let report = loop {
        let answer = client.request(&get("/load")).unwrap();
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(answer.header("content-type"), Some("application/json"));
        let report: LoadReport = serde_json::from_str(&answer.body).unwrap();
        assert_eq!((report.cores, report.memory_mb), (4, 512));
        // The kernel's average of 2 active tasks reaches 2.00, over 4 cores.
        if report.load == 0.5 {
            break report;
        }
        assert!(start.elapsed() < PATIENCE, "never reached 0.5: {report:?}");
        thread::sleep(Duration::from_millis(1));
    };
    assert!(report.seq > 0 && report.published_ms <= start.elapsed().as_millis() as u64 + 1_000);
    assert_eq!(
        client.request(&post("/load", &[])).unwrap().status,
        405,
        "GET only"
    );
    backend.open();
    for c in &mut held {
        assert_eq!(c.receive().unwrap().status, 200);
    }
}
