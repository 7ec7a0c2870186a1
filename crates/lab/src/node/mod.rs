//! The node level: a catalogue of dispatch policies, and runs of a request
//! workload through the simulated node under them.

pub mod admission;
#[cfg(feature = "live")]
pub mod calibrate;
pub mod capacity;
pub mod catalog;
pub mod compare;
#[cfg(feature = "live")]
pub mod deploy;
pub mod experiment;
pub mod figures;
#[cfg(feature = "live")]
pub mod live;
#[cfg(feature = "live")]
pub mod load;
#[cfg(feature = "live")]
pub mod replay;
pub mod run;
#[cfg(feature = "live")]
pub mod serve;
pub mod sweep;

/// What the node's mechanisms cost, as the engine takes them.
pub use faasched_sim::node::Costs;

use anyhow::{Context, Result};
use std::path::Path;

/// The node's costs from a file of ns values: JSON if its name ends in
/// `.json`, TOML otherwise (what `node calibrate` writes either way); keys
/// left out keep their defaults, unknown ones are refused; errors name the
/// file.
pub fn read_costs(path: &Path) -> Result<Costs> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the costs file {}", path.display()))?;
    let costs: Costs = if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text)
            .with_context(|| format!("{}: not a costs file", path.display()))?
    } else {
        toml::from_str(&text).with_context(|| format!("{}: not a costs file", path.display()))?
    };
    costs
        .validate()
        .with_context(|| format!("{}", path.display()))?;
    Ok(costs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_costs_file_is_json_by_its_extension_and_toml_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("costs.json");
        std::fs::write(&json, r#"{"wake": 7, "poll": true}"#).unwrap();
        let costs = read_costs(&json).unwrap();
        assert_eq!((costs.wake, costs.poll), (7, true));
        assert_eq!(costs.dispatch_base, Costs::default().dispatch_base);
        let toml = dir.path().join("costs.conf");
        std::fs::write(&toml, "wake = 9\n").unwrap();
        assert_eq!(read_costs(&toml).unwrap().wake, 9);
    }

    #[test]
    fn a_bad_json_costs_file_is_an_error_naming_the_file_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("costs.json");
        std::fs::write(&path, r#"{"dispatch_bass": 10}"#).unwrap();
        let err = format!("{:#}", read_costs(&path).unwrap_err());
        assert!(
            err.contains("costs.json") && err.contains("dispatch_bass"),
            "{err}"
        );
        std::fs::write(&path, r#"{"wake": 2000000000}"#).unwrap();
        let err = format!("{:#}", read_costs(&path).unwrap_err());
        assert!(err.contains("costs.json") && err.contains("wake"), "{err}");
        let missing = dir.path().join("none.json");
        let err = format!("{:#}", read_costs(&missing).unwrap_err());
        assert!(err.contains("none.json"), "{err}");
    }
}
