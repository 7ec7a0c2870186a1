//! A function's manifest: what it is given beyond its module (limits,
//! environment, outbound hosts, deadline). A node reads one per function
//! from `node serve --deploy DIR` (TOML, naming the module) and from the
//! `x-faasched-manifest` header of `POST /register/NAME` (JSON, the module
//! the body): one set of fields, one reading of them.

use faasched_model::MS;
use faasched_wasm::Deployment;
use faasched_workload::node::Deadline;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The header `POST /register/NAME` takes a manifest in, as one line of
/// JSON: `{"cpu_limit_ms": 500, "env": {"MODE": "fast"}}`.
pub const MANIFEST_HEADER: &str = "x-faasched-manifest";

/// One function's manifest, as a user writes it. Every field but
/// `module` (in a file) may be left out; each left out is the node's.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The module: `.wasm` or `.wat`, relative to the manifest's
    /// directory. A file's must name one; a registration's module is its
    /// body, so it names none.
    pub module: Option<PathBuf>,
    /// The name invocations use; by default the file's stem. A
    /// registration's name is its path.
    pub name: Option<String>,
    /// Linear memory one of its sandboxes may grow to, MiB.
    pub memory_limit_mib: Option<u64>,
    /// CPU time one of its requests may use, ms.
    pub cpu_limit_ms: Option<u64>,
    /// Its requests' relative deadline, as `--deadline` gives one (`10x`,
    /// `50ms`).
    pub deadline: Option<String>,
    /// Environment variables a WASI command sees after its CGI ones, or a
    /// component sees.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Hosts (`host` or `host:port`) a component's outgoing requests may
    /// reach, over plain HTTP.
    #[serde(default)]
    pub allow_outbound: Vec<String>,
}

/// What a manifest gives its function.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// Its limits, environment and outbound hosts (checked against the
    /// node's when it is registered).
    pub deployment: Deployment,
    /// Its deadline, if the manifest sets one.
    pub deadline: Option<Deadline>,
}

impl Manifest {
    /// What it gives its function, or the field that is wrong and why.
    pub fn settings(&self) -> Result<Settings, String> {
        let deadline = self
            .deadline
            .as_deref()
            .map(str::parse::<Deadline>)
            .transpose()
            .map_err(|e| format!("deadline: {e}"))?;
        let memory_limit = self
            .memory_limit_mib
            .map(|mib| {
                mib.checked_mul(1 << 20)
                    .ok_or_else(|| format!("memory_limit_mib {mib} is too large"))
            })
            .transpose()?;
        let cpu_limit = self
            .cpu_limit_ms
            .map(|ms| {
                ms.checked_mul(MS)
                    .ok_or_else(|| format!("cpu_limit_ms {ms} is too large"))
            })
            .transpose()?;
        Ok(Settings {
            deployment: Deployment {
                memory_limit,
                cpu_limit,
                env: self.env.clone().into_iter().collect(),
                allow_outbound: self.allow_outbound.clone(),
            },
            deadline,
        })
    }

    /// The manifest a registration's header carries (`None` without
    /// one): JSON, with neither `module` nor `name`.
    pub fn from_header(value: Option<&[u8]>) -> Result<Option<Manifest>, String> {
        let Some(value) = value else {
            return Ok(None);
        };
        let manifest: Manifest =
            serde_json::from_slice(value).map_err(|e| format!("{MANIFEST_HEADER}: {e}"))?;
        if manifest.module.is_some() || manifest.name.is_some() {
            return Err(format!(
                "{MANIFEST_HEADER}: a registration's module is its body and its name its path: \
                 give neither `module` nor `name`"
            ));
        }
        Ok(Some(manifest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_header_reads_as_the_file_does_and_names_what_is_wrong() {
        let header = br#"{"cpu_limit_ms": 50, "deadline": "20ms", "env": {"B": "2", "A": "1"},
                         "allow_outbound": ["127.0.0.1:9"]}"#;
        let manifest = Manifest::from_header(Some(header)).unwrap().unwrap();
        assert_eq!(
            manifest.settings().unwrap(),
            Settings {
                deployment: Deployment {
                    cpu_limit: Some(50 * MS),
                    env: vec![("A".into(), "1".into()), ("B".into(), "2".into())],
                    allow_outbound: vec!["127.0.0.1:9".into()],
                    ..Deployment::default()
                },
                deadline: Some(Deadline::Absolute(20 * MS)),
            }
        );
        assert_eq!(Manifest::from_header(None), Ok(None));
        let unknown = Manifest::from_header(Some(br#"{"cpu_ms": 5}"#)).unwrap_err();
        assert!(unknown.contains("unknown field `cpu_ms`"), "{unknown}");
        let named = Manifest::from_header(Some(br#"{"name": "x"}"#)).unwrap_err();
        assert!(named.contains("give neither"), "{named}");
        let late = Manifest {
            deadline: Some("soon".into()),
            ..Manifest::default()
        };
        assert!(late.settings().unwrap_err().starts_with("deadline: "));
        let huge = Manifest {
            memory_limit_mib: Some(u64::MAX),
            ..Manifest::default()
        };
        assert!(huge.settings().unwrap_err().contains("too large"));
    }
}
