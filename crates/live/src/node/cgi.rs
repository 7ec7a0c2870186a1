//! WASI commands as CGI programs (RFC 3875, as WAGI runs WebAssembly): an
//! invocation becomes a command's environment and standard input, and the
//! command's standard output becomes the response.
//!
//! In: `REQUEST_METHOD`, `SCRIPT_NAME` (`/invoke/NAME`), `PATH_INFO`
//! (empty), `QUERY_STRING` (as sent, or empty), `CONTENT_LENGTH`,
//! `CONTENT_TYPE` (if sent), `SERVER_PROTOCOL`, `GATEWAY_INTERFACE`,
//! `SERVER_SOFTWARE`, and every other header as `HTTP_NAME` (upper case,
//! `-` as `_`, repeated values joined by `, `). `Authorization` and
//! `Proxy-Authorization` are never passed on: they carry the node's own
//! tokens, which the function has no business seeing.
//!
//! Out: standard output is the body, unless it begins with a CGI header
//! block (lines `Name: value`, then an empty line) naming `Content-Type`,
//! `Status` or `Location`, one of which RFC 3875 asks of every response;
//! then `Status: CODE [REASON]` sets the status (200 without it, 302 with
//! only `Location`) and the other headers go out as they are. Output
//! without such a block is sent as `application/octet-stream`.

use super::invoke::{Invoke, NODE_HEADERS};
use bytes::Bytes;
use faasched_wasm::Response;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{HeaderMap, StatusCode};

/// The header block a command's output may begin with, at most.
pub const MAX_HEADER_BLOCK: usize = 16 << 10;

/// The CGI meta-variables of `invoke`, a command's environment.
pub fn environment(invoke: &Invoke) -> Vec<(String, String)> {
    let mut env = vec![
        ("GATEWAY_INTERFACE".into(), "CGI/1.1".into()),
        ("SERVER_PROTOCOL".into(), "HTTP/1.1".into()),
        ("SERVER_SOFTWARE".into(), "faasched".into()),
        ("REQUEST_METHOD".into(), "POST".into()),
        ("SCRIPT_NAME".into(), format!("/invoke/{}", invoke.function)),
        ("PATH_INFO".into(), String::new()),
        (
            "QUERY_STRING".into(),
            invoke.query.clone().unwrap_or_default(),
        ),
        ("CONTENT_LENGTH".into(), invoke.body.len().to_string()),
    ];
    let mut names: Vec<&HeaderName> = invoke.headers.keys().collect();
    names.sort_by_key(|name| name.as_str());
    for name in names {
        if NODE_HEADERS.contains(name) || name == header::CONTENT_LENGTH {
            continue;
        }
        // A value that is not text (obs-text) is left out, not mangled.
        let Ok(values) = invoke
            .headers
            .get_all(name)
            .iter()
            .map(HeaderValue::to_str)
            .collect::<Result<Vec<_>, _>>()
        else {
            continue;
        };
        let variable = match *name {
            header::CONTENT_TYPE => "CONTENT_TYPE".to_owned(),
            _ => format!(
                "HTTP_{}",
                name.as_str().to_ascii_uppercase().replace('-', "_")
            ),
        };
        env.push((variable, values.join(", ")));
    }
    env
}

/// What a command's standard output says, or why it is not a response
/// (a header block with a bad line or status).
pub fn response(stdout: Bytes) -> Result<Response, String> {
    let Some((block, body)) = header_block(&stdout) else {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        return Ok(Response {
            status: StatusCode::OK,
            headers,
            body: stdout,
        });
    };
    let mut headers = HeaderMap::new();
    let mut status = None;
    for (line, (name, value)) in block.iter().enumerate() {
        let line = line + 1;
        if name.eq_ignore_ascii_case("status") {
            let code = value.split(' ').next().unwrap_or_default();
            status = Some(
                code.parse::<u16>()
                    .ok()
                    .and_then(|c| StatusCode::from_u16(c).ok())
                    .filter(|c| (200..600).contains(&c.as_u16()))
                    .ok_or_else(|| {
                        format!("line {line}: Status {code:?} is not a code from 200 to 599")
                    })?,
            );
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("line {line}: {name:?} is not a header name"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("line {line}: the value of {name} is not a header value"))?;
        headers.append(name, value);
    }
    let status = status.unwrap_or(match headers.contains_key(header::LOCATION) {
        true if !headers.contains_key(header::CONTENT_TYPE) => StatusCode::FOUND,
        _ => StatusCode::OK,
    });
    headers
        .entry(header::CONTENT_TYPE)
        .or_insert(HeaderValue::from_static("application/octet-stream"));
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// The `(name, value)` lines of the header block `out` begins with and
/// the body after it, if it begins with one: header-like lines within
/// [`MAX_HEADER_BLOCK`] bytes, ended by an empty line (LF or CRLF), one of
/// them `Content-Type`, `Status` or `Location`.
fn header_block(out: &Bytes) -> Option<(Vec<(&str, &str)>, Bytes)> {
    let head = &out[..out.len().min(MAX_HEADER_BLOCK)];
    let mut lines = Vec::new();
    let mut at = 0;
    loop {
        let end = at + head[at..].iter().position(|&b| b == b'\n')?;
        let line = &head[at..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        at = end + 1;
        if line.is_empty() {
            break;
        }
        let text = std::str::from_utf8(line).ok()?;
        let (name, value) = text.split_once(':')?;
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return None;
        }
        lines.push((name, value.trim()));
    }
    let names = ["content-type", "status", "location"];
    lines
        .iter()
        .any(|(name, _)| names.iter().any(|n| name.eq_ignore_ascii_case(n)))
        .then(|| (lines, out.slice(at..)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn invoke(query: Option<&str>, headers: &[(&str, &str)], body: &[u8]) -> Invoke {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        Invoke {
            function: "echo".into(),
            query: query.map(Into::into),
            headers: map,
            body: Bytes::copy_from_slice(body),
            label: None,
            deadline: None,
            received: Instant::now(),
            cancel: Default::default(),
        }
    }

    #[test]
    fn a_request_is_its_cgi_meta_variables() {
        let env = environment(&invoke(
            Some("n=3&x"),
            &[
                ("content-type", "text/csv"),
                ("authorization", "Bearer secret"),
                ("accept", "a"),
                ("accept", "b"),
                ("x-trace-id", "7"),
            ],
            b"a,b\n",
        ));
        let got: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            got,
            [
                "GATEWAY_INTERFACE=CGI/1.1",
                "SERVER_PROTOCOL=HTTP/1.1",
                "SERVER_SOFTWARE=faasched",
                "REQUEST_METHOD=POST",
                "SCRIPT_NAME=/invoke/echo",
                "PATH_INFO=",
                "QUERY_STRING=n=3&x",
                "CONTENT_LENGTH=4",
                "HTTP_ACCEPT=a, b",
                "CONTENT_TYPE=text/csv",
                "HTTP_X_TRACE_ID=7",
            ]
        );
        assert!(env.iter().all(|(_, v)| !v.contains("secret")));
        let bare = environment(&invoke(None, &[], b""));
        assert!(bare.contains(&("QUERY_STRING".into(), String::new())));
        assert!(bare.contains(&("CONTENT_LENGTH".into(), "0".into())));
    }

    #[test]
    fn output_without_headers_is_the_body() {
        for out in [
            &b"42\n"[..],
            b"Result: 5\n\nmore",
            b"",
            b"Content-Type: text/plain",
        ] {
            let r = response(Bytes::copy_from_slice(out)).unwrap();
            assert_eq!((r.status, &r.body[..]), (StatusCode::OK, out));
            assert_eq!(r.headers[header::CONTENT_TYPE], "application/octet-stream");
        }
    }

    #[test]
    fn a_header_block_sets_status_and_headers() {
        let r = response(Bytes::from_static(
            b"Content-Type: text/html\r\nStatus: 404 Not Found\r\nX-A: 1\r\nX-A: 2\r\n\r\n<p>no</p>",
        ))
        .unwrap();
        assert_eq!(
            (r.status, &r.body[..]),
            (StatusCode::NOT_FOUND, &b"<p>no</p>"[..])
        );
        assert_eq!(r.headers[header::CONTENT_TYPE], "text/html");
        assert_eq!(r.headers.get_all("x-a").iter().count(), 2);
        let moved = response(Bytes::from_static(b"Location: /b\n\n")).unwrap();
        assert_eq!(
            (moved.status, &moved.body[..]),
            (StatusCode::FOUND, &b""[..])
        );
        let plain = response(Bytes::from_static(b"content-type: text/plain\n\nhi")).unwrap();
        assert_eq!(
            (plain.status, &plain.body[..]),
            (StatusCode::OK, &b"hi"[..])
        );
    }

    #[test]
    fn a_bad_status_is_an_error_naming_its_line() {
        let bad = response(Bytes::from_static(b"Content-Type: a/b\nStatus: 99\n\n")).unwrap_err();
        assert!(bad.contains("line 2") && bad.contains("\"99\""), "{bad}");
        let text = response(Bytes::from_static(b"Status: soon\n\n")).unwrap_err();
        assert!(text.contains("line 1"), "{text}");
    }
}
