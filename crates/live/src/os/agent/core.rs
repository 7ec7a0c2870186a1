//! The agent's state while it serves, which the serving loop (`serve`),
//! the admission of processes (`admission`) and the clients' connections
//! (`clients`) act on: defined here, apart from all three, so that each
//! of them uses it without the others.

use super::Config;
use super::event::Summary;
use super::protocol::Sched;
use super::registry::Registry;
use super::throttle::Throttle;
use crate::os::steering::Steering;
use crate::sys::peercred::PeerCred;
use crate::sys::poll::Poll;
use faasched_model::{Functions, Nanos, Steer};
use std::collections::HashMap;
use std::os::unix::net::UnixStream;

/// The agent while it serves: what `serve` sets up, and the loop (in
/// serve.rs) answers requests (admission.rs) and clients (clients.rs) on.
pub(super) struct Agent<'c, 'p, P: Steer + ?Sized, L> {
    pub(super) config: &'c Config,
    pub(super) steering: Steering<'p, P>,
    pub(super) poll: Poll,
    pub(super) registry: Registry,
    pub(super) clients: HashMap<u64, Conn>,
    pub(super) next_client: u64,
    pub(super) functions: Functions,
    /// By function id.
    pub(super) per_function: Vec<FunctionStats>,
    pub(super) next_task: u64,
    pub(super) summary: Summary,
    pub(super) max_processes: usize,
    pub(super) origin: Nanos,
    /// The agent's own pid.
    pub(super) pid: libc::pid_t,
    /// The parent of every kernel thread ([`target::kthreadd`]).
    pub(super) kthreadd: Option<libc::pid_t>,
    pub(super) log: L,
    /// The second refusals are being counted in: its start, the refusals
    /// logged in it and those not.
    pub(super) refusals: (Nanos, u64, u64),
    /// What each user's datagrams may cost.
    pub(super) throttle: Throttle,
}

/// Which socket a request came on.
#[derive(Clone, Copy)]
pub(super) enum Via<'a> {
    /// A line on this connection to the stream socket.
    Stream(&'a UnixStream),
    /// A datagram on the datagram socket.
    Datagram,
}

/// A connected client.
pub(super) struct Conn {
    pub(super) stream: UnixStream,
    pub(super) cred: PeerCred,
    /// Bytes read and not yet a whole line.
    pub(super) buf: Vec<u8>,
    /// When it last sent something (or connected).
    pub(super) active: Nanos,
}

/// Most clients connected at once. A client arriving when they are all
/// connected takes the place of the one idle the longest, if that one has
/// been idle a second (`IDLE_EVICTABLE`) or more, and is closed on arrival otherwise:
/// connections held open and silent (any local user can open them) cannot
/// lock everyone else out.
pub(super) const MAX_CLIENTS: usize = 256;

/// One function, as `status` shows it.
#[derive(Clone, Debug, Default)]
pub(super) struct FunctionStats {
    /// Processes steered now.
    pub(super) live: u64,
    /// Invocations finished.
    pub(super) finished: u64,
    /// Their CPU time, in all.
    pub(super) cpu: Nanos,
    /// The attributes its latest process got when handed over.
    pub(super) latest: Option<Sched>,
}
