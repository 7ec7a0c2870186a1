//! The node level: a catalogue of dispatch policies, and runs of a request
//! workload through the simulated node under them.

pub mod capacity;
pub mod catalog;
pub mod compare;
pub mod experiment;
pub mod figures;
#[cfg(feature = "live")]
pub mod live;
#[cfg(feature = "live")]
pub mod replay;
pub mod run;

/// What the node's mechanisms cost, as the engine takes them.
pub use faasched_sim::node::Costs;

use anyhow::{Context, Result};
use std::path::Path;

/// The node's costs from a TOML file of ns values; keys left out keep their
/// defaults, unknown ones are refused; errors name the file.
pub fn read_costs(path: &Path) -> Result<Costs> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the costs file {}", path.display()))?;
    let costs: Costs =
        toml::from_str(&text).with_context(|| format!("{}: not a costs file", path.display()))?;
    costs
        .validate()
        .with_context(|| format!("{}", path.display()))?;
    Ok(costs)
}
