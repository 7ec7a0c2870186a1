//! The cluster level's policies, pure decisions over the seams of
//! [`faasched_model::cluster`]: for now the pieces CH-RLU (Fuerst, Sharma,
//! HPDC'22) is built from, the consistent-hash [`Ring`] and the
//! [`Popularity`] sampler.

pub mod popularity;
pub mod ring;

pub use popularity::{Popularity, PopularityParams, Sampling};
pub use ring::Ring;
