//! `faasched cluster gateway`: the gateway's options as `cluster gateway`
//! and `cluster up` take them, and serving one until a signal, saying on
//! stderr where it listens and, at the end, what it did.

use super::catalog::ROUTERS;
use super::live::{GatewaySpec, serve_gateway};
use crate::node::serve::{DEFAULT_MAX_CONNECTIONS, control_token, drain, read_token, stopped_by};
use crate::tls::TlsFiles;
use anyhow::{Context, Result, bail};
use faasched_live::cluster::{DEFAULT_DEADLINE_FACTOR, DEFAULT_MAX_RESPONSE_BYTES};
use faasched_live::http::FrontConfig;
use std::path::PathBuf;
use std::time::Duration;

/// The gateway's own options, as `cluster gateway` and `cluster up` take
/// them.
#[derive(Clone, Debug, clap::Args)]
pub struct GatewayOptions {
    /// The router (`faasched cluster simulate --help` lists them).
    #[arg(long, short = 'p', default_value = "ch-rlu", value_parser = ROUTERS.parser())]
    pub policy: String,
    /// The workload whose function table gives each function's memory,
    /// warm and cold time: functionbench (ten copies of each CH-RLU Table 1
    /// function, `aes-encryption-0` .. `-9`, ...).
    #[arg(long, short = 'w', default_value = "functionbench")]
    pub workload: String,
    /// Address to listen on (port 0 picks a free one, printed on stderr).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// How often every node's load is polled, ms (the nodes publish every
    /// --load-period-ms; 5 s, the kernel's, by default).
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub period_ms: u64,
    /// Seed of the router's random draws.
    #[arg(long, short = 's', default_value_t = 1)]
    pub seed: u64,
    /// Seconds to answer the requests already read after SIGTERM.
    #[arg(long, default_value_t = 10.0)]
    pub drain_s: f64,
    /// Seconds an invocation waits for its node's answer; past them the
    /// client gets 502 node-unreachable, so a node that hangs holds nothing
    /// for ever.
    #[arg(long, default_value_t = 60.0)]
    pub forward_timeout_s: f64,
    /// An invocation that names a deadline (x-faasched-deadline-us) waits
    /// at most K times it for its node, where that is shorter than
    /// --forward-timeout-s; past it the client gets 502 node-unreachable
    /// and the node stops the invocation. 0: the forward timeout alone.
    #[arg(long, value_name = "K", default_value_t = DEFAULT_DEADLINE_FACTOR)]
    pub deadline_factor: u32,
    /// The function table's warm and cold times multiplied by this: give
    /// the nodes' --time-scale.
    #[arg(long, default_value_t = 0.01)]
    pub time_scale: f64,
    /// A file holding the token (one line, at least 32 characters: `openssl
    /// rand -hex 32`) that PUT and DELETE /nodes must present as
    /// `Authorization: Bearer TOKEN`: give the nodes the same file. Without
    /// it, anyone who reaches the gateway may add or remove its nodes.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Listen on an address others can reach without --token-file, the
    /// gateway's nodes open to change by anyone who reaches it. Without
    /// this flag such a gateway is refused.
    #[arg(long, conflicts_with = "token_file")]
    pub no_token: bool,
    /// A file holding the token every invocation must present as
    /// `Authorization: Bearer TOKEN`; it is forwarded with the invocation,
    /// so nodes given the same --invoke-token-file take it. Without it,
    /// anyone who reaches the gateway may invoke.
    #[arg(long, value_name = "FILE")]
    pub invoke_token_file: Option<PathBuf>,
    /// The longest node answer passed on to a client, bytes; a longer one
    /// is answered 502 response-too-large (an answer is read whole before
    /// it is passed on, so this bounds what one invocation holds).
    #[arg(long, default_value_t = DEFAULT_MAX_RESPONSE_BYTES as u64, value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    pub max_response_bytes: u64,
    /// Client connections open at once; one more is answered 503 and
    /// closed, so that slow clients cannot take every file descriptor.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS as u32, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,
    /// Its TLS: its listener's certificate, and the CA of its nodes'.
    #[command(flatten)]
    pub tls: TlsFiles,
}

impl GatewayOptions {
    /// The gateway over `nodes` (`HOST:PORT` each); errors name the flag.
    pub fn spec(&self, nodes: Vec<String>) -> Result<GatewaySpec> {
        let drain = drain(self.drain_s)?;
        let token = control_token(self.token_file.as_deref(), &self.listen, self.no_token)?;
        if !(self.forward_timeout_s.is_finite() && self.forward_timeout_s > 0.0) {
            bail!(
                "--forward-timeout-s: {} is not a number of seconds above 0",
                self.forward_timeout_s
            );
        }
        let tls = self.tls.read()?;
        Ok(GatewaySpec {
            nodes,
            policy: self.policy.clone(),
            workload: self.workload.clone(),
            period: Duration::from_millis(self.period_ms),
            seed: self.seed,
            drain,
            forward_timeout: Duration::from_secs_f64(self.forward_timeout_s),
            deadline_factor: Some(self.deadline_factor).filter(|&k| k > 0),
            time_scale: self.time_scale,
            front: FrontConfig {
                token,
                invoke_token: read_token(self.invoke_token_file.as_deref())
                    .context("--invoke-token-file")?,
                max_connections: self.max_connections as usize,
                tls: tls.listener,
                ..FrontConfig::default()
            },
            max_response_bytes: usize::try_from(self.max_response_bytes)
                .context("--max-response-bytes")?,
            node_tls: tls.peers,
        })
    }

    /// Serves the gateway over `nodes` until SIGTERM or SIGINT, saying on
    /// stderr where it listens and, at the end, what it did; an error if
    /// an invocation was cut unanswered.
    pub fn serve(&self, nodes: Vec<String>) -> Result<()> {
        let spec = self.spec(nodes)?;
        let run = serve_gateway(&spec, &self.listen, |addr| {
            if spec.nodes.is_empty() {
                eprintln!(
                    "faasched cluster gateway: {} over the nodes that register \
                     (PUT /nodes/HOST:PORT), listening on {addr}",
                    spec.policy
                );
            } else {
                eprintln!(
                    "faasched cluster gateway: {} over {} node(s), listening on {addr}",
                    spec.policy,
                    spec.nodes.len()
                );
            }
        })?;
        let s = &run.served;
        let kinds: Vec<String> = s
            .node_failures
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        let node_errors = match s.node_failures.values().sum::<u64>() {
            0 => String::new(),
            n => format!(" ({n} with a node's error: {})", kinds.join(", ")),
        };
        eprintln!(
            "faasched cluster gateway: stopped by {}; {} invocations received, {} \
             answered{node_errors}, {} node-unreachable, {} dropped by the router, {}; decision p50 \
             {:.2} us, forwarding overhead p50 {:.1} us",
            stopped_by(run.signal, "the gateway"),
            s.received,
            s.answered,
            s.unreachable,
            s.dropped,
            s.connections_cut,
            s.decision_p50 as f64 / 1e3,
            s.overhead_p50 as f64 / 1e3,
        );
        if s.registrations + s.leaves > 0 {
            eprintln!(
                "faasched cluster gateway: {} node registrations, {} dropped after missed polls, \
                 {} left",
                s.registrations, s.drops, s.leaves
            );
        }
        if s.received != s.answered {
            bail!(
                "{} invocations were cut unanswered",
                s.received - s.answered
            );
        }
        Ok(())
    }
}
