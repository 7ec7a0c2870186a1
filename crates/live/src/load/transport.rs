//! The seam between the open loop and what carries its calls: HTTP
//! connections to a node or a gateway ([`Http`](super::Http)), or a node
//! runtime in this process ([`InProcess`](super::InProcess)). The loop
//! paces the calls, keeps the records and ends the run; a transport only
//! says when a call can go, sends it and says what came back.

use super::config::LoadConfig;
use super::outcome::{Answer, Failure, LoadError};
use tokio::time::Instant;

/// What a sent call became, and when that was known.
pub type Came = (Result<Answer, Failure>, Instant);

/// How the open loop's calls of type `C` reach their target.
pub trait Transport<C> {
    /// What a call holds while it is out: an open connection, or nothing.
    type Lane: Send + 'static;

    /// Before the clock starts: opens what `config` asks for (its
    /// connections).
    fn start(&mut self, config: &LoadConfig) -> impl Future<Output = Result<(), LoadError>>;

    /// Waits for a free lane: its number (the [`Record`](super::Record)'s
    /// `client`) and itself. Cancel-safe: a wait cut short takes none.
    fn free(&mut self) -> impl Future<Output = (u32, Self::Lane)>;

    /// Gives back lane `number`, taken by [`free`](Transport::free) and
    /// left unused.
    fn unused(&self, number: u32, lane: Self::Lane);

    /// Sends `call`, due at `due`, on lane `number` at once; the future
    /// (polled on the driver's thread) gives the lane back and ends with
    /// the outcome, a [`Failure::ResponseTimeout`] at `by` at the latest.
    /// Dropping it withdraws the call where the transport can.
    fn send(
        &self,
        number: u32,
        lane: Self::Lane,
        call: &C,
        due: Instant,
        by: Instant,
    ) -> impl Future<Output = Came> + Send + 'static;
}
