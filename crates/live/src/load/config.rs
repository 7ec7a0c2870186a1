//! How a load run is shaped: its mode and its bounds (where it goes is its
//! [`Transport`](super::Transport)'s).

use super::outcome::LoadError;
use crate::auth::Token;
use crate::tls::ClientTls;
use faasched_model::{MS, Nanos, SEC, TIME_LIMIT};

/// By default, how long the requests in flight at the end of the run get to
/// finish: long enough for a request queued behind a few long functions
/// (the longest built-in work is 1 s), short enough that a stalled server
/// does not hold the run.
pub const DEFAULT_DRAIN: Nanos = 5 * SEC;

/// By default, how long one request waits for its response once sent.
pub const DEFAULT_TIMEOUT: Nanos = 10 * SEC;

/// Most connections a run opens: below the usual 1,024 open files a
/// process may hold, with room for the rest of the process.
pub const MAX_CONNECTIONS: usize = 512;

/// How requests are paced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Each request at its arrival in the stream, over this many
    /// connections; its latency counts from then.
    Open {
        /// Connections kept alive (over HTTP; a runtime in process takes
        /// every call as it comes).
        connections: usize,
    },
    /// This many clients, each on its own connection, sending back to
    /// back; the stream's arrival times are ignored.
    Closed {
        /// Clients, and so connections.
        clients: usize,
    },
}

impl Mode {
    /// The connections the mode opens.
    pub fn connections(&self) -> usize {
        match *self {
            Mode::Open { connections } => connections,
            Mode::Closed { clients } => clients,
        }
    }
}

/// Everything that shapes a run but its requests and where they go.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadConfig {
    /// Open or closed loop.
    pub mode: Mode,
    /// No request is sent at or past this time from the start (in the open
    /// loop, requests arriving later in the stream are left out).
    pub duration: Nanos,
    /// How long past `duration` the requests in flight get to finish. By
    /// default [`DEFAULT_DRAIN`].
    pub drain: Nanos,
    /// How long a request waits for its whole response once sent. By
    /// default [`DEFAULT_TIMEOUT`].
    pub timeout: Nanos,
    /// The token every HTTP request presents (`Authorization: Bearer`),
    /// for a node or gateway whose invocations need one. By default none.
    pub token: Option<Token>,
    /// Requests go under TLS, the target's certificate checked against
    /// this CA. By default plain HTTP.
    pub tls: Option<ClientTls>,
}

impl LoadConfig {
    /// A run in `mode` for `duration`, with the default drain and timeout.
    pub fn new(mode: Mode, duration: Nanos) -> LoadConfig {
        LoadConfig {
            mode,
            duration,
            drain: DEFAULT_DRAIN,
            timeout: DEFAULT_TIMEOUT,
            token: None,
            tls: None,
        }
    }

    /// Checks every field; errors name the field.
    pub fn validate(&self) -> Result<(), LoadError> {
        let connections = self.mode.connections();
        if !(1..=MAX_CONNECTIONS).contains(&connections) {
            return Err(LoadError::invalid(
                "connections",
                format!("must be from 1 to {MAX_CONNECTIONS}, got {connections}"),
            ));
        }
        for (field, value) in [
            ("duration", self.duration),
            ("drain", self.drain),
            ("timeout", self.timeout),
        ] {
            if value == 0 || value > TIME_LIMIT / 4 {
                return Err(LoadError::invalid(
                    field,
                    format!(
                        "must be above 0 and at most {} s, got {value} ns",
                        TIME_LIMIT / 4 / SEC
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Connections for an open loop at `rate_per_s`: one per 10 ms of requests
/// (so a server answering each within 10 ms sees every request when it is
/// due), at least 16 and at most [`MAX_CONNECTIONS`].
pub fn default_connections(rate_per_s: f64) -> usize {
    const PER_CONNECTION: Nanos = 10 * MS;
    let wanted = (rate_per_s * PER_CONNECTION as f64 / SEC as f64).ceil();
    if wanted.is_nan() {
        return 16;
    }
    (wanted.min(MAX_CONNECTIONS as f64) as usize).clamp(16, MAX_CONNECTIONS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_connections_follow_the_rate_within_bounds() {
        assert_eq!(default_connections(100.0), 16);
        assert_eq!(default_connections(2_000.0), 20);
        assert_eq!(default_connections(1e9), MAX_CONNECTIONS);
        assert_eq!(default_connections(f64::NAN), 16);
    }

    #[test]
    fn bad_fields_are_named() {
        let ok = LoadConfig::new(Mode::Open { connections: 4 }, SEC);
        assert!(ok.validate().is_ok());
        let mut c = ok.clone();
        c.mode = Mode::Closed { clients: 0 };
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("connections")
        );
        let mut c = ok.clone();
        c.drain = 0;
        assert!(c.validate().unwrap_err().to_string().contains("drain"));
    }
}
