//! A node's side of registering with a cluster gateway
//! ([`super::gateway`]'s `PUT` and `DELETE /nodes/{HOST:PORT}`).
//!
//! The steps, in one task so that a registration never overtakes the
//! node's leaving:
//!
//! 1. Register (`PUT`) at once, then again every period: a heartbeat, so
//!    that a gateway that restarted, or dropped the node after missed
//!    polls, learns it again within a period.
//! 2. A registration that fails (no gateway, no answer within
//!    [`REGISTRATION_TIMEOUT`], an answer other than 2xx) is reported to
//!    the caller and tried again the next period; it never stops the node.
//! 3. Once told to stop, after the registration in progress if any, say
//!    so (`DELETE`) once, so the gateway routes no more to a node that
//!    drains.

use super::gateway::{GatewayError, connect, is_address};
use crate::auth::Token;
use crate::tls::ClientTls;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request};
use std::future::Future;
use std::time::Duration;

/// How long one registration or leaving waits for the gateway: 2 s, so
/// that a gateway that hangs holds neither a heartbeat nor a node's
/// shutdown for long.
pub const REGISTRATION_TIMEOUT: Duration = Duration::from_secs(2);

/// A node's registration with a gateway.
#[derive(Clone, Debug)]
pub struct Registration {
    gateway: String,
    authority: HeaderValue,
    advertise: String,
    period: Duration,
    token: Option<Token>,
    tls: Option<ClientTls>,
}

impl Registration {
    /// Registers `advertise` (the node's `HOST:PORT`, as the gateway is to
    /// reach it) with the gateway at `gateway` every `period` (at least
    /// 1 ms). Errs naming an address that is not `HOST:PORT`.
    pub fn new(
        gateway: &str,
        advertise: &str,
        period: Duration,
    ) -> Result<Registration, GatewayError> {
        if !is_address(advertise) {
            return Err(GatewayError::BadNode(advertise.to_owned()));
        }
        let authority = HeaderValue::from_str(gateway)
            .ok()
            .filter(|_| is_address(gateway))
            .ok_or_else(|| GatewayError::BadGateway(gateway.to_owned()))?;
        Ok(Registration {
            gateway: gateway.to_owned(),
            authority,
            advertise: advertise.to_owned(),
            period: period.max(Duration::from_millis(1)),
            token: None,
            tls: None,
        })
    }

    /// Speak to the gateway under TLS, its certificate checked against
    /// this CA. By default plain HTTP.
    pub fn tls(mut self, tls: Option<ClientTls>) -> Registration {
        self.tls = tls;
        self
    }

    /// The token to present to the gateway (its `--token-file`'s), if it
    /// asks for one.
    pub fn token(mut self, token: Option<Token>) -> Registration {
        self.token = token;
        self
    }

    /// Steps 1 to 3: registers every period until `stop` resolves, then
    /// leaves; `failed` hears of every failure, saying what failed.
    pub async fn run(&self, stop: impl Future<Output = ()>, mut failed: impl FnMut(String)) {
        tokio::pin!(stop);
        loop {
            if let Err(e) = self.send(Method::PUT).await {
                failed(format!(
                    "registering {} with the gateway {}: {e}; trying again in {:?}",
                    self.advertise, self.gateway, self.period
                ));
            }
            tokio::select! {
                biased;
                () = &mut stop => break,
                () = tokio::time::sleep(self.period) => {}
            }
        }
        if let Err(e) = self.send(Method::DELETE).await {
            failed(format!(
                "telling the gateway {} that {} leaves: {e}",
                self.gateway, self.advertise
            ));
        }
    }

    /// One `method /nodes/{advertise}`, bounded by
    /// [`REGISTRATION_TIMEOUT`].
    async fn send(&self, method: Method) -> Result<(), String> {
        let exchange = async {
            let mut request = Request::builder()
                .method(method)
                .uri(format!("/nodes/{}", self.advertise))
                .header(header::HOST, self.authority.clone());
            if let Some(token) = &self.token {
                request = request.header(header::AUTHORIZATION, token.bearer());
            }
            let request = request
                .body(Full::new(Bytes::new()))
                .map_err(|e| format!("building the request: {e}"))?;
            let mut sender = connect(&self.gateway, self.tls.as_ref()).await?;
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| format!("sending the request: {e}"))?;
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("reading the answer: {e}"))?
                .to_bytes();
            if status.is_success() {
                Ok(())
            } else {
                Err(format!(
                    "answered {status}: {}",
                    String::from_utf8_lossy(&body).trim_end()
                ))
            }
        };
        tokio::time::timeout(REGISTRATION_TIMEOUT, exchange)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {REGISTRATION_TIMEOUT:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_that_are_not_host_port_are_refused_naming_them() {
        let period = Duration::from_secs(1);
        let e = Registration::new("gw", "127.0.0.1:1", period).unwrap_err();
        assert_eq!(e.to_string(), "gateway address \"gw\" is not HOST:PORT");
        let e = Registration::new("127.0.0.1:1", "a b:2", period).unwrap_err();
        assert_eq!(e.to_string(), "node address \"a b:2\" is not HOST:PORT");
        assert!(Registration::new("127.0.0.1:1", "node-3.local:8080", period).is_ok());
    }

    /// No gateway listens: every registration fails, is reported, and
    /// the node goes on; stopping still tries to leave, once.
    #[test]
    fn failures_are_reported_never_fatal_and_stopping_leaves() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let gateway = unused.local_addr().unwrap().to_string();
        drop(unused);
        let registration =
            Registration::new(&gateway, "127.0.0.1:9", Duration::from_millis(1)).unwrap();
        let mut failures = Vec::new();
        runtime.block_on(async {
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let mut stop = Some(stop);
            let mut tries = 0;
            registration
                .run(
                    async {
                        let _ = stopped.await;
                    },
                    |failure| {
                        tries += 1;
                        failures.push(failure);
                        // Stop after the third failed registration.
                        if tries == 3 {
                            let _ = stop.take().map(|s| s.send(()));
                        }
                    },
                )
                .await;
        });
        assert_eq!(failures.len(), 4, "{failures:?}");
        assert!(failures[0].starts_with(&format!(
            "registering 127.0.0.1:9 with the gateway {gateway}: connecting"
        )));
        assert!(
            failures[3].starts_with("telling the gateway"),
            "{failures:?}"
        );
    }
}
