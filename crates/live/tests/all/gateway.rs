//! The cluster gateway over real TCP on 127.0.0.1, in front of fake nodes
//! (HTTP servers in the test whose `/load` the test sets): requests go
//! where the router says, a dead node's request gets a 502 and later ones
//! go to the live node, malformed ones reach no node, and every request
//! sent is answered exactly once, counted on both sides.
//!
//! No outcome depends on timing: the test waits for events (the gateway's
//! status shows a load or a node down), bounded only so that a bug fails
//! instead of hanging.

use bytes::Bytes;
use faasched_live::auth::Token;
use faasched_live::cluster::{Gateway, GatewayConfig, GatewayServed, Registration};
use faasched_live::http::{self, FrontConfig, Service};
use faasched_live::wire::LoadReport;
use faasched_model::FunctionId;
use faasched_model::cluster::FunctionProfile;
use faasched_policy::cluster::LeastLoaded;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long a test waits for an event before it calls it a bug.
const PATIENCE: Duration = Duration::from_secs(60);

/// A node that reports the load the test sets and answers every
/// invocation with its own name.
#[derive(Default)]
struct FakeNode {
    name: Mutex<String>,
    load: Mutex<f64>,
    invoked: AtomicU64,
    /// What `/invoke/hold` waits for: never notified, so it holds its
    /// connection until the node is stopped.
    hold: tokio::sync::Notify,
    /// Set: every request, its load polls too, waits for `hold`.
    frozen: std::sync::atomic::AtomicBool,
}

impl Service for FakeNode {
    async fn handle(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path();
        if path.starts_with("/invoke/") {
            self.invoked.fetch_add(1, Ordering::SeqCst);
        }
        if self.frozen.load(Ordering::SeqCst) {
            self.hold.notified().await;
        }
        if path == "/load" {
            let report = LoadReport {
                cores: 1,
                memory_mb: 1024,
                load: *self.load.lock().unwrap(),
                published_ms: 0,
                seq: 1,
                // Its id: the address it listens on, under any other.
                node: Some(self.name.lock().unwrap().clone()),
            };
            return Response::new(Full::new(Bytes::from(
                serde_json::to_string(&report).unwrap(),
            )));
        }
        if path.starts_with("/invoke/") {
            if path == "/invoke/hold" {
                self.hold.notified().await;
            }
            let label = request
                .headers()
                .get("x-faasched-function")
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default();
            let body = format!(
                "{} {}?{} {label}\n",
                self.name.lock().unwrap(),
                path,
                request.uri().query().unwrap_or("")
            );
            // `bytes=N` answers N bytes.
            let body = match request.uri().query().and_then(|q| q.strip_prefix("bytes=")) {
                Some(n) => Bytes::from(vec![b'x'; n.parse().unwrap()]),
                None => Bytes::from(body),
            };
            let mut response = Response::new(Full::new(body));
            response
                .headers_mut()
                .insert("x-faasched-runtime-us", 5.into());
            // `error=KIND` answers a 503 of that kind, as a full node does.
            if let Some(kind) = request.uri().query().and_then(|q| q.strip_prefix("error=")) {
                *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                response
                    .headers_mut()
                    .insert("x-faasched-error", kind.parse().unwrap());
            }
            if request.uri().query() == Some("close=1") {
                // As a node that stops says of its own connection.
                response
                    .headers_mut()
                    .insert("connection", "close".parse().unwrap());
            }
            return response;
        }
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = StatusCode::NOT_FOUND;
        response
    }
}

/// A gateway over two fake nodes, on a thread of its own.
struct Cluster {
    gateway: SocketAddr,
    nodes: Vec<(String, Arc<FakeNode>)>,
    stop_nodes: Vec<Option<oneshot::Sender<()>>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<GatewayServed>>,
    runtime: tokio::runtime::Handle,
}

fn profile() -> FunctionProfile {
    FunctionProfile {
        function: FunctionId(0),
        memory_mb: 128,
        warm: 1_000_000,
        cold: 2_000_000,
    }
}

impl Cluster {
    fn start(loads: [f64; 2]) -> Cluster {
        Cluster::start_with(loads, |_| {})
    }

    /// [`Cluster::start`] with the gateway's config changed by `configure`.
    fn start_with(
        loads: [f64; 2],
        configure: impl FnOnce(&mut GatewayConfig) + Send + 'static,
    ) -> Cluster {
        Cluster::launch(loads, true, configure)
    }

    /// The two fake nodes and a gateway given none of them: they are to
    /// register.
    fn unlisted(loads: [f64; 2]) -> Cluster {
        Cluster::launch(loads, false, |_| {})
    }

    fn launch(
        loads: [f64; 2],
        listed: bool,
        configure: impl FnOnce(&mut GatewayConfig) + Send + 'static,
    ) -> Cluster {
        let (tx, rx) = mpsc::channel();
        let thread = thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let mut nodes = Vec::new();
                let mut stops = Vec::new();
                for load in loads {
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                    let addr = listener.local_addr().unwrap().to_string();
                    let node = Arc::new(FakeNode::default());
                    *node.name.lock().unwrap() = addr.clone();
                    *node.load.lock().unwrap() = load;
                    let (stop, stopped) = oneshot::channel::<()>();
                    tokio::spawn(http::serve(
                        listener,
                        Arc::clone(&node),
                        None,
                        async move {
                            let _ = stopped.await;
                        },
                        http::Limits::new(Duration::ZERO),
                    ));
                    nodes.push((addr, node));
                    stops.push(Some(stop));
                }
                let listed = if listed {
                    nodes.iter().map(|(a, _)| a.clone()).collect()
                } else {
                    Vec::new()
                };
                let mut config = GatewayConfig::new(listed);
                config.period(Duration::from_millis(20));
                configure(&mut config);
                let gateway = Gateway::new(
                    &config,
                    Box::new(LeastLoaded::new()),
                    [("f".to_owned(), profile())],
                )
                .unwrap();
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let (stop, stopped) = oneshot::channel::<()>();
                let handle = tokio::runtime::Handle::current();
                tx.send((listener.local_addr().unwrap(), nodes, stops, stop, handle))
                    .unwrap();
                gateway
                    .serve(listener, async move {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap()
            })
        });
        let (gateway, nodes, stop_nodes, stop, runtime) = rx.recv_timeout(PATIENCE).unwrap();
        Cluster {
            gateway,
            nodes,
            stop_nodes,
            stop: Some(stop),
            thread: Some(thread),
            runtime,
        }
    }

    /// Serves node `i` again, on its address, after it was stopped.
    fn restart(&mut self, i: usize) {
        let listener = std::net::TcpListener::bind(self.node(i)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let _entered = self.runtime.enter();
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        self.runtime.spawn(http::serve(
            listener,
            Arc::clone(&self.nodes[i].1),
            None,
            async move {
                let _ = stopped.await;
            },
            http::Limits::new(Duration::ZERO),
        ));
        self.stop_nodes[i] = Some(stop);
    }

    fn node(&self, i: usize) -> &str {
        &self.nodes[i].0
    }

    fn invoked(&self, i: usize) -> u64 {
        self.nodes[i].1.invoked.load(Ordering::SeqCst)
    }

    fn set_load(&self, i: usize, load: f64) {
        *self.nodes[i].1.load.lock().unwrap() = load;
    }

    /// Waits until the gateway's status satisfies `done`.
    fn status_until(&self, what: &str, done: impl Fn(&serde_json::Value) -> bool) {
        let start = Instant::now();
        loop {
            let answer = call(self.gateway, "GET", "/status", &[]);
            let status: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
            if done(&status) {
                return;
            }
            assert!(start.elapsed() < PATIENCE, "never {what}: {status}");
            thread::sleep(Duration::from_millis(5));
        }
    }

    fn stop(mut self) -> GatewayServed {
        self.stop.take().unwrap().send(()).unwrap();
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        for stop in self.stop_nodes.iter_mut().filter_map(Option::take) {
            let _ = stop.send(());
        }
    }
}

/// An answer: status, headers (lower-cased names), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request on its own connection, closed after the answer.
fn call(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("content-length: 0\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// The addresses of the nodes in the gateway's status, in order.
fn listed(status: &serde_json::Value) -> Vec<String> {
    status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node"].as_str().unwrap().to_owned())
        .collect()
}

fn invoke(c: &Cluster) -> Answer {
    call(c.gateway, "POST", "/invoke/f?n=3", &[])
}

#[test]
fn requests_go_where_the_router_says_with_their_query_and_headers() {
    let c = Cluster::start([0.2, 0.8]);
    c.status_until("both loads reported", |s| {
        s["nodes"][1]["load"] == 0.8 && s["nodes"][0]["load"] == 0.2
    });
    for _ in 0..5 {
        let a = invoke(&c);
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.header("x-faasched-node"), Some(c.node(0)));
        assert_eq!(a.body, format!("{} /invoke/f?n=3 \n", c.node(0)));
    }
    // The label header names the function and travels to the node.
    let a = call(
        c.gateway,
        "POST",
        "/invoke/spin?us=100",
        &[("x-faasched-function", "f")],
    );
    assert_eq!(a.body, format!("{} /invoke/spin?us=100 f\n", c.node(0)));
    // The loads turn: the router follows the next reports.
    c.set_load(0, 0.9);
    c.set_load(1, 0.1);
    c.status_until("the new loads", |s| {
        s["nodes"][0]["load"] == 0.9 && s["nodes"][1]["load"] == 0.1
    });
    for _ in 0..4 {
        assert_eq!(invoke(&c).header("x-faasched-node"), Some(c.node(1)));
    }
    assert_eq!((c.invoked(0), c.invoked(1)), (6, 4));
    let metrics = call(c.gateway, "GET", "/metrics", &[]).body;
    for line in [
        format!(
            "faasched_gateway_node_requests_total{{node=\"{}\"}} 6",
            c.node(0)
        ),
        format!(
            "faasched_gateway_node_requests_total{{node=\"{}\"}} 4",
            c.node(1)
        ),
        format!("faasched_gateway_node_up{{node=\"{}\"}} 1", c.node(1)),
        "faasched_gateway_invocations_received_total 10".to_owned(),
        "faasched_gateway_invocations_answered_total 10".to_owned(),
        "faasched_gateway_decision_seconds_count 10".to_owned(),
        "faasched_gateway_overhead_seconds_count 10".to_owned(),
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line:?} in\n{metrics}"
        );
    }
    let served = c.stop();
    assert_eq!((served.received, served.answered), (10, 10));
}

/// The nodes' own failures are counted by kind, apart from the router's
/// drops, in the metrics, the status and what the gateway served; a kind
/// that is not one (upper case, too long) counts as `other`.
#[test]
fn the_nodes_failures_are_counted_by_kind() {
    let c = Cluster::start([0.2, 0.8]);
    for query in [
        "error=overloaded",
        "error=overloaded",
        "error=NotAKind",
        "n=1",
    ] {
        let a = call(c.gateway, "POST", &format!("/invoke/f?{query}"), &[]);
        assert_eq!(a.status == 503, query.starts_with("error"), "{query}");
    }
    let metrics = call(c.gateway, "GET", "/metrics", &[]).body;
    for line in [
        "faasched_gateway_node_failures_total{kind=\"overloaded\"} 2",
        "faasched_gateway_node_failures_total{kind=\"other\"} 1",
        "faasched_gateway_drops_total 0",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line:?} in\n{metrics}"
        );
    }
    let status = call(c.gateway, "GET", "/status", &[]).body;
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(
        status["invocations"]["node_failures"],
        serde_json::json!({"other": 1, "overloaded": 2})
    );
    let served = c.stop();
    assert_eq!(served.answered, 4);
    assert_eq!(
        served.node_failures.into_iter().collect::<Vec<_>>(),
        [("other".to_string(), 1), ("overloaded".to_string(), 2)]
    );
}

/// A node that refuses connections (it died) is taken out at the first
/// invocation it refuses, which goes to the live one instead: no byte of
/// it reached the dead node, so it has not run. Back on its address, the
/// node answers its polls and is taken back.
#[test]
fn a_dead_node_is_taken_out_at_once_its_invocation_sent_to_the_live_one() {
    let mut c = Cluster::start([0.0, 0.5]);
    c.status_until("both loads reported", |s| s["nodes"][1]["load"] == 0.5);
    let mut sent = 0;
    for _ in 0..3 {
        assert_eq!(invoke(&c).header("x-faasched-node"), Some(c.node(0)));
        sent += 1;
    }
    c.stop_nodes[0].take().unwrap().send(()).unwrap();
    let start = Instant::now();
    while TcpStream::connect(c.node(0)).is_ok() {
        assert!(start.elapsed() < PATIENCE, "node 0 never closed");
        thread::sleep(Duration::from_millis(1));
    }
    // The router still picks it (no poll has missed yet); its refusal
    // takes it out, and the live node answers.
    let a = invoke(&c);
    sent += 1;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.header("x-faasched-node"), Some(c.node(1)));
    let status: serde_json::Value =
        serde_json::from_str(&call(c.gateway, "GET", "/status", &[]).body).unwrap();
    assert_eq!(status["nodes"][0]["up"], false, "{status}");
    assert_eq!(
        status["nodes"][0]["misses"], 0,
        "out before any missed poll: {status}"
    );
    for _ in 0..5 {
        let a = invoke(&c);
        sent += 1;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.header("x-faasched-node"), Some(c.node(1)));
    }
    assert_eq!((c.invoked(0), c.invoked(1)), (3, 6));
    let metrics = call(c.gateway, "GET", "/metrics", &[]).body;
    for line in [
        format!(
            "faasched_gateway_node_errors_total{{node=\"{}\"}} 1",
            c.node(0)
        ),
        format!("faasched_gateway_node_up{{node=\"{}\"}} 0", c.node(0)),
        "faasched_gateway_rerouted_total 1".to_owned(),
        "faasched_gateway_node_taken_out_total 1".to_owned(),
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line:?} in\n{metrics}"
        );
    }
    assert!(!metrics.contains("kind=\"node-unreachable\""), "{metrics}");
    // Back on its address, it answers its polls and is taken back.
    c.restart(0);
    c.status_until("the node back up", |s| s["nodes"][0]["up"] == true);
    let a = invoke(&c);
    sent += 1;
    assert_eq!(a.header("x-faasched-node"), Some(c.node(0)), "{}", a.body);
    assert_eq!((c.invoked(0), c.invoked(1)), (4, 6));
    let served = c.stop();
    assert_eq!((served.received, served.answered), (sent, sent));
    assert_eq!(served.unreachable, 0);
}

#[test]
fn a_node_that_fails_mid_request_gets_its_client_a_502() {
    let mut c = Cluster::start([0.0, 0.5]);
    c.status_until("both loads reported", |s| s["nodes"][1]["load"] == 0.5);
    let gateway = c.gateway;
    let held = thread::spawn(move || {
        call(
            gateway,
            "POST",
            "/invoke/hold",
            &[("x-faasched-function", "f")],
        )
    });
    let start = Instant::now();
    while c.invoked(0) == 0 {
        assert!(
            start.elapsed() < PATIENCE,
            "the held request never reached node 0"
        );
        thread::sleep(Duration::from_millis(1));
    }
    // The node stops with no time to drain: the connection is cut under
    // the request it holds.
    c.stop_nodes[0].take().unwrap().send(()).unwrap();
    let a = held.join().unwrap();
    assert_eq!(a.status, 502, "{}", a.body);
    assert_eq!(a.header("x-faasched-error"), Some("node-unreachable"));
    assert_eq!(a.header("x-faasched-node"), Some(c.node(0)));
    let served = c.stop();
    assert_eq!(
        (served.received, served.answered, served.unreachable),
        (1, 1, 1)
    );
}

/// A node that holds an invocation without answering or closing costs
/// its client a 502 once the forward timeout runs out, not a wait for
/// ever.
#[test]
fn a_node_that_never_answers_gets_its_client_a_502_at_the_forward_timeout() {
    let c = Cluster::start_with([0.0, 0.5], |config| {
        config.forward_timeout(Duration::from_millis(200));
    });
    c.status_until("both loads reported", |s| s["nodes"][1]["load"] == 0.5);
    let a = call(
        c.gateway,
        "POST",
        "/invoke/hold",
        &[("x-faasched-function", "f")],
    );
    assert_eq!(a.status, 502, "{}", a.body);
    assert_eq!(a.header("x-faasched-error"), Some("node-unreachable"));
    assert!(a.body.contains("no answer within 200ms"), "{}", a.body);
    assert_eq!(c.invoked(0), 1);
    let served = c.stop();
    assert_eq!(
        (served.received, served.answered, served.unreachable),
        (1, 1, 1)
    );
}

/// A node that takes requests and answers none (frozen) costs the
/// invocation it holds a 502 at the forward timeout, never a resend; a
/// probe then finds it silent and takes it out within about a second,
/// before three polls could miss.
#[test]
fn a_silent_node_is_probed_and_taken_out() {
    let c = Cluster::start_with([0.0, 0.5], |config| {
        config
            .forward_timeout(Duration::from_millis(100))
            .period(Duration::from_secs(3600));
    });
    c.status_until("both loads reported", |s| s["nodes"][1]["load"] == 0.5);
    c.nodes[0].1.frozen.store(true, Ordering::SeqCst);
    let a = invoke(&c);
    assert_eq!(a.status, 502, "{}", a.body);
    assert_eq!(a.header("x-faasched-error"), Some("node-unreachable"));
    assert_eq!(a.header("x-faasched-node"), Some(c.node(0)));
    c.status_until("the silent node out", |s| s["nodes"][0]["up"] == false);
    let metrics = call(c.gateway, "GET", "/metrics", &[]).body;
    assert!(
        metrics
            .lines()
            .any(|l| l == "faasched_gateway_node_taken_out_total 1"),
        "{metrics}"
    );
    let a = invoke(&c);
    assert_eq!(a.header("x-faasched-node"), Some(c.node(1)), "{}", a.body);
    assert_eq!(c.invoked(0), 1, "never sent again");
}

/// An invocation that names a deadline waits for its node at most 10 times
/// it (by default), not the whole forward timeout: one due in 20 ms on a
/// node that holds it is answered 502 at 200 ms, saying why, while the
/// forward timeout is an hour.
#[test]
fn an_invocation_waits_ten_times_its_deadline_not_the_forward_timeout() {
    let c = Cluster::start_with([0.0, 0.5], |config| {
        config
            .forward_timeout(Duration::from_secs(3600))
            .period(Duration::from_secs(3600));
    });
    c.status_until("both loads reported", |s| s["nodes"][1]["load"] == 0.5);
    c.nodes[0].1.frozen.store(true, Ordering::SeqCst);
    let a = call(
        c.gateway,
        "POST",
        "/invoke/f?n=3",
        &[("x-faasched-deadline-us", "20000")],
    );
    assert_eq!(a.status, 502, "{}", a.body);
    assert_eq!(a.header("x-faasched-error"), Some("node-unreachable"));
    assert!(
        a.body
            .contains("no answer within 200ms (10 times its deadline)"),
        "{}",
        a.body
    );
}

#[test]
fn a_node_closing_its_connection_leaves_the_clients_open() {
    let c = Cluster::start([0.0, 0.5]);
    let stream = TcpStream::connect(c.gateway).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    for path in ["/invoke/f?close=1", "/invoke/f?n=1"] {
        let head = format!("POST {path} HTTP/1.1\r\nhost: test\r\ncontent-length: 0\r\n\r\n");
        writer.write_all(head.as_bytes()).unwrap();
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
            if line.trim_end().is_empty() {
                break;
            }
            lines.push(line.trim_end().to_ascii_lowercase());
        }
        assert!(lines[0].contains(" 200 "), "{path}: {lines:?}");
        assert!(
            !lines.iter().any(|l| l == "connection: close"),
            "{path}: {lines:?}"
        );
        let length: usize = lines
            .iter()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
    }
    let served = c.stop();
    assert_eq!((served.received, served.answered), (2, 2));
}

#[test]
fn concurrent_clients_are_each_answered_once_counted_on_both_sides() {
    let c = Cluster::start([0.0, 0.0]);
    let gateway = c.gateway;
    let clients: Vec<_> = (0..8)
        .map(|_| {
            thread::spawn(move || {
                (0..40)
                    .filter(|_| call(gateway, "POST", "/invoke/f?n=1", &[]).status == 200)
                    .count() as u64
            })
        })
        .collect();
    let answered: u64 = clients.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(answered, 320);
    assert_eq!(c.invoked(0) + c.invoked(1), 320);
    let served = c.stop();
    assert_eq!((served.received, served.answered), (320, 320));
}

#[test]
fn malformed_requests_and_unknown_functions_reach_no_node() {
    let c = Cluster::start([0.0, 0.0]);
    for (method, path, headers, status) in [
        ("POST", "/invoke/g", &[][..], 404),
        (
            "POST",
            "/invoke/spin",
            &[("x-faasched-function", "g")][..],
            404,
        ),
        (
            "POST",
            "/invoke/f",
            &[("x-faasched-function", "a b")][..],
            400,
        ),
        (
            "POST",
            "/invoke/f",
            &[("x-faasched-deadline-us", "soon")][..],
            400,
        ),
        ("GET", "/invoke/f", &[][..], 405),
        ("POST", "/register/f", &[][..], 404),
        ("GET", "/load", &[][..], 404),
        ("GET", "/nowhere", &[][..], 404),
    ] {
        let a = call(c.gateway, method, path, headers);
        assert_eq!(a.status, status, "{method} {path} {headers:?}: {}", a.body);
        assert!(a.header("x-faasched-node").is_none());
    }
    let a = call(c.gateway, "POST", "/invoke/g", &[]);
    assert!(a.body.contains("\"g\""), "names the function: {}", a.body);
    assert_eq!(a.header("x-faasched-error"), Some("unknown-function"));
    assert_eq!((c.invoked(0), c.invoked(1)), (0, 0));
    let served = c.stop();
    assert_eq!((served.received, served.answered), (0, 0));
}

#[test]
fn the_gateway_and_its_serve_future_are_send() {
    fn send<T: Send>(_: &T) {}
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let gateway = Gateway::new(
        &GatewayConfig::new(vec!["127.0.0.1:1".into()]),
        Box::new(LeastLoaded::new()),
        [("f".to_owned(), profile())],
    )
    .unwrap();
    send(&gateway);
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let _guard = runtime.enter();
    send(&gateway.serve(listener, async {}));
}

/// With an invocation token, the gateway refuses an invocation without it
/// before any node sees it, and forwards one with it.
#[test]
fn invocations_need_the_gateways_invoke_token() {
    const TOKEN: &str = "an-invocation-token-of-32-chars+";
    let c = Cluster::start_with([0.0, 0.5], |config| {
        config.front(FrontConfig {
            invoke_token: Some(Token::new(TOKEN).unwrap()),
            ..FrontConfig::default()
        });
    });
    let label = [("x-faasched-function", "f")];
    let refused = call(c.gateway, "POST", "/invoke/f", &label);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert_eq!(refused.header("x-faasched-error"), Some("unauthorized"));
    let bearer = format!("Bearer {TOKEN}");
    let with = [
        ("x-faasched-function", "f"),
        ("authorization", bearer.as_str()),
    ];
    let a = call(c.gateway, "POST", "/invoke/f", &with);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        c.invoked(0) + c.invoked(1),
        1,
        "only the one with the token"
    );
}

/// A node answer longer than the gateway passes on is a 502
/// `response-too-large`, never held whole; the next invocation goes on.
#[test]
fn an_answer_past_the_limit_is_refused_not_held() {
    let c = Cluster::start_with([0.0, 0.5], |config| {
        config.max_response_bytes(1000);
    });
    let label = [("x-faasched-function", "f")];
    let at_limit = call(c.gateway, "POST", "/invoke/big?bytes=1000", &label);
    assert_eq!((at_limit.status, at_limit.body.len()), (200, 1000));
    let past = call(c.gateway, "POST", "/invoke/big?bytes=1001", &label);
    assert_eq!(past.status, 502, "{}", past.body);
    assert_eq!(past.header("x-faasched-error"), Some("response-too-large"));
    assert!(
        past.body.contains("longer than 1000 bytes"),
        "{}",
        past.body
    );
    let big = call(c.gateway, "POST", "/invoke/big?bytes=50000000", &label);
    assert_eq!(big.header("x-faasched-error"), Some("response-too-large"));
    assert_eq!(invoke(&c).status, 200);
    let served = c.stop();
    assert_eq!(
        (served.received, served.answered, served.unreachable),
        (4, 4, 0)
    );
}

#[test]
fn bad_node_lists_are_refused_naming_what_is_wrong() {
    let build = |nodes: &[&str]| {
        Gateway::new(
            &GatewayConfig::new(nodes.iter().map(|n| n.to_string()).collect()),
            Box::new(LeastLoaded::new()),
            [("f".to_owned(), profile())],
        )
        .map(|_| ())
        .unwrap_err()
        .to_string()
    };
    assert!(build(&["a b:1"]).contains("\"a b:1\""));
    assert!(build(&["localhost"]).contains("\"localhost\""));
    assert!(build(&["h:99999"]).contains("h:99999"));
    assert!(build(&["a:1", "a:1"]).contains("a:1 is given twice"));
}

/// With a token, only a client that presents it changes the gateway's
/// nodes: a node's registration presenting it joins, one without it is
/// refused and says so, and so is every other change without it.
#[test]
fn membership_needs_the_token_when_the_gateway_has_one() {
    const TOKEN: &str = "a-token-of-32-characters-or-more";
    let token = Token::new(TOKEN).unwrap();
    let given = token.clone();
    let c = Cluster::launch([0.0, 0.0], false, move |config| {
        config.front(FrontConfig {
            token: Some(given),
            ..FrontConfig::default()
        });
    });
    let node0 = format!("/nodes/{}", c.node(0));
    let bearer = format!("Bearer {TOKEN}");
    for (method, headers) in [
        ("PUT", vec![]),
        ("PUT", vec![("authorization", "Bearer wrong")]),
        ("PUT", vec![("authorization", TOKEN)]),
        ("DELETE", vec![]),
        ("GET", vec![]),
    ] {
        let a = call(c.gateway, method, &node0, &headers);
        assert_eq!(a.status, 401, "{method} {headers:?}: {}", a.body);
        assert_eq!(a.header("x-faasched-error"), Some("unauthorized"));
        assert_eq!(a.header("www-authenticate"), Some("Bearer"));
    }
    let a = invoke(&c);
    assert_eq!(a.status, 503, "no node joined: {}", a.body);

    // A node's own registration: refused without the token, in with it.
    let register = |token: Option<Token>| {
        let registration =
            Registration::new(&c.gateway.to_string(), c.node(0), Duration::from_millis(20))
                .unwrap()
                .token(token);
        let failures = Arc::new(Mutex::new(Vec::new()));
        let heard = Arc::clone(&failures);
        let (leave, leaving) = oneshot::channel::<()>();
        let thread = thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(registration.run(
                async {
                    let _ = leaving.await;
                },
                |failure| heard.lock().unwrap().push(failure),
            ));
        });
        (leave, thread, failures)
    };
    let (leave, thread, failures) = register(None);
    let start = Instant::now();
    while failures.lock().unwrap().is_empty() {
        assert!(start.elapsed() < PATIENCE, "no failure heard");
        thread::sleep(Duration::from_millis(5));
    }
    leave.send(()).unwrap();
    thread.join().unwrap();
    let failures = failures.lock().unwrap();
    assert!(failures[0].contains("401"), "{failures:?}");
    assert_eq!(invoke(&c).status, 503, "still no node");

    let (leave, thread, failures) = register(Some(token));
    c.status_until("the node joined", |s| listed(s) == [c.node(0)]);
    assert_eq!(invoke(&c).header("x-faasched-node"), Some(c.node(0)));
    leave.send(()).unwrap();
    thread.join().unwrap();
    assert!(failures.lock().unwrap().is_empty(), "{failures:?}");
    c.status_until("the node left", |s| listed(s).is_empty());
    let a = call(c.gateway, "PUT", &node0, &[("authorization", &bearer)]);
    assert_eq!(a.status, 201, "{}", a.body);
}

/// A node joins only once it answers as one: an address where none
/// answers is refused 502, and a node in the table under one address is
/// the same node under another (`localhost:P` for `127.0.0.1:P`).
#[test]
fn a_registration_must_answer_and_aliases_are_one_node() {
    let c = Cluster::unlisted([0.0, 0.5]);
    let a = call(c.gateway, "PUT", "/nodes/127.0.0.1:1", &[]);
    assert_eq!(a.status, 502, "{}", a.body);
    assert_eq!(a.header("x-faasched-error"), Some("node-unreachable"));
    assert!(a.body.contains("did not answer GET /load"), "{}", a.body);
    let node0 = c.node(0).to_owned();
    let port = node0.rsplit_once(':').unwrap().1;
    assert_eq!(
        call(c.gateway, "PUT", &format!("/nodes/{node0}"), &[]).status,
        201
    );
    let alias = call(c.gateway, "PUT", &format!("/nodes/localhost:{port}"), &[]);
    assert_eq!(alias.status, 200, "{}", alias.body);
    assert!(
        alias.body.contains(&format!("is in the table as {node0}")),
        "{}",
        alias.body
    );
    c.status_until("one entry", |s| listed(s) == [node0.clone()]);
}

/// Nodes join by `PUT /nodes/{addr}`, are routed to at once, refresh
/// idempotently, leave by `DELETE`, and a registered node that stops
/// answering its polls is dropped from the table until it registers again.
#[test]
fn registered_nodes_are_routed_to_refreshed_dropped_when_down_and_taken_back_on_registering() {
    let mut c = Cluster::unlisted([0.0, 0.5]);
    let a = call(c.gateway, "POST", "/invoke/f", &[]);
    assert_eq!(a.status, 503, "{}", a.body);
    assert_eq!(a.header("x-faasched-error"), Some("overloaded"));
    assert!(a.body.contains("no node up"), "{}", a.body);

    let node0 = format!("/nodes/{}", c.node(0));
    let node1 = format!("/nodes/{}", c.node(1));
    let a = call(c.gateway, "PUT", &node0, &[]);
    assert_eq!(a.status, 201, "{}", a.body);
    let a = call(c.gateway, "PUT", &node0, &[]);
    assert_eq!(a.status, 200, "a refresh: {}", a.body);
    // Up at once, before its first poll.
    let a = invoke(&c);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.header("x-faasched-node"), Some(c.node(0)));

    for (method, path, status, named) in [
        ("PUT", "/nodes/nowhere", 400, "nowhere"),
        ("PUT", "/nodes/h:99999", 400, "h:99999"),
        ("PUT", "/nodes/a%20b:1", 400, "a%20b:1"),
        ("PUT", "/nodes", 400, "no node"),
        ("GET", node0.as_str(), 405, "PUT, DELETE"),
        ("DELETE", "/nodes/127.0.0.1:1", 404, "127.0.0.1:1"),
    ] {
        let a = call(c.gateway, method, path, &[]);
        assert_eq!(a.status, status, "{method} {path}: {}", a.body);
        assert!(a.body.contains(named), "{method} {path}: {}", a.body);
    }
    let a = call(c.gateway, "DELETE", "/nodes/127.0.0.1:1", &[]);
    assert_eq!(a.header("x-faasched-error"), Some("unknown-node"));

    assert_eq!(call(c.gateway, "PUT", &node1, &[]).status, 201);
    let both = [c.node(0).to_owned(), c.node(1).to_owned()];
    c.status_until("both loads reported", |s| {
        listed(s) == both
            && s["nodes"][1]["load"] == 0.5
            && s["nodes"][1]["membership"] == "registered"
    });
    // The dead node is dropped, not kept down; the router goes on with
    // the live one.
    c.stop_nodes[0].take().unwrap().send(()).unwrap();
    c.status_until("the dead node dropped", |s| {
        listed(s) == both[1..] && s["membership"]["drops"] == 1
    });
    for _ in 0..3 {
        assert_eq!(invoke(&c).header("x-faasched-node"), Some(c.node(1)));
    }
    // Back, it registers again and is a node of the table again.
    c.restart(0);
    assert_eq!(call(c.gateway, "PUT", &node0, &[]).status, 201);
    c.status_until("the node back", |s| {
        listed(s) == [both[1].clone(), both[0].clone()]
    });
    // A node that says it leaves is gone at once.
    let a = call(c.gateway, "DELETE", &node1, &[]);
    assert_eq!(a.status, 200, "{}", a.body);
    c.status_until("node 1 gone", |s| {
        listed(s) == both[..1] && s["membership"]["leaves"] == 1
    });
    assert_eq!(invoke(&c).header("x-faasched-node"), Some(c.node(0)));
    let metrics = call(c.gateway, "GET", "/metrics", &[]).body;
    for line in [
        "faasched_gateway_node_registrations_total 3",
        "faasched_gateway_node_drops_total 1",
        "faasched_gateway_node_leaves_total 1",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line:?} in\n{metrics}"
        );
    }
    assert!(
        metrics.contains("faasched_gateway_load_variance_mean "),
        "{metrics}"
    );
    let served = c.stop();
    assert_eq!(
        (served.registrations, served.drops, served.leaves),
        (3, 1, 1)
    );
    assert_eq!(
        (served.received, served.answered, served.dropped),
        (6, 6, 1)
    );
    assert!(served.polls > 0);
}

/// A request in flight on a node that leaves is still answered: here the
/// node, gone from the table, is then cut off under it, and its client
/// hears a 502, never silence.
#[test]
fn a_request_in_flight_on_a_node_that_leaves_still_gets_an_answer() {
    let mut c = Cluster::unlisted([0.0, 0.5]);
    let node0 = format!("/nodes/{}", c.node(0));
    assert_eq!(call(c.gateway, "PUT", &node0, &[]).status, 201);
    let gateway = c.gateway;
    let held = thread::spawn(move || {
        call(
            gateway,
            "POST",
            "/invoke/hold",
            &[("x-faasched-function", "f")],
        )
    });
    let start = Instant::now();
    while c.invoked(0) == 0 {
        assert!(
            start.elapsed() < PATIENCE,
            "the held request never reached node 0"
        );
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(call(c.gateway, "DELETE", &node0, &[]).status, 200);
    c.status_until("node 0 gone", |s| listed(s).is_empty());
    c.stop_nodes[0].take().unwrap().send(()).unwrap();
    let a = held.join().unwrap();
    assert_eq!(a.status, 502, "{}", a.body);
    assert_eq!(a.header("x-faasched-node"), Some(c.node(0)));
    let served = c.stop();
    assert_eq!(
        (
            served.received,
            served.answered,
            served.unreachable,
            served.leaves
        ),
        (1, 1, 1, 1)
    );
}
