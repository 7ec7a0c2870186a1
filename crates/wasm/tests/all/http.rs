//! `wasi:http/proxy` components (functions/http in C, functions/python in
//! Python) run in sandboxes: what they are handed and answer, the limits
//! that bound them, and components preempted mid-request that still answer
//! right while another runs.

use std::sync::OnceLock;

use bytes::Bytes;
use faasched_wasm::{Fault, Input, Kind, Output, Request, Result, Runtime, Sandbox, Step};
use http::{HeaderMap, HeaderValue, Method, StatusCode};

use crate::built::module;
use crate::{finish, runtime};

/// The components: C, then Python.
const COMPONENTS: [&str; 5] = [
    "hello-http",
    "echo-http",
    "primes-http",
    "hello-py",
    "primes-py",
];

/// One runtime for the test binary with the [`COMPONENTS`] registered, or
/// `None`: a Python component takes minutes to compile, so it is compiled
/// once, and kept in the disk cache the other built-function tests use.
fn components() -> Option<&'static Runtime> {
    static SHARED: OnceLock<Option<Runtime>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let cache = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("module-cache");
            let mut runtime = runtime(|c| {
                c.cache(&cache)
                    .max_sandboxes(16)
                    .max_compile(600_000_000_000)
                    .cpu_limit(20_000_000_000);
            })
            .unwrap();
            for name in COMPONENTS {
                runtime.register(name, &module(name)?).unwrap();
            }
            Some(runtime)
        })
        .as_ref()
}

/// A request to `target` with `body` and `headers`.
fn request(target: &str, headers: &[(&str, &str)], body: &[u8]) -> Input {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    Input::Request(Request {
        method: Method::POST,
        uri: target.parse().unwrap(),
        headers: map,
        body: Bytes::copy_from_slice(body),
    })
}

fn call(runtime: &Runtime, function: &str, input: Input) -> Result<Output> {
    let preempt = runtime.preempt();
    finish(&mut Sandbox::start(runtime, &preempt, function, input)?)
}

/// The response's status, a header and the body as text.
fn answer(out: &Output, header: &str) -> (StatusCode, String, String) {
    let response = out
        .response
        .as_ref()
        .expect("a component answers a response");
    assert_eq!(out.value, i64::from(response.status.as_u16()));
    (
        response.status,
        response
            .headers
            .get(header)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default(),
        String::from_utf8(response.body.to_vec()).unwrap(),
    )
}

/// Primes at most `n`, the reference.
fn primes(n: u64) -> u64 {
    (2..=n)
        .filter(|&k| (2..).take_while(|d| d * d <= k).all(|d| k % d != 0))
        .count() as u64
}

#[test]
fn a_c_component_says_hello() -> Result<()> {
    let Some(runtime) = components() else {
        return Ok(());
    };
    assert_eq!(runtime.call("hello-http")?.kind, Kind::Component);
    let out = call(runtime, "hello-http", request("/", &[], b""))?;
    assert_eq!(
        answer(&out, "content-type"),
        (StatusCode::OK, "text/plain".into(), "hello, world\n".into())
    );
    assert!(out.stdout.is_empty());
    Ok(())
}

#[test]
fn a_component_reads_the_method_target_headers_and_body_it_is_handed() -> Result<()> {
    let Some(runtime) = components() else {
        return Ok(());
    };
    let body: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let out = call(
        runtime,
        "echo-http",
        request(
            "/invoke/echo-http?x=1&status=201",
            &[("content-type", "application/x-test")],
            &body,
        ),
    )?;
    let response = out.response.as_ref().unwrap();
    assert_eq!(response.status, StatusCode::CREATED);
    assert_eq!(response.body, body);
    let header = |name| response.headers.get(name).unwrap().to_str().unwrap();
    assert_eq!(header("x-method"), "POST");
    assert_eq!(header("x-path"), "/invoke/echo-http?x=1&status=201");
    assert_eq!(header("content-type"), "application/x-test");
    // Without a content type, or a body.
    let out = call(runtime, "echo-http", request("/", &[], b""))?;
    assert_eq!(
        answer(&out, "content-type"),
        (
            StatusCode::OK,
            "application/octet-stream".into(),
            String::new()
        )
    );
    Ok(())
}

#[test]
fn a_c_component_counts_primes_and_refuses_what_it_cannot() -> Result<()> {
    let Some(runtime) = components() else {
        return Ok(());
    };
    for n in [1, 2, 1000, 30_000] {
        let out = call(
            runtime,
            "primes-http",
            request(&format!("/?n={n}"), &[], b""),
        )?;
        let (status, kind, body) = answer(&out, "content-type");
        assert_eq!((status, kind.as_str()), (StatusCode::OK, "text/plain"));
        assert_eq!(body, format!("{}\n", primes(n)));
    }
    let out = call(runtime, "primes-http", request("/", &[], b""))?;
    assert_eq!(
        answer(&out, "content-type").2,
        format!("{}\n", primes(1000))
    );
    let out = call(
        runtime,
        "primes-http",
        request("/?n=999999999999", &[], b""),
    )?;
    assert_eq!(answer(&out, "content-type").0, StatusCode::BAD_REQUEST);
    Ok(())
}

/// Runs `long` to its end, stopping it `stops` times; each time it is
/// stopped, `short` runs whole on the same thread, answering `want`.
fn preempted(
    runtime: &Runtime,
    long: (&str, Input),
    short: (&str, fn() -> Input, &str),
    stops: u32,
) -> Result<Output> {
    let preempt = runtime.preempt();
    let mut sandbox = Sandbox::start(runtime, &preempt, long.0, long.1)?;
    let mut stopped = 0;
    let out = loop {
        if stopped < stops {
            preempt.request();
        }
        match sandbox.resume() {
            Step::Done(done) => break done?,
            Step::Preempted => {
                stopped += 1;
                let out = finish(&mut Sandbox::start(
                    runtime,
                    &preempt,
                    short.0,
                    (short.1)(),
                )?)?;
                assert_eq!(answer(&out, "content-type").2, short.2);
            }
        }
    };
    assert_eq!((stopped, out.stats.preemptions), (stops, stops));
    Ok(out)
}

#[test]
fn a_c_component_stopped_fifty_times_answers_right() -> Result<()> {
    let Some(runtime) = components() else {
        return Ok(());
    };
    let out = preempted(
        runtime,
        ("primes-http", request("/?n=300000", &[], b"")),
        ("hello-http", || request("/", &[], b""), "hello, world\n"),
        50,
    )?;
    assert_eq!(
        answer(&out, "content-type").2,
        format!("{}\n", primes(300_000))
    );
    Ok(())
}

#[test]
fn a_python_component_answers_and_stopped_twenty_times_answers_right() -> Result<()> {
    let Some(runtime) = components() else {
        return Ok(());
    };
    let out = call(runtime, "hello-py", request("/", &[], b""))?;
    assert_eq!(
        answer(&out, "content-type"),
        (StatusCode::OK, "text/plain".into(), "hello, world\n".into())
    );
    let out = call(runtime, "primes-py", request("/?n=1000", &[], b""))?;
    assert_eq!(
        answer(&out, "content-type").2,
        format!("{}\n", primes(1000))
    );
    let out = preempted(
        runtime,
        ("primes-py", request("/?n=20000", &[], b"")),
        ("hello-http", || request("/", &[], b""), "hello, world\n"),
        20,
    )?;
    assert_eq!(
        answer(&out, "content-type").2,
        format!("{}\n", primes(20_000))
    );
    Ok(())
}

#[test]
fn a_component_is_bounded_by_its_cpu_output_and_input_kind() -> Result<()> {
    let Some(shared) = components() else {
        return Ok(());
    };
    let mut runtime = runtime(|c| {
        c.cpu_limit(50_000_000).max_output(1000);
    })?;
    for name in ["primes-http", "echo-http"] {
        runtime.register(name, &module(name).unwrap())?;
    }
    match call(&runtime, "primes-http", request("/?n=100000000", &[], b"")) {
        Err(Fault::Timeout { function, limit }) => {
            assert_eq!((function.as_str(), limit), ("primes-http", 50_000_000));
        }
        other => panic!("{other:?}"),
    }
    call(&runtime, "echo-http", request("/", &[], &[1; 1000]))?;
    match call(&runtime, "echo-http", request("/", &[], &[1; 1001])) {
        Err(Fault::OutputLimit { limit: 1000, .. }) => {}
        other => panic!("{other:?}"),
    }
    let preempt = shared.preempt();
    match Sandbox::start(shared, &preempt, "hello-http", 7) {
        Err(Fault::BadArgument { reason, .. }) => {
            assert!(
                reason.contains("takes an HTTP request, not an integer"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    match Sandbox::start(shared, &preempt, "fib", request("/", &[], b"")) {
        Err(Fault::BadArgument { reason, .. }) => {
            assert!(reason.contains("not an HTTP request"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    Ok(())
}

/// A one-shot HTTP server on a port of its own: it answers the first
/// connection `hello` and sends back the request's head it read.
fn upstream() -> (u16, std::sync::mpsc::Receiver<String>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut head = Vec::new();
        let mut byte = [0];
        while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
            head.push(byte[0]);
        }
        let _ = stream.write_all(
            b"HTTP/1.1 203 Non-Authoritative Information\r\ncontent-type: text/x-test\r\n\
              content-length: 5\r\nconnection: close\r\n\r\nhello",
        );
        let _ = tx.send(String::from_utf8_lossy(&head).into_owned());
    });
    (port, rx)
}

#[test]
fn a_component_reaches_only_the_hosts_its_deployment_allows() -> Result<()> {
    let Some(fetch) = module("fetch-http") else {
        return Ok(());
    };
    let (port, head) = upstream();
    let mut runtime = runtime(|_| ())?;
    let allowed = faasched_wasm::Deployment {
        allow_outbound: vec![format!("127.0.0.1:{port}")],
        ..Default::default()
    };
    let compiler = runtime.compiler();
    runtime.add(compiler.prepare_with("open", &fetch, allowed)?)?;
    runtime.register("closed", &fetch)?;
    let url = format!("/?url=http://127.0.0.1:{port}/x?y=1");
    let out = call(&runtime, "open", request(&url, &[], b""))?;
    let response = out.response.as_ref().unwrap();
    assert_eq!(response.status.as_u16(), 203, "{response:?}");
    assert_eq!(response.body, "hello");
    assert_eq!(response.headers["x-upstream-status"], "203");
    assert_eq!(response.headers["content-type"], "text/x-test");
    let head = head
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    assert!(head.starts_with("GET /x?y=1 HTTP/1.1\r\n"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("host: 127.0.0.1:{port}")),
        "{head}"
    );
    // Refused: any host for a function allowed none, another port of the
    // allowed one, another name for it.
    for (function, url) in [
        ("closed", format!("http://127.0.0.1:{port}/")),
        (
            "open",
            format!("http://127.0.0.1:{}/", port.wrapping_add(1)),
        ),
        ("open", format!("http://localhost:{port}/")),
    ] {
        let out = call(
            &runtime,
            function,
            request(&format!("/?url={url}"), &[], b""),
        )?;
        assert_eq!(
            answer(&out, "content-type"),
            (
                StatusCode::BAD_GATEWAY,
                "text/plain".into(),
                "error: HTTP-request-denied\n".into()
            ),
            "{function} {url}"
        );
    }
    Ok(())
}
