//! The functions a node serves beside the built-in suite, and where their
//! compiled code is kept: `node serve`'s and `node replay`'s.

use clap::Args as ClapArgs;
use faasched_lab::node::live::Host;
use std::path::PathBuf;

/// Functions deployed from manifests, and the cache of compiled code.
#[derive(ClapArgs, Debug)]
pub struct FunctionArgs {
    /// Register the functions DIR's manifests describe before serving:
    /// one TOML file a function, `NAME.toml`, naming its module (`module =
    /// "f.wasm"`, relative to DIR) and optionally `name`,
    /// `memory_limit_mib`, `cpu_limit_ms` (each at most the node's),
    /// `deadline` (as --deadline gives one) and an `[env]` table for a
    /// WASI command (docs/FUNCTIONS.md shows one). `scripts/build-functions`
    /// writes one beside each function of the suite into target/functions.
    /// A bad manifest stops the node, its file and field named.
    #[arg(long, value_name = "DIR")]
    pub deploy: Option<PathBuf>,
    /// Keep compiled code in DIR (created mode 0700; it must be yours and
    /// writable by no one else), keyed by each module's SHA-256 and the
    /// engine's settings: a module compiled once, by this run or an
    /// earlier one, loads from there in milliseconds at registration and
    /// at every cold start. At most 1 GiB, the entries used least recently
    /// removed first. By default nothing is kept.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl FunctionArgs {
    /// `host`, keeping compiled code where --cache-dir says.
    pub fn on(&self, host: Host) -> Host {
        Host {
            cache: self.cache_dir.clone(),
            ..host
        }
    }
}
