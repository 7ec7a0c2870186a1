//! The cluster level, live: a [`gateway::Gateway`] in front of several node
//! runtimes (`faasched node serve`), each a process speaking HTTP, routing
//! with the cluster simulator's routers unchanged. The nodes publish their
//! load (`GET /load`, a [`crate::wire::LoadReport`] sampled as
//! [`crate::node::ingress::load`] says); the gateway keeps
//! the last reports in a [`table::NodeTable`], stale, as a router expects.
//! [`load`]'s closed-loop clients load such a cluster as the paper's
//! Locust threads did. A node may register itself with a gateway
//! ([`registration::Registration`]) instead of being given to it.

pub mod gateway;
pub mod load;
pub mod registration;
pub mod table;

pub use gateway::{
    DEFAULT_DEADLINE_FACTOR, DEFAULT_FORWARD_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES, Gateway,
    GatewayConfig, GatewayError, GatewayServed,
};
pub use registration::Registration;
