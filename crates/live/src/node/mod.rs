//! The node level, live: what drives and measures a node runtime over the
//! network.

pub mod load;
