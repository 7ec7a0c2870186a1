//! An open-loop HTTP load generator for the node runtime, free of
//! coordinated omission.
//!
//! A workload's request stream (the one `node simulate` runs) fixes each
//! request's intended send time in advance; [`run`] sends it then, over a
//! fixed set of kept-alive HTTP/1.1 connections, and measures its latency
//! from that intended time, never from when it actually went out:
//!
//! 1. all connections are opened before the clock starts (a target that
//!    refuses the first is [`LoadError::Connect`]);
//! 2. requests are taken in stream order; each waits for its intended time
//!    (a sleep to 2 ms before it, then a spin), then for a free
//!    connection: when every connection is busy it queues, and the
//!    queueing counts in its latency, as it would for a client that is not
//!    the load generator;
//! 3. each request is answered, or fails with exactly one [`Failure`]: a
//!    connection that breaks is opened again for the next request; a
//!    response is awaited [`LoadConfig::timeout`] at most;
//! 4. sending stops at the end of the stream, at [`LoadConfig::duration`],
//!    or when `stop` says so (Ctrl-C); requests already due then but not
//!    sent are [`Failure::Unsent`], later ones are left out of the run;
//! 5. the requests in flight get until [`LoadConfig::drain`] past the
//!    duration to finish, unless `stop` says so first: those left are
//!    [`Failure::Unfinished`] or [`Failure::Interrupted`].
//!
//! In [`Mode::Closed`] the stream gives the requests but not their times:
//! each connection is one client that sends the next request as soon as
//! the previous one is answered, for throughput rather than latency.
//!
//! The HTTP protocol is docs/RUNTIME.md's "HTTP API": a request is `POST
//! /invoke/spin?us={work in µs}` with its function and deadline in headers;
//! see [`invoke_path`].
//!
//! Times are ns from the start of the run inside, µs in
//! [`LoadRun::write_csv`]'s file. The run uses one thread (a tokio
//! current-thread runtime): the sends are paced by one task, so one thread
//! loses nothing, leaves the other cores to the server when both share the
//! machine, and keeps the order of events on the client simple.

mod config;
mod http;
mod run;
mod summary;

pub use config::{
    DEFAULT_DRAIN, DEFAULT_TIMEOUT, LoadConfig, MAX_CONNECTIONS, Mode, default_connections,
};
pub use http::invoke_path;
pub(crate) use http::{Answer, Sender as HttpSender, connect as http_connect};
pub use run::{End, Failure, LoadError, LoadRun, Record, run};
pub(crate) use run::{attempt, drain, stopped};
pub use summary::{
    LatencySummary, LoadSummary, REQUESTS_CSV_HEADER, ScopeSummary, SlowdownSummary,
};

#[cfg(test)]
mod tests;
