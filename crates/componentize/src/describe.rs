//! `describe`: what a component imports and exports.

use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use wit_parser::decoding::{DecodedWasm, decode};

/// List a component's imports and exports, one a line: `import NAME` or
/// `export NAME`, with NAME as WIT spells it (e.g. `export
/// wasi:http/incoming-handler@0.2.12`). scripts/build-functions does
/// not use it: it is for checking a built component by hand.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The component.
    #[arg(value_name = "COMPONENT.wasm")]
    component: PathBuf,
}

impl Args {
    /// Decodes the component and prints its world's imports and exports.
    pub fn execute(self) -> Result<()> {
        let bytes = std::fs::read(&self.component)
            .with_context(|| format!("cannot read {}", self.component.display()))?;
        // The preamble's layer field (bytes 6 and 7): 0 for a core module,
        // 1 for a component.
        if bytes.get(..4) != Some(b"\0asm") || bytes.get(6..8) != Some(&[1, 0]) {
            bail!("{} is not a component", self.component.display());
        }
        let decoded = decode(&bytes)
            .with_context(|| format!("cannot decode {}", self.component.display()))?;
        let DecodedWasm::Component(resolve, world) = decoded else {
            bail!(
                "{} is a WIT package, not a component",
                self.component.display()
            );
        };
        let world = &resolve.worlds[world];
        for key in world.imports.keys() {
            println!("import {}", resolve.name_world_key(key));
        }
        for key in world.exports.keys() {
            println!("export {}", resolve.name_world_key(key));
        }
        Ok(())
    }
}
