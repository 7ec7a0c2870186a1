//! WASI commands on `faasched node serve`, as CGI programs: registered
//! over HTTP, invoked with a body, a query and headers, answered with what
//! they wrote; a failing one's exit status and log.

use crate::common::server::Server;
use crate::common::{CGI_ECHO, built, manifest};

/// A command that writes "oops" to standard error and exits 3.
const FAIL: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "oops\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 64))
    (i32.store (i32.const 4) (i32.const 5))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))
    (call $exit (i32.const 3))))"#;

#[test]
fn a_wasi_command_answers_as_a_cgi_program() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    let token = "t".repeat(40);
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let serve = Server::start(&[
        "node",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        token_file.to_str().unwrap(),
        "--max-body-kib",
        "64",
        "--cpu-limit-ms",
        "200",
    ]);
    let bearer = format!("Bearer {token}");
    let auth = [("authorization", bearer.as_str())];
    let mut c = serve.connect();
    for (name, wat) in [("echo", CGI_ECHO), ("fail", FAIL)] {
        c.send_with("POST", &format!("/register/{name}"), &auth, wat.as_bytes());
        let registered = c.receive();
        assert_eq!(registered.status, 201, "{name}: {}", registered.body);
    }

    let body = "a,b\n1,2\n";
    c.send_with(
        "POST",
        "/invoke/echo?a=1&b",
        &[
            ("content-type", "text/csv"),
            ("x-trace", "7"),
            ("authorization", bearer.as_str()),
        ],
        body.as_bytes(),
    );
    let echo = c.receive();
    assert_eq!(echo.status, 201, "{}", echo.body);
    assert_eq!(echo.header("content-type"), Some("text/plain"));
    assert_eq!(echo.header("x-faasched-exit-status"), Some("0"));
    assert!(echo.header("x-faasched-cpu-us").is_some());
    let lines: Vec<&str> = echo.body.lines().collect();
    for expected in [
        "REQUEST_METHOD=POST",
        "SCRIPT_NAME=/invoke/echo",
        "QUERY_STRING=a=1&b",
        "CONTENT_LENGTH=8",
        "CONTENT_TYPE=text/csv",
        "HTTP_X_TRACE=7",
    ] {
        assert!(lines.contains(&expected), "{expected} not in {lines:?}");
    }
    assert!(
        !echo.body.contains(&token),
        "the token reached the function"
    );
    assert!(echo.body.ends_with(body), "{}", echo.body);

    let failed = c.call("POST", "/invoke/fail", b"");
    assert_eq!(failed.status, 500, "{}", failed.body);
    assert_eq!(failed.header("x-faasched-error"), Some("exit-status"));
    assert_eq!(failed.header("x-faasched-exit-status"), Some("3"));
    c.send_with("GET", "/functions/fail/log", &auth, b"");
    let log = c.receive();
    assert_eq!((log.status, log.body.as_str()), (200, "oops\n"));
    let unauthorized = c.call("GET", "/functions/fail/log", b"");
    assert_eq!(unauthorized.status, 401);

    // A `run` function takes no body; a body past the limit is refused.
    let mut c = serve.connect();
    let fib = c.call("POST", "/invoke/fib?n=10", b"x");
    assert_eq!(fib.status, 400, "{}", fib.body);
    let big = vec![b'x'; 65 << 10];
    assert_eq!(c.call("POST", "/invoke/echo", &big).status, 413);
    let mut c = serve.connect();
    let next = c.call("POST", "/invoke/echo", b"fits");
    assert!(next.body.ends_with("fits"), "{}", next.body);
}

/// The value of metric `name` in a Prometheus text body.
fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .parse()
        .unwrap()
}

/// With --cache-dir, a node compiles a module once: the next node on the
/// same directory loads the built-in suite and the registered module
/// compiled, as its metrics count. A directory others may write is
/// refused, by name.
#[test]
fn a_node_keeps_compiled_code_for_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let serve = |cache: &std::path::Path| {
        Server::start(&[
            "node",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--cache-dir",
            cache.to_str().unwrap(),
        ])
    };
    let mut counts = Vec::new();
    for _ in 0..2 {
        let node = serve(&cache);
        let mut c = node.connect();
        let registered = c.call("POST", "/register/echo", CGI_ECHO.as_bytes());
        assert_eq!(registered.status, 201, "{}", registered.body);
        let echo = c.call("POST", "/invoke/echo", b"cached");
        assert!(echo.body.ends_with("cached"), "{}", echo.body);
        let metrics = c.call("GET", "/metrics", b"").body;
        counts.push((
            metric(&metrics, "faasched_wasm_cache_hits_total"),
            metric(&metrics, "faasched_wasm_cache_misses_total"),
            metric(&metrics, "faasched_wasm_cache_rejected_total"),
        ));
        assert!(node.stop().0);
    }
    let (first, second) = (counts[0], counts[1]);
    assert_eq!((first.0, first.2), (0, 0), "{counts:?}");
    assert!(first.1 >= 2, "{counts:?}");
    assert_eq!(second, (first.1, 0, 0), "{counts:?}");

    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args(["node", "serve", "--listen", "127.0.0.1:0", "--cache-dir"])
        .arg(&cache)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("mode 777 lets others write it"), "{stderr}");
}

/// `node serve --deploy DIR` registers each manifest's module before it
/// listens, with the manifest's environment after the CGI variables; a
/// bad manifest stops it, its file and field named.
#[test]
fn a_node_serves_the_functions_of_a_manifest_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("echo.wat"), CGI_ECHO).unwrap();
    std::fs::write(
        dir.path().join("echo.toml"),
        "module = \"echo.wat\"\ncpu_limit_ms = 100\ndeadline = \"50ms\"\n[env]\nGREETING = \"hi there\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("second.toml"),
        "module = \"echo.wat\"\nname = \"echo2\"\n",
    )
    .unwrap();
    let node = Server::start(&[
        "node",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--deploy",
        dir.path().to_str().unwrap(),
    ]);
    let mut c = node.connect();
    let echo = c.call("POST", "/invoke/echo?x=1", b"body");
    assert_eq!(echo.status, 201, "{}", echo.body);
    let lines: Vec<&str> = echo.body.lines().collect();
    assert!(lines.contains(&"GREETING=hi there"), "{lines:?}");
    assert!(lines.contains(&"QUERY_STRING=x=1"), "{lines:?}");
    let second = c.call("POST", "/invoke/echo2", b"");
    assert_eq!(second.status, 201, "{}", second.body);
    assert!(!second.body.contains("GREETING"), "{}", second.body);
    assert!(node.stop().0);

    std::fs::write(
        dir.path().join("third.toml"),
        "module = \"echo.wat\"\nmemory_limit_mib = \"lots\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_faasched"))
        .args(["node", "serve", "--listen", "127.0.0.1:0", "--deploy"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("third.toml") && stderr.contains("memory_limit_mib"),
        "{stderr}"
    );
}

/// A wasi:http component on `node serve`, deployed from a manifest and
/// registered over HTTP: it is handed the invocation (method, target,
/// headers but the node's token, body) and its response is the answer,
/// with the node's cost headers; what it prints is its log.
#[test]
fn a_wasi_http_component_answers_with_its_own_response() {
    let (Some(echo), Some(hello)) = (built("echo-http"), built("hello-http")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    manifest(dir.path(), "echo", &echo, "cpu_limit_ms = 100\n");
    let token_file = dir.path().join("token");
    let token = "k".repeat(40);
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let node = Server::start(&[
        "node",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--deploy",
        dir.path().to_str().unwrap(),
        "--token-file",
        token_file.to_str().unwrap(),
    ]);
    let bearer = format!("Bearer {token}");
    let mut c = node.connect();
    c.send_with(
        "POST",
        "/invoke/echo?status=202&x=1",
        &[
            ("content-type", "text/csv"),
            ("authorization", bearer.as_str()),
        ],
        b"a,b\n1,2\n",
    );
    let echoed = c.receive();
    assert_eq!(echoed.status, 202, "{}", echoed.body);
    assert_eq!(echoed.body, "a,b\n1,2\n");
    assert_eq!(echoed.header("content-type"), Some("text/csv"));
    assert_eq!(echoed.header("x-method"), Some("POST"));
    assert_eq!(echoed.header("x-path"), Some("/invoke/echo?status=202&x=1"));
    assert!(echoed.header("x-faasched-cpu-us").is_some());
    assert_eq!(echoed.header("x-faasched-exit-status"), None);

    c.send_with(
        "POST",
        "/register/hello",
        &[("authorization", bearer.as_str())],
        &std::fs::read(hello).unwrap(),
    );
    let registered = c.receive();
    assert_eq!(registered.status, 201, "{}", registered.body);
    let hi = c.call("POST", "/invoke/hello", b"");
    assert_eq!((hi.status, hi.body.as_str()), (200, "hello, world\n"));
    assert_eq!(hi.header("content-type"), Some("text/plain"));
    assert!(node.stop().0);
}

/// `POST /register/NAME` takes the manifest's fields as JSON in
/// `x-faasched-manifest`: the environment reaches the function; an
/// unknown or misplaced field is a 400 naming it, nothing registered.
#[test]
fn a_registration_carries_its_manifest_in_a_header() {
    let node = Server::start(&["node", "serve", "--listen", "127.0.0.1:0"]);
    let mut c = node.connect();
    let manifest = r#"{"env": {"GREETING": "hi there"}, "cpu_limit_ms": 100, "deadline": "40ms"}"#;
    c.send_with(
        "POST",
        "/register/echo",
        &[("x-faasched-manifest", manifest)],
        CGI_ECHO.as_bytes(),
    );
    let registered = c.receive();
    assert_eq!(registered.status, 201, "{}", registered.body);
    let echo = c.call("POST", "/invoke/echo", b"");
    assert!(
        echo.body.lines().any(|l| l == "GREETING=hi there"),
        "{}",
        echo.body
    );
    for (bad, named) in [
        (r#"{"memory": 1}"#, "unknown field `memory`"),
        (
            r#"{"module": "x.wasm"}"#,
            "give neither `module` nor `name`",
        ),
        (r#"{"cpu_limit_ms": 100000000}"#, "CPU limit"),
        ("{", "x-faasched-manifest"),
    ] {
        let mut c = node.connect();
        c.send_with(
            "POST",
            "/register/other",
            &[("x-faasched-manifest", bad)],
            CGI_ECHO.as_bytes(),
        );
        let refused = c.receive();
        assert_eq!(refused.status, 400, "{bad}: {}", refused.body);
        assert!(refused.body.contains(named), "{bad}: {}", refused.body);
    }
    let unknown = node.connect().call("POST", "/invoke/other", b"");
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert!(node.stop().0);
}

/// `node serve --baseline` serves the same functions, built-in, command
/// and component, through the same HTTP, each request run to its end on
/// one of its tokio threads; its status and metrics say it is the
/// baseline.
#[test]
fn the_baseline_serves_the_same_functions_without_a_dispatcher() {
    let node = Server::start(&[
        "node",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--baseline",
        "--workers",
        "2",
    ]);
    let mut c = node.connect();
    let fib = c.call("POST", "/invoke/fib?n=10", b"");
    assert_eq!((fib.status, fib.body.as_str()), (200, "55\n"));
    assert_eq!(fib.header("x-faasched-preemptions"), Some("0"));
    let registered = c.call("POST", "/register/echo", CGI_ECHO.as_bytes());
    assert_eq!(registered.status, 201, "{}", registered.body);
    let echo = c.call("POST", "/invoke/echo", b"through the baseline");
    assert_eq!(echo.status, 201, "{}", echo.body);
    assert!(echo.body.ends_with("through the baseline"), "{}", echo.body);
    if let Some(hello) = built("hello-http") {
        let registered = c.call("POST", "/register/hello", &std::fs::read(hello).unwrap());
        assert_eq!(registered.status, 201, "{}", registered.body);
        let hi = c.call("POST", "/invoke/hello", b"");
        assert_eq!((hi.status, hi.body.as_str()), (200, "hello, world\n"));
    }
    let status = c.call("GET", "/status", b"").body;
    assert!(status.contains(r#""baseline":true"#), "{status}");
    let metrics = c.call("GET", "/metrics", b"").body;
    assert!(
        metric(&metrics, "faasched_baseline_completed_total") >= 2,
        "{metrics}"
    );
    assert_eq!(metric(&metrics, "faasched_baseline_failed_total"), 0);
    assert!(node.stop().0);
}

/// A function's answer is framed by what it wrote: a `Content-Length` (or
/// any hop-by-hop header) it declares is not passed on, so a wrong one
/// cannot break the connection for the answers after it.
#[test]
fn a_functions_own_framing_headers_are_not_passed_on() {
    const LIAR: &str = r#"(module
      (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
      (memory (export "memory") 1)
      (data (i32.const 64) "Content-Type: text/plain\nContent-Length: 100\nConnection: close\n\nhi")
      (func (export "_start")
        (i32.store (i32.const 0) (i32.const 64))
        (i32.store (i32.const 4) (i32.const 66))
        (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#;
    let node = Server::start(&["node", "serve", "--listen", "127.0.0.1:0"]);
    let mut c = node.connect();
    let registered = c.call("POST", "/register/liar", LIAR.as_bytes());
    assert_eq!(registered.status, 201, "{}", registered.body);
    for _ in 0..2 {
        // Twice on one connection: the second finds it still framed.
        let lied = c.call("POST", "/invoke/liar", b"");
        assert_eq!((lied.status, lied.body.as_str()), (200, "hi"));
        assert_eq!(lied.header("content-length"), Some("2"));
        assert_eq!(lied.header("connection"), None);
    }
    assert!(node.stop().0);
}

/// A component that waits (here for an allowed outgoing request) is woken
/// under the baseline too, whose every task thread it holds meanwhile.
#[test]
fn the_baseline_wakes_a_component_that_waits() {
    use std::io::{Read, Write};
    let Some(fetch) = built("fetch-http") else {
        return;
    };
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = upstream.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = upstream.accept() {
            let mut head = [0; 1024];
            let _ = stream.read(&mut head);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-length: 8\r\nconnection: close\r\n\r\nupstream",
            );
        }
    });
    let dir = tempfile::tempdir().unwrap();
    manifest(
        dir.path(),
        "fetch",
        &fetch,
        &format!("allow_outbound = [\"127.0.0.1:{port}\"]\n"),
    );
    let node = Server::start(&[
        "node",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--baseline",
        "--workers",
        "1",
        "--deploy",
        dir.path().to_str().unwrap(),
    ]);
    let fetched = node.connect().call(
        "POST",
        &format!("/invoke/fetch?url=http://127.0.0.1:{port}/"),
        b"",
    );
    assert_eq!((fetched.status, fetched.body.as_str()), (200, "upstream"));
    assert!(node.stop().0);
}
