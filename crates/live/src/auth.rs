//! The credential of a service's control routes: a bearer token read from
//! a file, which a client presents as `Authorization: Bearer TOKEN`.
//!
//! The routes that change what a service runs (a node's `POST /register`
//! and `DELETE /functions`, the gateway's `PUT` and `DELETE /nodes`) take
//! a request only with the token, and so do invocations where a service
//! has an invocation token of their own; the token is compared in constant time, so a client learns
//! nothing from how long a wrong guess took. The refusal is a 401 with
//! `WWW-Authenticate: Bearer`, given before the body is read, so a client
//! without the token cannot make the service read a module's megabytes.
//!
//! The token travels in clear text over plain HTTP: it keeps strangers on
//! a network from changing code or membership, not an eavesdropper on the
//! path from reading it.

use crate::wire::request::Malformed;
use hyper::StatusCode;
use hyper::header::{AUTHORIZATION, HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use std::fmt;
use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};
use subtle::ConstantTimeEq;

/// The fewest bytes a token has: 128 bits of hex.
pub const MIN_TOKEN_BYTES: usize = 32;

/// A bearer token. Its `Debug` hides it, so it never reaches a log.
#[derive(Clone)]
pub struct Token(String);

/// Why a token file was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file could not be read.
    #[error("reading the token file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Its content is no token.
    #[error("the token file {path}: {why}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

impl Token {
    /// The token in the file at `path`: its one line, without the line's
    /// end. Refuses a token shorter than [`MIN_TOKEN_BYTES`] or with
    /// anything but visible ASCII (what a header carries unchanged).
    pub fn read(path: &Path) -> Result<Token, TokenError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let line = text.strip_suffix('\n').unwrap_or(&text);
        let line = line.strip_suffix('\r').unwrap_or(line);
        Token::new(line).map_err(|why| TokenError::Invalid {
            path: path.to_path_buf(),
            why,
        })
    }

    /// `text` as a token, refused as [`Token::read`] refuses a file's.
    pub fn new(text: &str) -> Result<Token, String> {
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("a token is one line of visible ASCII, no spaces".into());
        }
        if text.len() < MIN_TOKEN_BYTES {
            return Err(format!(
                "a token has at least {MIN_TOKEN_BYTES} characters, this one {} \
                 (make one with `openssl rand -hex 32`)",
                text.len()
            ));
        }
        Ok(Token(text.to_owned()))
    }

    /// Whether `headers` carry this token as `Authorization: Bearer`.
    pub fn admits(&self, headers: &HeaderMap) -> bool {
        let mut given = headers.get_all(AUTHORIZATION).iter();
        let (Some(only), None) = (given.next(), given.next()) else {
            return false;
        };
        let Some(presented) = only.as_bytes().strip_prefix(b"Bearer ") else {
            return false;
        };
        // Equal lengths are compared in constant time; a length tells no
        // more than the token's minimum already does.
        presented.ct_eq(self.0.as_bytes()).into()
    }

    /// The `Authorization` value that presents this token.
    pub fn bearer(&self) -> HeaderValue {
        let mut value =
            HeaderValue::from_str(&format!("Bearer {}", self.0)).expect("a token is visible ASCII");
        value.set_sensitive(true);
        value
    }
}

impl PartialEq for Token {
    /// In constant time, as [`Token::admits`] compares.
    fn eq(&self, other: &Token) -> bool {
        self.0.as_bytes().ct_eq(other.0.as_bytes()).into()
    }
}

impl Eq for Token {}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Whether a service listening on `listen` would leave its control routes
/// open to others: it has no token and `listen` resolves to an address
/// other than loopback (a wildcard such as `0.0.0.0` among them). An
/// address that does not resolve counts as exposed.
pub fn exposed(listen: &str, token: Option<&Token>) -> bool {
    token.is_none()
        && listen
            .to_socket_addrs()
            .map_or(true, |mut addrs| addrs.any(|a| !a.ip().is_loopback()))
}

/// Refuses `what` (a route, as the refusal names it) unless `token` is
/// `None` or `headers` present it.
pub(crate) fn check(
    token: Option<&Token>,
    headers: &HeaderMap,
    what: &str,
) -> Result<(), Malformed> {
    match token {
        Some(token) if !token.admits(headers) => Err(Malformed {
            status: StatusCode::UNAUTHORIZED,
            what: format!("{what} needs the service's token as `Authorization: Bearer TOKEN`"),
            header: Some((WWW_AUTHENTICATE, "Bearer")),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "0123456789abcdef0123456789abcdef";

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_the_token_as_one_bearer_header_is_admitted() {
        let token = Token::new(GOOD).unwrap();
        assert!(token.admits(&headers(&[&format!("Bearer {GOOD}")])));
        assert!(token.admits(&[(AUTHORIZATION, token.bearer())].into_iter().collect()));
        for wrong in [
            vec![],
            vec![GOOD.to_string()],
            vec![format!("bearer {GOOD}")],
            vec![format!("Basic {GOOD}")],
            vec![format!("Bearer {GOOD}x")],
            vec![format!("Bearer {}", &GOOD[1..])],
            vec![format!("Bearer {}", GOOD.replace('0', "1"))],
            vec![format!("Bearer {GOOD}"), format!("Bearer {GOOD}")],
        ] {
            let wrong: Vec<&str> = wrong.iter().map(String::as_str).collect();
            assert!(!token.admits(&headers(&wrong)), "{wrong:?}");
        }
    }

    #[test]
    fn a_refusal_is_a_401_that_asks_for_a_bearer() {
        let token = Token::new(GOOD).unwrap();
        let refused = check(Some(&token), &headers(&[]), "POST /register").unwrap_err();
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
        assert_eq!(refused.header, Some((WWW_AUTHENTICATE, "Bearer")));
        assert!(refused.what.contains("POST /register"), "{}", refused.what);
        check(None, &headers(&[]), "POST /register").unwrap();
        check(Some(&token), &headers(&[&format!("Bearer {GOOD}")]), "x").unwrap();
    }

    #[test]
    fn only_loopback_is_safe_without_a_token() {
        let token = Token::new(GOOD).unwrap();
        for listen in ["127.0.0.1:0", "127.0.0.2:8080", "[::1]:80", "localhost:0"] {
            assert!(!exposed(listen, None), "{listen}");
        }
        for listen in ["0.0.0.0:8080", "[::]:80", "10.1.2.3:1", "nowhere"] {
            assert!(exposed(listen, None), "{listen}");
            assert!(!exposed(listen, Some(&token)), "{listen}");
        }
    }

    #[test]
    fn token_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let token = Token::read(&file("good", &format!("{GOOD}\n"))).unwrap();
        assert!(token.admits(&headers(&[&format!("Bearer {GOOD}")])));
        assert_eq!(format!("{token:?}"), "Token(..)");
        Token::read(&file("crlf", &format!("{GOOD}\r\n"))).unwrap();
        for (name, text, says) in [
            ("short", "abc\n", "at least 32 characters, this one 3"),
            ("space", &format!("{GOOD} x"), "visible ASCII"),
            ("two", &format!("{GOOD}\n{GOOD}\n"), "visible ASCII"),
            ("empty", "", "at least 32"),
        ] {
            let err = Token::read(&file(name, text)).unwrap_err().to_string();
            assert!(err.contains(name) && err.contains(says), "{name}: {err}");
        }
        let err = Token::read(&dir.path().join("none"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("reading the token file"), "{err}");
    }
}
